// The ONNX emitter's internal program: executables (kernel + op spec
// constants, one config per target), weights, and dispatches whose bindings
// name where each tensor lives. lower_*.c fill it from the graph;
// emit_module.c builds the module from it.
#ifndef KILN_COMPILER_ONNX_EMIT_INTERNAL_H_
#define KILN_COMPILER_ONNX_EMIT_INTERNAL_H_

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "kiln/base/byte_buffer.h"
#include "kiln/compiler/graph.h"
#include "kiln/compiler/graph_memory_plan.h"
#include "kiln/compiler/kernels_target.h"
#include "kiln/compiler/onnx_compile.h"

// Storage buffers are bound at offsets aligned to this (every device's
// minStorageBufferOffsetAlignment is at most 256).
#define KILN_EMIT_ALIGNMENT 256u

// `bytes` rounded up to a multiple of KILN_EMIT_ALIGNMENT.
static inline uint64_t kiln_emit_align_up(uint64_t bytes) {
  return (bytes + KILN_EMIT_ALIGNMENT - 1) & ~(uint64_t)(KILN_EMIT_ALIGNMENT - 1);
}

typedef enum kiln_emit_space_e {
  KILN_EMIT_SPACE_INPUT = 0,      // binding-table slot = input index
  KILN_EMIT_SPACE_OUTPUT = 1,     // slot = input count + output index
  KILN_EMIT_SPACE_TRANSIENT = 2,  // the planned transient buffer
  KILN_EMIT_SPACE_WEIGHTS = 3,    // the uploaded rodata blob
  // Counters zeroed before every call (kiln_emit_counters); only while
  // lowering: kiln_emit_place_counters makes them transient ranges.
  KILN_EMIT_SPACE_COUNTERS = 4,
} kiln_emit_space_t;

typedef struct kiln_emit_range_t {
  kiln_emit_space_t space;
  uint32_t index;   // input / output index
  uint64_t offset;  // bytes within the space
  uint64_t length;  // bytes
} kiln_emit_range_t;

static inline bool kiln_emit_same_range(const kiln_emit_range_t* a, const kiln_emit_range_t* b) {
  return a->space == b->space && a->index == b->index && a->offset == b->offset &&
         a->length == b->length;
}

// Most op spec constants of one executable (its config holds them beside
// the tiling's, KILN_KERNEL_MAX_SPEC_VALUES).
#define KILN_EMIT_MAX_OPS 12

typedef struct kiln_emit_executable_t {
  kiln_kernel_id_t kernel;
  kiln_kernel_storage_t storage;  // fp16: the kernel's _f16 build
  size_t op_count;
  kiln_kernel_spec_value_t ops[KILN_EMIT_MAX_OPS];
  kiln_kernel_config_t configs[KILN_ONNX_COMPILE_MAX_TARGETS];
  char name[96];
} kiln_emit_executable_t;

typedef enum kiln_emit_grid_e {
  KILN_EMIT_GRID_GEMM,
  KILN_EMIT_GRID_CONV2D,
  KILN_EMIT_GRID_CONV2D_GEMM,
  KILN_EMIT_GRID_LINEAR,
  KILN_EMIT_GRID_ROWS,
  KILN_EMIT_GRID_ATTENTION,        // push: attention params
  KILN_EMIT_GRID_ATTENTION_MERGE,
} kiln_emit_grid_t;

typedef struct kiln_emit_dispatch_t {
  uint32_t executable;
  uint8_t push[KILN_KERNEL_MAX_PUSH_CONSTANT_BYTES];
  uint32_t push_size;
  uint32_t binding_count;
  kiln_emit_range_t bindings[KILN_KERNEL_MAX_BINDINGS];
  uint32_t written_mask;  // bit per binding the kernel writes
  // Nonzero: dispatches of one group write disjoint elements of their
  // ranges and read nothing the others write (a Concat's pieces), so no
  // hazard orders them among themselves.
  uint32_t disjoint_group;
  uint32_t grids[KILN_ONNX_COMPILE_MAX_TARGETS][3];
  bool barrier_before;  // set by kiln_emit_program_schedule
} kiln_emit_dispatch_t;

