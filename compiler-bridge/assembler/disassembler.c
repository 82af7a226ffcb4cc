// The disassembler: prints a read module as assembly that reassembles to
// the same bytes (for modules made by the module writer). Bytecode is
// decoded with bounds checks of its own, so an unverified module cannot
// make it read out of bounds; malformed bytecode ends in an error.
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/reader.h"
#include "kiln/compiler/assembler.h"
#include "kiln/vm/isa.h"

static void kiln_dis_string(FILE* stream, kiln_string_view_t text) {
  fputc('"', stream);
  for (size_t i = 0; i < text.size; ++i) {
    unsigned char c = (unsigned char)text.data[i];
    if (c == '"' || c == '\\') {
      fprintf(stream, "\\%c", c);
    } else if (c >= 0x20 && c < 0x7F) {
      fputc(c, stream);
    } else {
      fprintf(stream, "\\x%02x", c);
    }
  }
  fputc('"', stream);
}

// A bare token: names without spaces or special characters print as-is.
static void kiln_dis_name(FILE* stream, kiln_string_view_t name) {
  bool plain = name.size > 0;
  for (size_t i = 0; i < name.size; ++i) {
    char c = name.data[i];
    if (c <= ' ' || c == '"' || c == '#' || c == ';' || c == ',' || c >= 0x7F) {
      plain = false;
    }
  }
  if (plain) {
    fprintf(stream, "%.*s", KILN_SV_ARG(name));
  } else {
    kiln_dis_string(stream, name);
  }
}

typedef struct kiln_dis_t {
  const kiln_format_module_t* module;
  const kiln_format_function_t* fn;
  uint32_t function;
  FILE* stream;
  uint8_t* targets;  // bitmap of branch targets
} kiln_dis_t;

static kiln_status_t kiln_dis_bad(const kiln_dis_t* d, uint32_t at,
                                  const char* what) {
  return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                          "cannot disassemble function %u at bytecode offset "
                          "%u: %s",
                          d->function, at, what);
}

static bool kiln_dis_has(const kiln_dis_t* d, uint32_t pos, uint32_t size) {
  return size <= d->fn->bytecode_length - pos;
}

static const char* kiln_dis_function_name(const kiln_format_module_t* module,
                                          uint32_t index, char* buffer,
                                          size_t size) {
  kiln_string_view_t name = module->functions[index].name;
  snprintf(buffer, size, "%.*s", (int)name.size, name.data);
  if (name.size == 0) snprintf(buffer, size, "f%u", index);
  return buffer;
}

static char kiln_dis_prefix(char type) {
  if (type == 'r') return 'r';
  return (type == 'I' || type == 'F') ? 'I' : 'i';
}

