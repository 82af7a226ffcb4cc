// kiln-compile front ends, chosen by the input's extension.
#ifndef KILN_TOOLS_COMPILE_FRONTENDS_H_
#define KILN_TOOLS_COMPILE_FRONTENDS_H_

#include <stdbool.h>

#include "kiln/base/byte_buffer.h"
#include "kiln/base/status.h"

// Compiles `input_path` into module bytes appended to `out`.
kiln_status_t kiln_compile_dispatch(const char* input_path,
                                    kiln_allocator_t allocator,
                                    kiln_byte_buffer_t* out);

// Loads module bytes with the VM so a module that would not verify is never
// written.
kiln_status_t kiln_compile_verify(kiln_const_byte_span_t bytes, const char* what);
// The same for a module file, loaded mapped (its rodata is not copied into
// memory); errors are annotated with `what`.
kiln_status_t kiln_compile_verify_file(const char* path, const char* what);

// The ONNX front end has its own flags: main hands it the whole command line
// when an argument ends in ".onnx" (compile_onnx.c).
bool kiln_compile_is_onnx(int argc, char** argv);
int kiln_compile_onnx_main(int argc, char** argv);

#endif  // KILN_TOOLS_COMPILE_FRONTENDS_H_
