// Load-time superinstructions: internal opcodes the loader writes into a
// private copy of verified bytecode (vm/superinstructions.c) and only the
// interpreter executes. They are numbered after the public ISA, so a module
// file can never contain one: the verifier rejects any opcode byte
// >= KILN_VM_OP_COUNT before the rewrite runs.
//
// A rewrite only replaces the opcode byte of the first instruction of a
// sequence; operands and the following instructions stay in place, so
// branches into the middle of a sequence, trap offsets and disassembly of
// the original are unaffected. Each fused handler does exactly what the
// sequence does (every destination register is written, fuel is used once
// at the cond_br's offset) and then jumps.
//
//   <cmp>_BR         <cmp> d a b ; cond_br d T F
//   <add>_<cmp>_BR   <add> s ... ; <i32 cmp> d s b ; cond_br d T F
//                    (the compare reads the add's destination first)
#ifndef KILN_VM_SUPERINSTRUCTIONS_H_
#define KILN_VM_SUPERINSTRUCTIONS_H_

#include <stdint.h>

#include "kiln/vm/isa.h"

// The compares a cond_br can fuse with: X(arg, name, operand kind, result
// expression over a and b). The interpreter derives both the plain and the
// fused handler from these rows, so the two cannot disagree. Kinds:
// I32 / I64 / F32 / F64 two operands, I32Z / I64Z one (a == 0).
#define KILN_VM_I32_COMPARES(X, arg)              \
  X(arg, EQ_I32, I32, a == b)                     \
  X(arg, NE_I32, I32, a != b)                     \
  X(arg, LT_I32_S, I32, (int32_t)a < (int32_t)b)  \
  X(arg, LT_I32_U, I32, a < b)                    \
  X(arg, LE_I32_S, I32, (int32_t)a <= (int32_t)b) \
  X(arg, LE_I32_U, I32, a <= b)

#define KILN_VM_COMPARES(X, arg)                  \
  KILN_VM_I32_COMPARES(X, arg)                    \
  X(arg, EQZ_I32, I32Z, a == 0)                   \
  X(arg, EQ_I64, I64, a == b)                     \
  X(arg, NE_I64, I64, a != b)                     \
  X(arg, LT_I64_S, I64, (int64_t)a < (int64_t)b)  \
  X(arg, LT_I64_U, I64, a < b)                    \
  X(arg, LE_I64_S, I64, (int64_t)a <= (int64_t)b) \
  X(arg, LE_I64_U, I64, a <= b)                   \
  X(arg, EQZ_I64, I64Z, a == 0)                   \
  X(arg, EQ_F32, F32, a == b)                     \
  X(arg, NE_F32, F32, a != b)                     \
  X(arg, LT_F32, F32, a < b)                      \
  X(arg, LE_F32, F32, a <= b)                     \
  X(arg, EQ_F64, F64, a == b)                     \
  X(arg, NE_F64, F64, a != b)                     \
  X(arg, LT_F64, F64, a < b)                      \
  X(arg, LE_F64, F64, a <= b)

// The counted-loop step: an i32 add (register or immediate) followed by an
// i32 compare and a cond_br. X(add, cmp, kind, expr) per pair.
#define KILN_VM_STEP_ADDS(X)                 \
  KILN_VM_I32_COMPARES(X, ADD_I32)           \
  KILN_VM_I32_COMPARES(X, ADDI_I32)

enum {
  KILN_VM_OP_FUSED_BEFORE_ = KILN_VM_OP_COUNT - 1,
#define KILN_VM_FUSED_CMP_ENUM(arg, cmp, kind, expr) KILN_VM_OP_##cmp##_BR,
  KILN_VM_COMPARES(KILN_VM_FUSED_CMP_ENUM, _)
#undef KILN_VM_FUSED_CMP_ENUM
#define KILN_VM_FUSED_STEP_ENUM(add, cmp, kind, expr) KILN_VM_OP_##add##_##cmp##_BR,
  KILN_VM_STEP_ADDS(KILN_VM_FUSED_STEP_ENUM)
#undef KILN_VM_FUSED_STEP_ENUM
  // One past the last internal opcode; the dispatch table's size.
  KILN_VM_OP_INTERNAL_END,
};

_Static_assert(KILN_VM_OP_INTERNAL_END <= 256,
               "opcodes are one byte: internal superinstructions must fit");

#endif  // KILN_VM_SUPERINSTRUCTIONS_H_
