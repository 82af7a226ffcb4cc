// The same timeline wait/signal sequence on the device as it is and on the
// same device capped to Vulkan 1.1 ("?api=1.1": no timeline semaphores, so
// the driver emulates them with fences), each also with "?wait=poll" (waits
// spin on the status), "?wait=block" and "?wait=auto": every observable step (status codes, semaphore
// values, buffer contents) must match, and match the values the HAL's
// semantics prescribe.
#include <stdio.h>
#include <string.h>

#include "../../drivers/vulkan/vulkan_internal.h"
#include "kiln/base/time.h"
#include "kiln/drivers/registration.h"
#include "test_device.h"

enum { kMaxSteps = 32 };

typedef struct trace_t {
  uint64_t entries[kMaxSteps];
  int count;
} trace_t;

static void record(trace_t* trace, uint64_t value) {
  if (trace->count < kMaxSteps) trace->entries[trace->count++] = value;
}

// Records the status code (0 for OK) and frees the status.
static void record_status(trace_t* trace, kiln_status_t status) {
  record(trace, (uint64_t)kiln_status_code(status));
  kiln_status_free(status);
}

static void record_value(trace_t* trace, kiln_hal_semaphore_t* semaphore) {
  uint64_t value = 12345;
  KILN_EXPECT_OK(kiln_hal_semaphore_query(semaphore, &value));
  record(trace, value);
}

static kiln_hal_command_buffer_t* fill_command_buffer(
    kiln_hal_device_t* device, kiln_hal_buffer_t* buffer, uint32_t pattern) {
  kiln_hal_command_buffer_t* cb = NULL;
  KILN_EXPECT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_EXPECT_OK(kiln_hal_command_buffer_begin(cb));
  KILN_EXPECT_OK(kiln_hal_command_buffer_fill(cb, buffer, 0, 64, &pattern, 4));
  KILN_EXPECT_OK(kiln_hal_command_buffer_end(cb));
  return cb;
}

static kiln_status_t submit(kiln_hal_device_t* device,
                            kiln_hal_command_buffer_t* cb,
                            kiln_hal_semaphore_value_t wait,
                            kiln_hal_semaphore_value_t signal,
                            kiln_hal_fence_t* fence) {
  kiln_hal_submit_batch_t batch = {&wait, 1, cb ? &cb : NULL, NULL,
                                   cb ? 1u : 0u, &signal, 1, fence};
  return kiln_hal_device_queue_submit(device, &batch);
}

static const int64_t kLong = 20ll * 1000 * 1000 * 1000;
static const int64_t kShort = 5 * 1000 * 1000;

