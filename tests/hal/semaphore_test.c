// Timeline semaphores and fences: host signal and wait, timeouts, GPU work
// ordered after a host signal, fences that must be reset.
#include "kiln/base/time.h"
#include "test_device.h"

KILN_TEST(SemaphoreTest, HostSignalQueryAndWait) {
  kiln_hal_device_t* device = kiln_test_device_create();
  kiln_hal_semaphore_t* semaphore = NULL;
  KILN_ASSERT_OK(kiln_hal_semaphore_create(device, 5, &semaphore));
  uint64_t value = 0;
  KILN_ASSERT_OK(kiln_hal_semaphore_query(semaphore, &value));
  KILN_EXPECT_EQ(value, 5);
  KILN_EXPECT_OK(kiln_hal_semaphore_wait(semaphore, 5, 0));
  KILN_EXPECT_STATUS(KILN_STATUS_DEADLINE_EXCEEDED,
                     kiln_hal_semaphore_wait(semaphore, 6, 0));
  int64_t start = kiln_time_now_ns();
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_DEADLINE_EXCEEDED, "did not reach 6",
                             kiln_hal_semaphore_wait(semaphore, 6, 20000000));
  KILN_EXPECT_GE(kiln_time_now_ns() - start, 15000000);
  KILN_EXPECT_OK(kiln_hal_semaphore_signal(semaphore, 9));
  KILN_EXPECT_OK(kiln_hal_semaphore_wait(semaphore, 8, 0));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "not above",
                             kiln_hal_semaphore_signal(semaphore, 9));
  kiln_hal_semaphore_release(semaphore);
  kiln_test_device_release(device);
}

// GPU work waits for a host signal, then signals another semaphore; the
// result is visible only after both.
KILN_TEST(SemaphoreTest, SubmissionWaitsForHostSignal) {
  kiln_hal_device_t* device = kiln_test_device_create();
  kiln_hal_semaphore_t* gate = NULL;
  kiln_hal_semaphore_t* done = NULL;
  KILN_ASSERT_OK(kiln_hal_semaphore_create(device, 0, &gate));
  KILN_ASSERT_OK(kiln_hal_semaphore_create(device, 0, &done));
  kiln_hal_buffer_t* buffer = kiln_test_buffer(
      device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT, 64);
  kiln_hal_command_buffer_t* cb = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  uint32_t pattern = 0xfeedf00d;
  KILN_ASSERT_OK(kiln_hal_command_buffer_fill(cb, buffer, 0, 64, &pattern, 4));
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  kiln_hal_semaphore_value_t wait = {gate, 1};
  kiln_hal_semaphore_value_t signal = {done, 7};
  kiln_hal_submit_batch_t batch = {&wait, 1, &cb, NULL, 1, &signal, 1, NULL};
  KILN_ASSERT_OK(kiln_hal_device_queue_submit(device, &batch));
  // Not before the gate opens.
  KILN_EXPECT_STATUS(KILN_STATUS_DEADLINE_EXCEEDED,
                     kiln_hal_semaphore_wait(done, 7, 30000000));
  uint64_t value = 99;
  KILN_ASSERT_OK(kiln_hal_semaphore_query(done, &value));
  KILN_EXPECT_EQ(value, 0);
  KILN_ASSERT_OK(kiln_hal_semaphore_signal(gate, 1));
  KILN_ASSERT_OK(kiln_hal_semaphore_wait(done, 7, 10ll * 1000 * 1000 * 1000));
  uint32_t words[16];
  KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, buffer, 0, words, 64));
  for (int i = 0; i < 16; ++i) KILN_EXPECT_EQ(words[i], 0xfeedf00d);
  kiln_hal_command_buffer_release(cb);
  kiln_hal_buffer_release(buffer);
  kiln_hal_semaphore_release(gate);
  kiln_hal_semaphore_release(done);
  kiln_test_device_release(device);
}

