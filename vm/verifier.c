// The verifier: the VM's security boundary. It checks every function with
// the exact register counts the frame allocator uses, so that the
// interpreter can run without per-instruction checks. Two passes: the first
// decodes every instruction and marks where each starts, the second checks
// that branch targets land on those starts.
#include "internal.h"
#include "kiln/base/reader.h"
#include "superinstructions.h"

typedef struct kiln_verify_t {
  const kiln_format_module_t* format;
  uint32_t function;
  const kiln_format_function_t* fn;
  const kiln_format_signature_t* signature;
  uint8_t* starts;  // bitmap of instruction starts
  uint32_t at;      // offset of the instruction being checked
} kiln_verify_t;

static const char* kiln_verify_name(const kiln_verify_t* v) {
  return v->fn->name.size ? v->fn->name.data : "";
}

#define KILN_VERIFY_FAIL(v, ...)                                            \
  kiln_status_annotate(kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,       \
                                        __VA_ARGS__),                       \
                       "in function %u '%.*s' at bytecode offset %u",       \
                       (v)->function, (int)(v)->fn->name.size,              \
                       kiln_verify_name(v), (v)->at)

static kiln_status_t kiln_verify_need(kiln_verify_t* v, uint32_t pos,
                                      uint32_t size) {
  if (size > v->fn->bytecode_length - pos) {
    return KILN_VERIFY_FAIL(v, "operand at offset %u runs past the end of the "
                               "function (%u bytes)",
                            pos, v->fn->bytecode_length);
  }
  return kiln_ok_status();
}

static uint16_t kiln_verify_u16(const kiln_verify_t* v, uint32_t pos) {
  return kiln_load_le_u16(v->fn->bytecode + pos);
}
static uint32_t kiln_verify_u32(const kiln_verify_t* v, uint32_t pos) {
  return kiln_load_le_u32(v->fn->bytecode + pos);
}

// A register of value type `type` (signature character).
static kiln_status_t kiln_verify_register(kiln_verify_t* v, char type,
                                          uint16_t reg) {
  if (type == KILN_VALUE_TYPE_REF) {
    if (reg >= v->fn->ref_register_count) {
      return KILN_VERIFY_FAIL(v, "ref register r%u is out of range (frame has "
                                 "%u ref registers)",
                              reg, v->fn->ref_register_count);
    }
    return kiln_ok_status();
  }
  if (kiln_value_type_is_64bit(type)) {
    if (reg & 1u) {
      return KILN_VERIFY_FAIL(v, "64-bit register i%u is not even-aligned",
                              reg);
    }
    if ((uint32_t)reg + 1u >= v->fn->i32_register_count) {
      return KILN_VERIFY_FAIL(v, "64-bit register pair i%u:i%u is out of range "
                                 "(frame has %u 32-bit registers)",
                              reg, reg + 1u, v->fn->i32_register_count);
    }
    return kiln_ok_status();
  }
  if (reg >= v->fn->i32_register_count) {
    return KILN_VERIFY_FAIL(v, "register i%u is out of range (frame has %u "
                               "32-bit registers)",
                            reg, v->fn->i32_register_count);
  }
  return kiln_ok_status();
}

// A register list: u8 count then u16 registers typed by `types`.
static kiln_status_t kiln_verify_register_list(kiln_verify_t* v,
                                               uint32_t* pos, const char* types,
                                               uint32_t expected,
                                               const char* what) {
  KILN_RETURN_IF_ERROR(kiln_verify_need(v, *pos, 1));
  uint32_t count = v->fn->bytecode[*pos];
  *pos += 1;
  if (count != expected) {
    return KILN_VERIFY_FAIL(v, "%s list has %u registers, the signature needs "
                               "%u",
                            what, count, expected);
  }
  KILN_RETURN_IF_ERROR(kiln_verify_need(v, *pos, 2 * count));
  for (uint32_t i = 0; i < count; ++i) {
    KILN_RETURN_IF_ERROR(
        kiln_verify_register(v, types[i], kiln_verify_u16(v, *pos + 2 * i)));
  }
  *pos += 2 * count;
  return kiln_ok_status();
}

static kiln_status_t kiln_verify_call_lists(
    kiln_verify_t* v, uint32_t* pos, const kiln_format_signature_t* callee) {
  KILN_RETURN_IF_ERROR(kiln_verify_register_list(
      v, pos, callee->types, callee->arg_count, "call argument"));
  return kiln_verify_register_list(v, pos, callee->types + callee->arg_count,
                                   callee->result_count, "call result");
}

