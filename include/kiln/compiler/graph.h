// The compiler bridge's graph IR: nodes over values with static shapes.
// Values are tensors (f32, i64, i32, bool); a value with `data` is a constant
// (an initializer or a folded result). Everything a graph owns lives in its
// arena, so a graph is freed in one call; nodes and values are addressed by
// index because their arrays grow.
#ifndef KILN_COMPILER_GRAPH_H_
#define KILN_COMPILER_GRAPH_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/base/allocator.h"
#include "kiln/base/arena.h"
#include "kiln/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_graph_dtype_e {
  KILN_GRAPH_DTYPE_INVALID = 0,
  KILN_GRAPH_DTYPE_F32,
  KILN_GRAPH_DTYPE_I64,
  KILN_GRAPH_DTYPE_I32,
  KILN_GRAPH_DTYPE_BOOL,
  // Reduced-precision and quantized types (issues 15 and 17).
  KILN_GRAPH_DTYPE_F16,
  KILN_GRAPH_DTYPE_I8,
  KILN_GRAPH_DTYPE_U8,
} kiln_graph_dtype_t;

size_t kiln_graph_dtype_size(kiln_graph_dtype_t dtype);
const char* kiln_graph_dtype_name(kiln_graph_dtype_t dtype);

#define KILN_GRAPH_MAX_RANK 8
// Largest tensor the IR accepts (elements); shapes beyond it are refused so
// byte sizes always fit comfortably in size_t.
#define KILN_GRAPH_MAX_ELEMENTS ((int64_t)1 << 32)

typedef struct kiln_graph_shape_t {
  int32_t rank;
  int64_t dims[KILN_GRAPH_MAX_RANK];  // -1: not known (a dynamic dim)
} kiln_graph_shape_t;

// Element count of a fully known shape; fails on unknown dims or overflow.
kiln_status_t kiln_graph_shape_element_count(const kiln_graph_shape_t* shape,
                                             size_t* out_count);
bool kiln_graph_shape_equal(const kiln_graph_shape_t* a,
                            const kiln_graph_shape_t* b);
// GatherElements: the element of `data` that output `position` (row-major
// in the indices' shape) reads for `index` along `axis` (negative counts
// from the end); OUT_OF_RANGE when the index is outside that dim. Shared
// by the reference op and the GPU lowering's constant-index table.
kiln_status_t kiln_gather_elements_offset(const kiln_graph_shape_t* data,
                                          const kiln_graph_shape_t* indices, int32_t axis,
                                          size_t position, int64_t index, size_t* out_offset);
// "1x3x224x224" ("scalar" for rank 0, "?" for unknown dims).
void kiln_graph_shape_format(const kiln_graph_shape_t* shape, char* buffer,
                             size_t buffer_size);

typedef struct kiln_graph_value_t {
  const char* name;
  kiln_graph_dtype_t dtype;
  bool has_shape;
  kiln_graph_shape_t shape;
  void* data;         // constant contents (arena-owned) or NULL
  int32_t producer;   // node index, or -1 (input / constant)
  bool is_input;      // a graph input fed at run time
  bool is_output;
} kiln_graph_value_t;

typedef enum kiln_graph_attr_type_e {
  KILN_GRAPH_ATTR_INT = 1,
  KILN_GRAPH_ATTR_FLOAT,
  KILN_GRAPH_ATTR_STRING,
  KILN_GRAPH_ATTR_INTS,
  KILN_GRAPH_ATTR_FLOATS,
  KILN_GRAPH_ATTR_TENSOR,  // `tensor` is a constant value id
  KILN_GRAPH_ATTR_OTHER,   // graphs, sparse tensors, ...: always refused
  KILN_GRAPH_ATTR_STRINGS,  // `s`: `count` strings joined by ',' (RNN activations)
} kiln_graph_attr_type_t;

typedef struct kiln_graph_attr_t {
  const char* name;
  kiln_graph_attr_type_t type;
  int64_t i;
  float f;
  const char* s;
  const int64_t* ints;
  const float* floats;
  size_t count;  // of ints / floats
  int32_t tensor;
} kiln_graph_attr_t;

typedef struct kiln_graph_node_t {
  const char* name;
  const char* op_type;
  int32_t* inputs;  // value ids; -1 for an absent optional input
  size_t input_count;
  int32_t* outputs;  // -1 for an unused optional output
  size_t output_count;
  kiln_graph_attr_t* attrs;
  size_t attr_count;
  bool removed;  // dropped by a pass; skipped by everything after
} kiln_graph_node_t;

