// Limits a host sets on a session (issue 12): fuel and a deadline per
// invoke, and one memory budget for host memory (VM buffers, unpacked
// rodata) and device buffers together.
#include <stdlib.h>
#include <string.h>

#include "kiln/base/byte_buffer.h"
#include "kiln/base/time.h"
#include "kiln/compiler/assembler.h"
#include "kiln/hal/buffer.h"
#include "kiln/session.h"
#include "kiln_test.h"

static kiln_status_t kiln_open_session(kiln_session_options_t* options,
                                       const char* source,
                                       kiln_session_t** out_session) {
  const char* device = getenv("KILN_TEST_DEVICE");
  if (device) options->device_uri = device;
  kiln_byte_buffer_t bytes;
  kiln_byte_buffer_init(&bytes, kiln_allocator_system());
  kiln_status_t status = kiln_assembler_assemble(
      kiln_make_cstring_view(source), "limits.kasm", kiln_allocator_system(),
      &bytes);
  if (!status) status = kiln_session_create(options, out_session);
  if (!status) {
    status = kiln_session_load_module_memory(
        *out_session, kiln_byte_buffer_span(&bytes), "limits.kasm");
  }
  kiln_byte_buffer_deinit(&bytes);
  return status;
}

static kiln_status_t kiln_call(kiln_session_t* session, const char* name) {
  kiln_vm_function_t function;
  KILN_RETURN_IF_ERROR(kiln_session_lookup(session, name, &function));
  return kiln_session_invoke(session, function, NULL, 0, NULL, 0);
}

static const char kSpin[] =
    "module limits\n"
    "func spin \"v_v\"\nloop:\n  br loop\nend\n"
    "func quick \"v_v\"\n  return\nend\n"
    "export spin\nexport quick\n";

KILN_TEST(SessionLimits, FuelPerInvoke) {
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  options.fuel = 100000;
  kiln_session_t* session = NULL;
  KILN_ASSERT_OK(kiln_open_session(&options, kSpin, &session));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_RESOURCE_EXHAUSTED,
      "function 'spin' of module 'limits' at bytecode offset 0: fuel "
      "exhausted; the session's fuel limit is 100000",
      kiln_call(session, "spin"));
  // Each call gets its fuel again.
  KILN_EXPECT_OK(kiln_call(session, "quick"));
  KILN_EXPECT_STATUS(KILN_STATUS_RESOURCE_EXHAUSTED, kiln_call(session, "spin"));
  kiln_session_destroy(session);
}

KILN_TEST(SessionLimits, DeadlinePerInvoke) {
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  options.deadline_ms = 100;
  kiln_session_t* session = NULL;
  KILN_ASSERT_OK(kiln_open_session(&options, kSpin, &session));
  int64_t start = kiln_time_now_ns();
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_DEADLINE_EXCEEDED,
      "function 'spin' of module 'limits' at bytecode offset 0: deadline "
      "exceeded; the session's deadline is 100 ms",
      kiln_call(session, "spin"));
  int64_t elapsed_ms = (kiln_time_now_ns() - start) / 1000000;
  KILN_EXPECT_GE(elapsed_ms, 100);
  KILN_EXPECT_LT(elapsed_ms, 10000);
  KILN_EXPECT_OK(kiln_call(session, "quick"));  // a new deadline per call
  kiln_session_destroy(session);
}

KILN_TEST(SessionLimits, HostBuffersShareTheBudget) {
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  options.memory_budget_bytes = 64 << 20;
  kiln_session_t* session = NULL;
  // Three 24 MiB host buffers held at once: the third crosses 64 MiB.
  KILN_ASSERT_OK(kiln_open_session(
      &options,
      "module limits\n"
      "func two \"v_v\"\n  const.i64 I0 25165824\n  buffer.alloc r0 I0\n"
      "  buffer.alloc r1 I0\n  return\nend\n"
      "func three \"v_v\"\n  const.i64 I0 25165824\n  buffer.alloc r0 I0\n"
      "  buffer.alloc r1 I0\n  buffer.alloc r2 I0\n  return\nend\n"
      "export two\nexport three\n",
      &session));
  KILN_EXPECT_OK(kiln_call(session, "two"));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_RESOURCE_EXHAUSTED,
                             "memory budget exceeded",
                             kiln_call(session, "three"));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_RESOURCE_EXHAUSTED,
                             "of the limit of 67108864 bytes",
                             kiln_call(session, "three"));
  KILN_EXPECT_OK(kiln_call(session, "two"));  // freed bytes came back
  KILN_EXPECT_LT(kiln_session_memory_in_use(session), 8u << 20);
  kiln_session_destroy(session);
}

KILN_TEST(SessionLimits, DeviceBuffersShareTheBudget) {
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  options.memory_budget_bytes = 64 << 20;
  kiln_session_t* session = NULL;
  KILN_ASSERT_OK(kiln_open_session(&options, kSpin, &session));
  kiln_hal_device_t* device = kiln_session_device(session);
  kiln_hal_buffer_params_t params = {
      .memory_type = KILN_HAL_MEMORY_DEVICE_LOCAL,
      .usage = KILN_HAL_BUFFER_USAGE_DEFAULT,
      .size = 24 << 20,
  };
  kiln_hal_buffer_t* buffers[3] = {NULL, NULL, NULL};
  KILN_ASSERT_OK(kiln_hal_buffer_allocate(device, &params, &buffers[0]));
  KILN_ASSERT_OK(kiln_hal_buffer_allocate(device, &params, &buffers[1]));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_RESOURCE_EXHAUSTED,
                             "a device buffer needs 25165824 bytes",
                             kiln_hal_buffer_allocate(device, &params, &buffers[2]));
  KILN_EXPECT_TRUE(buffers[2] == NULL);
  // 1 GiB asked 64 times: every one refused before the driver sees it.
  params.size = 1ull << 30;
  for (int i = 0; i < 64; ++i) {
    kiln_hal_buffer_t* big = NULL;
    KILN_EXPECT_STATUS(KILN_STATUS_RESOURCE_EXHAUSTED,
                       kiln_hal_buffer_allocate(device, &params, &big));
  }
  kiln_hal_buffer_release(buffers[1]);
  params.size = 24 << 20;
  KILN_EXPECT_OK(kiln_hal_buffer_allocate(device, &params, &buffers[1]));
  kiln_hal_buffer_release(buffers[0]);
  kiln_hal_buffer_release(buffers[1]);
  kiln_session_destroy(session);
}

KILN_TEST(SessionLimits, UnpackedRodataCountsAtLoad) {
  // 24 MiB of one byte compresses to a few KB; unpacking it must be
  // charged to the 16 MiB budget and refused.
  size_t count = 24u << 20;
  const char head[] = "rodata big zstd text \"";
  const char tail[] = "\"\nfunc f \"v_v\"\n  return\nend\nexport f\n";
  char* source = malloc(sizeof(head) + count + sizeof(tail));
  KILN_ASSERT_TRUE(source != NULL);
  memcpy(source, head, sizeof(head) - 1);
  memset(source + sizeof(head) - 1, 'a', count);
  memcpy(source + sizeof(head) - 1 + count, tail, sizeof(tail));
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  options.memory_budget_bytes = 16 << 20;
  kiln_session_t* session = NULL;
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_RESOURCE_EXHAUSTED,
      "while unpacking rodata 0 (25165824 bytes) of module 'limits.kasm'",
      kiln_open_session(&options, source, &session));
  kiln_session_destroy(session);
  free(source);
}
