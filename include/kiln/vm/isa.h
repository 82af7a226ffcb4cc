// The instruction set: one table from which the interpreter, the verifier,
// the assembler and the disassembler derive. Adding an op is one row here
// plus its handler in vm/interpreter.c (a missing handler fails to compile).
//
// Encoding: one opcode byte, then the operands in order, little-endian, no
// padding. Operand kinds (one character each in the table):
//   i  u16  register of the 32-bit bank holding an i32 or f32
//   l  u16  even register of the 32-bit bank starting an i64/f64 pair
//   r  u16  register of the ref bank
//   k  u32  i32 immediate          K  u64  i64 immediate
//   f  u32  f32 immediate (bits)   F  u64  f64 immediate (bits)
//   L  u32  branch target: bytecode offset inside the function
//   c  u32  function ordinal, then a call list (below)
//   m  u32  import ordinal, then a call list
//   d  u32  rodata ordinal         s  u32  string ordinal
//   g  u32  32-bit global slot     G  u32  even global slot of a 64-bit pair
//   h  u32  ref global slot
//   t  u8   list element type (KILN_VM_LIST_*)
//   T  u16 count, count x u32 targets, u32 default target (br_table)
//   R  u8 count, count x u16 registers typed by the function's results
// A call list is: u8 argument count, u16 registers typed by the callee's
// arguments, u8 result count, u16 registers typed by the callee's results.
//
// Opcodes from KILN_VM_OP_COUNT up are reserved: the loader writes internal
// superinstructions there in its private copy of verified code
// (vm/superinstructions.h); the verifier rejects them in a module.
#ifndef KILN_VM_ISA_H_
#define KILN_VM_ISA_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_VM_LIST_I32 0u
#define KILN_VM_LIST_I64 1u
#define KILN_VM_LIST_REF 2u
#define KILN_VM_LIST_TYPE_COUNT 3u

