#include "kiln/vm/isa.h"

#include <string.h>

const kiln_vm_op_info_t kiln_vm_op_infos[KILN_VM_OP_COUNT] = {
#define KILN_VM_ISA_INFO(name, mnemonic, operands, terminator, size) \
  {mnemonic, operands, terminator, size},
    KILN_VM_ISA(KILN_VM_ISA_INFO)
#undef KILN_VM_ISA_INFO
};

kiln_vm_opcode_t kiln_vm_op_lookup(const char* mnemonic, uint32_t length) {
  for (uint32_t op = 0; op < KILN_VM_OP_COUNT; ++op) {
    const char* candidate = kiln_vm_op_infos[op].mnemonic;
    if (strlen(candidate) == length && memcmp(candidate, mnemonic, length) == 0) {
      return (kiln_vm_opcode_t)op;
    }
  }
  return KILN_VM_OP_COUNT;
}