typedef struct kiln_graph_t {
  kiln_allocator_t allocator;
  kiln_arena_t arena;
  const char* source;  // model path, for messages
  int64_t opset;       // of the default ONNX domain
  kiln_graph_value_t* values;
  size_t value_count;
  size_t value_capacity;
  kiln_graph_node_t* nodes;
  size_t node_count;
  size_t node_capacity;
  int32_t* inputs;
  size_t input_count;
  int32_t* outputs;
  size_t output_count;
} kiln_graph_t;

void kiln_graph_initialize(kiln_allocator_t allocator, const char* source,
                           kiln_graph_t* out_graph);
void kiln_graph_deinitialize(kiln_graph_t* graph);

// Adds a value (name copied; NULL or "" gets a unique generated name).
kiln_status_t kiln_graph_add_value(kiln_graph_t* graph, const char* name,
                                   kiln_graph_dtype_t dtype,
                                   int32_t* out_value_id);
// Adds a constant value holding a copy of `data` with `shape`.
kiln_status_t kiln_graph_add_constant(kiln_graph_t* graph, const char* name,
                                      kiln_graph_dtype_t dtype,
                                      const kiln_graph_shape_t* shape,
                                      const void* data, int32_t* out_value_id);
// Gives value `value_id` constant contents (a copy of `data`).
kiln_status_t kiln_graph_value_set_data(kiln_graph_t* graph, int32_t value_id,
                                        const void* data);
int32_t kiln_graph_find_value(const kiln_graph_t* graph, const char* name);
// Byte size of a value with a known shape.
kiln_status_t kiln_graph_value_byte_size(const kiln_graph_value_t* value,
                                         size_t* out_size);

// Adds a node; the id arrays are copied. Sets each output's producer.
kiln_status_t kiln_graph_add_node(kiln_graph_t* graph, const char* op_type,
                                  const char* name, const int32_t* inputs,
                                  size_t input_count, const int32_t* outputs,
                                  size_t output_count, int32_t* out_node_id);
// Adds (or replaces) an attribute on a node; arrays/strings are copied.
kiln_status_t kiln_graph_node_set_attr(kiln_graph_t* graph, int32_t node_id,
                                       const kiln_graph_attr_t* attr);
// Appends an input to a node (used by fusions).
kiln_status_t kiln_graph_node_append_input(kiln_graph_t* graph,
                                           int32_t node_id, int32_t value_id);

const kiln_graph_attr_t* kiln_graph_node_find_attr(
    const kiln_graph_node_t* node, const char* name);
// Typed attribute lookups with defaults; a present attribute of the wrong
// type is an error naming the node.
kiln_status_t kiln_graph_node_attr_int(const kiln_graph_node_t* node,
                                       const char* name, int64_t fallback,
                                       int64_t* out_value);
kiln_status_t kiln_graph_node_attr_float(const kiln_graph_node_t* node,
                                         const char* name, float fallback,
                                         float* out_value);
kiln_status_t kiln_graph_node_attr_string(const kiln_graph_node_t* node,
                                          const char* name,
                                          const char* fallback,
                                          const char** out_value);
// Missing list attribute: *out_count = 0 and *out_values = NULL.
kiln_status_t kiln_graph_node_attr_ints(const kiln_graph_node_t* node,
                                        const char* name,
                                        const int64_t** out_values,
                                        size_t* out_count);

// Number of live (not removed) nodes using value `value_id` as an input,
// plus one if it is a graph output.
size_t kiln_graph_value_use_count(const kiln_graph_t* graph, int32_t value_id);
// Replaces every use of `from` (node inputs and graph outputs) by `to`.
void kiln_graph_replace_uses(kiln_graph_t* graph, int32_t from, int32_t to);
// Moves nodes [from, node_count) to just after node `after`, keeping both
// blocks' order, and renumbers producers (passes that expand a node).
kiln_status_t kiln_graph_place_nodes_after(kiln_graph_t* graph, size_t after,
                                           size_t from);

// View nodes (view_nodes.c): a Reshape-family node, or a Transpose that
// moves only dims of size 1, whose float output holds its input's bytes in
// the same order. kiln_graph_view_source returns that input's id, or -1.
// kiln_graph_transpose_perm: a Transpose's perm for `rank` dims (default:
// reversed) into perm[rank]; false when malformed.
bool kiln_graph_transpose_perm(const kiln_graph_node_t* node, int32_t rank, int64_t* perm);
bool kiln_graph_transpose_is_view(const kiln_graph_t* graph, const kiln_graph_node_t* node);
int32_t kiln_graph_view_source(const kiln_graph_t* graph, const kiln_graph_node_t* node);

// A node's input value (NULL when absent or out of range).
static inline const kiln_graph_value_t* kiln_graph_node_input(
    const kiln_graph_t* graph, const kiln_graph_node_t* node, size_t index) {
  if (index >= node->input_count || node->inputs[index] < 0) return NULL;
  return &graph->values[node->inputs[index]];
}

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_GRAPH_H_
