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

// The cpu module (host ops between GPU segments, docs/partitioning.md):
// every size, offset and ref of a hand-written call is checked before any
// memory is read or written. r1: a 64-byte device buffer (16 floats).
#define KILN_CPU_PRELUDE                                                    \
  "import hal.device \"v_r\"\nimport hal.buffer.allocate \"riiI_r\"\n"       \
  "import cpu.topk \"rIrIrIIIIIi_v\"\nimport cpu.nonzero \"rIirrII_I\"\n"    \
  "import cpu.nms \"rIrIrIIIIIffi_I\"\n"                                    \
  "import cpu.elementwise \"rIrIrIrIiir_v\"\n"                               \
  "func f \"v_v\"\n  call.import hal.device -> r0\n  const.i32 i0 0\n"       \
  "  const.i64 I2 64\n  call.import hal.buffer.allocate r0 i0 i0 I2 -> r1\n" \
  "  const.i64 I6 0\n  const.i64 I8 1\n  const.i64 I10 16\n"                 \
  "  const.i64 I12 1\n  const.i32 i16 1\n"

#define KILN_CPU_TOPK(x_offset, k)                                       \
  KILN_CPU_PRELUDE "  const.i64 I4 " #x_offset "\n  const.i64 I14 " #k "\n" \
                   "  call.import cpu.topk r1 I4 r1 I6 r1 I6 I8 I10 I12 I14 i16\n"

KILN_TEST(CpuOpsMisuse, TopKRangesAndCounts) {
  // 16 floats at offset 8 of a 64-byte buffer.
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_OUT_OF_RANGE,
      "argument 0 of cpu.topk: 16 elements of 4 bytes at offset 8 do not fit a buffer of 64 "
      "bytes",
      kiln_run_program(KILN_CPU_TOPK(8, 2) "  return\nend\nexport f\n"));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "cpu.topk: k 17 is larger than the axis (16)",
      kiln_run_program(KILN_CPU_TOPK(0, 17) "  return\nend\nexport f\n"));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "argument 9 (k) of cpu.topk is -1",
      kiln_run_program(KILN_CPU_TOPK(0, -1) "  return\nend\nexport f\n"));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_OUT_OF_RANGE, "argument 0 of cpu.topk: 16 elements of 4 bytes at offset -4",
      kiln_run_program(KILN_CPU_TOPK(-4, 2) "  return\nend\nexport f\n"));
  // Indices of 2 x int64 fit; 16 of them (k = 16) do not fit at offset 0
  // of the same 64-byte buffer: 128 bytes.
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_OUT_OF_RANGE, "argument 4 of cpu.topk: 16 elements of 8 bytes",
      kiln_run_program(KILN_CPU_TOPK(0, 16) "  return\nend\nexport f\n"));
  // A well-formed call on the buffer (zeros) runs.
  KILN_EXPECT_OK(kiln_run_program(KILN_CPU_TOPK(0, 2) "  return\nend\nexport f\n"));
}

