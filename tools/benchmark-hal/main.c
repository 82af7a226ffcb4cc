// kiln-benchmark-hal: the HAL's overheads on one device, in the form of
// kiln-vulkan-floor (vulkan_floor.c, raw Vulkan) so scripts/bench-hal.sh can
// print them side by side: submit round trip of one dispatch, host cost per
// recorded dispatch, and per-dispatch cost of resubmitting a recorded command
// buffer (unchanged, and with a new binding table that forces a re-record).
// Public headers only, like any host program.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/time.h"
#include "kiln/drivers/registration.h"
#include "kiln/hal.h"
#include "tool_cli.h"

static const uint32_t kEmptySpirv[] =
#include "empty.spv.inc"
    ;
// The same empty kernel through one storage binding (the rebinding row).
static const uint32_t kBoundSpirv[] =
#include "bound.spv.inc"
    ;

enum { kRepeats = 7 };

static const char kUsage[] =
    "usage: kiln-benchmark-hal [--device=vulkan://N] [--round-trips=N] [--dispatches=N]\n"
    "Measures kiln's HAL overheads on one device: submit round trip of one "
    "dispatch (median of\n--round-trips, default 400), host cost per recorded "
    "dispatch, and per-dispatch cost of\nresubmitting a recorded command buffer "
    "of --dispatches (default 5000), unchanged and with\na new binding table "
    "(medians). scripts/bench-hal.sh prints them beside raw Vulkan\n"
    "(kiln-vulkan-floor).\n";

static int parse_count(const char* text, const char* what, long min) {
  char* end = NULL;
  long value = strtol(text, &end, 10);
  if (!*text || !end || *end || value < min || value > 1000000) {
    fprintf(stderr, "kiln-benchmark-hal: --%s=%s: expected %ld..1000000\n", what, text, min);
    exit(2);
  }
  return (int)value;
}

