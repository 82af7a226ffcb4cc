// Misuse of the hal module from bytecode is a trap with a message naming the
// export, the argument and the bytecode location — never undefined
// behaviour (these run under ASan/UBSan).
#include <stdlib.h>

#include "kiln/compiler/assembler.h"
#include "kiln/session.h"
#include "kiln_test.h"

// Assembles `source`, runs its export `f` (no arguments, no results) on the
// default device and returns the status.
static kiln_status_t kiln_run_program(const char* source) {
  kiln_byte_buffer_t bytes;
  kiln_byte_buffer_init(&bytes, kiln_allocator_system());
  kiln_status_t status = kiln_assembler_assemble(
      kiln_make_cstring_view(source), "misuse.kasm", kiln_allocator_system(),
      &bytes);
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  const char* device = getenv("KILN_TEST_DEVICE");
  if (device) options.device_uri = device;
  kiln_session_t* session = NULL;
  if (!status) status = kiln_session_create(&options, &session);
  if (!status) {
    status = kiln_session_load_module_memory(session, kiln_byte_buffer_span(&bytes),
                                             "misuse.kasm");
  }
  kiln_vm_function_t f;
  if (!status) status = kiln_session_lookup(session, "f", &f);
  if (!status) status = kiln_session_invoke(session, f, NULL, 0, NULL, 0);
  if (session) {
    KILN_EXPECT_EQ(kiln_hal_device_validation_message_count(
                       kiln_session_device(session)), 0);
  }
  kiln_session_destroy(session);
  kiln_byte_buffer_deinit(&bytes);
  return status;
}

KILN_TEST(HalModuleMisuse, NullAndWrongTypedRefs) {
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT,
      "argument 0 of hal.buffer.length: expected a hal.buffer ref, got null",
      kiln_run_program("import hal.buffer.length \"r_I\"\n"
                       "func f \"v_v\"\n  ref.null r0\n"
                       "  call.import hal.buffer.length r0 -> I0\n  return\nend\n"
                       "export f\n"));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT,
      "expected a hal.buffer ref, got vm.list",
      kiln_run_program("import hal.buffer.length \"r_I\"\n"
                       "func f \"v_v\"\n  const.i32 i0 1\n  list.alloc r0 i32 i0\n"
                       "  call.import hal.buffer.length r0 -> I2\n  return\nend\n"
                       "export f\n"));
}

// A device buffer of 64 bytes in r1, a command buffer in r2.
#define KILN_PRELUDE                                                        \
  "import hal.device \"v_r\"\nimport hal.buffer.allocate \"riiI_r\"\n"       \
  "import hal.command_buffer.create \"ri_r\"\n"                            \
  "import hal.command_buffer.copy \"rrIrII_v\"\n"                          \
  "import hal.command_buffer.fill \"rrIIii_v\"\n"                          \
  "import hal.buffer_view.create \"rIir_r\"\n"                             \
  "func f \"v_v\"\n  call.import hal.device -> r0\n  const.i32 i0 0\n"       \
  "  const.i64 I2 64\n  call.import hal.buffer.allocate r0 i0 i0 I2 -> r1\n" \
  "  call.import hal.command_buffer.create r0 i0 -> r2\n"

KILN_TEST(HalModuleMisuse, OutOfRangeCopyFillAndView) {
  // Copy 64 bytes starting at offset 32 of a 64-byte buffer.
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_OUT_OF_RANGE, "hal.command_buffer.copy",
      kiln_run_program(KILN_PRELUDE
                       "  const.i64 I4 32\n  const.i64 I6 0\n"
                       "  call.import hal.command_buffer.copy r2 r1 I4 r1 I6 I2\n"
                       "  return\nend\nexport f\n"));
  // A 3-byte fill pattern.
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "pattern length 3 is not 1, 2 or 4",
      kiln_run_program(KILN_PRELUDE
                       "  const.i64 I4 0\n  const.i32 i6 3\n"
                       "  call.import hal.command_buffer.fill r2 r1 I4 I2 i6 i6\n"
                       "  return\nend\nexport f\n"));
  // A 4x5xf32 view (80 bytes) of a 64-byte buffer.
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_OUT_OF_RANGE, "in hal.buffer_view.create",
      kiln_run_program(KILN_PRELUDE
                       "  const.i32 i4 2\n  list.alloc r3 i64 i4\n  list.resize r3 i4\n"
                       "  const.i64 I6 4\n  const.i64 I8 5\n  const.i32 i5 1\n"
                       "  list.set.i64 r3 i0 I6\n  list.set.i64 r3 i5 I8\n"
                       "  const.i64 I10 0\n"
                       "  call.import hal.buffer_view.create r1 I10 i4 r3 -> r4\n"
                       "  return\nend\nexport f\n"));
}

KILN_TEST(HalModuleMisuse, UnknownExecutableNamesIt) {
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_NOT_FOUND, "no executable named 'nope'",
      kiln_run_program("import hal.device \"v_r\"\n"
                       "import hal.executable.lookup \"rr_r\"\n"
                       "rodata name text \"nope\"\n"
                       "func f \"v_v\"\n  call.import hal.device -> r0\n"
                       "  buffer.rodata r1 name\n"
                       "  call.import hal.executable.lookup r0 r1 -> r2\n"
                       "  return\nend\nexport f\n"));
}

KILN_TEST(HalModuleMisuse, SignatureMismatchIsCaughtAtContextCreation) {
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "hal.buffer.length",
      kiln_run_program("import hal.buffer.length \"i_I\"\n"
                       "func f \"v_v\"\n  return\nend\nexport f\n"));
}
