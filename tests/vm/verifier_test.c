// One negative test per verifier rule, each asserting the status and its
// message; and a positive twin where a bound is exact (the frame allocator
// uses exactly the counts the verifier checks).
#include <stdio.h>
#include <string.h>

#include "kiln/compiler/module_writer.h"
#include "kiln_test.h"
#include "../../vm/superinstructions.h"
#include "vm_test_util.h"

typedef struct kiln_code_t {
  uint8_t bytes[256];
  uint32_t size;
} kiln_code_t;

static void op(kiln_code_t* c, kiln_vm_opcode_t opcode) { c->bytes[c->size++] = (uint8_t)opcode; }
static void u8(kiln_code_t* c, uint8_t v) { c->bytes[c->size++] = v; }
static void u16(kiln_code_t* c, uint16_t v) {
  u8(c, (uint8_t)v);
  u8(c, (uint8_t)(v >> 8));
}
static void u32(kiln_code_t* c, uint32_t v) {
  u16(c, (uint16_t)v);
  u16(c, (uint16_t)(v >> 16));
}
static void ret0(kiln_code_t* c) {
  op(c, KILN_VM_OP_RETURN);
  u8(c, 0);
}

// Loads a module: function 0 `main` with `signature`, the given frame and
// code; function 1 `callee` "iI_r" (regs 4, refs 1); one import
// host.add "ii_i"; one rodata; globals 4 words, 1 ref; one string.
static kiln_status_t kiln_load_code(const char* signature, uint16_t regs,
                                    uint16_t refs, const kiln_code_t* code) {
  kiln_module_writer_t* writer = NULL;
  KILN_RETURN_IF_ERROR(kiln_module_writer_create(kiln_allocator_system(), &writer));
  uint32_t ordinal = 0;
  kiln_status_t status = kiln_module_writer_add_import(
      writer, kiln_make_cstring_view("host.add"), kiln_make_cstring_view("ii_i"), 0,
      &ordinal);
  if (!status) status = kiln_module_writer_add_string(writer, kiln_make_cstring_view("s"), &ordinal);
  if (!status) {
    status = kiln_module_writer_add_rodata(writer, kiln_make_cstring_view("d"),
                                           kiln_make_const_byte_span("abcd", 4), 16,
                                           KILN_MODULE_WRITER_COMPRESSION_NONE, &ordinal);
  }
  if (!status) status = kiln_module_writer_set_globals(writer, 4, 1);
  if (!status) {
    status = kiln_module_writer_declare_function(writer, kiln_make_cstring_view("main"),
                                                 kiln_make_cstring_view(signature), &ordinal);
  }
  if (!status) {
    status = kiln_module_writer_define_function(
        writer, 0, regs, refs, kiln_make_const_byte_span(code->bytes, code->size));
  }
  if (!status) {
    status = kiln_module_writer_declare_function(writer, kiln_make_cstring_view("callee"),
                                                 kiln_make_cstring_view("iI_r"), &ordinal);
  }
  if (!status) {
    kiln_code_t body = {{0}, 0};
    op(&body, KILN_VM_OP_RETURN);
    u8(&body, 1);
    u16(&body, 0);
    status = kiln_module_writer_define_function(writer, 1, 4, 1,
                                                kiln_make_const_byte_span(body.bytes, body.size));
  }
  kiln_byte_buffer_t bytes;
  kiln_byte_buffer_init(&bytes, kiln_allocator_system());
  if (!status) status = kiln_module_writer_finish(writer, &bytes);
  kiln_module_writer_destroy(writer);
  kiln_vm_instance_t* instance = NULL;
  if (!status) status = kiln_vm_instance_create(kiln_allocator_system(), &instance);
  kiln_vm_module_t* module = NULL;
  if (!status) {
    status = kiln_vm_module_load_from_memory(instance, kiln_byte_buffer_span(&bytes),
                                             "verify.kiln", NULL, &module);
  }
  kiln_vm_module_release(module);
  kiln_vm_instance_destroy(instance);
  kiln_byte_buffer_deinit(&bytes);
  return status;
}