#define CHECK(expr)                                              \
  do {                                                           \
    kiln_status_t status_ = (expr);                              \
    if (status_) {                                               \
      char* text_ = kiln_status_to_string(status_);              \
      fprintf(stderr, "kiln-benchmark-hal: %s: %s\n", #expr, text_); \
      exit(1);                                                   \
    }                                                            \
  } while (0)

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double now_us(void) { return kiln_time_now_ns() / 1e3; }

static void submit_wait(kiln_hal_device_t* device, kiln_hal_command_buffer_t* cb,
                        const kiln_hal_binding_table_t* table,
                        kiln_hal_fence_t* fence) {
  kiln_hal_submit_batch_t batch = {.command_buffers = &cb,
                                   .binding_tables = table,
                                   .command_buffer_count = 1,
                                   .fence = fence};
  CHECK(kiln_hal_device_queue_submit(device, &batch));
  CHECK(kiln_hal_fence_wait(fence, KILN_INFINITE_TIMEOUT_NS));
  CHECK(kiln_hal_fence_reset(fence));
}

static void record_empty(kiln_hal_command_buffer_t* cb,
                         kiln_hal_executable_t* executable, int count,
                         const kiln_hal_binding_t* bindings,
                         uint32_t binding_count) {
  CHECK(kiln_hal_command_buffer_begin(cb));
  kiln_hal_dispatch_t dispatch = {executable, 0, {1, 1, 1}, NULL, 0, bindings,
                                  binding_count};
  for (int i = 0; i < count; ++i) {
    CHECK(kiln_hal_command_buffer_dispatch(cb, &dispatch));
    CHECK(kiln_hal_command_buffer_barrier(
        cb, KILN_HAL_STAGE_DISPATCH | KILN_HAL_STAGE_TRANSFER,
        KILN_HAL_STAGE_DISPATCH | KILN_HAL_STAGE_TRANSFER));
  }
  CHECK(kiln_hal_command_buffer_end(cb));
}

int main(int argc, char** argv) {
  if (kiln_tool_help_or_version(argc, argv, "kiln-benchmark-hal", kUsage)) return 0;
  const char* uri = "vulkan";
  int round_trips = 400, dispatches = 5000;
  for (int i = 1; i < argc; ++i) {
    if (strncmp(argv[i], "--device=", 9) == 0) {
      uri = argv[i] + 9;
    } else if (strncmp(argv[i], "--round-trips=", 14) == 0) {
      round_trips = parse_count(argv[i] + 14, "round-trips", 10);
    } else if (strncmp(argv[i], "--dispatches=", 13) == 0) {
      dispatches = parse_count(argv[i] + 13, "dispatches", 1);
    } else {
      fprintf(stderr, "%sunknown argument '%s'\n", kUsage, argv[i]);
      return 2;
    }
  }
  kiln_hal_driver_registry_t* registry = kiln_hal_driver_registry_default();
  CHECK(kiln_drivers_register_all(registry));
  kiln_hal_device_options_t options;
  kiln_hal_device_options_init(&options);
  kiln_hal_device_t* device = NULL;
  CHECK(kiln_hal_create_device(registry, kiln_make_cstring_view(uri), &options,
                               kiln_allocator_system(), &device));
  const kiln_hal_device_info_t* info = kiln_hal_device_info(device);
  if (strcmp(info->driver, "vulkan") != 0) {
    fprintf(stderr, "kiln-benchmark-hal measures the Vulkan driver only\n");
    return 1;
  }
  char triple[KILN_TARGET_TRIPLE_TEXT_CAPACITY];
  kiln_target_triple_format(&info->triple, triple, sizeof(triple));
  printf("device: %s (%s, api %u.%u.%u)\n", info->name, triple, info->api_major,
         info->api_minor, info->api_patch);

  kiln_hal_entry_point_spec_t entry = {"main", {64, 1, 1}, 0, NULL, 0, 0};
  kiln_hal_executable_variant_spec_t variant = {
      "unknown", 0, {0}, kEmptySpirv, sizeof(kEmptySpirv) / 4, &entry, 1, NULL, 0};
  kiln_hal_executable_spec_t spec = {"empty", &variant, 1};
  kiln_hal_executable_t* executable = NULL;
  CHECK(kiln_hal_executable_create(device, &spec, &executable));
  kiln_hal_fence_t* fence = NULL;
  CHECK(kiln_hal_fence_create(device, &fence));

  // 1. Submit round trip of one recorded dispatch.
  kiln_hal_command_buffer_t* one = NULL;
  CHECK(kiln_hal_command_buffer_create(device, 0, &one));
  CHECK(kiln_hal_command_buffer_begin(one));
  kiln_hal_dispatch_t dispatch = {executable, 0, {1, 1, 1}, NULL, 0, NULL, 0};
  CHECK(kiln_hal_command_buffer_dispatch(one, &dispatch));
  CHECK(kiln_hal_command_buffer_end(one));
  for (int i = 0; i < 20; ++i) submit_wait(device, one, NULL, fence);
  double* rtt = malloc(sizeof(double) * (size_t)round_trips);
  if (!rtt) abort();
  for (int i = 0; i < round_trips; ++i) {
    double start = now_us();
    submit_wait(device, one, NULL, fence);
    rtt[i] = now_us() - start;
  }
  qsort(rtt, (size_t)round_trips, sizeof(double), compare_doubles);
  printf("submit_rtt_us: %.2f (p10 %.2f, p90 %.2f)\n", rtt[round_trips / 2],
         rtt[round_trips / 10], rtt[round_trips * 9 / 10]);
  free(rtt);

  // 2. Host cost per recorded dispatch (+ barrier).
  kiln_hal_command_buffer_t* many = NULL;
  CHECK(kiln_hal_command_buffer_create(device, 0, &many));
  double record[kRepeats];
  for (int r = 0; r < kRepeats; ++r) {
    double start = now_us();
    record_empty(many, executable, dispatches, NULL, 0);
    record[r] = (now_us() - start) / dispatches;
  }
  qsort(record, kRepeats, sizeof(double), compare_doubles);
  printf("record_us: %.4f kiln (per dispatch+barrier, %d in one command "
         "buffer)\n",
         record[kRepeats / 2], dispatches);

  // 3. Resubmitting the recorded command buffer: per-dispatch host time.
  submit_wait(device, many, NULL, fence);
  double resubmit[kRepeats];
  for (int r = 0; r < kRepeats; ++r) {
    double start = now_us();
    submit_wait(device, many, NULL, fence);
    resubmit[r] = (now_us() - start) / dispatches;
  }
  qsort(resubmit, kRepeats, sizeof(double), compare_doubles);
  printf("resubmit_us: %.4f host (per dispatch+barrier, %d in one command "
         "buffer)\n",
         resubmit[kRepeats / 2], dispatches);

  // 4. Resubmitting with a new binding table each time (forces re-record):
  // the cost a program pays when its inputs change every call.
  kiln_hal_binding_layout_t layout = {0, 0, false};
  kiln_hal_entry_point_spec_t bound_entry = {"main", {64, 1, 1}, 0, &layout, 1, 0};
  variant.entry_points = &bound_entry;
  variant.spirv_words = kBoundSpirv;
  variant.spirv_word_count = sizeof(kBoundSpirv) / 4;
  kiln_hal_executable_t* bound_executable = NULL;
  CHECK(kiln_hal_executable_create(device, &spec, &bound_executable));
  kiln_hal_buffer_t* buffers[2];
  for (int b = 0; b < 2; ++b) {
    kiln_hal_buffer_params_t params = {KILN_HAL_MEMORY_DEVICE_LOCAL,
                                       KILN_HAL_BUFFER_USAGE_DEFAULT, 4096};
    CHECK(kiln_hal_buffer_allocate(device, &params, &buffers[b]));
  }
  kiln_hal_binding_t slot = {0, 0, NULL, 0, 0, KILN_HAL_WHOLE_BUFFER};
  kiln_hal_command_buffer_t* rebound = NULL;
  CHECK(kiln_hal_command_buffer_create(device, 0, &rebound));
  record_empty(rebound, bound_executable, dispatches, &slot, 1);
  double rebind[kRepeats];
  for (int r = 0; r < kRepeats + 1; ++r) {
    kiln_hal_binding_table_entry_t entry_table = {buffers[r % 2], 0,
                                                  KILN_HAL_WHOLE_BUFFER};
    kiln_hal_binding_table_t table = {&entry_table, 1};
    double start = now_us();
    submit_wait(device, rebound, &table, fence);
    if (r) rebind[r - 1] = (now_us() - start) / dispatches;
  }
  qsort(rebind, kRepeats, sizeof(double), compare_doubles);
  printf("rebind_resubmit_us: %.4f host (per dispatch+barrier with a new "
         "binding table each submit)\n",
         rebind[kRepeats / 2]);

  // Under KILN_VULKAN_VALIDATION=1 (the suite's run) any message fails.
  const uint64_t messages = kiln_hal_device_validation_message_count(device);
  if (messages) {
    fprintf(stderr, "kiln-benchmark-hal: %llu validation message(s), the last: %s\n",
            (unsigned long long)messages, kiln_hal_device_last_validation_message(device));
  }
  kiln_hal_command_buffer_release(rebound);
  for (int b = 0; b < 2; ++b) kiln_hal_buffer_release(buffers[b]);
  kiln_hal_executable_release(bound_executable);
  kiln_hal_command_buffer_release(one);
  kiln_hal_command_buffer_release(many);
  kiln_hal_fence_release(fence);
  kiln_hal_executable_release(executable);
  kiln_hal_device_release(device);
  return messages ? 1 : 0;
}