// An op run on the host between GPU segments (lower_host.c): the module
// submits the dispatches before `first_dispatch`, waits, calls the cpu
// native module's import, then goes on recording (docs/partitioning.md).
typedef enum kiln_emit_host_kind_e {
  KILN_EMIT_HOST_TOPK,     // ranges: x, values, indices
  KILN_EMIT_HOST_NONZERO,  // ranges: x, out
  KILN_EMIT_HOST_NMS,      // ranges: boxes, scores, out
  KILN_EMIT_HOST_ELEMENTWISE,  // ranges: out, a, b, c (compare, logic, Where)
} kiln_emit_host_kind_t;

typedef struct kiln_emit_host_op_t {
  kiln_emit_host_kind_t kind;
  size_t first_dispatch;  // dispatches before it: its GPU segment and earlier ones
  uint32_t range_count;
  kiln_emit_range_t ranges[4];
  int64_t ints[8];  // TOPK: outer, n, inner, k, flags; NONZERO: element, bound;
                    // NMS: batches, spatial, classes, max_per_class, flags;
                    // ELEMENTWISE: op, element
  // ELEMENTWISE: [rank, dims, strides of a, b, c] (cpu.elementwise's list).
  int64_t broadcast[1 + 4 * KILN_GRAPH_MAX_RANK];
  uint32_t broadcast_size;
  float floats[2];  // NMS: iou and score thresholds
  kiln_graph_shape_t shape;  // NONZERO: the input's dims
  // The graph output whose dim `count_dim` is the count the op returns
  // (a data-dependent shape); -1 when the shape is static.
  int32_t count_output, count_dim;
} kiln_emit_host_op_t;

// The sum of a split-K gemm's parts (lower_splitk.c), kept so that a
// LayerNorm of its rows lowered right after can take the sum's place
// (lower_norm_parts.c). Valid while `dispatch` is the program's
// last dispatch.
typedef struct kiln_emit_split_sum_t {
  bool valid;
  size_t dispatch;     // the sum's index in the program
  uint64_t rows, cols;  // the output, rows x cols, rows contiguous
  uint32_t parts;
  uint64_t part_stride;  // elements between parts
  kiln_emit_range_t partials, bias, residual, out;
  bool has_bias, has_residual;
  size_t host_ops;  // host ops before it (one after it closes its segment)
} kiln_emit_split_sum_t;

typedef struct kiln_emit_program_t {
  kiln_allocator_t allocator;
  const kiln_graph_t* graph;
  const kiln_graph_memory_plan_t* plan;
  size_t target_count;
  const char* const* targets;
  kiln_kernel_arch_caps_t caps[KILN_ONNX_COMPILE_MAX_TARGETS];
  kiln_emit_executable_t* executables;
  size_t executable_count, executable_capacity;
  kiln_emit_dispatch_t* dispatches;
  size_t dispatch_count, dispatch_capacity;
  // All constants, each KILN_EMIT_ALIGNMENT-aligned: a list of pieces
  // (graph constants by reference, padding, copies of bytes the lowering
  // made) that goes to the module without being joined.
  kiln_const_byte_span_t* weight_pieces;
  size_t weight_piece_count, weight_piece_capacity;
  uint64_t weights_size;
  kiln_arena_t weight_copies;
  uint64_t* weight_offsets;     // per value id; UINT64_MAX when not placed
  // The same for f32 constants placed converted to f16 (bound by f16 nodes).
  uint64_t* weight_offsets_f16;
  // Scratch of multi-pass lowerings, placed past the plan's transient
  // values (kiln_emit_scratch); the transient buffer grows by this much.
  uint64_t scratch_bytes;
  // Bytes at the start of scratch a lowering holds while it records a pass
  // that takes scratch of its own (columns of a conv while its split-K
  // partials are placed): kiln_emit_scratch hands out what follows them.
  // 0 outside such a section (kiln_emit_scratch_reserve).
  uint64_t scratch_reserved;
  kiln_emit_split_sum_t split_sum;
  // Counters (gemm_coopmat_split's, one per output block): counter_bytes
  // of them past scratch, at counter_offset of the transient buffer once
  // placed; the module fills them with zeros at the start of every call.
  uint64_t counter_bytes, counter_offset;
  // The node being lowered (NULL outside kiln_emit_lower_node): messages
  // about its dispatches name it.
  const kiln_graph_node_t* node;
  // Barriers between dispatches, from kiln_emit_program_schedule.
  size_t barrier_count;
  // Copied into each dispatch added (see kiln_emit_dispatch_t); lowerings
  // set it around dispatches that write disjoint parts of one output.
  uint32_t disjoint_group;
  // Host ops in program order (each closes a GPU segment); none unless a
  // node has no GPU lowering and fallback is allowed.
  kiln_emit_host_op_t* host_ops;
  size_t host_op_count, host_op_capacity;
  bool no_fallback;  // kiln_onnx_compile_options_t.no_fallback
  bool cooperative_matrix;  // kiln_onnx_compile_options_t.cooperative_matrix
  bool conv_windows;        // kiln_onnx_compile_options_t.conv_windows
  // Weight-only quantization (lower_qweight.c): the layout (0: none), the
  // statistics stream, and what was quantized or kept fp32.
  int quantize;
  FILE* statistics_stream;
  size_t quant_count, quant_kept_fp32;
  uint64_t quant_fp32_bytes, quant_bytes;
  // QDQ int8 weights kept int8 (pass_fuse_qdq.c's kiln.int8_scale).
  size_t qdq_int8_count;
  uint64_t qdq_int8_fp32_bytes, qdq_int8_bytes;
} kiln_emit_program_t;

