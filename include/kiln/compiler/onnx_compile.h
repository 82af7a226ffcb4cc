// ONNX -> kiln module: after the default passes and the memory plan, each
// live node becomes one or more kernel dispatches (kernel library), recorded
// once into a reusable command buffer by the emitted bytecode. The module
// exports one function taking the graph inputs (f32 buffer views) in order
// and returning the graph outputs in order.
#ifndef KILN_COMPILER_ONNX_COMPILE_H_
#define KILN_COMPILER_ONNX_COMPILE_H_

#include <stdbool.h>
#include <stdio.h>

#include "kiln/base/byte_buffer.h"
#include "kiln/compiler/graph.h"
#include "kiln/compiler/module_writer.h"
#include "kiln/compiler/onnx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_ONNX_COMPILE_MAX_TARGETS 8

// Storage precision of the compiled graph's tensors (docs/precision.md).
typedef enum kiln_onnx_precision_e {
  KILN_ONNX_PRECISION_DEFAULT = 0,  // the model's: f16 for fp16 models, else f32
  KILN_ONNX_PRECISION_F32 = 1,
  // Weights and activations in f16 buffers, arithmetic and accumulation in
  // f32; graph inputs and outputs keep the model's dtype. Every target
  // needs 16-bit storage.
  KILN_ONNX_PRECISION_F16 = 2,
} kiln_onnx_precision_t;

typedef struct kiln_onnx_compile_options_t {
  const char* function_name;  // NULL: "predict"
  // Full or partial target triples, one executable variant each, in this
  // order. None: kiln_onnx_compile_default_targets.
  const char* const* targets;
  size_t target_count;
  kiln_onnx_import_options_t import;  // input shapes, frozen inputs
  FILE* memory_plan_stream;           // non-NULL: print the memory plan
  FILE* assembly_stream;              // non-NULL: dump the emitted assembly
  // Non-NULL: the module goes to module_sink piece by piece (weights straight
  // from the compiler's buffers) and nothing is appended to `out`;
  // assembly_stream is then ignored (disassemble the written file).
  kiln_module_writer_sink_fn_t module_sink;
  void* module_sink_user;
  // Non-NULL: called at each stage ("import", "passes", "lower" with node
  // done/total, "write" with bytes written so far).
  void (*progress)(void* user, const char* stage, size_t done, size_t total,
                   uint64_t bytes);
  void* progress_user;
  // Non-zero: plan bindings for at most this many bytes even where a
  // target allows more (tests of the large-tensor splits at small sizes).
  uint64_t max_storage_buffer_range;
  kiln_onnx_precision_t precision;
  // Refuse nodes that would run on the host between GPU segments (TopK,
  // NonZero, NonMaxSuppression; docs/partitioning.md) instead of splitting.
  bool no_fallback;
  // f16 products and KxK convs on gemm_coopmat (tensor cores) where every
  // target has cooperative matrix. On by default (kiln_onnx_compile_options_init):
  // on an H100 every f16 bench model but MobileNetV2 ran faster with it
  // (docs/precision.md has the figures).
  bool cooperative_matrix;
  // On tensor cores, every KxK conv reads its windows from the input in
  // place (gemm_coopmat's KILN_SPEC_COOPMAT_CONV_*) even where a columns
  // copy would fit: no columns in the transient buffer (ResNet-50 batch
  // 32: 231 MB less), at about the copy's speed (docs/precision.md). Off:
  // only columns past a binding and stride-1 convs of up to 1024 pixels.
  bool conv_windows;
  // Non-zero (a kiln_quant_layout_t, kiln/compiler/quant.h): weight-only
  // quantization of MatMul / Gemm constant B operands (lower_qweight.c).
  int quantize;
  // Non-NULL: weight bytes and each quantization decision are printed.
  FILE* statistics_stream;
} kiln_onnx_compile_options_t;

// Parses "f32" / "f16" (for --precision).
kiln_status_t kiln_onnx_precision_parse(const char* text, kiln_onnx_precision_t* out);

void kiln_onnx_compile_options_init(kiln_onnx_compile_options_t* options);

// The default triples: portable fallback, lavapipe, an NVIDIA and a Mali.
// At f16 precision the defaults are those of them with 16-bit storage.
extern const char* const kiln_onnx_compile_default_targets[];
extern const size_t kiln_onnx_compile_default_target_count;

// Compiles an imported graph (the default passes run here) and appends the
// module to `out`. An op without a GPU lowering is UNIMPLEMENTED naming the
// node, op type and opset; nothing is appended on failure.
kiln_status_t kiln_onnx_compile_graph(kiln_graph_t* graph,
                                      const kiln_onnx_compile_options_t* options,
                                      kiln_allocator_t allocator,
                                      kiln_byte_buffer_t* out);
// Imports `path` and compiles it.
kiln_status_t kiln_onnx_compile_file(const char* path,
                                     const kiln_onnx_compile_options_t* options,
                                     kiln_allocator_t allocator,
                                     kiln_byte_buffer_t* out);

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_ONNX_COMPILE_H_