KILN_TEST(Verifier, AcceptsValidCode) {
  kiln_code_t c = {{0}, 0};
  op(&c, KILN_VM_OP_CONST_I32); u16(&c, 2); u32(&c, 5);  // last register: exact bound
  ret0(&c);
  KILN_EXPECT_OK(kiln_load_code("v_v", 3, 0, &c));
}

KILN_TEST(Verifier, UnknownOpcode) {
  kiln_code_t c = {{0}, 0};
  u8(&c, 0xFE);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "unknown opcode 0xfe; in function 0 'main' at bytecode offset 0",
                             kiln_load_code("v_v", 1, 0, &c));
}

KILN_TEST(Verifier, InternalSuperinstructionOpcodes) {
  // The loader writes these into its private copy only; a file holding one
  // is rejected, even with operands that would make the fused op valid.
  KILN_EXPECT_GT((uint32_t)KILN_VM_OP_INTERNAL_END, (uint32_t)KILN_VM_OP_COUNT);
  for (uint32_t opcode = KILN_VM_OP_COUNT; opcode < KILN_VM_OP_INTERNAL_END; ++opcode) {
    kiln_code_t c = {{0}, 0};
    u8(&c, (uint8_t)opcode); u16(&c, 0); u16(&c, 0); u16(&c, 0); u32(&c, 0);
    op(&c, KILN_VM_OP_COND_BR); u16(&c, 0); u32(&c, 0); u32(&c, 0);
    char expected[160];
    snprintf(expected, sizeof(expected),
             "opcode 0x%02x is an internal superinstruction of the interpreter, never "
             "valid in a module; in function 0 'main' at bytecode offset 0",
             opcode);
    KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, expected,
                               kiln_load_code("v_v", 4, 0, &c));
  }
  // The first byte past them is merely unknown.
  kiln_code_t c = {{0}, 0};
  u8(&c, (uint8_t)KILN_VM_OP_INTERNAL_END);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "unknown opcode",
                             kiln_load_code("v_v", 1, 0, &c));
}

KILN_TEST(Verifier, OperandPastFunctionEnd) {
  kiln_code_t c = {{0}, 0};
  op(&c, KILN_VM_OP_CONST_I32); u16(&c, 0); u16(&c, 0);  // imm32 cut short
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "operand at offset 3 runs past the end of the function (5 bytes)",
                             kiln_load_code("v_v", 1, 0, &c));
}

KILN_TEST(Verifier, RegisterOutOfRangeAtExactBound) {
  kiln_code_t c = {{0}, 0};
  op(&c, KILN_VM_OP_CONST_I32); u16(&c, 3); u32(&c, 5);
  ret0(&c);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "register i3 is out of range (frame has 3 32-bit registers)",
                             kiln_load_code("v_v", 3, 0, &c));
}

KILN_TEST(Verifier, Unaligned64BitRegister) {
  kiln_code_t c = {{0}, 0};
  op(&c, KILN_VM_OP_CONST_I64); u16(&c, 1); u32(&c, 0); u32(&c, 0);
  ret0(&c);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "64-bit register i1 is not even-aligned",
                             kiln_load_code("v_v", 4, 0, &c));
}

KILN_TEST(Verifier, PairPastFrameEnd) {
  kiln_code_t c = {{0}, 0};
  op(&c, KILN_VM_OP_CONST_I64); u16(&c, 2); u32(&c, 0); u32(&c, 0);
  ret0(&c);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "64-bit register pair i2:i3 is out of range (frame has 3",
                             kiln_load_code("v_v", 3, 0, &c));
  KILN_EXPECT_OK(kiln_load_code("v_v", 4, 0, &c));
}

KILN_TEST(Verifier, RefRegisterOutOfRange) {
  kiln_code_t c = {{0}, 0};
  op(&c, KILN_VM_OP_REF_NULL); u16(&c, 2);
  ret0(&c);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "ref register r2 is out of range (frame has 2 ref registers)",
                             kiln_load_code("v_v", 0, 2, &c));
}

