// kiln-compile --quantize (weight-only, lower_qweight.c) on exported models:
// the quantized module on the default device (lavapipe in CI) against the
// plain C reference executor running the same graph whose MatMul / Gemm
// weights (and Conv weights) were replaced by their quantize -> dequantize round trip
// (compiler-bridge/quant's reference dequantizer): <= 1e-4 max|ref|. The
// end-to-end error against the fp32 model's PyTorch output is printed per
// model and layout (it is the quantization's own error, not checked).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/graph_reference.h"
#include "kiln/compiler/onnx.h"
#include "kiln/compiler/quant.h"
#include "kiln_test.h"
#include "model_compare.h"
#include "onnx_gpu_util.h"

static const char* kiln_models_dir(void) {
  const char* dir = getenv("KILN_ONNX_MODELS_DIR");
  return dir ? dir : "tests/onnx/models";
}

// Rounds `rows` rows of k floats (row j at w + j * row_stride, elements
// `step` apart) through the layout, along k.
static void kiln_round_rows(kiln_quant_layout_t layout, float* w, uint64_t rows, uint64_t k,
                            uint64_t row_stride, uint64_t step) {
  float* row = malloc(k * sizeof(float));
  uint8_t* packed = malloc(kiln_quant_row_bytes(layout, k));
  KILN_ASSERT_TRUE(row && packed);
  for (uint64_t j = 0; j < rows; ++j) {
    for (uint64_t i = 0; i < k; ++i) row[i] = w[j * row_stride + i * step];
    KILN_EXPECT_OK(kiln_quant_pack(layout, row, 1, k, packed));
    KILN_EXPECT_OK(kiln_quant_unpack(layout, packed, 1, k, row));
    for (uint64_t i = 0; i < k; ++i) w[j * row_stride + i * step] = row[i];
  }
  free(row);
  free(packed);
}

// The layout a weight of reduction k is stored in: q4_K's 256-element
// superblocks where they divide k, else q4_0 where 32 does (llama.cpp's
// fallback for k-quants).
static kiln_quant_layout_t kiln_round_layout(kiln_quant_layout_t layout, uint64_t k) {
  return layout == KILN_QUANT_Q4_K && k % 256 != 0 && k % 32 == 0 ? KILN_QUANT_Q4_0 : layout;
}

// Rounds every weight the compiler quantizes through the layout, along K:
// a constant 2-D fp32 B of a MatMul or of a Gemm without transA, K a
// multiple of the block; a constant fp32 1-D / 2-D Conv weight [M, C/g,
// (KH,) KW], not depthwise, K = C/g*KH*KW a multiple of the block and of
// 32 (qconv2d_gemm's rows, im2col's k order). Returns how many, and the
// convs among them in *out_convs.
static size_t kiln_dequantize_weights(kiln_graph_t* graph, kiln_quant_layout_t layout,
                                      size_t* out_convs) {
  size_t count = 0;
  *out_convs = 0;
  const kiln_quant_layout_t asked = layout;
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    bool matmul = strcmp(node->op_type, "MatMul") == 0, gemm = strcmp(node->op_type, "Gemm") == 0;
    bool conv = strcmp(node->op_type, "Conv") == 0;
    if (node->removed || (!matmul && !gemm && !conv) || node->input_count < 2 ||
        node->inputs[1] < 0) {
      continue;
    }
    kiln_graph_value_t* b = &graph->values[node->inputs[1]];
    if (!b->data || b->dtype != KILN_GRAPH_DTYPE_F32) continue;
    if (conv) {
      int64_t group = 1;
      KILN_EXPECT_OK(kiln_graph_node_attr_int(node, "group", 1, &group));
      if (b->shape.rank != 3 && b->shape.rank != 4) continue;
      if (group > 1 && b->shape.dims[1] == 1 && group == b->shape.dims[0]) continue;  // depthwise
      uint64_t k = 1;
      for (int32_t d = 1; d < b->shape.rank; ++d) k *= (uint64_t)b->shape.dims[d];
      layout = kiln_round_layout(asked, k);
      if (k % kiln_quant_block_elements(layout) != 0 || k % 32 != 0) continue;
      kiln_round_rows(layout, (float*)b->data, (uint64_t)b->shape.dims[0], k, k, 1);
      ++*out_convs;
      ++count;
      continue;
    }
    int64_t trans_a = 0, trans_b = 0;
    if (gemm) {
      KILN_EXPECT_OK(kiln_graph_node_attr_int(node, "transA", 0, &trans_a));
      KILN_EXPECT_OK(kiln_graph_node_attr_int(node, "transB", 0, &trans_b));
    }
    if (trans_a || b->shape.rank != 2) continue;
    const uint64_t k = (uint64_t)(trans_b ? b->shape.dims[1] : b->shape.dims[0]);
    const uint64_t cols = (uint64_t)(trans_b ? b->shape.dims[0] : b->shape.dims[1]);
    layout = kiln_round_layout(asked, k);
    if (k % kiln_quant_block_elements(layout) != 0) continue;
    kiln_round_rows(layout, (float*)b->data, cols, k, trans_b ? k : 1, trans_b ? 1 : cols);
    ++count;
  }
  return count;
}

