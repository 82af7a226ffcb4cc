// Shared between the ONNX reader's files; not a public header.
#ifndef KILN_COMPILER_BRIDGE_ONNX_ONNX_INTERNAL_H_
#define KILN_COMPILER_BRIDGE_ONNX_ONNX_INTERNAL_H_

#include <stdbool.h>

#include "kiln/base/byte_buffer.h"
#include "kiln/compiler/graph_tensor.h"
#include "onnx.pb-c.h"

// Maps an ONNX TensorProto.DataType to kiln's; INVALID when unsupported.
kiln_graph_dtype_t kiln_onnx_dtype_from_proto(int32_t data_type);
const char* kiln_onnx_proto_dtype_name(int32_t data_type);

// Decodes a TensorProto's contents (inline or external data; `model_dir` is
// the folder external paths are relative to, NULL to refuse them). `source`
// names the file in messages.
kiln_status_t kiln_onnx_tensor_decode(const Onnx__TensorProto* proto,
                                      const char* model_dir,
                                      const char* source,
                                      kiln_allocator_t allocator,
                                      kiln_graph_tensor_t* out_tensor);

// Where each initializer's raw_data lies in the model bytes (in initializer
// order; `present` false when it has none).
typedef struct kiln_onnx_raw_span_t {
  bool present;
  size_t offset;
  size_t size;
} kiln_onnx_raw_span_t;
typedef struct kiln_onnx_raw_spans_t {
  kiln_onnx_raw_span_t* spans;
  size_t count;
  size_t capacity;
} kiln_onnx_raw_spans_t;

// Copies ModelProto bytes without the initializers' raw_data payloads (each
// left present but empty) into `out_model`, recording where they were: the
// weights are then read once from the caller's (mapped) bytes.
kiln_status_t kiln_onnx_slim_model(const uint8_t* data, size_t size,
                                   const char* source,
                                   kiln_allocator_t allocator,
                                   kiln_byte_buffer_t* out_model,
                                   kiln_onnx_raw_spans_t* out_spans);
void kiln_onnx_raw_spans_deinit(kiln_onnx_raw_spans_t* spans,
                                kiln_allocator_t allocator);

// Model-local functions, inlined at import (onnx_functions.c).
#define KILN_ONNX_MAX_FUNCTION_DEPTH 16
#define KILN_ONNX_MAX_INLINED_NODES (1 << 18)
typedef kiln_status_t (*kiln_onnx_add_node_fn)(void* context,
                                               const Onnx__NodeProto* node);
typedef struct kiln_onnx_functions_t {
  const char* source;
  int64_t opset;  // of the model's default domain
  kiln_onnx_add_node_fn add_node;  // adds one (renamed) node; may inline again
  void* context;
  int depth;
  size_t inlined_nodes;
  size_t next_call;
} kiln_onnx_functions_t;
// The model's function that `node` calls (by domain and name), or NULL.
const Onnx__FunctionProto* kiln_onnx_find_function(
    const Onnx__ModelProto* model, const Onnx__NodeProto* node);
// Adds `fn`'s body in place of `call` through functions->add_node.
kiln_status_t kiln_onnx_inline_call(kiln_onnx_functions_t* functions,
                                    const Onnx__FunctionProto* fn,
                                    const Onnx__NodeProto* call);

#endif  // KILN_COMPILER_BRIDGE_ONNX_ONNX_INTERNAL_H_