// X(ENUM, "mnemonic", "operand kinds", terminator, encoded size or 0 when
// the size depends on operands)
#define KILN_VM_ISA(X)                                   \
  /* constants and moves */                              \
  X(CONST_I32, "const.i32", "ik", 0, 7)                     \
  X(CONST_I64, "const.i64", "lK", 0, 11)                     \
  X(CONST_F32, "const.f32", "if", 0, 7)                     \
  X(CONST_F64, "const.f64", "lF", 0, 11)                     \
  X(MOV_I32, "mov.i32", "ii", 0, 5)                         \
  X(MOV_I64, "mov.i64", "ll", 0, 5)                         \
  X(MOV_REF, "mov.ref", "rr", 0, 5)                         \
  X(MOVE_REF, "move.ref", "rr", 0, 5)                       \
  X(REF_NULL, "ref.null", "r", 0, 3)                        \
  X(REF_IS_NULL, "ref.is_null", "ir", 0, 5)                 \
  X(REF_EQ, "ref.eq", "irr", 0, 7)                          \
  /* i32 */                                              \
  X(ADD_I32, "add.i32", "iii", 0, 7)                        \
  X(SUB_I32, "sub.i32", "iii", 0, 7)                        \
  X(MUL_I32, "mul.i32", "iii", 0, 7)                        \
  X(DIV_I32_S, "div.i32.s", "iii", 0, 7)                    \
  X(DIV_I32_U, "div.i32.u", "iii", 0, 7)                    \
  X(REM_I32_S, "rem.i32.s", "iii", 0, 7)                    \
  X(REM_I32_U, "rem.i32.u", "iii", 0, 7)                    \
  X(AND_I32, "and.i32", "iii", 0, 7)                        \
  X(OR_I32, "or.i32", "iii", 0, 7)                          \
  X(XOR_I32, "xor.i32", "iii", 0, 7)                        \
  X(SHL_I32, "shl.i32", "iii", 0, 7)                        \
  X(SHR_I32_S, "shr.i32.s", "iii", 0, 7)                    \
  X(SHR_I32_U, "shr.i32.u", "iii", 0, 7)                    \
  X(MIN_I32_S, "min.i32.s", "iii", 0, 7)                    \
  X(MIN_I32_U, "min.i32.u", "iii", 0, 7)                    \
  X(MAX_I32_S, "max.i32.s", "iii", 0, 7)                    \
  X(MAX_I32_U, "max.i32.u", "iii", 0, 7)                    \
  X(NEG_I32, "neg.i32", "ii", 0, 5)                         \
  X(ABS_I32, "abs.i32", "ii", 0, 5)                         \
  X(NOT_I32, "not.i32", "ii", 0, 5)                         \
  X(ADDI_I32, "addi.i32", "iik", 0, 9)                      \
  X(EQ_I32, "eq.i32", "iii", 0, 7)                          \
  X(NE_I32, "ne.i32", "iii", 0, 7)                          \
  X(LT_I32_S, "lt.i32.s", "iii", 0, 7)                      \
  X(LT_I32_U, "lt.i32.u", "iii", 0, 7)                      \
  X(LE_I32_S, "le.i32.s", "iii", 0, 7)                      \
  X(LE_I32_U, "le.i32.u", "iii", 0, 7)                      \
  X(EQZ_I32, "eqz.i32", "ii", 0, 5)                         \
  /* i64 */                                              \
  X(ADD_I64, "add.i64", "lll", 0, 7)                        \
  X(SUB_I64, "sub.i64", "lll", 0, 7)                        \
  X(MUL_I64, "mul.i64", "lll", 0, 7)                        \
  X(DIV_I64_S, "div.i64.s", "lll", 0, 7)                    \
  X(DIV_I64_U, "div.i64.u", "lll", 0, 7)                    \
  X(REM_I64_S, "rem.i64.s", "lll", 0, 7)                    \
  X(REM_I64_U, "rem.i64.u", "lll", 0, 7)                    \
  X(AND_I64, "and.i64", "lll", 0, 7)                        \
  X(OR_I64, "or.i64", "lll", 0, 7)                          \
  X(XOR_I64, "xor.i64", "lll", 0, 7)                        \
  X(SHL_I64, "shl.i64", "lll", 0, 7)                        \
  X(SHR_I64_S, "shr.i64.s", "lll", 0, 7)                    \
  X(SHR_I64_U, "shr.i64.u", "lll", 0, 7)                    \
  X(MIN_I64_S, "min.i64.s", "lll", 0, 7)                    \
  X(MIN_I64_U, "min.i64.u", "lll", 0, 7)                    \
  X(MAX_I64_S, "max.i64.s", "lll", 0, 7)                    \
  X(MAX_I64_U, "max.i64.u", "lll", 0, 7)                    \
  X(NEG_I64, "neg.i64", "ll", 0, 5)                         \
  X(ABS_I64, "abs.i64", "ll", 0, 5)                         \
  X(NOT_I64, "not.i64", "ll", 0, 5)                         \
  X(EQ_I64, "eq.i64", "ill", 0, 7)                          \
  X(NE_I64, "ne.i64", "ill", 0, 7)                          \
  X(LT_I64_S, "lt.i64.s", "ill", 0, 7)                      \
  X(LT_I64_U, "lt.i64.u", "ill", 0, 7)                      \
  X(LE_I64_S, "le.i64.s", "ill", 0, 7)                      \
  X(LE_I64_U, "le.i64.u", "ill", 0, 7)                      \
  X(EQZ_I64, "eqz.i64", "il", 0, 5)                         \
  /* f32 */                                              \
  X(ADD_F32, "add.f32", "iii", 0, 7)                        \
  X(SUB_F32, "sub.f32", "iii", 0, 7)                        \
  X(MUL_F32, "mul.f32", "iii", 0, 7)                        \
  X(DIV_F32, "div.f32", "iii", 0, 7)                        \
  X(MIN_F32, "min.f32", "iii", 0, 7)                        \
  X(MAX_F32, "max.f32", "iii", 0, 7)                        \
  X(NEG_F32, "neg.f32", "ii", 0, 5)                         \
  X(ABS_F32, "abs.f32", "ii", 0, 5)                         \
  X(SQRT_F32, "sqrt.f32", "ii", 0, 5)                       \
  X(EQ_F32, "eq.f32", "iii", 0, 7)                          \
  X(NE_F32, "ne.f32", "iii", 0, 7)                          \
  X(LT_F32, "lt.f32", "iii", 0, 7)                          \
  X(LE_F32, "le.f32", "iii", 0, 7)                          \
  /* f64 */                                              \
  X(ADD_F64, "add.f64", "lll", 0, 7)                        \
  X(SUB_F64, "sub.f64", "lll", 0, 7)                        \
  X(MUL_F64, "mul.f64", "lll", 0, 7)                        \
  X(DIV_F64, "div.f64", "lll", 0, 7)                        \
  X(MIN_F64, "min.f64", "lll", 0, 7)                        \
  X(MAX_F64, "max.f64", "lll", 0, 7)                        \
  X(NEG_F64, "neg.f64", "ll", 0, 5)                         \
  X(ABS_F64, "abs.f64", "ll", 0, 5)                         \
  X(SQRT_F64, "sqrt.f64", "ll", 0, 5)                       \
  X(EQ_F64, "eq.f64", "ill", 0, 7)                          \
  X(NE_F64, "ne.f64", "ill", 0, 7)                          \
  X(LT_F64, "lt.f64", "ill", 0, 7)                          \
  X(LE_F64, "le.f64", "ill", 0, 7)                          \
  /* conversions (float->int saturate; NaN gives 0) */   \
  X(SEXT_I32_I64, "sext.i32.i64", "li", 0, 5)               \
  X(ZEXT_I32_I64, "zext.i32.i64", "li", 0, 5)               \
  X(TRUNC_I64_I32, "trunc.i64.i32", "il", 0, 5)             \
  X(CVT_I32_F32_S, "cvt.i32.f32.s", "ii", 0, 5)             \
  X(CVT_I32_F32_U, "cvt.i32.f32.u", "ii", 0, 5)             \
  X(CVT_F32_I32_S, "cvt.f32.i32.s", "ii", 0, 5)             \
  X(CVT_F32_I32_U, "cvt.f32.i32.u", "ii", 0, 5)             \
  X(CVT_I64_F64_S, "cvt.i64.f64.s", "ll", 0, 5)             \
  X(CVT_F64_I64_S, "cvt.f64.i64.s", "ll", 0, 5)             \
  X(CVT_I32_F64_S, "cvt.i32.f64.s", "li", 0, 5)             \
  X(CVT_F64_I32_S, "cvt.f64.i32.s", "il", 0, 5)             \
  X(CVT_F32_F64, "cvt.f32.f64", "li", 0, 5)                 \
  X(CVT_F64_F32, "cvt.f64.f32", "il", 0, 5)                 \
  /* select: dst = cond ? a : b */                       \
  X(SELECT_I32, "select.i32", "iiii", 0, 9)                 \
  X(SELECT_I64, "select.i64", "lill", 0, 9)                 \
  X(SELECT_REF, "select.ref", "rirr", 0, 9)                 \
  /* control */                                          \
  X(BR, "br", "L", 1, 5)                                    \
  X(COND_BR, "cond_br", "iLL", 1, 11)                        \
  X(BR_TABLE, "br_table", "iT", 1, 0)                       \
  X(CALL, "call", "c", 0, 0)                                \
  X(CALL_IMPORT, "call.import", "m", 0, 0)                  \
  X(RETURN, "return", "R", 1, 0)                            \
  X(FAIL, "fail", "s", 1, 5)                                \
  /* lists */                                            \
  X(LIST_ALLOC, "list.alloc", "rti", 0, 6)                  \
  X(LIST_SIZE, "list.size", "ir", 0, 5)                     \
  X(LIST_RESIZE, "list.resize", "ri", 0, 5)                 \
  X(LIST_GET_I32, "list.get.i32", "iri", 0, 7)              \
  X(LIST_SET_I32, "list.set.i32", "rii", 0, 7)              \
  X(LIST_GET_I64, "list.get.i64", "lri", 0, 7)              \
  X(LIST_SET_I64, "list.set.i64", "ril", 0, 7)              \
  X(LIST_GET_REF, "list.get.ref", "rri", 0, 7)              \
  X(LIST_SET_REF, "list.set.ref", "rir", 0, 7)              \
  /* byte buffers (offsets and lengths are i64) */       \
  X(BUFFER_RODATA, "buffer.rodata", "rd", 0, 7)             \
  X(BUFFER_ALLOC, "buffer.alloc", "rl", 0, 5)               \
  X(BUFFER_LENGTH, "buffer.length", "lr", 0, 5)             \
  X(BUFFER_LOAD_I8_S, "buffer.load.i8.s", "irl", 0, 7)      \
  X(BUFFER_LOAD_I8_U, "buffer.load.i8.u", "irl", 0, 7)      \
  X(BUFFER_LOAD_I16_S, "buffer.load.i16.s", "irl", 0, 7)    \
  X(BUFFER_LOAD_I16_U, "buffer.load.i16.u", "irl", 0, 7)    \
  X(BUFFER_LOAD_I32, "buffer.load.i32", "irl", 0, 7)        \
  X(BUFFER_LOAD_F32, "buffer.load.f32", "irl", 0, 7)        \
  X(BUFFER_LOAD_I64, "buffer.load.i64", "lrl", 0, 7)        \
  X(BUFFER_LOAD_F64, "buffer.load.f64", "lrl", 0, 7)        \
  X(BUFFER_STORE_I8, "buffer.store.i8", "rli", 0, 7)        \
  X(BUFFER_STORE_I16, "buffer.store.i16", "rli", 0, 7)      \
  X(BUFFER_STORE_I32, "buffer.store.i32", "rli", 0, 7)      \
  X(BUFFER_STORE_F32, "buffer.store.f32", "rli", 0, 7)      \
  X(BUFFER_STORE_I64, "buffer.store.i64", "rll", 0, 7)      \
  X(BUFFER_STORE_F64, "buffer.store.f64", "rll", 0, 7)      \
  X(BUFFER_COPY, "buffer.copy", "rlrll", 0, 11)              \
  X(BUFFER_FILL, "buffer.fill", "rlli", 0, 9)               \
  /* module globals */                                   \
  X(GLOBAL_LOAD_I32, "global.load.i32", "ig", 0, 7)         \
  X(GLOBAL_STORE_I32, "global.store.i32", "gi", 0, 7)       \
  X(GLOBAL_LOAD_F32, "global.load.f32", "ig", 0, 7)         \
  X(GLOBAL_STORE_F32, "global.store.f32", "gi", 0, 7)       \
  X(GLOBAL_LOAD_I64, "global.load.i64", "lG", 0, 7)         \
  X(GLOBAL_STORE_I64, "global.store.i64", "Gl", 0, 7)       \
  X(GLOBAL_LOAD_REF, "global.load.ref", "rh", 0, 7)         \
  X(GLOBAL_STORE_REF, "global.store.ref", "hr", 0, 7)

