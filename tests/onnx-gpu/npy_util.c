// .npy files of the committed model tests as graph tensors.
#include "npy_util.h"

#include <string.h>

#include "kiln/base/file.h"
#include "npy.h"

// A float32 .npy file as a graph tensor.
kiln_status_t kiln_test_read_npy_f32(const char* path, kiln_graph_tensor_t* out) {
  kiln_file_contents_t contents;
  KILN_RETURN_IF_ERROR(
      kiln_file_read_all_limited(path, 64u << 20, kiln_allocator_system(), &contents));
  kiln_host_tensor_t host;
  size_t offset = 0;
  kiln_status_t status =
      kiln_npy_parse(kiln_make_const_byte_span(contents.data, contents.size), path, &offset,
                     kiln_allocator_system(), &host);
  kiln_allocator_free(contents.allocator, contents.data);
  KILN_RETURN_IF_ERROR(status);
  kiln_graph_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  shape.rank = (int32_t)host.rank;
  for (size_t d = 0; d < host.rank && d < KILN_GRAPH_MAX_RANK; ++d) shape.dims[d] = host.dims[d];
  if (host.element_type != KILN_ELEMENT_F32 || host.rank > KILN_GRAPH_MAX_RANK) {
    kiln_host_tensor_deinit(&host);
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "%s: expected float32", path);
  }
  status = kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32, &shape, out);
  if (kiln_status_is_ok(status) && host.byte_size) memcpy(out->data, host.data, host.byte_size);
  kiln_host_tensor_deinit(&host);
  return status;
}
