// kiln-compile front ends, chosen by the input's extension.
#ifndef KILN_TOOLS_COMPILE_FRONTENDS_H_
#define KILN_TOOLS_COMPILE_FRONTENDS_H_

#include "kiln/base/byte_buffer.h"
#include "kiln/base/status.h"

// Compiles `input_path` into module bytes appended to `out`.
kiln_status_t kiln_compile_dispatch(const char* input_path,
                                    kiln_allocator_t allocator,
                                    kiln_byte_buffer_t* out);

#endif  // KILN_TOOLS_COMPILE_FRONTENDS_H_
