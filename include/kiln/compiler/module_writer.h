// Builds .kiln module bytes. The text assembler and the ONNX compiler both
// emit modules through this writer; it depends only on base/ and the format
// headers (library kiln_module_writer).
//
// Output is deterministic: the same calls in the same order give the same
// bytes. String ordinals handed out by add_string are fixed at once (the
// bytecode embeds them); every other table is laid out by finish().
#ifndef KILN_COMPILER_MODULE_WRITER_H_
#define KILN_COMPILER_MODULE_WRITER_H_

#include <stdint.h>

#include "kiln/base/allocator.h"
#include "kiln/base/byte_buffer.h"
#include "kiln/base/status.h"
#include "kiln/base/views.h"
#include "kiln/format/executables.h"
#include "kiln/format/module_format.h"
#include "kiln/format/signature.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_module_writer_t kiln_module_writer_t;

typedef enum kiln_module_writer_compression_e {
  // zstd when it saves at least 1/8 of a segment of 256 bytes or more.
  KILN_MODULE_WRITER_COMPRESSION_AUTO = 0,
  KILN_MODULE_WRITER_COMPRESSION_NONE = 1,
  KILN_MODULE_WRITER_COMPRESSION_ZSTD = 2,
} kiln_module_writer_compression_t;

kiln_status_t kiln_module_writer_create(kiln_allocator_t allocator,
                                        kiln_module_writer_t** out_writer);
void kiln_module_writer_destroy(kiln_module_writer_t* writer);

kiln_status_t kiln_module_writer_set_name(kiln_module_writer_t* writer,
                                          kiln_string_view_t name);
// Interns a string for bytecode operands (e.g. `fail` messages).
kiln_status_t kiln_module_writer_add_string(kiln_module_writer_t* writer,
                                            kiln_string_view_t text,
                                            uint32_t* out_ordinal);
// `name` is "module.function"; flags are KILN_FORMAT_IMPORT_*.
kiln_status_t kiln_module_writer_add_import(kiln_module_writer_t* writer,
                                            kiln_string_view_t name,
                                            kiln_string_view_t signature,
                                            uint32_t flags,
                                            uint32_t* out_ordinal);
// The parsed signature of declared function or import `ordinal` (for the
// function builder's call checks).
kiln_status_t kiln_module_writer_function_signature(const kiln_module_writer_t* writer,
                                                    uint32_t ordinal,
                                                    kiln_format_signature_t* out);
kiln_status_t kiln_module_writer_import_signature(const kiln_module_writer_t* writer,
                                                  uint32_t ordinal,
                                                  kiln_format_signature_t* out);
// Declares a function (so calls can name it before its body exists); the
// name goes to debug info and may be empty.
kiln_status_t kiln_module_writer_declare_function(
    kiln_module_writer_t* writer, kiln_string_view_t name,
    kiln_string_view_t signature, uint32_t* out_ordinal);
kiln_status_t kiln_module_writer_define_function(
    kiln_module_writer_t* writer, uint32_t ordinal,
    uint16_t i32_register_count, uint16_t ref_register_count,
    kiln_const_byte_span_t bytecode);
kiln_status_t kiln_module_writer_add_export(kiln_module_writer_t* writer,
                                            kiln_string_view_t name,
                                            uint32_t function);
kiln_status_t kiln_module_writer_set_globals(kiln_module_writer_t* writer,
                                            uint32_t word_count,
                                            uint32_t ref_count);
// Copies `data`. alignment: a power of two up to 4096 (file offset).
kiln_status_t kiln_module_writer_add_rodata(
    kiln_module_writer_t* writer, kiln_string_view_t name,
    kiln_const_byte_span_t data, uint32_t alignment,
    kiln_module_writer_compression_t compression, uint32_t* out_ordinal);
// Like add_rodata, but stores `data` uncompressed by reference: the caller
// keeps it valid and unchanged until finish() returns (weights stream from
// the compiler's buffers into the output without another copy). With
// COMPRESSION_AUTO only a compressed form that is kept gets allocated.
kiln_status_t kiln_module_writer_add_rodata_reference(
    kiln_module_writer_t* writer, kiln_string_view_t name,
    kiln_const_byte_span_t data, uint32_t alignment,
    kiln_module_writer_compression_t compression, uint32_t* out_ordinal);
// The same for a segment that is the concatenation of `pieces` (all kept
// valid until finish() returns; the array itself is copied): constants
// spread over the compiler's memory go to the output without being joined.
// Compression decisions equal those for the joined bytes; data that will be
// compressed is joined into a temporary block first.
kiln_status_t kiln_module_writer_add_rodata_pieces(
    kiln_module_writer_t* writer, kiln_string_view_t name,
    const kiln_const_byte_span_t* pieces, size_t piece_count, uint32_t alignment,
    kiln_module_writer_compression_t compression, uint32_t* out_ordinal);
// Serializes (copies) one executable with all its variants.
kiln_status_t kiln_module_writer_add_executable(
    kiln_module_writer_t* writer, const kiln_format_executable_t* executable);
kiln_status_t kiln_module_writer_add_location(kiln_module_writer_t* writer,
                                              uint32_t function,
                                              uint32_t bytecode_offset,
                                              kiln_string_view_t file,
                                              uint32_t line);

// Lays out and appends the whole module to `out` (which the caller has
// initialized). Fails if a declared function has no body.
kiln_status_t kiln_module_writer_finish(kiln_module_writer_t* writer,
                                        kiln_byte_buffer_t* out);

// Called with consecutive pieces of the module as finish_streamed() lays it
// out (metadata, then each rodata payload in place): the module never has to
// exist in memory as one block.
typedef kiln_status_t (*kiln_module_writer_sink_fn_t)(void* user, kiln_const_byte_span_t piece);
// Same bytes as finish(), handed to `sink` piece by piece; *out_size is the
// module's total size.
kiln_status_t kiln_module_writer_finish_streamed(kiln_module_writer_t* writer,
                                                 kiln_module_writer_sink_fn_t sink,
                                                 void* user, uint64_t* out_size);

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_MODULE_WRITER_H_