// Decodes (and prints when `print`) one instruction at *pos.
static kiln_status_t kiln_dis_instruction(kiln_dis_t* d, uint32_t* pos,
                                          bool print) {
  const uint8_t* code = d->fn->bytecode;
  uint32_t at = *pos;
  uint8_t op = code[at];
  if (op >= KILN_VM_OP_COUNT) return kiln_dis_bad(d, at, "unknown opcode");
  const kiln_vm_op_info_t* info = &kiln_vm_op_infos[op];
  FILE* s = d->stream;
  if (print) fprintf(s, "  %s", info->mnemonic);
  uint32_t p = at + 1;
  const kiln_format_module_t* module = d->module;
  for (const char* kind = info->operands; *kind; ++kind) {
    uint32_t size = kiln_vm_operand_size(*kind);
    if (size && !kiln_dis_has(d, p, size)) {
      return kiln_dis_bad(d, at, "truncated operand");
    }
    switch (*kind) {
      case 'i': case 'l': case 'r':
        if (print) {
          fprintf(s, " %c%u", *kind == 'l' ? 'I' : *kind,
                  kiln_load_le_u16(code + p));
        }
        break;
      case 'k':
        if (print) fprintf(s, " %" PRId32, (int32_t)kiln_load_le_u32(code + p));
        break;
      case 'K':
        if (print) fprintf(s, " %" PRId64, (int64_t)kiln_load_le_u64(code + p));
        break;
      case 'f': {
        uint32_t bits = kiln_load_le_u32(code + p);
        float value;
        memcpy(&value, &bits, 4);
        if (print) {
          if (value == value && value - value == 0.0f) {
            fprintf(s, " %.9g", value);
          } else {
            fprintf(s, " bits=0x%08" PRIx32, bits);
          }
        }
        break;
      }
      case 'F': {
        uint64_t bits = kiln_load_le_u64(code + p);
        double value;
        memcpy(&value, &bits, 8);
        if (print) {
          if (value == value && value - value == 0.0) {
            fprintf(s, " %.17g", value);
          } else {
            fprintf(s, " bits=0x%016" PRIx64, bits);
          }
        }
        break;
      }
      case 'L': {
        uint32_t target = kiln_load_le_u32(code + p);
        if (target >= d->fn->bytecode_length) {
          return kiln_dis_bad(d, at, "branch target outside the function");
        }
        d->targets[target >> 3] |= (uint8_t)(1u << (target & 7));
        if (print) fprintf(s, " L%u", target);
        break;
      }
      case 'd': {
        uint32_t index = kiln_load_le_u32(code + p);
        if (index >= module->rodata_count) return kiln_dis_bad(d, at, "bad rodata ordinal");
        if (print) {
          fputc(' ', s);
          if (module->rodata[index].name.size) {
            kiln_dis_name(s, module->rodata[index].name);
          } else {
            fprintf(s, "_rodata%u", index);
          }
        }
        break;
      }
      case 's': {
        uint32_t index = kiln_load_le_u32(code + p);
        if (index >= module->string_count) return kiln_dis_bad(d, at, "bad string ordinal");
        if (print) {
          fputc(' ', s);
          kiln_dis_string(s, module->strings[index]);
        }
        break;
      }
      case 'g': case 'G': case 'h':
        if (print) fprintf(s, " %u", kiln_load_le_u32(code + p));
        break;
      case 't': {
        static const char* const kTypes[] = {"i32", "i64", "ref"};
        if (code[p] >= KILN_VM_LIST_TYPE_COUNT) return kiln_dis_bad(d, at, "bad list type");
        if (print) fprintf(s, " %s", kTypes[code[p]]);
        break;
      }
      case 'c': case 'm': {
        if (!kiln_dis_has(d, p, 4)) return kiln_dis_bad(d, at, "truncated call");
        uint32_t index = kiln_load_le_u32(code + p);
        const kiln_format_signature_t* signature;
        char name[256];
        if (*kind == 'c') {
          if (index >= module->function_count) return kiln_dis_bad(d, at, "bad function ordinal");
          signature = &module->signatures[module->functions[index].signature];
          if (print) {
            fprintf(s, " ");
            kiln_dis_name(s, kiln_make_cstring_view(
                                 kiln_dis_function_name(module, index, name, sizeof(name))));
          }
        } else {
          if (index >= module->import_count) return kiln_dis_bad(d, at, "bad import ordinal");
          signature = &module->signatures[module->imports[index].signature];
          if (print) {
            fprintf(s, " ");
            kiln_dis_name(s, module->imports[index].name);
          }
        }
        p += 4;
        for (int side = 0; side < 2; ++side) {
          if (!kiln_dis_has(d, p, 1)) return kiln_dis_bad(d, at, "truncated call list");
          uint32_t count = code[p];
          uint32_t expected = side == 0 ? signature->arg_count : signature->result_count;
          const char* types = signature->types + (side == 0 ? 0 : signature->arg_count);
          if (count != expected || !kiln_dis_has(d, p + 1, 2 * count)) {
            return kiln_dis_bad(d, at, "call list does not match the signature");
          }
          if (print && side == 1 && count) fprintf(s, " ->");
          for (uint32_t i = 0; i < count; ++i) {
            if (print) {
              fprintf(s, " %c%u", kiln_dis_prefix(types[i]),
                      kiln_load_le_u16(code + p + 1 + 2 * i));
            }
          }
          p += 1 + 2 * count;
        }
        size = 0;
        break;
      }
      case 'T': {
        if (!kiln_dis_has(d, p, 2)) return kiln_dis_bad(d, at, "truncated br_table");
        uint32_t count = kiln_load_le_u16(code + p);
        if (!kiln_dis_has(d, p + 2, 4 * (count + 1))) {
          return kiln_dis_bad(d, at, "truncated br_table");
        }
        for (uint32_t i = 0; i <= count; ++i) {
          uint32_t target = kiln_load_le_u32(code + p + 2 + 4 * i);
          if (target >= d->fn->bytecode_length) {
            return kiln_dis_bad(d, at, "branch target outside the function");
          }
          d->targets[target >> 3] |= (uint8_t)(1u << (target & 7));
          if (print) fprintf(s, i == count ? " default L%u" : " L%u", target);
        }
        p += 2 + 4 * (count + 1);
        break;
      }
      case 'R': {
        const kiln_format_signature_t* signature = &module->signatures[d->fn->signature];
        if (!kiln_dis_has(d, p, 1)) return kiln_dis_bad(d, at, "truncated return");
        uint32_t count = code[p];
        if (count != signature->result_count || !kiln_dis_has(d, p + 1, 2 * count)) {
          return kiln_dis_bad(d, at, "return list does not match the signature");
        }
        for (uint32_t i = 0; i < count; ++i) {
          if (print) {
            fprintf(s, " %c%u", kiln_dis_prefix(signature->types[signature->arg_count + i]),
                    kiln_load_le_u16(code + p + 1 + 2 * i));
          }
        }
        p += 1 + 2 * count;
        break;
      }
      default:
        return kiln_dis_bad(d, at, "internal: operand kind");
    }
    p += size;
  }
  if (print) fputc('\n', s);
  *pos = p;
  return kiln_ok_status();
}

