// Function bodies encoded from the ISA table (vm/isa.h): the operand kinds
// of an op's row say what each operand is and how many bytes it takes, so
// this file knows no individual op. Branches name labels; their offsets are
// patched when the body ends.
#include <string.h>

#include "kiln/base/byte_buffer.h"
#include "kiln/base/reader.h"
#include "kiln/compiler/module_builder.h"
#include "kiln/format/signature.h"

#define KILN_FB_UNBOUND UINT32_MAX

struct kiln_function_builder_t {
  kiln_allocator_t allocator;
  kiln_module_writer_t* writer;
  bool active;
  uint32_t ordinal;
  kiln_format_signature_t signature;
  kiln_byte_buffer_t code;
  kiln_byte_buffer_t labels;  // u32 offset per label (KILN_FB_UNBOUND)
  kiln_byte_buffer_t fixups;  // u32 code position, u32 label
  uint32_t max_i32, max_ref;  // registers used so far (one past the highest)
};

kiln_status_t kiln_function_builder_create(kiln_module_writer_t* writer,
                                           kiln_allocator_t allocator,
                                           kiln_function_builder_t** out_builder) {
  *out_builder = NULL;
  kiln_function_builder_t* builder = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc(allocator, sizeof(*builder), (void**)&builder));
  builder->allocator = allocator;
  builder->writer = writer;
  kiln_byte_buffer_init(&builder->code, allocator);
  kiln_byte_buffer_init(&builder->labels, allocator);
  kiln_byte_buffer_init(&builder->fixups, allocator);
  *out_builder = builder;
  return kiln_ok_status();
}

void kiln_function_builder_destroy(kiln_function_builder_t* builder) {
  if (!builder) return;
  kiln_byte_buffer_deinit(&builder->code);
  kiln_byte_buffer_deinit(&builder->labels);
  kiln_byte_buffer_deinit(&builder->fixups);
  kiln_allocator_free(builder->allocator, builder);
}

static kiln_status_t kiln_fb_check_active(const kiln_function_builder_t* builder) {
  if (!builder->active) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                            "function builder: no function begun");
  }
  return kiln_ok_status();
}

kiln_status_t kiln_function_builder_begin(kiln_function_builder_t* builder,
                                          uint32_t ordinal) {
  KILN_RETURN_IF_ERROR(
      kiln_module_writer_function_signature(builder->writer, ordinal, &builder->signature));
  builder->code.size = 0;
  builder->labels.size = 0;
  builder->fixups.size = 0;
  builder->ordinal = ordinal;
  // Arguments occupy the first registers; 64-bit ones start an even pair.
  uint32_t words = 0, refs = 0;
  for (uint32_t i = 0; i < builder->signature.arg_count; ++i) {
    char type = builder->signature.types[i];
    if (type == KILN_VALUE_TYPE_REF) {
      ++refs;
    } else if (kiln_value_type_is_64bit(type)) {
      words = ((words + 1) & ~1u) + 2;
    } else {
      ++words;
    }
  }
  builder->max_i32 = words;
  builder->max_ref = refs;
  builder->active = true;
  return kiln_ok_status();
}

kiln_status_t kiln_function_builder_new_label(kiln_function_builder_t* builder,
                                              uint32_t* out_label) {
  KILN_RETURN_IF_ERROR(kiln_fb_check_active(builder));
  *out_label = (uint32_t)(builder->labels.size / 4);
  return kiln_byte_buffer_append_u32(&builder->labels, KILN_FB_UNBOUND);
}

static bool kiln_fb_label_exists(const kiln_function_builder_t* builder, uint32_t label) {
  return (uint64_t)label * 4 < builder->labels.size;
}

bool kiln_function_builder_label_bound(const kiln_function_builder_t* builder,
                                       uint32_t label) {
  return kiln_fb_label_exists(builder, label) &&
         kiln_load_le_u32(builder->labels.data + (size_t)label * 4) != KILN_FB_UNBOUND;
}

kiln_status_t kiln_function_builder_bind_label(kiln_function_builder_t* builder,
                                               uint32_t label) {
  KILN_RETURN_IF_ERROR(kiln_fb_check_active(builder));
  if (!kiln_fb_label_exists(builder, label)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "label %u was not made", label);
  }
  if (kiln_function_builder_label_bound(builder, label)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "label %u is bound twice", label);
  }
  return kiln_byte_buffer_patch_u32(&builder->labels, (size_t)label * 4,
                                    (uint32_t)builder->code.size);
}

uint32_t kiln_function_builder_offset(const kiln_function_builder_t* builder) {
  return (uint32_t)builder->code.size;
}