static kiln_status_t kiln_verify_ordinal(kiln_verify_t* v, uint32_t value,
                                         uint32_t limit, const char* what) {
  if (value >= limit) {
    return KILN_VERIFY_FAIL(v, "%s ordinal %u is out of range (%u %ss)", what,
                            value, limit, what);
  }
  return kiln_ok_status();
}

// Decodes one operand at *pos. Labels are only bounds-checked here.
static kiln_status_t kiln_verify_operand(kiln_verify_t* v, char kind,
                                         uint32_t* pos) {
  const kiln_format_module_t* format = v->format;
  uint32_t size = kiln_vm_operand_size(kind);
  if (size) KILN_RETURN_IF_ERROR(kiln_verify_need(v, *pos, size));
  uint32_t p = *pos;
  *pos += size;
  switch (kind) {
    case 'i': return kiln_verify_register(v, 'i', kiln_verify_u16(v, p));
    case 'l': return kiln_verify_register(v, 'I', kiln_verify_u16(v, p));
    case 'r': return kiln_verify_register(v, 'r', kiln_verify_u16(v, p));
    case 'k': case 'K': case 'f': case 'F': case 'L':
      return kiln_ok_status();
    case 'd':
      return kiln_verify_ordinal(v, kiln_verify_u32(v, p), format->rodata_count,
                                 "rodata");
    case 's':
      return kiln_verify_ordinal(v, kiln_verify_u32(v, p), format->string_count,
                                 "string");
    case 'g':
      return kiln_verify_ordinal(v, kiln_verify_u32(v, p),
                                 format->global_word_count, "global word");
    case 'G': {
      uint32_t slot = kiln_verify_u32(v, p);
      if (slot & 1u) {
        return KILN_VERIFY_FAIL(v, "64-bit global slot %u is not even-aligned",
                                slot);
      }
      if (slot >= format->global_word_count ||
          slot + 1u >= format->global_word_count) {
        return KILN_VERIFY_FAIL(v, "64-bit global slot %u is out of range (%u "
                                   "global words)",
                                slot, format->global_word_count);
      }
      return kiln_ok_status();
    }
    case 'h':
      return kiln_verify_ordinal(v, kiln_verify_u32(v, p),
                                 format->global_ref_count, "global ref");
    case 't':
      if (v->fn->bytecode[p] >= KILN_VM_LIST_TYPE_COUNT) {
        return KILN_VERIFY_FAIL(v, "list element type %u is unknown (0 i32, 1 "
                                   "i64, 2 ref)",
                                v->fn->bytecode[p]);
      }
      return kiln_ok_status();
    case 'c': {
      KILN_RETURN_IF_ERROR(kiln_verify_need(v, p, 4));
      uint32_t callee = kiln_verify_u32(v, p);
      *pos = p + 4;
      KILN_RETURN_IF_ERROR(
          kiln_verify_ordinal(v, callee, format->function_count, "function"));
      return kiln_verify_call_lists(
          v, pos, &format->signatures[format->functions[callee].signature]);
    }
    case 'm': {
      KILN_RETURN_IF_ERROR(kiln_verify_need(v, p, 4));
      uint32_t import = kiln_verify_u32(v, p);
      *pos = p + 4;
      KILN_RETURN_IF_ERROR(
          kiln_verify_ordinal(v, import, format->import_count, "import"));
      return kiln_verify_call_lists(
          v, pos, &format->signatures[format->imports[import].signature]);
    }
    case 'T': {
      KILN_RETURN_IF_ERROR(kiln_verify_need(v, p, 2));
      uint32_t count = kiln_verify_u16(v, p);
      KILN_RETURN_IF_ERROR(kiln_verify_need(v, p + 2, 4 * (count + 1)));
      *pos = p + 2 + 4 * (count + 1);
      return kiln_ok_status();
    }
    case 'R':
      return kiln_verify_register_list(
          v, pos, v->signature->types + v->signature->arg_count,
          v->signature->result_count, "return");
    default:
      return KILN_VERIFY_FAIL(v, "internal: unknown operand kind '%c'", kind);
  }
}

static kiln_status_t kiln_verify_label(kiln_verify_t* v, uint32_t target) {
  if (target >= v->fn->bytecode_length ||
      !(v->starts[target >> 3] & (1u << (target & 7)))) {
    return KILN_VERIFY_FAIL(v, "branch target %u is not the start of an "
                               "instruction in this function (%u bytes)",
                            target, v->fn->bytecode_length);
  }
  return kiln_ok_status();
}