static kiln_status_t kiln_dis_function(const kiln_format_module_t* module,
                                       uint32_t index, FILE* stream) {
  kiln_dis_t d = {module, &module->functions[index], index, stream, NULL};
  char name[256];
  fprintf(stream, "func ");
  kiln_dis_name(stream, kiln_make_cstring_view(
                            kiln_dis_function_name(module, index, name, sizeof(name))));
  fputc(' ', stream);
  kiln_dis_string(stream, module->signatures[d.fn->signature].text);
  fprintf(stream, " regs %u refs %u\n", d.fn->i32_register_count,
          d.fn->ref_register_count);
  d.targets = (uint8_t*)calloc(d.fn->bytecode_length / 8 + 1, 1);
  if (!d.targets) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  kiln_status_t status = kiln_ok_status();
  // First pass: find branch targets (and reject malformed code).
  for (uint32_t pos = 0; !status && pos < d.fn->bytecode_length;) {
    status = kiln_dis_instruction(&d, &pos, false);
  }
  for (uint32_t pos = 0; !status && pos < d.fn->bytecode_length;) {
    for (uint32_t l = 0; l < module->location_count; ++l) {
      const kiln_format_location_t* location = &module->locations[l];
      if (location->function == index && location->bytecode_offset == pos) {
        fprintf(stream, "  loc ");
        kiln_dis_string(stream, location->file);
        fprintf(stream, " %u\n", location->line);
      }
    }
    if (d.targets[pos >> 3] & (1u << (pos & 7))) fprintf(stream, "L%u:\n", pos);
    status = kiln_dis_instruction(&d, &pos, true);
  }
  free(d.targets);
  if (!status) fprintf(stream, "end\n\n");
  return status;
}

static void kiln_dis_executables(const kiln_format_module_t* module, FILE* s) {
  for (uint32_t e = 0; e < module->executables.executable_count; ++e) {
    const kiln_format_executable_t* exe = &module->executables.executables[e];
    fprintf(s, "executable ");
    kiln_dis_name(s, exe->name);
    fputc('\n', s);
    for (uint32_t v = 0; v < exe->variant_count; ++v) {
      const kiln_format_variant_t* variant = &exe->variants[v];
      fprintf(s, "  variant ");
      kiln_dis_string(s, variant->target);
      fprintf(s, " features 0x%x subgroup %u shared %u invocations %u\n",
              variant->required_features, variant->min_subgroup_size,
              variant->min_shared_memory_bytes, variant->min_workgroup_invocations);
      for (uint32_t w = 0; w < variant->spirv_word_count; ++w) {
        if (w % 8 == 0) fprintf(s, "%s    spirv", w ? "\n" : "");
        fprintf(s, " 0x%08x", kiln_format_variant_spirv_word(variant, w));
      }
      if (variant->spirv_word_count) fputc('\n', s);
      for (uint32_t p = 0; p < variant->entry_point_count; ++p) {
        const kiln_format_entry_point_t* entry = &variant->entry_points[p];
        fprintf(s, "    entry ");
        kiln_dis_name(s, entry->name);
        fprintf(s, " workgroup %u %u %u push %u\n", entry->workgroup_size[0],
                entry->workgroup_size[1], entry->workgroup_size[2],
                entry->push_constant_bytes);
        for (uint32_t b = 0; b < entry->binding_count; ++b) {
          fprintf(s, "      binding %u %u%s%s\n", entry->bindings[b].set,
                  entry->bindings[b].binding,
                  (entry->bindings[b].flags & KILN_FORMAT_BINDING_READ_ONLY) ? " readonly" : "",
                  (entry->bindings[b].flags & KILN_FORMAT_BINDING_TEXEL_VEC4F32) ? " texel" : "");
        }
        for (uint32_t c = 0; c < entry->specialization_count; ++c) {
          fprintf(s, "      spec %u %u\n", entry->specializations[c].id,
                  entry->specializations[c].value);
        }
      }
    }
    fprintf(s, "end\n\n");
  }
}

