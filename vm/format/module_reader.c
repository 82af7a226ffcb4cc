// Reads the .kiln container: header, section table, then each section in
// dependency order (strings first). Everything is a view into the caller's
// bytes; tables live in one arena.
#include "kiln/format/module_reader.h"

#include <string.h>

#include "kiln/base/reader.h"
#include "kiln/base/size_math.h"

kiln_format_read_options_t kiln_format_read_options_default(void) {
  kiln_format_read_options_t options;
  options.max_rodata_bytes = UINT64_C(1) << 30;
  return options;
}

const char* kiln_format_section_name(uint32_t id) {
  switch (id) {
    case KILN_FORMAT_SECTION_STRINGS: return "strings";
    case KILN_FORMAT_SECTION_SIGNATURES: return "signatures";
    case KILN_FORMAT_SECTION_IMPORTS: return "imports";
    case KILN_FORMAT_SECTION_EXPORTS: return "exports";
    case KILN_FORMAT_SECTION_FUNCTIONS: return "functions";
    case KILN_FORMAT_SECTION_BYTECODE: return "bytecode";
    case KILN_FORMAT_SECTION_GLOBALS: return "globals";
    case KILN_FORMAT_SECTION_RODATA: return "rodata";
    case KILN_FORMAT_SECTION_EXECUTABLES: return "executables";
    case KILN_FORMAT_SECTION_DEBUG: return "debug";
    default: return "unknown";
  }
}

const kiln_format_section_t* kiln_format_module_find_section(
    const kiln_format_module_t* module, uint32_t id) {
  for (uint32_t i = 0; i < module->section_count; ++i) {
    if (module->sections[i].id == id) return &module->sections[i];
  }
  return NULL;
}

typedef struct kiln_module_read_state_t {
  kiln_const_byte_span_t bytes;
  const char* what;
  kiln_format_module_t* module;
} kiln_module_read_state_t;

// A reader over section `id`; an absent section reads as empty.
static kiln_status_t kiln_section_reader(kiln_module_read_state_t* state,
                                         uint32_t id, kiln_reader_t* out) {
  const kiln_format_section_t* section =
      kiln_format_module_find_section(state->module, id);
  if (!section) {
    kiln_reader_init(out, kiln_make_const_byte_span(NULL, 0), 0,
                     kiln_format_section_name(id));
    return kiln_ok_status();
  }
  kiln_reader_init(
      out,
      kiln_make_const_byte_span(state->bytes.data + section->offset,
                                (size_t)section->size),
      (size_t)section->offset, kiln_format_section_name(id));
  return kiln_ok_status();
}

// Reads an entry count and checks the entries fit in what remains.
static kiln_status_t kiln_read_count(kiln_reader_t* reader, size_t entry_size,
                                     uint32_t* out) {
  *out = 0;
  if (kiln_reader_remaining(reader) == 0 && reader->size == 0) {
    return kiln_ok_status();  // absent section
  }
  size_t at = reader->base_offset + reader->offset;
  uint32_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_reader_read_u32(reader, &count));
  size_t needed;
  if (!kiln_size_mul(count, entry_size, &needed) ||
      needed > kiln_reader_remaining(reader)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "%s section: count %u at offset %zu needs at "
                            "least %zu bytes per entry but only %zu remain",
                            reader->what, count, at, entry_size,
                            kiln_reader_remaining(reader));
  }
  *out = count;
  return kiln_ok_status();
}

static kiln_status_t kiln_expect_end(const kiln_reader_t* reader) {
  if (kiln_reader_remaining(reader) != 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s section: %zu unexpected trailing bytes at "
                            "offset %zu",
                            reader->what, kiln_reader_remaining(reader),
                            reader->base_offset + reader->offset);
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_read_string_ref(kiln_module_read_state_t* state,
                                          kiln_reader_t* reader, bool optional,
                                          kiln_string_view_t* out) {
  size_t at = reader->base_offset + reader->offset;
  uint32_t index = 0;
  KILN_RETURN_IF_ERROR(kiln_reader_read_u32(reader, &index));
  if (optional && index == KILN_FORMAT_NO_STRING) {
    *out = kiln_make_string_view("", 0);
    return kiln_ok_status();
  }
  if (index >= state->module->string_count) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "%s section: string ordinal %u at offset %zu is "
                            "out of range (%u strings)",
                            reader->what, index, at,
                            state->module->string_count);
  }
  *out = state->module->strings[index];
  return kiln_ok_status();
}