static double kiln_max_abs(const kiln_graph_tensor_t* t) {
  double m = 0;
  for (size_t i = 0; i < t->byte_size / sizeof(float); ++i) {
    m = fmax(m, fabs((double)((const float*)t->data)[i]));
  }
  return m;
}

static double kiln_max_diff(const kiln_graph_tensor_t* a, const kiln_graph_tensor_t* b) {
  if (!kiln_graph_shape_equal(&a->shape, &b->shape)) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < a->byte_size / sizeof(float); ++i) {
    double d = fabs((double)((const float*)a->data)[i] - ((const float*)b->data)[i]);
    if (!(d <= m)) m = isnan(d) ? INFINITY : d;
  }
  return m;
}

// Compiles `graph` with --quantize=`layout` at `precision` and checks the
// GPU against the reference on the rounded weights: <= 1e-4 of max|ref| in
// fp32, <= 1e-2 at f16 (activations fp16 in memory: qgemm_f16,
// qconv2d_gemm_f16 and the f16 builds of everything else).
static void kiln_check_quantized_at(const char* name, kiln_graph_t* graph,
                                    kiln_onnx_compile_options_t* options,
                                    kiln_quant_layout_t layout, kiln_onnx_precision_t precision,
                                    const kiln_graph_tensor_t* input,
                                    const kiln_graph_tensor_t* fp32,
                                    const kiln_graph_tensor_t* ref, size_t rounded,
                                    size_t convs, bool expect_quantized) {
  const bool f16 = precision == KILN_ONNX_PRECISION_F16;
  kiln_graph_tensor_t gpu;
  char* stats = NULL;
  size_t stats_size = 0;
  options->statistics_stream = open_memstream(&stats, &stats_size);
  options->quantize = (int)layout;
  options->precision = precision;
  kiln_gpu_run_stats_t run;
  kiln_status_t status = kiln_gpu_compile_and_run(graph, options, input, &gpu, &run);
  fclose(options->statistics_stream);
  options->statistics_stream = NULL;
  KILN_ASSERT_OK(status);
  // "quantize LAYOUT: N weights, X fp32 bytes -> Y bytes".
  // (the per-node notes read "quantize: ...", after a newline).
  const char* line = strstr(stats, "\nquantize ");
  KILN_ASSERT_TRUE(line != NULL);
  ++line;
  unsigned long long weights = 0, fp32_bytes = 0, q_bytes = 0;
  char layout_name[16];
  KILN_ASSERT_EQ(sscanf(line, "quantize %15[^:]: %llu weights, %llu fp32 bytes -> %llu bytes",
                        layout_name, &weights, &fp32_bytes, &q_bytes),
                 4);
  KILN_EXPECT_EQ((size_t)weights, rounded);
  if (expect_quantized) KILN_EXPECT_GT(weights, 0u);
  if (weights) KILN_EXPECT_LT(q_bytes, fp32_bytes);
  const double max_ref = kiln_max_abs(ref), err = kiln_max_diff(&gpu, ref);
  const double e2e = kiln_max_diff(&gpu, fp32) / kiln_max_abs(fp32);
  printf("%s --quantize=%s%s: %llu weights (%zu convs) %llu -> %llu bytes; GPU vs dequantized "
         "reference %.3g of max|ref|; end to end vs fp32 %.3g of max|ref|; second call "
         "%.1f ms\n",
         name, layout_name, f16 ? " --precision=f16" : "", weights, convs, fp32_bytes, q_bytes,
         err / max_ref, e2e, run.second_call_ms);
  KILN_EXPECT_TRUE(max_ref > 0);
  KILN_EXPECT_TRUE(err <= (f16 ? 1e-2 : 1e-4) * max_ref);
  free(stats);
  kiln_graph_tensor_deinit(&gpu);
}