kiln_status_t kiln_emit_program_init(const kiln_graph_t* graph,
                                     const kiln_graph_memory_plan_t* plan,
                                     const char* const* targets,
                                     size_t target_count,
                                     kiln_allocator_t allocator,
                                     kiln_emit_program_t* out_program);
void kiln_emit_program_deinit(kiln_emit_program_t* program);

// The largest binding, in bytes, every target allows (the smallest of the
// targets' storage-buffer ranges): lower_big.c splits what exceeds it.
uint64_t kiln_emit_range_limit(const kiln_emit_program_t* program);

// Where value `value_id` lives (a constant is placed in the weights on first
// use; `data` overrides its contents, e.g. converted indices).
kiln_status_t kiln_emit_value_range(kiln_emit_program_t* program,
                                    int32_t value_id, kiln_emit_range_t* out);
// Places a copy of `size` bytes as an anonymous constant in the weights.
kiln_status_t kiln_emit_add_weight(kiln_emit_program_t* program,
                                   const void* data, size_t size,
                                   kiln_emit_range_t* out);
// Places `count` floats made by a lowering (folded scales, zeros): converted
// to f16 when the node being lowered stores its tensors in f16.
kiln_status_t kiln_emit_add_float_weight(kiln_emit_program_t* program,
                                         const float* data, size_t count,
                                         kiln_emit_range_t* out);

// Precision (docs/precision.md): a node whose float values are f16 (after
// kiln_graph_pass_precision_f16, or an fp16 model) runs every kernel's _f16
// build; float32 constants it binds are converted to f16 when placed.
bool kiln_emit_node_is_f16(const kiln_emit_program_t* program);
// Bytes per float tensor element of the node being lowered (2 or 4): byte
// offsets into its tensors (split and tiled bindings) use this.
uint64_t kiln_emit_float_bytes(const kiln_emit_program_t* program);

// `bytes` of scratch for one node's passes (partial results): a range of the
// transient buffer past every planned value, shared by all nodes (their
// dispatches are ordered by the usual overlap barriers). Sub-ranges a
// caller binds must start at KILN_EMIT_ALIGNMENT multiples.
kiln_status_t kiln_emit_scratch(kiln_emit_program_t* program, uint64_t bytes,
                                kiln_emit_range_t* out);
// Holds the first `bytes` (KILN_EMIT_ALIGNMENT-rounded) of scratch for the
// caller: later kiln_emit_scratch ranges start after them until the hold is
// set back to 0. Returns the end of the held part (a transient offset).
uint64_t kiln_emit_scratch_reserve(kiln_emit_program_t* program, uint64_t bytes);
// The end of the held part (the scratch base when nothing is held).
uint64_t kiln_emit_scratch_held_end(const kiln_emit_program_t* program);
// `bytes` of counters, zero at the start of every call and for no other
// dispatch: a KILN_EMIT_SPACE_COUNTERS range until kiln_emit_place_counters.
kiln_status_t kiln_emit_counters(kiln_emit_program_t* program, uint64_t bytes,
                                 kiln_emit_range_t* out);