// Second pass over one instruction: its labels.
static kiln_status_t kiln_verify_labels(kiln_verify_t* v, uint32_t pos,
                                        const char* operands) {
  for (const char* kind = operands; *kind; ++kind) {
    if (*kind == 'L') {
      KILN_RETURN_IF_ERROR(kiln_verify_label(v, kiln_verify_u32(v, pos)));
    } else if (*kind == 'T') {
      uint32_t count = kiln_verify_u16(v, pos);
      for (uint32_t i = 0; i <= count; ++i) {
        KILN_RETURN_IF_ERROR(
            kiln_verify_label(v, kiln_verify_u32(v, pos + 2 + 4 * i)));
      }
      return kiln_ok_status();  // T is last
    }
    pos += kiln_vm_operand_size(*kind);
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_verify_walk(kiln_verify_t* v, bool labels) {
  uint32_t pos = 0;
  uint8_t last_op = 0;
  while (pos < v->fn->bytecode_length) {
    v->at = pos;
    uint8_t op = v->fn->bytecode[pos];
    if (op >= KILN_VM_OP_COUNT && op < KILN_VM_OP_INTERNAL_END) {
      return KILN_VERIFY_FAIL(v, "opcode 0x%02x is an internal "
                                 "superinstruction of the interpreter, never "
                                 "valid in a module",
                              op);
    }
    if (op >= KILN_VM_OP_COUNT) {
      return KILN_VERIFY_FAIL(v, "unknown opcode 0x%02x", op);
    }
    if (!labels) v->starts[pos >> 3] |= (uint8_t)(1u << (pos & 7));
    const char* operands = kiln_vm_op_infos[op].operands;
    uint32_t operand_pos = pos + 1;
    if (labels) {
      KILN_RETURN_IF_ERROR(kiln_verify_labels(v, operand_pos, operands));
    }
    for (const char* kind = operands; *kind; ++kind) {
      KILN_RETURN_IF_ERROR(kiln_verify_operand(v, *kind, &operand_pos));
    }
    pos = operand_pos;
    last_op = op;
  }
  if (!kiln_vm_op_infos[last_op].terminator) {
    return KILN_VERIFY_FAIL(v, "function ends with '%s', which is not a "
                               "terminator (br, cond_br, br_table, return, "
                               "fail)",
                            kiln_vm_op_infos[last_op].mnemonic);
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_verify_function(const kiln_format_module_t* format,
                                          uint32_t index) {
  kiln_verify_t v;
  memset(&v, 0, sizeof(v));
  v.format = format;
  v.function = index;
  v.fn = &format->functions[index];
  v.signature = &format->signatures[v.fn->signature];
  if (v.fn->i32_register_count > KILN_FORMAT_MAX_I32_REGISTERS ||
      v.fn->ref_register_count > KILN_FORMAT_MAX_REF_REGISTERS) {
    return KILN_VERIFY_FAIL(&v, "frame of %u 32-bit and %u ref registers "
                                "exceeds the limit (%u, %u)",
                            v.fn->i32_register_count, v.fn->ref_register_count,
                            KILN_FORMAT_MAX_I32_REGISTERS,
                            KILN_FORMAT_MAX_REF_REGISTERS);
  }
  kiln_vm_signature_layout_t layout;
  kiln_vm_signature_layout_compute(v.signature, &layout);
  if (layout.arg_i32_words > v.fn->i32_register_count ||
      layout.arg_refs > v.fn->ref_register_count) {
    return KILN_VERIFY_FAIL(&v, "arguments of signature '%.*s' need %u 32-bit "
                                "and %u ref registers, the frame has %u and %u",
                            KILN_SV_ARG(v.signature->text), layout.arg_i32_words,
                            layout.arg_refs, v.fn->i32_register_count,
                            v.fn->ref_register_count);
  }
  if (v.fn->bytecode_length == 0) {
    return KILN_VERIFY_FAIL(&v, "function has no bytecode");
  }
  kiln_allocator_t allocator = format->arena.parent;
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc(
      allocator, (v.fn->bytecode_length + 7) / 8, (void**)&v.starts));
  kiln_status_t status = kiln_verify_walk(&v, false);
  if (!status) status = kiln_verify_walk(&v, true);
  kiln_allocator_free(allocator, v.starts);
  return status;
}

kiln_status_t kiln_vm_verify_module(const kiln_format_module_t* format) {
  for (uint32_t i = 0; i < format->function_count; ++i) {
    KILN_RETURN_IF_ERROR(kiln_verify_function(format, i));
  }
  return kiln_ok_status();
}