static kiln_status_t kiln_read_ordinal(kiln_reader_t* reader, uint32_t limit,
                                       const char* kind, uint32_t* out) {
  size_t at = reader->base_offset + reader->offset;
  KILN_RETURN_IF_ERROR(kiln_reader_read_u32(reader, out));
  if (*out >= limit) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "%s section: %s ordinal %u at offset %zu is out of "
                            "range (%u %ss)",
                            reader->what, kind, *out, at, limit, kind);
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_alloc_table(kiln_format_module_t* module,
                                      size_t count, size_t size, void** out) {
  return kiln_arena_allocate_array(&module->arena, count ? count : 1, size,
                                   out);
}

static kiln_status_t kiln_read_header(kiln_module_read_state_t* state,
                                      uint32_t* out_name_string) {
  kiln_format_module_t* module = state->module;
  kiln_reader_t reader;
  kiln_reader_init(&reader, state->bytes, 0, "module header");
  uint32_t magic = 0, section_count = 0, reserved = 0;
  KILN_RETURN_IF_ERROR(kiln_reader_read_u32(&reader, &magic));
  if (magic != KILN_FORMAT_MAGIC) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "not a kiln module: magic 0x%08x, expected 0x%08x "
                            "('KILN')",
                            magic, KILN_FORMAT_MAGIC);
  }
  KILN_RETURN_IF_ERROR(kiln_reader_read_u32(&reader, &module->version));
  if (module->version > KILN_FORMAT_VERSION || module->version == 0) {
    return kiln_make_status(KILN_STATUS_INCOMPATIBLE,
                            "module format version %u is not supported: this "
                            "reader handles versions %u to %u",
                            module->version, KILN_FORMAT_VERSION_BASE, KILN_FORMAT_VERSION);
  }
  KILN_RETURN_IF_ERROR(kiln_reader_read_u32(&reader, &module->flags));
  if (module->flags != 0) {
    return kiln_make_status(KILN_STATUS_INCOMPATIBLE,
                            "module header flags 0x%x at offset 8 are unknown "
                            "to this reader",
                            module->flags);
  }
  KILN_RETURN_IF_ERROR(kiln_reader_read_u32(&reader, out_name_string));
  KILN_RETURN_IF_ERROR(kiln_reader_read_u32(&reader, &section_count));
  KILN_RETURN_IF_ERROR(kiln_reader_read_u32(&reader, &reserved));
  if (reserved != 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "module header: reserved field at offset 20 is %u, "
                            "must be 0",
                            reserved);
  }
  if (section_count > KILN_FORMAT_MAX_SECTIONS) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "module header: %u sections, at most %u allowed",
                            section_count, KILN_FORMAT_MAX_SECTIONS);
  }
  KILN_RETURN_IF_ERROR(kiln_alloc_table(module, section_count,
                                        sizeof(kiln_format_section_t),
                                        (void**)&module->sections));
  reader.what = "section table";
  for (uint32_t i = 0; i < section_count; ++i) {
    size_t at = reader.offset;
    kiln_format_section_t* section = &module->sections[i];
    uint32_t section_reserved = 0;
    KILN_RETURN_IF_ERROR(kiln_reader_read_u32(&reader, &section->id));
    KILN_RETURN_IF_ERROR(kiln_reader_read_u32(&reader, &section_reserved));
    KILN_RETURN_IF_ERROR(kiln_reader_read_u64(&reader, &section->offset));
    KILN_RETURN_IF_ERROR(kiln_reader_read_u64(&reader, &section->size));
    module->section_count = i + 1;
    if (section->id == 0 || section->id > KILN_FORMAT_SECTION_ID_MAX ||
        section_reserved != 0) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "section table entry %u at offset %zu: unknown "
                              "section id %u",
                              i, at, section->id);
    }
    if (kiln_format_module_find_section(module, section->id) != section) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "section table entry %u at offset %zu: section "
                              "'%s' appears twice",
                              i, at, kiln_format_section_name(section->id));
    }
    if (!kiln_range_fits(section->offset, section->size, state->bytes.size) ||
        section->offset < KILN_FORMAT_HEADER_SIZE ||
        section->offset % KILN_FORMAT_SECTION_ALIGNMENT != 0) {
      return kiln_make_status(
          KILN_STATUS_OUT_OF_RANGE,
          "section '%s' (entry %u at offset %zu): range [%llu, +%llu) is "
          "misaligned or outside the %zu-byte module",
          kiln_format_section_name(section->id), i, at,
          (unsigned long long)section->offset,
          (unsigned long long)section->size, state->bytes.size);
    }
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_read_strings(kiln_module_read_state_t* state) {
  kiln_format_module_t* module = state->module;
  kiln_reader_t reader;
  KILN_RETURN_IF_ERROR(
      kiln_section_reader(state, KILN_FORMAT_SECTION_STRINGS, &reader));
  uint32_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_read_count(&reader, 4, &count));
  KILN_RETURN_IF_ERROR(kiln_alloc_table(module, count,
                                        sizeof(kiln_string_view_t),
                                        (void**)&module->strings));
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t length = 0;
    KILN_RETURN_IF_ERROR(kiln_reader_read_u32(&reader, &length));
    kiln_const_byte_span_t span;
    KILN_RETURN_IF_ERROR(kiln_reader_read_span(&reader, length, &span));
    module->strings[i] =
        kiln_make_string_view((const char*)span.data, span.size);
  }
  module->string_count = count;
  return kiln_expect_end(&reader);
}