// After the last dispatch is added: the counters go past scratch (the
// transient buffer grows by them) and their ranges become transient ones.
void kiln_emit_place_counters(kiln_emit_program_t* program);
// Bytes of transient buffer the program needs: the plan's peak plus scratch.
uint64_t kiln_emit_transient_bytes(const kiln_emit_program_t* program);

// Which build of a kernel a dispatch runs: the node's (fp16 builds for f16
// nodes; casts excepted) unless set.
typedef enum kiln_emit_storage_e {
  KILN_EMIT_STORAGE_NODE = 0,
  KILN_EMIT_STORAGE_F32 = 1,
  KILN_EMIT_STORAGE_F16 = 2,
} kiln_emit_storage_t;

// Describes one dispatch for kiln_emit_add_dispatch.
typedef struct kiln_emit_dispatch_desc_t {
  kiln_kernel_id_t kernel;
  kiln_emit_storage_t storage;
  const kiln_kernel_spec_value_t* ops;
  size_t op_count;
  const void* push;  // the kernel's params struct
  uint32_t binding_count;
  kiln_emit_range_t bindings[KILN_KERNEL_MAX_BINDINGS];
  uint32_t written_mask;  // bit per binding the kernel writes
  kiln_emit_grid_t grid;
  uint64_t grid_count;  // LINEAR: values; ROWS: rows
  // gemm_coopmat: B (binding 1) is this conv's input, read as its windows
  // (KILN_SPEC_COOPMAT_CONV_*); NULL: B is a matrix.
  const kiln_kernel_conv2d_params_t* b_windows;
} kiln_emit_dispatch_desc_t;

// Target `target`'s configuration of `desc`'s kernel (gemm_small and
// conv2d_gemm: the occupancy-aware tiling of its product).
kiln_status_t kiln_emit_select_config(const kiln_emit_program_t* program,
                                      const kiln_emit_dispatch_desc_t* desc, size_t target,
                                      kiln_kernel_storage_t storage,
                                      kiln_kernel_config_t* out_config);

// The grid of `desc` at one target's `config`.
kiln_status_t kiln_emit_dispatch_grid(const kiln_kernel_config_t* config,
                                      const kiln_emit_dispatch_desc_t* desc,
                                      uint32_t out_grid[3]);

// Bytes per value of the float buffers `desc` binds (its storage, else the
// node's).
uint64_t kiln_emit_desc_float_bytes(const kiln_emit_program_t* program,
                                    const kiln_emit_dispatch_desc_t* desc);

// Whether a conv's geometry fits gemm_coopmat's packed window constants
// (KILN_SPEC_COOPMAT_CONV_*), and those four values.
bool kiln_emit_conv_windows_fit(const kiln_kernel_conv2d_params_t* c);
kiln_status_t kiln_emit_conv_windows_specs(const kiln_kernel_conv2d_params_t* c,
                                           uint32_t out[4]);

// Finds or makes the executable and computes every target's grid.
kiln_status_t kiln_emit_add_dispatch(kiln_emit_program_t* program,
                                     const kiln_emit_dispatch_desc_t* desc);

// Appends a host op closing the current GPU segment (lower_host.c).
kiln_status_t kiln_emit_add_host_op(kiln_emit_program_t* program,
                                    const kiln_emit_host_op_t* op);
// Bounds of GPU segment `s` (0 .. host_op_count): dispatches [begin, end).
void kiln_emit_segment(const kiln_emit_program_t* program, size_t s, size_t* begin,
                       size_t* end);

// Orders the dispatches by hazard level and places one barrier between
// levels (schedule.c), within each GPU segment (host ops stay between
// them); run once, after the last dispatch is added.
kiln_status_t kiln_emit_program_schedule(kiln_emit_program_t* program);

// Lowers one live node into dispatches; UNIMPLEMENTED names node and op.
kiln_status_t kiln_emit_lower_node(kiln_emit_program_t* program,
                                   int32_t node_id);

// Builds the whole module through the module builder (emit_module.c) and
// appends it to `out`, or with a `sink` hands it over piece by piece.
kiln_status_t kiln_emit_write_module(const kiln_emit_program_t* program,
                                     const char* function_name, kiln_byte_buffer_t* out,
                                     kiln_module_writer_sink_fn_t sink, void* sink_user);

#endif  // KILN_COMPILER_ONNX_EMIT_INTERNAL_H_