KILN_TEST(CpuOpsMisuse, WrongRefsElementsAndFlags) {
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT,
      "argument 0 of cpu.topk: expected a hal.buffer ref, got hal.device",
      kiln_run_program(KILN_CPU_PRELUDE "  const.i64 I14 2\n"
                       "  call.import cpu.topk r0 I6 r1 I6 r1 I6 I8 I10 I12 I14 i16\n"
                       "  return\nend\nexport f\n"));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "cpu.topk: unknown flags 0x6",
      kiln_run_program(KILN_CPU_PRELUDE "  const.i64 I14 2\n  const.i32 i16 6\n"
                       "  call.import cpu.topk r1 I6 r1 I6 r1 I6 I8 I10 I12 I14 i16\n"
                       "  return\nend\nexport f\n"));
  // NonZero: element code 7, then dims given as an i32 list.
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "argument 2 (element) of cpu.nonzero is 7",
      kiln_run_program(KILN_CPU_PRELUDE "  const.i32 i17 7\n  list.alloc r2 i64 i16\n"
                       "  list.resize r2 i16\n"
                       "  call.import cpu.nonzero r1 I6 i17 r2 r1 I6 I10 -> I18\n"
                       "  return\nend\nexport f\n"));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "argument 3 (dims) of cpu.nonzero must be an i64 list",
      kiln_run_program(KILN_CPU_PRELUDE "  list.alloc r2 i32 i16\n  list.resize r2 i16\n"
                       "  call.import cpu.nonzero r1 I6 i0 r2 r1 I6 I10 -> I18\n"
                       "  return\nend\nexport f\n"));
  // NMS: a negative batch count, then 16 boxes (256 bytes) in 64.
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "argument 6 (batches) of cpu.nms is -1",
      kiln_run_program(KILN_CPU_PRELUDE "  const.i64 I14 -1\n  const.f32 i17 0.5\n"
                       "  call.import cpu.nms r1 I6 r1 I6 r1 I6 I14 I8 I8 I8 i17 i17 i0"
                       " -> I18\n  return\nend\nexport f\n"));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_OUT_OF_RANGE, "argument 0 of cpu.nms: 64 elements of 4 bytes",
      kiln_run_program(KILN_CPU_PRELUDE "  const.f32 i17 0.5\n"
                       "  call.import cpu.nms r1 I6 r1 I6 r1 I6 I8 I10 I8 I8 i17 i17 i0"
                       " -> I18\n  return\nend\nexport f\n"));
}

// A module importing a cpu op under another signature does not link.
KILN_TEST(CpuOpsMisuse, SignatureMismatchIsRefusedAtLink) {
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT,
      "imports 'cpu.topk' with signature 'r_v' but module 'cpu' exports it with signature "
      "'rIrIrIIIIIi_v'",
      kiln_run_program("import cpu.topk \"r_v\"\nfunc f \"v_v\"\n  ref.null r0\n"
                       "  call.import cpu.topk r0\n  return\nend\nexport f\n"));
}

// cpu.elementwise: the op code, the broadcast list and each operand's
// extent (its largest strided offset) are checked.
#define KILN_CPU_ELEMENTWISE(op, list_setup)                                       \
  KILN_CPU_PRELUDE list_setup "  const.i32 i17 " #op "\n  const.i32 i18 0\n"       \
  "  call.import cpu.elementwise r1 I6 r1 I6 r1 I6 r1 I6 i17 i18 r2\n"             \
  "  return\nend\nexport f\n"
// [rank 1, dim 16, strides 1 1 1] and [rank 1, dim 16, stride 2 for a].
#define KILN_CPU_LIST(stride_a)                                                    \
  "  const.i32 i19 5\n  list.alloc r2 i64 i19\n  list.resize r2 i19\n"             \
  "  const.i32 i19 0\n  list.set.i64 r2 i19 I8\n  const.i32 i19 1\n"               \
  "  list.set.i64 r2 i19 I10\n  const.i64 I20 " #stride_a "\n  const.i32 i19 2\n"  \
  "  list.set.i64 r2 i19 I20\n  const.i32 i19 3\n  list.set.i64 r2 i19 I8\n"      \
  "  const.i32 i19 4\n  list.set.i64 r2 i19 I8\n"

KILN_TEST(CpuOpsMisuse, ElementwiseOpsListsAndExtents) {
  KILN_EXPECT_OK(kiln_run_program(KILN_CPU_ELEMENTWISE(1, KILN_CPU_LIST(1))));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "argument 8 (op) of cpu.elementwise is 11",
      kiln_run_program(KILN_CPU_ELEMENTWISE(11, KILN_CPU_LIST(1))));
  // Operand a read with stride 2 over 16 elements: 31 floats in 64 bytes.
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_OUT_OF_RANGE, "argument 2 of cpu.elementwise: 31 elements of 4 bytes",
      kiln_run_program(KILN_CPU_ELEMENTWISE(1, KILN_CPU_LIST(2))));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "stride -1 of operand 0",
      kiln_run_program(KILN_CPU_ELEMENTWISE(1, KILN_CPU_LIST(-1))));
  // A list of the wrong length.
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "argument 10 (shape) of cpu.elementwise must be an i64 list",
      kiln_run_program(KILN_CPU_ELEMENTWISE(
          1, "  list.alloc r2 i64 i16\n  list.resize r2 i16\n  list.set.i64 r2 i0 I8\n")));
}