static void run_sequence(kiln_hal_device_t* device, trace_t* trace) {
  kiln_hal_semaphore_t *a = NULL, *b = NULL;
  KILN_ASSERT_OK(kiln_hal_semaphore_create(device, 0, &a));
  KILN_ASSERT_OK(kiln_hal_semaphore_create(device, 0, &b));
  kiln_hal_buffer_t* buffer = kiln_test_buffer(
      device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT, 64);
  kiln_hal_command_buffer_t* first = fill_command_buffer(device, buffer, 0x11);
  kiln_hal_command_buffer_t* second = fill_command_buffer(device, buffer, 0x22);
  kiln_hal_fence_t* fence = NULL;
  KILN_ASSERT_OK(kiln_hal_fence_create(device, &fence));

  // Submitted before its wait can be met (wait-before-signal), then a second
  // submission chained on the first one's signal.
  record_status(trace, submit(device, first, (kiln_hal_semaphore_value_t){a, 1},
                              (kiln_hal_semaphore_value_t){b, 5}, NULL));
  record_status(trace, kiln_hal_semaphore_wait(b, 5, kShort));
  record_value(trace, b);
  record_status(trace, submit(device, second, (kiln_hal_semaphore_value_t){b, 5},
                              (kiln_hal_semaphore_value_t){b, 6}, NULL));
  record_status(trace, kiln_hal_semaphore_signal(a, 1));
  record_status(trace, kiln_hal_semaphore_wait(b, 6, kLong));
  record_value(trace, a);
  record_value(trace, b);
  uint32_t words[16] = {0};
  KILN_EXPECT_OK(kiln_hal_device_read_buffer(device, buffer, 0, words, 64));
  record(trace, words[0]);
  record(trace, words[15]);
  // Host signals: forward only; a wait beyond the value times out.
  record_status(trace, kiln_hal_semaphore_signal(b, 10));
  record_value(trace, b);
  record_status(trace, kiln_hal_semaphore_wait(b, 11, kShort));
  record_status(trace, kiln_hal_semaphore_signal(b, 9));
  // An empty submission whose wait is met signals at once; device idle.
  record_status(trace, submit(device, NULL, (kiln_hal_semaphore_value_t){a, 1},
                              (kiln_hal_semaphore_value_t){a, 3}, NULL));
  record_status(trace, kiln_hal_device_wait_idle(device, kLong));
  record_value(trace, a);
  // A fence of a submission held for a host signal.
  record_status(trace, submit(device, NULL, (kiln_hal_semaphore_value_t){b, 12},
                              (kiln_hal_semaphore_value_t){a, 4}, fence));
  record_status(trace, kiln_hal_fence_wait(fence, kShort));
  record_status(trace, kiln_hal_semaphore_signal(b, 12));
  record_status(trace, kiln_hal_fence_wait(fence, kLong));
  record_status(trace, kiln_hal_semaphore_wait(a, 4, kLong));
  record_value(trace, a);

  kiln_hal_fence_release(fence);
  kiln_hal_command_buffer_release(first);
  kiln_hal_command_buffer_release(second);
  kiln_hal_buffer_release(buffer);
  kiln_hal_semaphore_release(a);
  kiln_hal_semaphore_release(b);
}

// The URI of the test device with "?<query>" (ordinal 0 when none is named).
static void uri_with(const char* query, char* out, size_t size) {
  const char* uri = kiln_test_device_uri();
  snprintf(out, size, "%s%s?%s", uri, strstr(uri, "://") ? "" : "://", query);
}

KILN_TEST(TimelineModesTest, SameSequenceWithAndWithoutTimelineSemaphores) {
  const uint64_t kDeadline = KILN_STATUS_DEADLINE_EXCEEDED;
  const uint64_t kInvalid = KILN_STATUS_INVALID_ARGUMENT;
  const uint64_t expected[] = {
      0, kDeadline, 0, 0, 0, 0, 1, 6, 0x22, 0x22,  // chained submissions
      0, 10, kDeadline, kInvalid,                  // host signals
      0, 0, 3,                                     // empty submission
      0, kDeadline, 0, 0, 0, 4,                    // held fence
  };
  const int expected_count = (int)(sizeof(expected) / sizeof(expected[0]));
  kiln_hal_device_options_t options;
  kiln_hal_device_options_init(&options);
  char capped[256], polled[256], capped_polled[256], blocked[256], capped_auto[256];
  uri_with("api=1.1", capped, sizeof(capped));
  uri_with("wait=poll", polled, sizeof(polled));
  uri_with("api=1.1&wait=poll", capped_polled, sizeof(capped_polled));
  uri_with("wait=block", blocked, sizeof(blocked));
  uri_with("api=1.1&wait=auto", capped_auto, sizeof(capped_auto));
  const char* uris[6] = {kiln_test_device_uri(), capped, polled, capped_polled, blocked,
                         capped_auto};
  for (int mode = 0; mode < 6; ++mode) {
    kiln_hal_device_t* device = kiln_test_device_create_at(uris[mode], &options);
    const kiln_hal_device_info_t* info = kiln_hal_device_info(device);
    if (mode == 1 || mode == 3 || mode == 5) {
      // The capped device really is a plain 1.1 device.
      KILN_EXPECT_EQ(info->api_major, 1u);
      KILN_EXPECT_EQ(info->api_minor, 1u);
      KILN_EXPECT_EQ(info->features & (KILN_TARGET_FEATURE_TIMELINE_SEMAPHORE |
                                       KILN_TARGET_FEATURE_PUSH_DESCRIPTORS),
                     0u);
    }
    trace_t trace = {.count = 0};
    run_sequence(device, &trace);
    KILN_EXPECT_EQ(trace.count, expected_count);
    for (int i = 0; i < trace.count && i < expected_count; ++i) {
      if (trace.entries[i] != expected[i]) {
        KILN_ADD_FAILURE("%s: step %d gave %llu, expected %llu", uris[mode], i,
                         (unsigned long long)trace.entries[i],
                         (unsigned long long)expected[i]);
      }
    }
    kiln_test_device_release(device);
  }
}

