// Builds the code the interpreter runs: a private, writable copy of every
// verified function's bytecode (the file or caller's bytes stay untouched,
// so dump and disassembly read the original) with fusable sequences
// rewritten to internal superinstructions (see superinstructions.h).
#include "superinstructions.h"

#include "internal.h"
#include "kiln/base/reader.h"
#include "kiln/base/size_math.h"

// Superinstruction for `compare; cond_br`, or 0 (never an internal opcode).
static uint32_t kiln_vm_fused_compare(uint8_t op) {
  switch (op) {
#define KILN_VM_FUSED_CMP_CASE(arg, cmp, kind, expr) \
  case KILN_VM_OP_##cmp:                             \
    return KILN_VM_OP_##cmp##_BR;
    KILN_VM_COMPARES(KILN_VM_FUSED_CMP_CASE, _)
#undef KILN_VM_FUSED_CMP_CASE
    default:
      return 0;
  }
}

// Superinstruction for `add; compare; cond_br`, or 0.
static uint32_t kiln_vm_fused_step(uint8_t add, uint8_t cmp) {
#define KILN_VM_FUSED_STEP_CASE(a, c, kind, expr)          \
  if (add == KILN_VM_OP_##a && cmp == KILN_VM_OP_##c) {  \
    return KILN_VM_OP_##a##_##c##_BR;                    \
  }
  KILN_VM_STEP_ADDS(KILN_VM_FUSED_STEP_CASE)
#undef KILN_VM_FUSED_STEP_CASE
  return 0;
}

// Encoded size of the verified instruction at `pc` (operands in bounds).
static uint32_t kiln_vm_instruction_size(const uint8_t* pc) {
  const kiln_vm_op_info_t* info = &kiln_vm_op_infos[pc[0]];
  if (info->size) return info->size;
  uint32_t p = 1;
  for (const char* kind = info->operands; *kind; ++kind) {
    switch (*kind) {
      case 'c':
      case 'm':
        p += 4;
        p += 1 + 2u * pc[p];  // arguments
        p += 1 + 2u * pc[p];  // results
        break;
      case 'T':
        p += 2 + 4u * ((uint32_t)kiln_load_le_u16(pc + p) + 1u);
        break;
      case 'R':
        p += 1 + 2u * pc[p];
        break;
      default:
        p += kiln_vm_operand_size(*kind);
        break;
    }
  }
  return p;
}

// True when the instruction at `at` (of `length` bytes in all) is a
// cond_br testing register `reg`.
static bool kiln_vm_is_cond_br_on(const uint8_t* code, uint32_t length,
                                  uint32_t at, uint16_t reg) {
  return at < length && code[at] == KILN_VM_OP_COND_BR &&
         kiln_load_le_u16(code + at + 1) == reg;
}

// Rewrites one function. Decisions read `original`, writes go to `copy`,
// so one rewrite never hides another sequence's first op.
static uint32_t kiln_vm_fuse_function(const uint8_t* original, uint8_t* copy,
                                      uint32_t length) {
  uint32_t fused = 0;
  for (uint32_t pos = 0; pos < length;) {
    uint8_t op = original[pos];
    uint32_t size = kiln_vm_instruction_size(original + pos);
    uint32_t next = pos + size;
    uint32_t compare = kiln_vm_fused_compare(op);
    if (compare && kiln_vm_is_cond_br_on(original, length, next,
                                         kiln_load_le_u16(original + pos + 1))) {
      copy[pos] = (uint8_t)compare;
      ++fused;
    } else if ((op == KILN_VM_OP_ADD_I32 || op == KILN_VM_OP_ADDI_I32) &&
               next < length) {
      // The handler compares the sum it just computed: the compare's first
      // operand must be the add's destination (a counted loop's step).
      uint32_t step = kiln_vm_fused_step(op, original[next]);
      uint32_t branch = next + KILN_VM_SIZE_EQ_I32;  // every i32 compare
      if (step &&
          kiln_load_le_u16(original + next + 3) ==
              kiln_load_le_u16(original + pos + 1) &&
          kiln_vm_is_cond_br_on(original, length, branch,
                                kiln_load_le_u16(original + next + 1))) {
        copy[pos] = (uint8_t)step;
        ++fused;
      }
    }
    pos = next;
  }
  return fused;
}

// Each function's copy starts on a cache line, so where the allocator
// happens to put the copy cannot make a hot loop's operands straddle lines
// (a split load on the branch-target chain measured ~1.6x slower loops).
#define KILN_VM_CODE_ALIGNMENT 64u

kiln_status_t kiln_vm_module_build_code(kiln_vm_module_t* module, bool fuse) {
  const kiln_format_module_t* format = &module->format;
  size_t total = KILN_VM_CODE_ALIGNMENT;  // room to align the block itself
  for (uint32_t i = 0; i < format->function_count; ++i) {
    size_t padded = 0;
    if (!kiln_size_align_up(format->functions[i].bytecode_length,
                            KILN_VM_CODE_ALIGNMENT, &padded) ||
        !kiln_size_add(total, padded, &total)) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                              "module '%.*s': bytecode of all functions "
                              "overflows the address space",
                              KILN_SV_ARG(module->name));
    }
  }
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc_array(
      module->allocator, format->function_count ? format->function_count : 1,
      sizeof(*module->function_code), (void**)&module->function_code));
  KILN_RETURN_IF_ERROR(
      kiln_allocator_malloc(module->allocator, total, (void**)&module->code_copy));
  uintptr_t base = (uintptr_t)module->code_copy;
  uint8_t* at = module->code_copy + ((KILN_VM_CODE_ALIGNMENT -
                                      base % KILN_VM_CODE_ALIGNMENT) %
                                     KILN_VM_CODE_ALIGNMENT);
  for (uint32_t i = 0; i < format->function_count; ++i) {
    const kiln_format_function_t* fn = &format->functions[i];
    memcpy(at, fn->bytecode, fn->bytecode_length);
    if (fuse) {
      module->superinstruction_count +=
          kiln_vm_fuse_function(fn->bytecode, at, fn->bytecode_length);
    }
    module->function_code[i] = at;
    at += (fn->bytecode_length + KILN_VM_CODE_ALIGNMENT - 1) &
          ~(size_t)(KILN_VM_CODE_ALIGNMENT - 1);
  }
  return kiln_ok_status();
}
