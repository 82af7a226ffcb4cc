// Sliding-window geometry shared by Conv, ConvTranspose and the pools:
// strides, dilations, explicit or auto pads, ceil_mode, and a table mapping
// (output position, kernel position) to an input offset.
#ifndef KILN_COMPILER_BRIDGE_ONNX_WINDOW_H_
#define KILN_COMPILER_BRIDGE_ONNX_WINDOW_H_

#include "ops.h"

#define KILN_WINDOW_MAX_SPATIAL (KILN_GRAPH_MAX_RANK - 2)
// Table entries below zero: inside the padding, or (ceil_mode) past it.
#define KILN_WINDOW_PAD (-1)
#define KILN_WINDOW_OUTSIDE (-2)

typedef struct kiln_window_t {
  int32_t spatial;
  int64_t in[KILN_WINDOW_MAX_SPATIAL];
  int64_t kernel[KILN_WINDOW_MAX_SPATIAL];
  int64_t stride[KILN_WINDOW_MAX_SPATIAL];
  int64_t dilation[KILN_WINDOW_MAX_SPATIAL];
  int64_t pad_begin[KILN_WINDOW_MAX_SPATIAL];
  int64_t pad_end[KILN_WINDOW_MAX_SPATIAL];
  int64_t out[KILN_WINDOW_MAX_SPATIAL];
} kiln_window_t;

// Resolves a forward window (Conv, pools). `kernel` may be NULL to read the
// kernel_shape attribute. Messages name the node.
kiln_status_t kiln_window_resolve(const kiln_graph_node_t* node,
                                  int32_t spatial, const int64_t* in,
                                  const int64_t* kernel, bool allow_ceil,
                                  bool allow_dilations,
                                  kiln_window_t* out_window);

// Resolves ConvTranspose geometry (output_padding, output_shape).
kiln_status_t kiln_window_resolve_transpose(const kiln_graph_node_t* node,
                                            int32_t spatial, const int64_t* in,
                                            const int64_t* kernel,
                                            kiln_window_t* out_window);

size_t kiln_window_out_count(const kiln_window_t* window);
size_t kiln_window_kernel_count(const kiln_window_t* window);
// Allocates out_count * kernel_count offsets (row-major input offsets within
// one channel plane, or KILN_WINDOW_PAD / KILN_WINDOW_OUTSIDE).
kiln_status_t kiln_window_table(const kiln_window_t* window,
                                kiln_allocator_t allocator,
                                int64_t** out_table);

#endif  // KILN_COMPILER_BRIDGE_ONNX_WINDOW_H_
