// NumPy .npy files: read the first or next array of a file that holds one or
// more arrays back to back (as `+file.npy` appends them), and write/append.
#ifndef KILN_TOOLS_COMMON_NPY_H_
#define KILN_TOOLS_COMMON_NPY_H_

#include <stdio.h>

#include "host_tensor.h"
#include "kiln/base/byte_buffer.h"
#include "kiln/base/views.h"

// Parses one array starting at *inout_offset of `bytes` and advances the
// offset past it. `what` names the file in errors. Refuses fortran-order
// arrays, big-endian and unsupported dtypes, and data shorter than the
// header promises.
kiln_status_t kiln_npy_parse(kiln_const_byte_span_t bytes, const char* what,
                             size_t* inout_offset, kiln_allocator_t allocator,
                             kiln_host_tensor_t* out_tensor);

// Serializes one array (format version 1.0, or 2.0 if the header needs it).
kiln_status_t kiln_npy_serialize(const kiln_host_tensor_t* tensor,
                                 kiln_byte_buffer_t* out);

// Writes (append=false) or appends one array to a file.
kiln_status_t kiln_npy_write_file(const char* path,
                                  const kiln_host_tensor_t* tensor,
                                  bool append);

#endif  // KILN_TOOLS_COMMON_NPY_H_
