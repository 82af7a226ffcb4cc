// Owned tensors for executor inputs/outputs and TensorProto files.
#include "kiln/compiler/graph_tensor.h"

#include <string.h>

kiln_status_t kiln_graph_tensor_allocate(kiln_allocator_t allocator,
                                         kiln_graph_dtype_t dtype,
                                         const kiln_graph_shape_t* shape,
                                         kiln_graph_tensor_t* out_tensor) {
  memset(out_tensor, 0, sizeof(*out_tensor));
  size_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(shape, &count));
  size_t element_size = kiln_graph_dtype_size(dtype);
  if (element_size == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "invalid dtype %d",
                            (int)dtype);
  }
  void* data = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_calloc_array(allocator, count, element_size, &data));
  out_tensor->allocator = allocator;
  out_tensor->dtype = dtype;
  out_tensor->shape = *shape;
  out_tensor->data = data;
  out_tensor->byte_size = count * element_size;
  return kiln_ok_status();
}

void kiln_graph_tensor_deinit(kiln_graph_tensor_t* tensor) {
  if (tensor->data) kiln_allocator_free(tensor->allocator, tensor->data);
  memset(tensor, 0, sizeof(*tensor));
}