KILN_TEST(Verifier, BranchIntoInstructionMiddle) {
  kiln_code_t c = {{0}, 0};
  op(&c, KILN_VM_OP_BR); u32(&c, 2);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "branch target 2 is not the start of an instruction",
                             kiln_load_code("v_v", 0, 0, &c));
}

KILN_TEST(Verifier, BranchOutsideFunction) {
  kiln_code_t c = {{0}, 0};
  op(&c, KILN_VM_OP_COND_BR); u16(&c, 0); u32(&c, 0); u32(&c, 1000);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "branch target 1000 is not the start of an instruction in "
                             "this function (11 bytes)",
                             kiln_load_code("v_v", 1, 0, &c));
}

KILN_TEST(Verifier, BranchTableTargets) {
  kiln_code_t c = {{0}, 0};
  op(&c, KILN_VM_OP_BR_TABLE); u16(&c, 0); u16(&c, 1); u32(&c, 0); u32(&c, 7);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "branch target 7 is not the start",
                             kiln_load_code("v_v", 1, 0, &c));
  kiln_code_t t = {{0}, 0};
  op(&t, KILN_VM_OP_BR_TABLE); u16(&t, 0); u16(&t, 5); u32(&t, 0);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "runs past the end of the function",
                             kiln_load_code("v_v", 1, 0, &t));
}

KILN_TEST(Verifier, CallTargetOutOfRange) {
  kiln_code_t c = {{0}, 0};
  op(&c, KILN_VM_OP_CALL); u32(&c, 2); u8(&c, 0); u8(&c, 0);
  ret0(&c);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "function ordinal 2 is out of range (2 functions)",
                             kiln_load_code("v_v", 4, 1, &c));
}

KILN_TEST(Verifier, ImportOrdinalOutOfRange) {
  kiln_code_t c = {{0}, 0};
  op(&c, KILN_VM_OP_CALL_IMPORT); u32(&c, 1); u8(&c, 0); u8(&c, 0);
  ret0(&c);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "import ordinal 1 is out of range (1 imports)",
                             kiln_load_code("v_v", 4, 1, &c));
}

KILN_TEST(Verifier, CallArgumentCountMismatch) {
  kiln_code_t c = {{0}, 0};
  op(&c, KILN_VM_OP_CALL_IMPORT); u32(&c, 0); u8(&c, 1); u16(&c, 0); u8(&c, 1); u16(&c, 0);
  ret0(&c);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "call argument list has 1 registers, the signature needs 2",
                             kiln_load_code("v_v", 4, 1, &c));
}

KILN_TEST(Verifier, CallArgumentBankAndAlignment) {
  // callee "iI_r": the I argument must be an even pair, the result a ref.
  kiln_code_t c = {{0}, 0};
  op(&c, KILN_VM_OP_CALL); u32(&c, 1); u8(&c, 2); u16(&c, 0); u16(&c, 1); u8(&c, 1); u16(&c, 0);
  ret0(&c);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "64-bit register i1 is not even-aligned",
                             kiln_load_code("v_v", 4, 1, &c));
  kiln_code_t d = {{0}, 0};
  op(&d, KILN_VM_OP_CALL); u32(&d, 1); u8(&d, 2); u16(&d, 0); u16(&d, 2); u8(&d, 1); u16(&d, 1);
  ret0(&d);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "ref register r1 is out of range (frame has 1 ref registers)",
                             kiln_load_code("v_v", 4, 1, &d));
}

KILN_TEST(Verifier, ReturnListMismatch) {
  kiln_code_t c = {{0}, 0};
  ret0(&c);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "return list has 0 registers, the signature needs 1",
                             kiln_load_code("v_i", 1, 0, &c));
}