static kiln_status_t kiln_read_signatures(kiln_module_read_state_t* state) {
  kiln_format_module_t* module = state->module;
  kiln_reader_t reader;
  KILN_RETURN_IF_ERROR(
      kiln_section_reader(state, KILN_FORMAT_SECTION_SIGNATURES, &reader));
  uint32_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_read_count(&reader, 4, &count));
  KILN_RETURN_IF_ERROR(kiln_alloc_table(module, count,
                                        sizeof(kiln_format_signature_t),
                                        (void**)&module->signatures));
  for (uint32_t i = 0; i < count; ++i) {
    size_t at = reader.base_offset + reader.offset;
    kiln_string_view_t text;
    KILN_RETURN_IF_ERROR(kiln_read_string_ref(state, &reader, false, &text));
    KILN_RETURN_IF_ERROR_ANNOTATE(
        kiln_format_signature_parse(text, &module->signatures[i]),
        "signature %u at offset %zu", i, at);
  }
  module->signature_count = count;
  return kiln_expect_end(&reader);
}

static kiln_status_t kiln_read_imports(kiln_module_read_state_t* state) {
  kiln_format_module_t* module = state->module;
  kiln_reader_t reader;
  KILN_RETURN_IF_ERROR(
      kiln_section_reader(state, KILN_FORMAT_SECTION_IMPORTS, &reader));
  uint32_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_read_count(&reader, 12, &count));
  KILN_RETURN_IF_ERROR(kiln_alloc_table(module, count,
                                        sizeof(kiln_format_import_t),
                                        (void**)&module->imports));
  for (uint32_t i = 0; i < count; ++i) {
    kiln_format_import_t* import = &module->imports[i];
    KILN_RETURN_IF_ERROR(
        kiln_read_string_ref(state, &reader, false, &import->name));
    KILN_RETURN_IF_ERROR(kiln_read_ordinal(&reader, module->signature_count,
                                           "signature", &import->signature));
    size_t at = reader.base_offset + reader.offset;
    KILN_RETURN_IF_ERROR(kiln_reader_read_u32(&reader, &import->flags));
    if (import->flags & ~KILN_FORMAT_IMPORT_OPTIONAL) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "imports section: unknown flags 0x%x at offset "
                              "%zu",
                              import->flags, at);
    }
  }
  module->import_count = count;
  return kiln_expect_end(&reader);
}