// `f16`: also at --precision=f16, against the same reference.
static void kiln_check_quantized(const char* name, const char* input_shape,
                                 kiln_quant_layout_t layout, bool expect_quantized,
                                 size_t min_convs, bool f16) {
  char path[1024], io_path[1024];
  snprintf(path, sizeof(path), "%s/%s/model.onnx", kiln_models_dir(), name);
  kiln_onnx_input_shape_t shape;
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  if (input_shape) {
    KILN_ASSERT_OK(kiln_onnx_parse_input_shape(input_shape, &shape));
    options.import.input_shapes = &shape;
    options.import.input_shape_count = 1;
  }
  kiln_graph_t graph, ref_graph;
  KILN_ASSERT_OK(kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
  KILN_ASSERT_OK(
      kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &ref_graph));
  kiln_graph_tensor_t input, fp32, ref;
  KILN_ASSERT_TRUE(graph.input_count == 1);
  snprintf(io_path, sizeof(io_path), "%s/%s/input_0.pb", kiln_models_dir(), name);
  KILN_ASSERT_OK(kiln_onnx_read_tensor_file(io_path, kiln_allocator_system(), &input));
  snprintf(io_path, sizeof(io_path), "%s/%s/output_0.pb", kiln_models_dir(), name);
  KILN_ASSERT_OK(kiln_onnx_read_tensor_file(io_path, kiln_allocator_system(), &fp32));
  // The reference: the compiler's passes, then the rounded weights.
  KILN_ASSERT_OK(kiln_graph_run_default_passes(&ref_graph));
  size_t convs = 0;
  const size_t rounded = kiln_dequantize_weights(&ref_graph, layout, &convs);
  KILN_EXPECT_GE(convs, min_convs);
  KILN_ASSERT_OK(
      kiln_graph_reference_run(&ref_graph, &input, 1, NULL, kiln_allocator_system(), &ref));
  kiln_check_quantized_at(name, &graph, &options, layout, KILN_ONNX_PRECISION_DEFAULT, &input,
                          &fp32, &ref, rounded, convs, expect_quantized);
  if (f16) {
    // The same model again at f16 (the compile changes the graph: import it anew).
    kiln_graph_deinitialize(&graph);
    KILN_ASSERT_OK(
        kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
    kiln_check_quantized_at(name, &graph, &options, layout, KILN_ONNX_PRECISION_F16, &input,
                            &fp32, &ref, rounded, convs, expect_quantized);
  }
  kiln_graph_tensor_deinit(&input);
  kiln_graph_tensor_deinit(&fp32);
  kiln_graph_tensor_deinit(&ref);
  kiln_graph_deinitialize(&graph);
  kiln_graph_deinitialize(&ref_graph);
}

static const kiln_quant_layout_t kLayouts[] = {KILN_QUANT_INT8, KILN_QUANT_Q8_0,
                                               KILN_QUANT_Q4_0, KILN_QUANT_Q4_K};

// MobileNetV2: the classifier (Gemm 1280 -> 1000) and the convs whose K
// (C/g*KH*KW) the block divides (qconv2d_gemm) are quantized; the
// depthwise convs, the first 3x3 (K = 27) and the 1x1s over 16, 24 and
// 144 channels stay fp32 (q4_K: q4_0 where 256 does not divide K).
KILN_TEST(QuantizeGpuTest, MobileNetV2EveryLayout) {
  kiln_test_model_require("mobilenet_v2");
  for (size_t i = 0; i < sizeof(kLayouts) / sizeof(kLayouts[0]); ++i) {
    kiln_check_quantized("mobilenet_v2", NULL, kLayouts[i], true, 29, true);
  }
}

// A transformer encoder layer (d_model 64: K = 64 and 256 take the 32-
// element layouts; q4_K's 256-element superblocks fit only the FFN's
// second product, the others fall back to q4_0).
KILN_TEST(QuantizeGpuTest, TransformerEncoderEveryLayout) {
  kiln_test_model_require("transformer_encoder");
  for (size_t i = 0; i < sizeof(kLayouts) / sizeof(kLayouts[0]); ++i) {
    kiln_check_quantized("transformer_encoder", "input:2x10x64", kLayouts[i],
                         true, 0, true);
  }
}

// The GPT-2 block (fused GELU and residual epilogues on the quantized
// products; its 256-wide MLP projection takes q4_K too).
KILN_TEST(QuantizeGpuTest, Gpt2BlockEveryLayout) {
  kiln_test_model_require("gpt2_block");
  for (size_t i = 0; i < sizeof(kLayouts) / sizeof(kLayouts[0]); ++i) {
    kiln_check_quantized("gpt2_block", NULL, kLayouts[i], true, 0, false);
  }
}