// A bad cap is refused with the value named, not ignored.
KILN_TEST(TimelineModesTest, UnknownApiVersionIsRefused) {
  kiln_hal_driver_registry_t* registry = kiln_hal_driver_registry_default();
  KILN_ASSERT_OK(kiln_drivers_register_all(registry));
  kiln_hal_device_options_t options;
  kiln_hal_device_options_init(&options);
  kiln_hal_device_t* device = NULL;
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "'1.0'",
      kiln_hal_create_device(registry,
                             kiln_make_cstring_view("vulkan://0?api=1.0"),
                             &options, kiln_allocator_system(), &device));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "fast=1",
      kiln_hal_create_device(registry,
                             kiln_make_cstring_view("vulkan://0?fast=1"),
                             &options, kiln_allocator_system(), &device));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "wait=spin",
      kiln_hal_create_device(registry,
                             kiln_make_cstring_view("vulkan://0?wait=spin"),
                             &options, kiln_allocator_system(), &device));
  KILN_EXPECT_TRUE(device == NULL);
}

// The test device when it is a Vulkan one (these tests read its
// internals), else NULL (released).
static kiln_hal_device_t* vulkan_test_device(void) {
  kiln_hal_device_options_t options;
  kiln_hal_device_options_init(&options);
  kiln_hal_device_t* device = kiln_test_device_create_at(kiln_test_device_uri(), &options);
  if (strcmp(kiln_hal_device_info(device)->driver, "vulkan") != 0) {
    kiln_test_device_release(device);
    return NULL;
  }
  return device;
}

// The wait modes' spin budgets: auto spins on GPUs only (a CPU device's
// own threads need the cores), block never, poll until the timeout.
KILN_TEST(TimelineModesTest, WaitModesSpinAsDocumented) {
  kiln_hal_device_t* device = vulkan_test_device();
  if (!device) return;
  kiln_hal_device_options_t options;
  kiln_hal_device_options_init(&options);
  const bool cpu = kiln_vk_device_cast(device)->support.cpu_device;
  KILN_EXPECT_EQ(kiln_vk_device_cast(device)->spin_ns, cpu ? 0 : 5000000);
  kiln_test_device_release(device);
  KILN_EXPECT_EQ(kiln_vk_wait_spin_ns(KILN_VK_WAIT_AUTO, true), 0);
  KILN_EXPECT_EQ(kiln_vk_wait_spin_ns(KILN_VK_WAIT_AUTO, false), 5000000);
  KILN_EXPECT_EQ(kiln_vk_wait_spin_ns(KILN_VK_WAIT_BLOCK, false), 0);
  KILN_EXPECT_EQ(kiln_vk_wait_spin_ns(KILN_VK_WAIT_POLL, true), KILN_INFINITE_TIMEOUT_NS);
  char polled[256];
  uri_with("wait=poll", polled, sizeof(polled));
  device = kiln_test_device_create_at(polled, &options);
  KILN_EXPECT_EQ(kiln_vk_device_cast(device)->spin_ns, KILN_INFINITE_TIMEOUT_NS);
  kiln_test_device_release(device);
}