// Counts register `reg` of `kind` ('i', 'l' or 'r') as used and encodes it.
static kiln_status_t kiln_fb_register(kiln_function_builder_t* builder, char kind,
                                      uint64_t reg) {
  if (reg > 0xFFFF) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "register %llu exceeds 65535",
                            (unsigned long long)reg);
  }
  uint32_t end = (uint32_t)reg + (kind == 'l' ? 2u : 1u);
  uint32_t* max = kind == 'r' ? &builder->max_ref : &builder->max_i32;
  if (end > *max) *max = end;
  return kiln_byte_buffer_append_u16(&builder->code, (uint16_t)reg);
}

static char kiln_fb_kind_for_type(char type) {
  if (type == KILN_VALUE_TYPE_REF) return 'r';
  return kiln_value_type_is_64bit(type) ? 'l' : 'i';
}

// A u8 count, then registers typed by `types`.
static kiln_status_t kiln_fb_register_list(kiln_function_builder_t* builder,
                                           const char* types, uint32_t needed,
                                           const uint16_t* registers, size_t count,
                                           const char* what) {
  if (count != needed) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s list has %zu registers, the signature needs %u", what, count,
                            needed);
  }
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u8(&builder->code, (uint8_t)count));
  for (size_t i = 0; i < count; ++i) {
    KILN_RETURN_IF_ERROR(kiln_fb_register(builder, kiln_fb_kind_for_type(types[i]),
                                          registers[i]));
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_fb_label_ref(kiln_function_builder_t* builder, uint64_t label) {
  if (label > UINT32_MAX || !kiln_fb_label_exists(builder, (uint32_t)label)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "label %llu was not made",
                            (unsigned long long)label);
  }
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(&builder->fixups, (uint32_t)builder->code.size));
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u32(&builder->fixups, (uint32_t)label));
  return kiln_byte_buffer_append_u32(&builder->code, 0);
}

static kiln_status_t kiln_fb_operand_error(kiln_vm_opcode_t op, size_t given) {
  return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "%s: %zu operands for kinds \"%s\"",
                          kiln_vm_op_infos[op].mnemonic, given, kiln_vm_op_infos[op].operands);
}

kiln_status_t kiln_function_builder_op(kiln_function_builder_t* builder,
                                       kiln_vm_opcode_t op, const uint64_t* operands,
                                       size_t operand_count) {
  KILN_RETURN_IF_ERROR(kiln_fb_check_active(builder));
  if ((unsigned)op >= KILN_VM_OP_COUNT) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "opcode %u is not in the ISA",
                            (unsigned)op);
  }
  const char* kinds = kiln_vm_op_infos[op].operands;
  if (strchr(kinds, 'c') || strchr(kinds, 'm') || strchr(kinds, 'T')) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: use kiln_function_builder_call / _br_table",
                            kiln_vm_op_infos[op].mnemonic);
  }
  size_t start = builder->code.size;
  kiln_status_t status = kiln_byte_buffer_append_u8(&builder->code, (uint8_t)op);
  size_t at = 0;
  for (const char* kind = kinds; *kind && !status; ++kind) {
    if (*kind == 'R') {
      const kiln_format_signature_t* s = &builder->signature;
      if (operand_count - at != s->result_count) {
        status = kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                  "return list has %zu registers, the signature needs %u",
                                  operand_count - at, s->result_count);
        break;
      }
      uint16_t registers[KILN_FORMAT_MAX_SIGNATURE_VALUES];
      for (size_t i = 0; i < s->result_count; ++i) {
        if (operands[at + i] > 0xFFFF) {
          status = kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "return register %llu",
                                    (unsigned long long)operands[at + i]);
        }
        registers[i] = (uint16_t)operands[at + i];
      }
      if (!status) {
        status = kiln_fb_register_list(builder, s->types + s->arg_count, s->result_count,
                                       registers, s->result_count, "return");
      }
      at = operand_count;
      continue;
    }
    if (at >= operand_count) {
      status = kiln_fb_operand_error(op, operand_count);
      break;
    }
    uint64_t value = operands[at++];
    switch (*kind) {
      case 'i': case 'l': case 'r':
        status = kiln_fb_register(builder, *kind, value);
        break;
      case 'K': case 'F':
        status = kiln_byte_buffer_append_u64(&builder->code, value);
        break;
      case 'L':
        status = kiln_fb_label_ref(builder, value);
        break;
      case 't':
        if (value >= KILN_VM_LIST_TYPE_COUNT) {
          status = kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "list type %llu",
                                    (unsigned long long)value);
        } else {
          status = kiln_byte_buffer_append_u8(&builder->code, (uint8_t)value);
        }
        break;
      default:  // k f d s g G h: u32 (an i32 may come sign-extended)
        if (value > UINT32_MAX && (int64_t)value < INT32_MIN) {
          status = kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "%s: operand %zu does not fit 32 bits",
                                    kiln_vm_op_infos[op].mnemonic, at - 1);
        } else {
          status = kiln_byte_buffer_append_u32(&builder->code, (uint32_t)value);
        }
        break;
    }
  }
  if (!status && at != operand_count) status = kiln_fb_operand_error(op, operand_count);
  if (status) builder->code.size = start;
  return status;
}