KILN_TEST(Verifier, RodataOrdinal) {
  kiln_code_t c = {{0}, 0};
  op(&c, KILN_VM_OP_BUFFER_RODATA); u16(&c, 0); u32(&c, 1);
  ret0(&c);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "rodata ordinal 1 is out of range (1 rodatas)",
                             kiln_load_code("v_v", 0, 1, &c));
}

KILN_TEST(Verifier, GlobalOrdinals) {
  kiln_code_t c = {{0}, 0};
  op(&c, KILN_VM_OP_GLOBAL_LOAD_I32); u16(&c, 0); u32(&c, 4);
  ret0(&c);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "global word ordinal 4 is out of range (4 global words)",
                             kiln_load_code("v_v", 2, 1, &c));
  kiln_code_t d = {{0}, 0};
  op(&d, KILN_VM_OP_GLOBAL_LOAD_I64); u16(&d, 0); u32(&d, 3);
  ret0(&d);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "64-bit global slot 3 is not even-aligned",
                             kiln_load_code("v_v", 2, 1, &d));
  kiln_code_t e = {{0}, 0};
  op(&e, KILN_VM_OP_GLOBAL_STORE_REF); u32(&e, 1); u16(&e, 0);
  ret0(&e);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "global ref ordinal 1 is out of range (1 global refs)",
                             kiln_load_code("v_v", 2, 1, &e));
}

KILN_TEST(Verifier, StringOrdinal) {
  kiln_code_t c = {{0}, 0};
  op(&c, KILN_VM_OP_FAIL); u32(&c, 999);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "string ordinal 999 is out of range",
                             kiln_load_code("v_v", 0, 0, &c));
}

KILN_TEST(Verifier, ListElementType) {
  kiln_code_t c = {{0}, 0};
  op(&c, KILN_VM_OP_LIST_ALLOC); u16(&c, 0); u8(&c, 3); u16(&c, 0);
  ret0(&c);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "list element type 3 is unknown",
                             kiln_load_code("v_v", 1, 1, &c));
}

KILN_TEST(Verifier, MustEndInTerminator) {
  kiln_code_t c = {{0}, 0};
  op(&c, KILN_VM_OP_MOV_I32); u16(&c, 0); u16(&c, 0);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "function ends with 'mov.i32', which is not a terminator",
                             kiln_load_code("v_v", 1, 0, &c));
}

KILN_TEST(Verifier, EmptyFunction) {
  kiln_code_t c = {{0}, 0};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "function has no bytecode",
                             kiln_load_code("v_v", 0, 0, &c));
}

KILN_TEST(Verifier, FrameSizeLimit) {
  kiln_code_t c = {{0}, 0};
  ret0(&c);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "frame of 8193 32-bit and 0 ref registers exceeds the limit",
                             kiln_load_code("v_v", 8193, 0, &c));
  KILN_EXPECT_OK(kiln_load_code("v_v", 8192, 0, &c));
}

KILN_TEST(Verifier, ArgumentsMustFitFrame) {
  kiln_code_t c = {{0}, 0};
  ret0(&c);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "arguments of signature 'iI_v' need 4 32-bit and 0 ref registers, "
                             "the frame has 3 and 0",
                             kiln_load_code("iI_v", 3, 0, &c));
}

KILN_TEST(Verifier, IsaSizesMatchOperandKinds) {
  // The interpreter advances by the table's size column; it must equal the
  // sum of the operand sizes the verifier decodes.
  for (uint32_t i = 0; i < KILN_VM_OP_COUNT; ++i) {
    const kiln_vm_op_info_t* info = &kiln_vm_op_infos[i];
    uint32_t size = 1;
    bool variable = false;
    for (const char* kind = info->operands; *kind; ++kind) {
      if (strchr("cmTR", *kind)) variable = true;
      size += kiln_vm_operand_size(*kind);
    }
    KILN_EXPECT_EQ(info->size, variable ? 0u : size);
    KILN_EXPECT_EQ(kiln_vm_op_lookup(info->mnemonic, (uint32_t)strlen(info->mnemonic)), i);
  }
}
