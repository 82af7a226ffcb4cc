// Strided views of graph values through the view ops exporters put around
// attention heads (Transpose, Reshape/Squeeze/Unsqueeze/Flatten/Identity,
// Slice, Split, Gather of one constant index) and scalar Mul/Div scales: which elements of which value a
// tensor reads, as an offset and per-dim strides (each dim a product of
// (size, stride) atoms). Used by pass_fuse_attention.c.
#ifndef KILN_COMPILER_BRIDGE_ONNX_ATTENTION_VIEWS_H_
#define KILN_COMPILER_BRIDGE_ONNX_ATTENTION_VIEWS_H_

#include <stdbool.h>
#include <stdint.h>

#include "kiln/compiler/graph.h"

#define KILN_VIEW_MAX_ATOMS 16
#define KILN_VIEW_MAX_CHAIN 16

// A strided view of a value's elements: logical dims, each the product of
// its atoms (size > 1 each; outermost first), plus an element offset.
typedef struct kiln_view_atom_t {
  int64_t size, stride;
} kiln_view_atom_t;
typedef struct kiln_view_t {
  int32_t root;
  int64_t offset;
  int32_t rank;
  int64_t dims[KILN_GRAPH_MAX_RANK];
  int32_t dim_atoms[KILN_GRAPH_MAX_RANK];
  kiln_view_atom_t atoms[KILN_VIEW_MAX_ATOMS];
  int32_t atom_count;
} kiln_view_t;

// The value's own contiguous layout; false without a known non-empty shape.
bool kiln_view_identity(const kiln_graph_t* graph, int32_t value, kiln_view_t* v);
// Regroups the atoms into `shape`'s dims; false when the sizes do not factor.
bool kiln_view_reshape(kiln_view_t* v, const kiln_graph_shape_t* shape);
// New dim d is old dim perm[d].
bool kiln_view_permute(kiln_view_t* v, const int64_t* perm, size_t count);
// The first atom index of dim `d`.
int32_t kiln_view_first_atom(const kiln_view_t* v, int32_t d);
// Dim `d`'s stride (0 for size 1); false when it is not one atom.
bool kiln_view_dim_stride(const kiln_view_t* v, int32_t d, int64_t* out);
// The index (0/1) of a binary node's scalar f32 constant input, or -1.
int kiln_view_scalar_input(const kiln_graph_t* graph, const kiln_graph_node_t* node);
// Traces `value` back through view ops (and, with `scale`, scalar Mul/Div,
// multiplied into *scale) to the value a kernel can read in place.
bool kiln_view_trace_input(const kiln_graph_t* graph, int32_t value, float* scale,
                           kiln_view_t* out);
// The node reading `value` when it is exactly one node and no graph output;
// -1 otherwise.
int32_t kiln_view_only_reader(const kiln_graph_t* graph, int32_t value);
// Follows `value` forward through sole-reader Transpose/reshape ops (their
// ids in `chain`, KILN_VIEW_MAX_CHAIN at most): `out` views `value` inside
// the last one's output.
bool kiln_view_trace_output(kiln_graph_t* graph, int32_t value, int32_t* chain,
                            int32_t* out_length, kiln_view_t* out);

#endif  // KILN_COMPILER_BRIDGE_ONNX_ATTENTION_VIEWS_H_