static kiln_status_t kiln_read_functions(kiln_module_read_state_t* state) {
  kiln_format_module_t* module = state->module;
  kiln_reader_t bytecode_reader;
  KILN_RETURN_IF_ERROR(kiln_section_reader(state, KILN_FORMAT_SECTION_BYTECODE,
                                           &bytecode_reader));
  module->bytecode =
      kiln_make_const_byte_span(bytecode_reader.data, bytecode_reader.size);
  kiln_reader_t reader;
  KILN_RETURN_IF_ERROR(
      kiln_section_reader(state, KILN_FORMAT_SECTION_FUNCTIONS, &reader));
  uint32_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_read_count(&reader, 16, &count));
  KILN_RETURN_IF_ERROR(kiln_alloc_table(module, count,
                                        sizeof(kiln_format_function_t),
                                        (void**)&module->functions));
  for (uint32_t i = 0; i < count; ++i) {
    kiln_format_function_t* function = &module->functions[i];
    size_t at = reader.base_offset + reader.offset;
    KILN_RETURN_IF_ERROR(kiln_read_ordinal(&reader, module->signature_count,
                                           "signature", &function->signature));
    KILN_RETURN_IF_ERROR(
        kiln_reader_read_u32(&reader, &function->bytecode_offset));
    KILN_RETURN_IF_ERROR(
        kiln_reader_read_u32(&reader, &function->bytecode_length));
    KILN_RETURN_IF_ERROR(
        kiln_reader_read_u16(&reader, &function->i32_register_count));
    KILN_RETURN_IF_ERROR(
        kiln_reader_read_u16(&reader, &function->ref_register_count));
    if (!kiln_range_fits(function->bytecode_offset, function->bytecode_length,
                         module->bytecode.size)) {
      return kiln_make_status(
          KILN_STATUS_OUT_OF_RANGE,
          "functions section: function %u at offset %zu has bytecode [%u, "
          "+%u) outside the %zu-byte bytecode section",
          i, at, function->bytecode_offset, function->bytecode_length,
          module->bytecode.size);
    }
    // A module without a bytecode section has a NULL span: no arithmetic
    // on NULL (the range check above already forced offset 0, length 0).
    function->bytecode = module->bytecode.data
                             ? module->bytecode.data + function->bytecode_offset
                             : NULL;
    function->name = kiln_make_string_view("", 0);
  }
  module->function_count = count;
  return kiln_expect_end(&reader);
}

static kiln_status_t kiln_read_exports(kiln_module_read_state_t* state) {
  kiln_format_module_t* module = state->module;
  kiln_reader_t reader;
  KILN_RETURN_IF_ERROR(
      kiln_section_reader(state, KILN_FORMAT_SECTION_EXPORTS, &reader));
  uint32_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_read_count(&reader, 8, &count));
  KILN_RETURN_IF_ERROR(kiln_alloc_table(module, count,
                                        sizeof(kiln_format_export_t),
                                        (void**)&module->exports));
  for (uint32_t i = 0; i < count; ++i) {
    kiln_format_export_t* export_entry = &module->exports[i];
    KILN_RETURN_IF_ERROR(
        kiln_read_string_ref(state, &reader, false, &export_entry->name));
    KILN_RETURN_IF_ERROR(kiln_read_ordinal(&reader, module->function_count,
                                           "function",
                                           &export_entry->function));
  }
  module->export_count = count;
  return kiln_expect_end(&reader);
}

static kiln_status_t kiln_read_globals(kiln_module_read_state_t* state) {
  kiln_format_module_t* module = state->module;
  kiln_reader_t reader;
  KILN_RETURN_IF_ERROR(
      kiln_section_reader(state, KILN_FORMAT_SECTION_GLOBALS, &reader));
  if (reader.size == 0) return kiln_ok_status();
  KILN_RETURN_IF_ERROR(kiln_reader_read_u32(&reader, &module->global_word_count));
  KILN_RETURN_IF_ERROR(kiln_reader_read_u32(&reader, &module->global_ref_count));
  if (module->global_word_count > KILN_FORMAT_MAX_GLOBAL_WORDS ||
      module->global_ref_count > KILN_FORMAT_MAX_GLOBAL_REFS) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "globals section at offset %zu: %u words and %u "
                            "refs exceed the limits (%u, %u)",
                            reader.base_offset, module->global_word_count,
                            module->global_ref_count,
                            KILN_FORMAT_MAX_GLOBAL_WORDS,
                            KILN_FORMAT_MAX_GLOBAL_REFS);
  }
  return kiln_expect_end(&reader);
}