// kiln_vk_wait_sleep_ns: the last long wait's length less 1/16 and 0.3 ms,
// counted from the wait's start; nothing before a first long wait or once
// past that point.
KILN_TEST(TimelineModesTest, LongWaitWakePoint) {
  KILN_EXPECT_EQ(kiln_vk_wait_sleep_ns(0, 5000000), 0);
  KILN_EXPECT_EQ(kiln_vk_wait_sleep_ns(16000000, 5000000), 16000000 - 1000000 - 300000 - 5000000);
  KILN_EXPECT_EQ(kiln_vk_wait_sleep_ns(16000000, 14700000), 0);
  KILN_EXPECT_EQ(kiln_vk_wait_sleep_ns(16000000, 20000000), 0);
}

// A fence wait that outlasts its spin (wait=auto on a GPU; here a 20 us
// spin set on whatever device the test has, against fills of 256 MiB): it
// ends when the work ends, whether that comes while it sleeps toward the
// last long wait's length, spins after it, or blocks after that; it
// records its own length; and a deadline before the wake point still ends
// it on time.
KILN_TEST(TimelineModesTest, LongWaitsEndWithTheWorkOrTheirDeadline) {
  kiln_hal_device_t* device = vulkan_test_device();
  if (!device) return;
  kiln_vk_device_t* vk = kiln_vk_device_cast(device);
  vk->spin_ns = 20000;
  kiln_hal_fence_t* idle = NULL;
  KILN_ASSERT_OK(kiln_hal_fence_create(device, &idle));
  // Never submitted: a 20 ms deadline against a 60 ms wake point.
  __atomic_store_n(&vk->last_long_wait_ns, 60000000, __ATOMIC_RELAXED);
  int64_t start = kiln_time_now_ns();
  kiln_status_t status = kiln_hal_fence_wait(idle, 20000000);
  const int64_t timed_out_after = kiln_time_now_ns() - start;
  KILN_EXPECT_EQ(kiln_status_code(status), KILN_STATUS_DEADLINE_EXCEEDED);
  kiln_status_free(status);
  KILN_EXPECT_TRUE(timed_out_after >= 20000000 && timed_out_after < 50000000);
  kiln_hal_fence_release(idle);

  const uint64_t size = 64ull << 20;
  kiln_hal_buffer_t* big =
      kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT, size);
  kiln_hal_command_buffer_t* cb = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_EXPECT_OK(kiln_hal_command_buffer_begin(cb));
  for (uint32_t i = 0; i < 4; ++i) {
    KILN_EXPECT_OK(kiln_hal_command_buffer_fill(cb, big, 0, size, &i, 4));
  }
  KILN_EXPECT_OK(kiln_hal_command_buffer_end(cb));
  // A first (cold) wait, a second that measures the length D, then the
  // last long wait at D (wakes just before the end and spins), D / 4
  // (wakes early, spins 20 us, blocks) and 4 D (asleep when it ends).
  int64_t measured = 0;
  for (int round = 0; round < 5; ++round) {
    const int64_t lasts[5] = {0, 0, measured, measured / 4, 4 * measured};
    const int64_t last = lasts[round];
    kiln_hal_fence_t* fence = NULL;
    KILN_ASSERT_OK(kiln_hal_fence_create(device, &fence));
    __atomic_store_n(&vk->last_long_wait_ns, last, __ATOMIC_RELAXED);
    kiln_hal_submit_batch_t batch = {NULL, 0, &cb, NULL, 1, NULL, 0, fence};
    start = kiln_time_now_ns();
    KILN_EXPECT_OK(kiln_hal_device_queue_submit(device, &batch));
    KILN_EXPECT_OK(kiln_hal_fence_wait(fence, kLong));
    const int64_t took = kiln_time_now_ns() - start;
    const int64_t recorded = __atomic_load_n(&vk->last_long_wait_ns, __ATOMIC_RELAXED);
    fprintf(stderr, "last long wait %lld ns: waited %lld ns, recorded %lld\n",
            (long long)last, (long long)took, (long long)recorded);
    KILN_EXPECT_TRUE(recorded > vk->spin_ns && recorded <= took);
    if (round == 1) measured = recorded;
    kiln_hal_fence_release(fence);
  }
  kiln_hal_command_buffer_release(cb);
  kiln_hal_buffer_release(big);
  kiln_test_device_release(device);
}
