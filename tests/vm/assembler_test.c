// Assembler errors name the line and the token.
#include "kiln_test.h"
#include "vm_test_util.h"

static kiln_status_t kiln_assemble_only(const char* source) {
  kiln_byte_buffer_t out;
  kiln_status_t status = kiln_vm_test_assemble(source, &out);
  if (!status) kiln_byte_buffer_deinit(&out);
  return status;
}

KILN_TEST(Assembler, ErrorsNameLineAndToken) {
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "test.kasm:2: unknown instruction 'frob.i32'",
                             kiln_assemble_only("func f \"v_v\"\n  frob.i32 i0\n  return\nend\n"));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "test.kasm:2: expected a register 'I<n>', got 'i0'",
                             kiln_assemble_only("func f \"v_v\"\n  const.i64 i0 1\n  return\nend\n"));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "test.kasm:2: unknown label 'nowhere'",
                             kiln_assemble_only("func f \"v_v\"\n  br nowhere\nend\n"));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "test.kasm:3: call argument list has 1 registers, the signature needs 2",
                             kiln_assemble_only("import host.add \"ii_i\"\nfunc f \"v_v\"\n"
                                                "  call.import host.add i0 -> i1\n  return\nend\n"));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "test.kasm:1: bad signature 'ix_v'",
                             kiln_assemble_only("func f \"ix_v\"\nend\n"));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "missing 'end' at the end of the file",
                             kiln_assemble_only("func f \"v_v\"\n  return\n"));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "test.kasm:1: unterminated string",
                             kiln_assemble_only("module \"abc\n"));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "export of unknown function 'g'",
                             kiln_assemble_only("export g\n"));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "test.kasm:2: 4294967296 is out of range",
                             kiln_assemble_only("func f \"v_v\"\n  const.i32 i0 4294967296\n  return\nend\n"));
}