static kiln_status_t kiln_read_rodata(kiln_module_read_state_t* state,
                                      const kiln_format_read_options_t* options) {
  kiln_format_module_t* module = state->module;
  kiln_reader_t reader;
  KILN_RETURN_IF_ERROR(
      kiln_section_reader(state, KILN_FORMAT_SECTION_RODATA, &reader));
  uint32_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_read_count(&reader, 40, &count));
  KILN_RETURN_IF_ERROR(kiln_alloc_table(module, count,
                                        sizeof(kiln_format_rodata_t),
                                        (void**)&module->rodata));
  uint64_t total = 0;
  const kiln_format_section_t* section =
      kiln_format_module_find_section(module, KILN_FORMAT_SECTION_RODATA);
  for (uint32_t i = 0; i < count; ++i) {
    kiln_format_rodata_t* rodata = &module->rodata[i];
    size_t at = reader.base_offset + reader.offset;
    uint32_t reserved = 0;
    KILN_RETURN_IF_ERROR(
        kiln_read_string_ref(state, &reader, true, &rodata->name));
    KILN_RETURN_IF_ERROR(kiln_reader_read_u32(&reader, &rodata->alignment));
    KILN_RETURN_IF_ERROR(kiln_reader_read_u32(&reader, &rodata->flags));
    KILN_RETURN_IF_ERROR(kiln_reader_read_u32(&reader, &reserved));
    KILN_RETURN_IF_ERROR(kiln_reader_read_u64(&reader, &rodata->file_offset));
    KILN_RETURN_IF_ERROR(kiln_reader_read_u64(&reader, &rodata->stored_size));
    KILN_RETURN_IF_ERROR(kiln_reader_read_u64(&reader, &rodata->size));
    if (!kiln_is_power_of_two(rodata->alignment) ||
        rodata->alignment > KILN_FORMAT_RODATA_MAX_ALIGNMENT ||
        (rodata->flags & ~KILN_FORMAT_RODATA_ZSTD) || reserved != 0) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "rodata %u at offset %zu: alignment %u must be a "
                              "power of two <= %u and flags 0x%x known",
                              i, at, rodata->alignment,
                              KILN_FORMAT_RODATA_MAX_ALIGNMENT, rodata->flags);
    }
    // section is non-NULL here: count > 0 needs the section.
    if (rodata->file_offset < section->offset ||
        !kiln_range_fits(rodata->file_offset - section->offset,
                         rodata->stored_size, section->size) ||
        rodata->file_offset % rodata->alignment != 0) {
      return kiln_make_status(
          KILN_STATUS_OUT_OF_RANGE,
          "rodata %u at offset %zu: data [%llu, +%llu) is misaligned or "
          "outside the rodata section [%llu, +%llu)",
          i, at, (unsigned long long)rodata->file_offset,
          (unsigned long long)rodata->stored_size,
          (unsigned long long)section->offset,
          (unsigned long long)section->size);
    }
    if (!(rodata->flags & KILN_FORMAT_RODATA_ZSTD) &&
        rodata->size != rodata->stored_size) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "rodata %u at offset %zu: uncompressed data has "
                              "size %llu but stores %llu bytes",
                              i, at, (unsigned long long)rodata->size,
                              (unsigned long long)rodata->stored_size);
    }
    if (!kiln_u64_add(total, rodata->size, &total) ||
        total > options->max_rodata_bytes) {
      return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                              "rodata %u at offset %zu: total rodata size "
                              "exceeds the limit of %llu bytes",
                              i, at,
                              (unsigned long long)options->max_rodata_bytes);
    }
    rodata->stored = state->bytes.data + rodata->file_offset;
  }
  module->rodata_count = count;
  // Data follows the table; the table itself must not run into it, which the
  // bounded reader already guarantees for the table bytes.
  return kiln_ok_status();
}

