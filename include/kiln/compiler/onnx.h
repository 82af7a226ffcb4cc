// The ONNX front end: reads ONNX models (protobuf-c over Debian's onnx.proto)
// into the graph IR and validates that every op, attribute and dtype is one
// kiln supports. An import either yields a complete graph with static shapes
// or fails naming the node, op, opset and what is supported.
#ifndef KILN_COMPILER_ONNX_H_
#define KILN_COMPILER_ONNX_H_

#include "kiln/compiler/graph.h"
#include "kiln/compiler/graph_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

// The opsets of the default domain the importer accepts. The target is
// 11-17; older opsets are accepted only for ops whose older definitions
// kiln implements exactly (the node tests store many models at the op's
// first opset). Ops whose old forms differ carry their own minimum (Clip,
// Pad, Resize 11; Slice 10; BatchNormalization 9; Dropout 7; Reshape 5;
// Split 2), and old broadcast/consumed_inputs attributes are refused.
// Opsets 18-22 are accepted with each op's changes in those versions
// (docs/onnx.md lists them and what is refused).
#define KILN_ONNX_MIN_OPSET 1
#define KILN_ONNX_MAX_OPSET 22

// One --input-shape=NAME:1x3x224x224 override for an input's dynamic dims.
typedef struct kiln_onnx_input_shape_t {
  char name[256];
  kiln_graph_shape_t shape;
} kiln_onnx_input_shape_t;

// Parses "NAME:1x3x224x224" (a scalar is "NAME:scalar"). The name is
// everything before the last ':'.
kiln_status_t kiln_onnx_parse_input_shape(const char* text,
                                          kiln_onnx_input_shape_t* out_shape);

// Freezes a graph input to fixed contents: it becomes a constant (for
// models whose shape arguments arrive as inputs; static shapes need them).
typedef struct kiln_onnx_frozen_input_t {
  const char* name;  // NULL: match by `index`
  size_t index;      // position among the model's (non-initializer) inputs
  const kiln_graph_tensor_t* value;
} kiln_onnx_frozen_input_t;

typedef struct kiln_onnx_import_options_t {
  const kiln_onnx_input_shape_t* input_shapes;
  size_t input_shape_count;
  const kiln_onnx_frozen_input_t* frozen_inputs;
  size_t frozen_input_count;
} kiln_onnx_import_options_t;

// Imports a model file; external-data tensors are read relative to its
// folder. On success *out_graph holds shapes for every value; on failure it
// is left deinitialized.
kiln_status_t kiln_onnx_import_file(const char* path,
                                    const kiln_onnx_import_options_t* options,
                                    kiln_allocator_t allocator,
                                    kiln_graph_t* out_graph);
// Same from bytes; `path` names the model in messages and anchors external
// data (NULL: external data is refused).
kiln_status_t kiln_onnx_import_bytes(const void* data, size_t size,
                                     const char* path,
                                     const kiln_onnx_import_options_t* options,
                                     kiln_allocator_t allocator,
                                     kiln_graph_t* out_graph);

// Reads a serialized TensorProto file (the node tests' input_N.pb).
kiln_status_t kiln_onnx_read_tensor_file(const char* path,
                                         kiln_allocator_t allocator,
                                         kiln_graph_tensor_t* out_tensor);

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_ONNX_H_
