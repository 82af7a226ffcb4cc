// The text assembly (docs/assembly.md): assembles source text into module
// bytes through the module writer, and disassembles module bytes back into
// text that assembles to the identical module.
#ifndef KILN_COMPILER_ASSEMBLER_H_
#define KILN_COMPILER_ASSEMBLER_H_

#include <stdio.h>

#include "kiln/base/allocator.h"
#include "kiln/base/byte_buffer.h"
#include "kiln/base/status.h"
#include "kiln/base/views.h"
#include "kiln/format/module_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

// Assembles `source` and appends the module to `out`. Errors name
// `source_name`:line and the offending token.
kiln_status_t kiln_assembler_assemble(kiln_string_view_t source,
                                      const char* source_name,
                                      kiln_allocator_t allocator,
                                      kiln_byte_buffer_t* out);

// Writes assembly text for a read module: header comments (omitted when
// with_comments is false), then directives that reassemble to the same
// bytes for modules made by the module writer.
kiln_status_t kiln_disassembler_write(const kiln_format_module_t* module,
                                      bool with_comments, FILE* stream);

// Reads module bytes (`what` names them in errors; no rodata size cap: the
// bytes are trusted output of the writer) and writes their disassembly.
kiln_status_t kiln_disassembler_write_bytes(kiln_const_byte_span_t bytes, const char* what,
                                            bool with_comments, FILE* stream);

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_ASSEMBLER_H_
