// A tensor with its own storage: graph inputs/outputs of the reference
// executor and the contents of TensorProto files.
#ifndef KILN_COMPILER_GRAPH_TENSOR_H_
#define KILN_COMPILER_GRAPH_TENSOR_H_

#include "kiln/compiler/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_graph_tensor_t {
  kiln_allocator_t allocator;
  kiln_graph_dtype_t dtype;
  kiln_graph_shape_t shape;
  void* data;  // zero-filled on allocation
  size_t byte_size;
} kiln_graph_tensor_t;

kiln_status_t kiln_graph_tensor_allocate(kiln_allocator_t allocator,
                                         kiln_graph_dtype_t dtype,
                                         const kiln_graph_shape_t* shape,
                                         kiln_graph_tensor_t* out_tensor);
// Safe on a zeroed or already deinitialized tensor.
void kiln_graph_tensor_deinit(kiln_graph_tensor_t* tensor);

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_GRAPH_TENSOR_H_