kiln_status_t kiln_function_builder_call(kiln_function_builder_t* builder,
                                         kiln_vm_opcode_t op, uint32_t ordinal,
                                         const uint16_t* args, size_t arg_count,
                                         const uint16_t* results, size_t result_count) {
  KILN_RETURN_IF_ERROR(kiln_fb_check_active(builder));
  kiln_format_signature_t callee;
  if (op == KILN_VM_OP_CALL) {
    KILN_RETURN_IF_ERROR(kiln_module_writer_function_signature(builder->writer, ordinal, &callee));
  } else if (op == KILN_VM_OP_CALL_IMPORT) {
    KILN_RETURN_IF_ERROR(kiln_module_writer_import_signature(builder->writer, ordinal, &callee));
  } else {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "%s is not a call",
                            (unsigned)op < KILN_VM_OP_COUNT ? kiln_vm_op_infos[op].mnemonic : "?");
  }
  size_t start = builder->code.size;
  kiln_status_t status = kiln_byte_buffer_append_u8(&builder->code, (uint8_t)op);
  if (!status) status = kiln_byte_buffer_append_u32(&builder->code, ordinal);
  if (!status) {
    status = kiln_fb_register_list(builder, callee.types, callee.arg_count, args, arg_count,
                                   "call argument");
  }
  if (!status) {
    status = kiln_fb_register_list(builder, callee.types + callee.arg_count,
                                   callee.result_count, results, result_count, "call result");
  }
  if (status) builder->code.size = start;
  return status;
}

kiln_status_t kiln_function_builder_br_table(kiln_function_builder_t* builder,
                                             uint16_t index_register,
                                             const uint32_t* labels, size_t label_count,
                                             uint32_t default_label) {
  KILN_RETURN_IF_ERROR(kiln_fb_check_active(builder));
  if (label_count > 0xFFFF) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "br_table has too many targets");
  }
  size_t start = builder->code.size;
  size_t fixups = builder->fixups.size;
  kiln_status_t status = kiln_byte_buffer_append_u8(&builder->code, KILN_VM_OP_BR_TABLE);
  if (!status) status = kiln_fb_register(builder, 'i', index_register);
  if (!status) status = kiln_byte_buffer_append_u16(&builder->code, (uint16_t)label_count);
  for (size_t i = 0; i < label_count && !status; ++i) {
    status = kiln_fb_label_ref(builder, labels[i]);
  }
  if (!status) status = kiln_fb_label_ref(builder, default_label);
  if (status) {
    builder->code.size = start;
    builder->fixups.size = fixups;
  }
  return status;
}

kiln_status_t kiln_function_builder_end(kiln_function_builder_t* builder,
                                        uint32_t i32_register_count,
                                        uint32_t ref_register_count) {
  KILN_RETURN_IF_ERROR(kiln_fb_check_active(builder));
  builder->active = false;
  for (size_t f = 0; f < builder->fixups.size; f += 8) {
    uint32_t position = kiln_load_le_u32(builder->fixups.data + f);
    uint32_t label = kiln_load_le_u32(builder->fixups.data + f + 4);
    uint32_t target = kiln_load_le_u32(builder->labels.data + (size_t)label * 4);
    if (target == KILN_FB_UNBOUND) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "function %u: label %u is used but never bound",
                              builder->ordinal, label);
    }
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_patch_u32(&builder->code, position, target));
  }
  uint32_t words = i32_register_count != KILN_FUNCTION_BUILDER_AUTO ? i32_register_count
                                                                    : builder->max_i32;
  uint32_t refs = ref_register_count != KILN_FUNCTION_BUILDER_AUTO ? ref_register_count
                                                                   : builder->max_ref;
  if (words > 0xFFFF || refs > 0xFFFF) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "function uses too many registers");
  }
  return kiln_module_writer_define_function(builder->writer, builder->ordinal, (uint16_t)words,
                                            (uint16_t)refs, kiln_byte_buffer_span(&builder->code));
}