KILN_TEST(SemaphoreTest, ChainedSubmissionsRunInSemaphoreOrder) {
  kiln_hal_device_t* device = kiln_test_device_create();
  kiln_hal_semaphore_t* timeline = NULL;
  KILN_ASSERT_OK(kiln_hal_semaphore_create(device, 0, &timeline));
  kiln_hal_buffer_t* buffer = kiln_test_buffer(
      device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT, 64);
  kiln_hal_executable_t* executable = kiln_test_two_entries_executable(device);
  uint32_t ones[16];
  for (int i = 0; i < 16; ++i) ones[i] = 1;
  KILN_ASSERT_OK(kiln_hal_device_write_buffer(device, buffer, 0, ones, 64));
  // Four submissions: add_one, double_it, add_one, double_it, each waiting
  // for the previous one's value: ((1+1)*2+1)*2 = 10.
  kiln_hal_command_buffer_t* cbs[2];
  uint32_t count = 16;
  kiln_hal_binding_t binding = {0, 0, buffer, 0, 0, KILN_HAL_WHOLE_BUFFER};
  for (uint32_t e = 0; e < 2; ++e) {
    KILN_ASSERT_OK(kiln_hal_command_buffer_create(device, 0, &cbs[e]));
    KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cbs[e]));
    kiln_hal_dispatch_t dispatch = {executable, e, {1, 1, 1}, &count, 4, &binding, 1};
    KILN_ASSERT_OK(kiln_hal_command_buffer_dispatch(cbs[e], &dispatch));
    KILN_ASSERT_OK(kiln_hal_command_buffer_end(cbs[e]));
  }
  for (uint64_t step = 0; step < 4; ++step) {
    kiln_hal_semaphore_value_t wait = {timeline, step};
    kiln_hal_semaphore_value_t signal = {timeline, step + 1};
    kiln_hal_submit_batch_t batch = {&wait, 1, &cbs[step % 2], NULL, 1,
                                     &signal, 1, NULL};
    KILN_ASSERT_OK(kiln_hal_device_queue_submit(device, &batch));
  }
  KILN_ASSERT_OK(kiln_hal_semaphore_wait(timeline, 4, KILN_INFINITE_TIMEOUT_NS));
  uint32_t values[16];
  KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, buffer, 0, values, 64));
  for (int i = 0; i < 16; ++i) KILN_EXPECT_EQ(values[i], 10);
  for (int e = 0; e < 2; ++e) kiln_hal_command_buffer_release(cbs[e]);
  kiln_hal_executable_release(executable);
  kiln_hal_buffer_release(buffer);
  kiln_hal_semaphore_release(timeline);
  kiln_test_device_release(device);
}

KILN_TEST(SemaphoreTest, FencesSignalOnceUntilReset) {
  kiln_hal_device_t* device = kiln_test_device_create();
  kiln_hal_fence_t* fence = NULL;
  KILN_ASSERT_OK(kiln_hal_fence_create(device, &fence));
  KILN_EXPECT_STATUS(KILN_STATUS_DEADLINE_EXCEEDED, kiln_hal_fence_wait(fence, 0));
  kiln_hal_submit_batch_t empty = {.fence = fence};
  KILN_ASSERT_OK(kiln_hal_device_queue_submit(device, &empty));
  KILN_ASSERT_OK(kiln_hal_fence_wait(fence, KILN_INFINITE_TIMEOUT_NS));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION, "reset it first",
                             kiln_hal_device_queue_submit(device, &empty));
  KILN_ASSERT_OK(kiln_hal_fence_reset(fence));
  KILN_EXPECT_STATUS(KILN_STATUS_DEADLINE_EXCEEDED, kiln_hal_fence_wait(fence, 0));
  KILN_ASSERT_OK(kiln_hal_device_queue_submit(device, &empty));
  KILN_ASSERT_OK(kiln_hal_fence_wait(fence, KILN_INFINITE_TIMEOUT_NS));
  KILN_EXPECT_OK(kiln_hal_device_wait_idle(device, 0));
  kiln_hal_fence_release(fence);
  kiln_test_device_release(device);
}

// The submit stats split a submission's host time: one more submission, and
// time in preparing it, in the driver's submit and in the fence wait.
KILN_TEST(SemaphoreTest, SubmitStatsCountSubmissionsAndWaits) {
  kiln_hal_device_t* device = kiln_test_device_create();
  kiln_hal_buffer_t* buffer = kiln_test_buffer(
      device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT, 64);
  kiln_hal_command_buffer_t* cb = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  uint32_t pattern = 7;
  KILN_ASSERT_OK(kiln_hal_command_buffer_fill(cb, buffer, 0, 64, &pattern, 4));
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  kiln_hal_submit_stats_t before = kiln_hal_device_submit_stats(device);
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, NULL));
  kiln_hal_submit_stats_t after = kiln_hal_device_submit_stats(device);
  KILN_EXPECT_EQ(after.submissions, before.submissions + 1);
  KILN_EXPECT_TRUE(after.prepare_ns > before.prepare_ns);
  KILN_EXPECT_TRUE(after.queue_ns > before.queue_ns);
  KILN_EXPECT_TRUE(after.fence_wait_ns > before.fence_wait_ns);
  uint32_t words[16] = {0};
  KILN_EXPECT_OK(kiln_hal_device_read_buffer(device, buffer, 0, words, 64));
  KILN_EXPECT_EQ(words[15], 7u);
  kiln_hal_command_buffer_release(cb);
  kiln_hal_buffer_release(buffer);
  kiln_test_device_release(device);
}