kiln_status_t kiln_disassembler_write(const kiln_format_module_t* module,
                                      bool with_comments, FILE* stream) {
  if (with_comments) {
    fprintf(stream, "# kiln module, format version %u, flags 0x%x\n",
            module->version, module->flags);
    for (uint32_t i = 0; i < module->section_count; ++i) {
      const kiln_format_section_t* section = &module->sections[i];
      fprintf(stream, "# section %-12s offset %8" PRIu64 " size %8" PRIu64 "\n",
              kiln_format_section_name(section->id), section->offset, section->size);
    }
    fprintf(stream,
            "# %u strings, %u signatures, %u imports, %u exports, %u functions, "
            "%zu bytecode bytes, %u rodata, %u executables\n",
            module->string_count, module->signature_count, module->import_count,
            module->export_count, module->function_count, module->bytecode.size,
            module->rodata_count, module->executables.executable_count);
    for (uint32_t i = 0; i < module->rodata_count; ++i) {
      const kiln_format_rodata_t* r = &module->rodata[i];
      fprintf(stream, "# rodata %u '%.*s': %" PRIu64 " bytes (%" PRIu64 " stored%s) at offset %" PRIu64 ", align %u\n",
              i, KILN_SV_ARG(r->name), r->size, r->stored_size,
              (r->flags & KILN_FORMAT_RODATA_ZSTD) ? ", zstd" : "", r->file_offset,
              r->alignment);
    }
    for (uint32_t e = 0; e < module->executables.executable_count; ++e) {
      const kiln_format_executable_t* exe = &module->executables.executables[e];
      fprintf(stream, "# executable '%.*s': %u variants\n", KILN_SV_ARG(exe->name),
              exe->variant_count);
    }
    fputc('\n', stream);
  }
  if (module->name.size) {
    fprintf(stream, "module ");
    kiln_dis_name(stream, module->name);
    fputc('\n', stream);
  }
  if (module->global_word_count || module->global_ref_count) {
    fprintf(stream, "globals %u %u\n", module->global_word_count,
            module->global_ref_count);
  }
  for (uint32_t i = 0; i < module->import_count; ++i) {
    fprintf(stream, "import %s",
            (module->imports[i].flags & KILN_FORMAT_IMPORT_OPTIONAL) ? "optional " : "");
    kiln_dis_name(stream, module->imports[i].name);
    fputc(' ', stream);
    kiln_dis_string(stream, module->signatures[module->imports[i].signature].text);
    fputc('\n', stream);
  }
  for (uint32_t i = 0; i < module->rodata_count; ++i) {
    const kiln_format_rodata_t* r = &module->rodata[i];
    uint8_t* data = (uint8_t*)malloc(r->size ? (size_t)r->size : 1);
    if (!data) return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    kiln_status_t status =
        kiln_format_rodata_unpack(r, i, kiln_make_byte_span(data, (size_t)r->size));
    if (status) {
      free(data);
      return status;
    }
    fprintf(stream, "rodata ");
    if (r->name.size) {
      kiln_dis_name(stream, r->name);
    } else {
      fprintf(stream, "_rodata%u", i);
    }
    fprintf(stream, " align %u %s hex \"", r->alignment,
            (r->flags & KILN_FORMAT_RODATA_ZSTD) ? "zstd" : "raw");
    for (uint64_t b = 0; b < r->size; ++b) fprintf(stream, "%02x", data[b]);
    fprintf(stream, "\"\n");
    free(data);
  }
  fputc('\n', stream);
  kiln_dis_executables(module, stream);
  for (uint32_t i = 0; i < module->function_count; ++i) {
    KILN_RETURN_IF_ERROR(kiln_dis_function(module, i, stream));
  }
  for (uint32_t i = 0; i < module->export_count; ++i) {
    char name[256];
    fprintf(stream, "export ");
    kiln_dis_name(stream, kiln_make_cstring_view(kiln_dis_function_name(
                              module, module->exports[i].function, name, sizeof(name))));
    fprintf(stream, " as ");
    kiln_dis_name(stream, module->exports[i].name);
    fputc('\n', stream);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_disassembler_write_bytes(kiln_const_byte_span_t bytes, const char* what,
                                            bool with_comments, FILE* stream) {
  kiln_format_read_options_t options = kiln_format_read_options_default();
  options.max_rodata_bytes = UINT64_MAX;
  kiln_format_module_t module;
  KILN_RETURN_IF_ERROR(
      kiln_format_module_read(bytes, what, &options, kiln_allocator_system(), &module));
  kiln_status_t status = kiln_disassembler_write(&module, with_comments, stream);
  kiln_format_module_deinit(&module);
  if (!status && ferror(stream)) {
    status = kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "writing the disassembly failed");
  }
  return status;
}
