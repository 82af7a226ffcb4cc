// Loop bounds of the row and window kernels and the rows_split lowering
// (lower_rows.c): every loop an invocation runs stays within
// KILN_KERNEL_MAX_LOOP_ITERATIONS on every target of the program.
#ifndef KILN_COMPILER_ONNX_EMIT_LOWER_ROWS_H_
#define KILN_COMPILER_ONNX_EMIT_LOWER_ROWS_H_

#include "kiln/compiler/kernels_loops.h"
#include "lower_util.h"

// Values per (row, chunk) work item of `kernel` (one workgroup per item,
// grid-stride) for `rows` rows of `size` values: a row no longer than the
// chunk runs in one item.
kiln_status_t kiln_lower_row_chunk(const kiln_lower_t* l, kiln_kernel_id_t kernel,
                                   uint64_t rows, uint64_t size, uint64_t* out_chunk);

// pool2d window tile for `outputs` outputs: 0 x 0 when the whole window
// fits one dispatch; refuses windows needing too many tiles.
kiln_status_t kiln_lower_window_tile(const kiln_lower_t* l, uint64_t outputs,
                                     uint64_t kernel_h, uint64_t kernel_w,
                                     uint32_t* out_tile_h, uint32_t* out_tile_w);

// A softmax or norm over rows longer than one item's chunk.
typedef struct kiln_rows_split_t {
  uint64_t outer, size, inner, chunk, channels;
  float epsilon;
  kiln_emit_range_t x, scale, bias, y;  // scale/bias: any range for softmax
  // When set: receives the range of the combined per-row statistics, at
  // float `*out_final_at` of it (pairs (mean of x - x[row's first], 1/std)
  // for norms), valid until another node's scratch is written.
  kiln_emit_range_t* out_stats;
  uint64_t* out_final_at;
} kiln_rows_split_t;
// The partial, combine and apply dispatches of rows_split (KILN_ROWS_* kind).
kiln_status_t kiln_lower_rows_split(const kiln_lower_t* l, uint32_t kind,
                                    const kiln_rows_split_t* rows_split);

#endif  // KILN_COMPILER_ONNX_EMIT_LOWER_ROWS_H_
