// Reads the .kiln container into tables of views over the module bytes: the
// header, section table and every section except bytecode semantics (the VM
// verifier checks those). All offsets, lengths and counts are checked with
// overflow-safe arithmetic. Used by the VM loader and by kiln-dump-module.
#ifndef KILN_FORMAT_MODULE_READER_H_
#define KILN_FORMAT_MODULE_READER_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/base/allocator.h"
#include "kiln/base/arena.h"
#include "kiln/base/status.h"
#include "kiln/base/views.h"
#include "kiln/format/executables.h"
#include "kiln/format/module_format.h"
#include "kiln/format/signature.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_format_section_t {
  uint32_t id;  // kiln_format_section_id_t
  uint64_t offset;
  uint64_t size;
} kiln_format_section_t;

typedef struct kiln_format_import_t {
  kiln_string_view_t name;  // "module.function"
  uint32_t signature;
  uint32_t flags;  // KILN_FORMAT_IMPORT_*
} kiln_format_import_t;

typedef struct kiln_format_export_t {
  kiln_string_view_t name;
  uint32_t function;
} kiln_format_export_t;

typedef struct kiln_format_function_t {
  uint32_t signature;
  uint32_t bytecode_offset;  // inside the bytecode section
  uint32_t bytecode_length;
  const uint8_t* bytecode;
  uint16_t i32_register_count;
  uint16_t ref_register_count;
  kiln_string_view_t name;  // from debug info; empty when absent
} kiln_format_function_t;

typedef struct kiln_format_rodata_t {
  kiln_string_view_t name;  // may be empty
  uint32_t alignment;
  uint32_t flags;  // KILN_FORMAT_RODATA_*
  uint64_t file_offset;
  uint64_t stored_size;  // bytes in the file
  uint64_t size;         // bytes after decompression
  const uint8_t* stored;
} kiln_format_rodata_t;

typedef struct kiln_format_location_t {
  uint32_t function;
  uint32_t bytecode_offset;
  kiln_string_view_t file;
  uint32_t line;
} kiln_format_location_t;

typedef struct kiln_format_module_t {
  kiln_arena_t arena;  // every table below
  uint32_t version;
  uint32_t flags;
  kiln_string_view_t name;
  kiln_format_section_t* sections;
  uint32_t section_count;
  kiln_string_view_t* strings;
  uint32_t string_count;
  kiln_format_signature_t* signatures;
  uint32_t signature_count;
  kiln_format_import_t* imports;
  uint32_t import_count;
  kiln_format_export_t* exports;
  uint32_t export_count;
  kiln_format_function_t* functions;
  uint32_t function_count;
  kiln_const_byte_span_t bytecode;
  uint32_t global_word_count;  // 32-bit global slots (i64/f64 take two)
  uint32_t global_ref_count;
  kiln_format_rodata_t* rodata;
  uint32_t rodata_count;
  kiln_const_byte_span_t executables_section;
  uint64_t executables_section_offset;
  kiln_format_executables_t executables;
  kiln_format_location_t* locations;
  uint32_t location_count;
} kiln_format_module_t;

typedef struct kiln_format_read_options_t {
  // Largest total decompressed rodata size the reader accepts.
  uint64_t max_rodata_bytes;
} kiln_format_read_options_t;

// Default options (1 GiB of rodata).
kiln_format_read_options_t kiln_format_read_options_default(void);

// Parses `bytes` (which must outlive *out). `what` names the source (a
// path) in error messages. On error *out is empty and needs no deinit.
kiln_status_t kiln_format_module_read(kiln_const_byte_span_t bytes,
                                      const char* what,
                                      const kiln_format_read_options_t* options,
                                      kiln_allocator_t allocator,
                                      kiln_format_module_t* out);
void kiln_format_module_deinit(kiln_format_module_t* module);

// The section with `id`, or NULL.
const kiln_format_section_t* kiln_format_module_find_section(
    const kiln_format_module_t* module, uint32_t id);
const char* kiln_format_section_name(uint32_t id);

// Decompresses (or copies) rodata segment `index` into `out` (which must
// hold rodata->size bytes). Fails on a corrupt frame or a size mismatch.
kiln_status_t kiln_format_rodata_unpack(const kiln_format_rodata_t* rodata,
                                        uint32_t index, kiln_byte_span_t out);

#ifdef __cplusplus
}
#endif

#endif  // KILN_FORMAT_MODULE_READER_H_