static kiln_status_t kiln_read_debug(kiln_module_read_state_t* state) {
  kiln_format_module_t* module = state->module;
  kiln_reader_t reader;
  KILN_RETURN_IF_ERROR(
      kiln_section_reader(state, KILN_FORMAT_SECTION_DEBUG, &reader));
  if (reader.size == 0) return kiln_ok_status();
  uint32_t name_count = 0;
  size_t at = reader.base_offset;
  KILN_RETURN_IF_ERROR(kiln_read_count(&reader, 4, &name_count));
  if (name_count != 0 && name_count != module->function_count) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "debug section at offset %zu: %u function names "
                            "for %u functions",
                            at, name_count, module->function_count);
  }
  for (uint32_t i = 0; i < name_count; ++i) {
    KILN_RETURN_IF_ERROR(kiln_read_string_ref(state, &reader, true,
                                              &module->functions[i].name));
  }
  uint32_t location_count = 0;
  KILN_RETURN_IF_ERROR(kiln_read_count(&reader, 16, &location_count));
  KILN_RETURN_IF_ERROR(kiln_alloc_table(module, location_count,
                                        sizeof(kiln_format_location_t),
                                        (void**)&module->locations));
  for (uint32_t i = 0; i < location_count; ++i) {
    kiln_format_location_t* location = &module->locations[i];
    KILN_RETURN_IF_ERROR(kiln_read_ordinal(&reader, module->function_count,
                                           "function", &location->function));
    KILN_RETURN_IF_ERROR(
        kiln_reader_read_u32(&reader, &location->bytecode_offset));
    KILN_RETURN_IF_ERROR(
        kiln_read_string_ref(state, &reader, false, &location->file));
    KILN_RETURN_IF_ERROR(kiln_reader_read_u32(&reader, &location->line));
  }
  module->location_count = location_count;
  return kiln_expect_end(&reader);
}

static kiln_status_t kiln_read_all(kiln_module_read_state_t* state,
                                   const kiln_format_read_options_t* options) {
  kiln_format_module_t* module = state->module;
  uint32_t name_string = 0;
  KILN_RETURN_IF_ERROR(kiln_read_header(state, &name_string));
  KILN_RETURN_IF_ERROR(kiln_read_strings(state));
  if (name_string == KILN_FORMAT_NO_STRING) {
    module->name = kiln_make_string_view("", 0);
  } else if (name_string < module->string_count) {
    module->name = module->strings[name_string];
  } else {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "module header: name string %u at offset 12 is out "
                            "of range (%u strings)",
                            name_string, module->string_count);
  }
  KILN_RETURN_IF_ERROR(kiln_read_signatures(state));
  KILN_RETURN_IF_ERROR(kiln_read_imports(state));
  KILN_RETURN_IF_ERROR(kiln_read_functions(state));
  KILN_RETURN_IF_ERROR(kiln_read_exports(state));
  KILN_RETURN_IF_ERROR(kiln_read_globals(state));
  KILN_RETURN_IF_ERROR(kiln_read_rodata(state, options));
  KILN_RETURN_IF_ERROR(kiln_read_debug(state));
  const kiln_format_section_t* executables =
      kiln_format_module_find_section(module, KILN_FORMAT_SECTION_EXECUTABLES);
  if (executables) {
    module->executables_section = kiln_make_const_byte_span(
        state->bytes.data + executables->offset, (size_t)executables->size);
    module->executables_section_offset = executables->offset;
    KILN_RETURN_IF_ERROR(kiln_format_executables_parse(
        module->executables_section, (size_t)executables->offset,
        module->arena.parent, &module->executables));
  }
  return kiln_ok_status();
}

kiln_status_t kiln_format_module_read(kiln_const_byte_span_t bytes,
                                      const char* what,
                                      const kiln_format_read_options_t* options,
                                      kiln_allocator_t allocator,
                                      kiln_format_module_t* out) {
  memset(out, 0, sizeof(*out));
  kiln_format_read_options_t defaults = kiln_format_read_options_default();
  if (!options) options = &defaults;
  kiln_arena_init(&out->arena, allocator, 16 * 1024);
  out->executables.allocator = allocator;
  kiln_module_read_state_t state = {bytes, what, out};
  kiln_status_t status = kiln_read_all(&state, options);
  if (status) {
    kiln_format_module_deinit(out);
    return kiln_status_annotate(status, "while reading module '%s'",
                                what ? what : "<memory>");
  }
  return kiln_ok_status();
}

void kiln_format_module_deinit(kiln_format_module_t* module) {
  kiln_format_executables_deinit(&module->executables);
  kiln_arena_deinit(&module->arena);
  memset(module, 0, sizeof(*module));
}