typedef enum kiln_vm_opcode_e {
#define KILN_VM_ISA_ENUM(name, mnemonic, operands, terminator, size) \
  KILN_VM_OP_##name,
  KILN_VM_ISA(KILN_VM_ISA_ENUM)
#undef KILN_VM_ISA_ENUM
  KILN_VM_OP_COUNT,
} kiln_vm_opcode_t;

// Encoded sizes of the fixed-size ops, for the interpreter's handlers.
enum {
#define KILN_VM_ISA_SIZE(name, mnemonic, operands, terminator, size) \
  KILN_VM_SIZE_##name = size,
  KILN_VM_ISA(KILN_VM_ISA_SIZE)
#undef KILN_VM_ISA_SIZE
};

typedef struct kiln_vm_op_info_t {
  const char* mnemonic;
  const char* operands;  // operand kind characters, see above
  uint8_t terminator;    // control never falls through to the next op
  uint8_t size;          // encoded bytes; 0 for c m T R ops
} kiln_vm_op_info_t;

// Indexed by opcode; KILN_VM_OP_COUNT entries.
extern const kiln_vm_op_info_t kiln_vm_op_infos[KILN_VM_OP_COUNT];

// Opcode for a mnemonic, or KILN_VM_OP_COUNT.
kiln_vm_opcode_t kiln_vm_op_lookup(const char* mnemonic, uint32_t length);

// Bytes an operand kind takes, for the fixed-size kinds (0 for c m T R).
static inline uint32_t kiln_vm_operand_size(char kind) {
  switch (kind) {
    case 'i': case 'l': case 'r': return 2;
    case 'k': case 'f': case 'L': case 'd': case 's': case 'g': case 'G':
    case 'h': return 4;
    case 'K': case 'F': return 8;
    case 't': return 1;
    default: return 0;
  }
}

#ifdef __cplusplus
}
#endif

#endif  // KILN_VM_ISA_H_
