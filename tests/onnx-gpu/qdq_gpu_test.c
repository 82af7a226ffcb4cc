// QDQ models written by onnxruntime's quantize_static (QDQ format; int8
// weights per tensor and per channel, uint8 and int8 activations),
// committed under tests/data/qdq/<name>/ by scripts/make_qdq_models.py with
// onnxruntime's output of the literal QDQ chain (graph optimizations off).
// Each runs through the reference executor as imported (the literal chain)
// and compiled for the default device (QDQ pairs fused into
// kiln.QuantizeDequantize, weights folded to fp32; int8 MatMul / Gemm /
// Conv weights with one scale per output channel then stored int8 in the
// module, dequantized in qgemm / qconv2d_gemm to the folded values). Two QOperator models
// (QuantizeLinear -> QLinearConv x 2 / QLinearMatMul x 2 -> DequantizeLinear)
// run on the device through pass_qoperator.c (int8 values as exact fp32
// integers, exact fp32 sums, kiln.Requantize).
//
// Tolerance, in steps of the output's quantization scale: the reference
// executor and onnxruntime compute the same chain but sum the fp32
// Conv/Gemm products in a different order, so a value that lands within
// rounding of a .5 boundary may quantize one step apart, and a flip inside
// the network moves the output by a fraction of a step per flipped input.
// Measured (lavapipe, 2026-11-23): 0 steps on every model, reference and
// device; the bound is 1 step.
//
// The fused kernel itself is checked bit for bit against the reference on
// hand-made ties, saturation, NaN/inf and per-axis parameters.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/half.h"
#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/graph_reference.h"
#include "kiln/compiler/onnx.h"
#include "kiln_test.h"
#include "npy_util.h"
#include "onnx_gpu_util.h"

#define KILN_QDQ_MAX_STEPS 1.0

static const char* kiln_qdq_dir(void) {
  const char* dir = getenv("KILN_QDQ_MODELS_DIR");
  return dir ? dir : "tests/data/qdq";
}

// max |a - e| in units of `step` (INFINITY on a shape mismatch or NaN).
static double kiln_qdq_steps(const kiln_graph_tensor_t* a, const kiln_graph_tensor_t* e,
                             float step) {
  if (!kiln_graph_shape_equal(&a->shape, &e->shape)) return INFINITY;
  double worst = 0.0;
  for (size_t i = 0; i < e->byte_size / sizeof(float); ++i) {
    double d = fabs((double)((const float*)a->data)[i] - ((const float*)e->data)[i]);
    if (!(d <= worst)) worst = isnan(d) ? INFINITY : d;
  }
  return worst / step;
}

static void kiln_check_qdq_model(const char* name, unsigned long long min_int8_weights) {
  char path[1024], file[1024];
  kiln_graph_tensor_t input, expected, fp32, scale, cpu, gpu;
  snprintf(file, sizeof(file), "%s/%s/input_0.npy", kiln_qdq_dir(), name);
  KILN_ASSERT_OK(kiln_test_read_npy_f32(file, &input));
  snprintf(file, sizeof(file), "%s/%s/output_0.npy", kiln_qdq_dir(), name);
  KILN_ASSERT_OK(kiln_test_read_npy_f32(file, &expected));
  snprintf(file, sizeof(file), "%s/%s/output_fp32.npy", kiln_qdq_dir(), name);
  KILN_ASSERT_OK(kiln_test_read_npy_f32(file, &fp32));
  snprintf(file, sizeof(file), "%s/%s/out_scale.npy", kiln_qdq_dir(), name);
  KILN_ASSERT_OK(kiln_test_read_npy_f32(file, &scale));
  float step = *(const float*)scale.data;
  snprintf(path, sizeof(path), "%s/%s/model.onnx", kiln_qdq_dir(), name);
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  kiln_graph_t graph;
  KILN_ASSERT_OK(kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
  KILN_ASSERT_OK(kiln_graph_reference_run(&graph, &input, 1, NULL, kiln_allocator_system(), &cpu));
  double cpu_steps = kiln_qdq_steps(&cpu, &expected, step);
  // The passes (QDQ fusion, QOperator rewrite, weight folding) are exact:
  // the reference gives the same bits after them.
  kiln_graph_tensor_t passed;
  KILN_ASSERT_OK(kiln_graph_run_default_passes(&graph));
  KILN_ASSERT_OK(
      kiln_graph_reference_run(&graph, &input, 1, NULL, kiln_allocator_system(), &passed));
  KILN_EXPECT_EQ(passed.byte_size, cpu.byte_size);
  KILN_EXPECT_BYTES_EQ(passed.data, cpu.data, cpu.byte_size);
  size_t int8_values = 0;
  for (size_t v = 0; v < graph.value_count; ++v) {
    kiln_graph_dtype_t d = graph.values[v].dtype;
    bool live = graph.values[v].producer >= 0 && !graph.nodes[graph.values[v].producer].removed;
    int8_values += live && (d == KILN_GRAPH_DTYPE_I8 || d == KILN_GRAPH_DTYPE_U8);
  }
  KILN_EXPECT_EQ(int8_values, 0u);  // nothing left for the int8 refusal
  kiln_graph_tensor_deinit(&passed);
  kiln_graph_deinitialize(&graph);
  KILN_ASSERT_OK(kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
  kiln_gpu_run_stats_t stats;
  char* text = NULL;
  size_t text_size = 0;
  options.statistics_stream = open_memstream(&text, &text_size);
  kiln_status_t status = kiln_gpu_compile_and_run(&graph, &options, &input, &gpu, &stats);
  fclose(options.statistics_stream);
  KILN_ASSERT_OK(status);
  // Int8 weights of MatMul / Gemm / Conv stay int8 on the device
  // ("qdq int8: N weights kept int8, X fp32 bytes -> Y bytes").
  unsigned long long kept = 0, fp32_bytes = 0, int8_bytes = 0;
  const char* line = strstr(text, "qdq int8: ");
  if (line) {
    KILN_EXPECT_EQ(sscanf(line, "qdq int8: %llu weights kept int8, %llu fp32 bytes -> %llu bytes",
                          &kept, &fp32_bytes, &int8_bytes),
                   3);
  }
  if (min_int8_weights) KILN_EXPECT_GE(kept, min_int8_weights);
  if (kept) KILN_EXPECT_LT(int8_bytes * 3, fp32_bytes);  // about 1/4
  free(text);
  double gpu_steps = kiln_qdq_steps(&gpu, &expected, step);
  double fp32_steps = kiln_qdq_steps(&gpu, &fp32, step);
  double fold_steps = kiln_qdq_steps(&gpu, &cpu, step);
  printf("%s: reference %.3g steps, device %.3g steps from onnxruntime (step %.3g), %.3g from "
         "the reference; %.3g steps from the fp32 model; %llu int8 weights kept int8 "
         "(%llu -> %llu bytes); compile %.1f ms, second call %.2f ms\n",
         name, cpu_steps, gpu_steps, step, fold_steps, fp32_steps, kept, fp32_bytes, int8_bytes,
         stats.compile_ms, stats.second_call_ms);
  KILN_EXPECT_LE(cpu_steps, KILN_QDQ_MAX_STEPS);
  KILN_EXPECT_LE(gpu_steps, KILN_QDQ_MAX_STEPS);
  KILN_EXPECT_LE(fold_steps, KILN_QDQ_MAX_STEPS);
  kiln_graph_tensor_deinit(&input);
  kiln_graph_tensor_deinit(&expected);
  kiln_graph_tensor_deinit(&fp32);
  kiln_graph_tensor_deinit(&scale);
  kiln_graph_tensor_deinit(&cpu);
  kiln_graph_tensor_deinit(&gpu);
  kiln_graph_deinitialize(&graph);
}

// The committed quantize_static models and how many of their MatMul / Conv
// weights stay int8 (the QOperator models' weights go through
// pass_qoperator.c instead).
static const struct {
  const char* name;
  unsigned long long int8_weights;
} kQdqModels[] = {{"mlp_u8_tensor", 1},       {"mlp_s8_channel", 1},
                  {"cnn_u8_channel", 1},      {"cnn_s8_tensor", 1},
                  {"qop_conv_u8_channel", 0}, {"qop_matmul_s8_tensor", 0}};

KILN_TEST(OnnxQdqModelTest, QuantizeStaticModelsMatchOnnxruntime) {
  for (size_t i = 0; i < sizeof(kQdqModels) / sizeof(kQdqModels[0]); ++i) {
    kiln_check_qdq_model(kQdqModels[i].name, kQdqModels[i].int8_weights);
  }
}

static double kiln_qdq_max_abs(const kiln_graph_tensor_t* e) {
  double max_ref = 0.0;
  for (size_t i = 0; i < e->byte_size / sizeof(float); ++i) {
    max_ref = fmax(max_ref, fabs((double)((const float*)e->data)[i]));
  }
  return max_ref;
}

// max|a - e| / max|e| (INFINITY on a shape mismatch or NaN).
static double kiln_qdq_relative(const kiln_graph_tensor_t* a, const kiln_graph_tensor_t* e) {
  const double max_ref = kiln_qdq_max_abs(e);
  return max_ref > 0.0 ? kiln_qdq_steps(a, e, 1.0f) / max_ref : INFINITY;
}

// --precision=f16 (docs/precision.md): activations fp16 in memory, the
// QDQ pairs quantized from the f16 values in fp32 (quantize_dequantize_f16),
// the int8 weights still int8 (qgemm_f16 / qconv2d_gemm_f16), the QOperator
// chains fp32 between their Casts. Against onnxruntime's output of the QDQ
// model within 1e-2 of max|ref| or one step of the output's quantization,
// whichever is larger: these outputs are quantized with a step of 0.9-1.5%
// of max|ref| (70-110 steps over their range), and fp16 rounding that moves
// one value inside the network across a rounding boundary moves the output
// by a whole step (measured, lavapipe: exactly 1 step or less on every
// model, docs/quantization.md). The distance to the fp32 model is printed.
static void kiln_check_qdq_model_f16(const char* name, unsigned long long min_int8_weights) {
  char path[1024], file[1024];
  kiln_graph_tensor_t input, expected, fp32, scale, gpu;
  snprintf(file, sizeof(file), "%s/%s/input_0.npy", kiln_qdq_dir(), name);
  KILN_ASSERT_OK(kiln_test_read_npy_f32(file, &input));
  snprintf(file, sizeof(file), "%s/%s/output_0.npy", kiln_qdq_dir(), name);
  KILN_ASSERT_OK(kiln_test_read_npy_f32(file, &expected));
  snprintf(file, sizeof(file), "%s/%s/output_fp32.npy", kiln_qdq_dir(), name);
  KILN_ASSERT_OK(kiln_test_read_npy_f32(file, &fp32));
  snprintf(file, sizeof(file), "%s/%s/out_scale.npy", kiln_qdq_dir(), name);
  KILN_ASSERT_OK(kiln_test_read_npy_f32(file, &scale));
  const float step = *(const float*)scale.data;
  snprintf(path, sizeof(path), "%s/%s/model.onnx", kiln_qdq_dir(), name);
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.precision = KILN_ONNX_PRECISION_F16;
  kiln_graph_t graph;
  KILN_ASSERT_OK(kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
  char* text = NULL;
  size_t text_size = 0;
  options.statistics_stream = open_memstream(&text, &text_size);
  kiln_gpu_run_stats_t stats;
  kiln_status_t status = kiln_gpu_compile_and_run(&graph, &options, &input, &gpu, &stats);
  fclose(options.statistics_stream);
  KILN_ASSERT_OK(status);
  unsigned long long kept = 0;
  const char* line = strstr(text, "qdq int8: ");
  if (line) KILN_EXPECT_EQ(sscanf(line, "qdq int8: %llu weights", &kept), 1);
  free(text);
  KILN_EXPECT_GE(kept, min_int8_weights);
  const double err = kiln_qdq_relative(&gpu, &expected), e2e = kiln_qdq_relative(&gpu, &fp32);
  const double steps = kiln_qdq_steps(&gpu, &expected, step);
  printf("%s at f16: %.3g of max|ref| (%.3g steps of %.3g) from onnxruntime's QDQ output, "
         "%.3g from the fp32 model's; %llu int8 weights kept int8\n",
         name, err, steps, step, e2e, kept);
  // One step, plus the fp16 rounding of the output value itself (half an
  // ulp: 2^-11 of max|ref| at most).
  const double slack = kiln_qdq_max_abs(&expected) * 0x1p-11 / step;
  KILN_EXPECT_TRUE(err <= 1e-2 || steps <= KILN_QDQ_MAX_STEPS + slack);
  kiln_graph_tensor_deinit(&scale);
  kiln_graph_tensor_deinit(&input);
  kiln_graph_tensor_deinit(&expected);
  kiln_graph_tensor_deinit(&fp32);
  kiln_graph_tensor_deinit(&gpu);
  kiln_graph_deinitialize(&graph);
}

KILN_TEST(OnnxQdqModelTest, QuantizeStaticModelsAtF16) {
  for (size_t i = 0; i < sizeof(kQdqModels) / sizeof(kQdqModels[0]); ++i) {
    kiln_check_qdq_model_f16(kQdqModels[i].name, kQdqModels[i].int8_weights);
  }
}

static float kiln_qdq_round_f16(float x) { return kiln_f16_to_f32(kiln_f32_to_f16(x)); }

// x [4, 3, 8] -> QuantizeLinear -> DequantizeLinear, parameters per tensor
// or per axis 0 / 1 / 2, int8 (negative zero points) and uint8. At f16
// (quantize_dequantize_f16) the expected values are the reference's on the
// input rounded to fp16, rounded to fp16: the quantization of the f16
// value computed in fp32 (ties to even, saturation as ONNX defines them).
static void kiln_check_fused_kernel(int32_t axis, bool s8, bool f16) {
  kiln_graph_t g;
  kiln_graph_initialize(kiln_allocator_system(), "qdq_kernel", &g);
  g.opset = 13;
  kiln_graph_shape_t shape = {3, {4, 3, 8}};
  int32_t x = -1, scale = -1, zp = -1, q = -1, y = -1, node = -1;
  KILN_ASSERT_OK(kiln_gpu_graph_add_input(&g, "x", &shape, &x));
  size_t channels = axis < 0 ? 1 : (size_t)shape.dims[axis];
  float scales[8];
  int8_t zp_s8[8];
  uint8_t zp_u8[8];
  static const float kScales[] = {0.1f, 0.5f, 1.0f, 0.3f, 2.0f, 0.25f, 0.07f, 1.5f};
  for (size_t c = 0; c < channels; ++c) {
    scales[c] = kScales[c];
    zp_s8[c] = (int8_t)(c * 37 % 256 - 128);
    zp_u8[c] = (uint8_t)(c * 91 % 256);
  }
  kiln_graph_shape_t ps = {axis < 0 ? 0 : 1, {(int64_t)channels}};
  KILN_ASSERT_OK(kiln_graph_add_constant(&g, "s", KILN_GRAPH_DTYPE_F32, &ps, scales, &scale));
  KILN_ASSERT_OK(kiln_graph_add_constant(&g, "z", s8 ? KILN_GRAPH_DTYPE_I8 : KILN_GRAPH_DTYPE_U8,
                                         &ps, s8 ? (const void*)zp_s8 : (const void*)zp_u8,
                                         &zp));
  kiln_graph_attr_t attr = {.name = "axis", .type = KILN_GRAPH_ATTR_INT, .i = axis};
  int32_t inputs[3] = {x, scale, zp};
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "QuantizeLinear", inputs, 3, &node, &q));
  if (axis >= 0) KILN_ASSERT_OK(kiln_graph_node_set_attr(&g, node, &attr));
  inputs[0] = q;
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "DequantizeLinear", inputs, 3, &node, &y));
  if (axis >= 0) KILN_ASSERT_OK(kiln_graph_node_set_attr(&g, node, &attr));
  KILN_ASSERT_OK(kiln_gpu_graph_add_output(&g, y));
  kiln_graph_tensor_t input, cpu, gpu;
  KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32,
                                            &shape, &input));
  float* px = (float*)input.data;
  for (size_t i = 0; i < 96; ++i) {
    // Ties at .5 of several scales, values past both saturation ends.
    px[i] = ((float)i - 48.0f) * 0.25f * (i % 5 == 0 ? 40.0f : 1.0f) + (i % 7 ? 0.0f : 0.05f);
  }
  px[3] = NAN;
  px[4] = INFINITY;
  px[5] = -INFINITY;
  px[6] = 0.15f;  // 0.15 / 0.1 rounds near 1.5 in float32
  px[7] = -0.05f;
  KILN_ASSERT_OK(kiln_graph_infer_shapes(&g));
  kiln_graph_tensor_t rounded;
  KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32,
                                            &shape, &rounded));
  for (size_t i = 0; i < 96; ++i) {
    ((float*)rounded.data)[i] = f16 ? kiln_qdq_round_f16(px[i]) : px[i];
  }
  KILN_ASSERT_OK(
      kiln_graph_reference_run(&g, &rounded, 1, NULL, kiln_allocator_system(), &cpu));
  for (size_t i = 0; f16 && i < 96; ++i) {
    ((float*)cpu.data)[i] = kiln_qdq_round_f16(((float*)cpu.data)[i]);
  }
  kiln_graph_tensor_deinit(&rounded);
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  if (f16) options.precision = KILN_ONNX_PRECISION_F16;
  kiln_gpu_run_stats_t stats;
  KILN_ASSERT_OK(kiln_gpu_compile_and_run(&g, &options, &input, &gpu, &stats));
  KILN_EXPECT_EQ(cpu.byte_size, gpu.byte_size);
  size_t differ = 0;
  for (size_t i = 0; i < 96; ++i) {
    float a = ((const float*)gpu.data)[i], e = ((const float*)cpu.data)[i];
    if (memcmp(&a, &e, sizeof(a)) != 0) {
      if (differ++ < 4) {
        KILN_ADD_FAILURE("%s axis %d %s element %zu: device %.9g, reference %.9g (x %.9g)",
                         f16 ? "f16" : "f32", (int)axis, s8 ? "int8" : "uint8", i, a, e, px[i]);
      }
    }
  }
  KILN_EXPECT_EQ(differ, 0u);
  kiln_graph_tensor_deinit(&input);
  kiln_graph_tensor_deinit(&cpu);
  kiln_graph_tensor_deinit(&gpu);
  kiln_graph_deinitialize(&g);
}

KILN_TEST(OnnxQdqKernelTest, FusedPairMatchesTheReferenceBitForBit) {
  for (int32_t axis = -1; axis < 3; ++axis) {
    kiln_check_fused_kernel(axis, true, false);
    kiln_check_fused_kernel(axis, false, false);
  }
}

KILN_TEST(OnnxQdqKernelTest, FusedPairAtF16MatchesTheReferenceBitForBit) {
  for (int32_t axis = -1; axis < 3; ++axis) {
    kiln_check_fused_kernel(axis, true, true);
    kiln_check_fused_kernel(axis, false, true);
  }
}

// QuantizeLinear -> QLinearMatMul (constant int8 weights) -> DequantizeLinear
// on the device (pass_qoperator.c) against the reference, bit for bit.
// multiplier 0.5 makes every odd sum an exact tie (round half to even);
// the other multiplier is an arbitrary float. With k = 2048 and weights up
// to 127 the fp32 sums could pass 2^24: the pass leaves the graph alone and
// the device compile refuses it. `f16`: at --precision=f16 the chain stays
// fp32 between its Casts (pass_precision.c), so the device gives the
// reference's values on the input rounded to fp16, rounded to fp16.
static void kiln_check_qlinear_matmul(float y_scale_factor, bool s8, int64_t k, bool f16) {
  enum { M = 8, N = 16 };
  const int64_t K = k;
  kiln_graph_t g;
  kiln_graph_initialize(kiln_allocator_system(), "qlinear_matmul", &g);
  g.opset = 13;
  kiln_graph_shape_t shape = {2, {M, K}}, scalar = {0, {0}}, b_shape = {2, {K, N}};
  int32_t x = -1, node = -1, q = -1, y = -1, out = -1;
  KILN_ASSERT_OK(kiln_gpu_graph_add_input(&g, "x", &shape, &x));
  const float sa = 0.05f, sb = 0.02f, sy = sa * sb / y_scale_factor;
  const uint8_t za_u8 = 128, zy_u8 = 100;
  const int8_t za_s8 = -3, zy_s8 = 5, zb = 2;
  int8_t* b = malloc((size_t)(K * N));
  KILN_ASSERT_TRUE(b != NULL);
  for (int64_t i = 0; i < K * N; ++i) {
    b[i] = K > 64 ? (int8_t)(i % 2 ? 127 : -127) : (int8_t)((i * 37 + 11) % 61 - 30);
  }
  kiln_graph_dtype_t at = s8 ? KILN_GRAPH_DTYPE_I8 : KILN_GRAPH_DTYPE_U8;
  int32_t ids[8];
  KILN_ASSERT_OK(kiln_graph_add_constant(&g, "a_scale", KILN_GRAPH_DTYPE_F32, &scalar, &sa, &ids[1]));
  KILN_ASSERT_OK(kiln_graph_add_constant(&g, "a_zp", at, &scalar,
                                         s8 ? (const void*)&za_s8 : (const void*)&za_u8, &ids[2]));
  KILN_ASSERT_OK(kiln_graph_add_constant(&g, "b", KILN_GRAPH_DTYPE_I8, &b_shape, b, &ids[3]));
  free(b);
  KILN_ASSERT_OK(kiln_graph_add_constant(&g, "b_scale", KILN_GRAPH_DTYPE_F32, &scalar, &sb, &ids[4]));
  KILN_ASSERT_OK(kiln_graph_add_constant(&g, "b_zp", KILN_GRAPH_DTYPE_I8, &scalar, &zb, &ids[5]));
  KILN_ASSERT_OK(kiln_graph_add_constant(&g, "y_scale", KILN_GRAPH_DTYPE_F32, &scalar, &sy, &ids[6]));
  KILN_ASSERT_OK(kiln_graph_add_constant(&g, "y_zp", at, &scalar,
                                         s8 ? (const void*)&zy_s8 : (const void*)&zy_u8, &ids[7]));
  int32_t qin[3] = {x, ids[1], ids[2]};
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "QuantizeLinear", qin, 3, &node, &q));
  ids[0] = q;
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "QLinearMatMul", ids, 8, &node, &y));
  int32_t dq[3] = {y, ids[6], ids[7]};
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "DequantizeLinear", dq, 3, &node, &out));
  KILN_ASSERT_OK(kiln_gpu_graph_add_output(&g, out));
  KILN_ASSERT_OK(kiln_graph_infer_shapes(&g));
  kiln_graph_tensor_t input, cpu, gpu;
  KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32,
                                            &shape, &input));
  for (int64_t i = 0; i < M * K; ++i) {
    const float v = (float)((i * 53) % 97 - 48) * 0.07f;
    ((float*)input.data)[i] = f16 ? kiln_qdq_round_f16(v) : v;
  }
  KILN_ASSERT_OK(kiln_graph_reference_run(&g, &input, 1, NULL, kiln_allocator_system(), &cpu));
  for (int64_t i = 0; f16 && i < M * N; ++i) {
    ((float*)cpu.data)[i] = kiln_qdq_round_f16(((float*)cpu.data)[i]);
  }
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  if (f16) options.precision = KILN_ONNX_PRECISION_F16;
  kiln_gpu_run_stats_t stats;
  if (K > 64) {
    kiln_status_t status = kiln_gpu_compile_and_run(&g, &options, &input, &gpu, &stats);
    KILN_EXPECT_EQ(kiln_status_code(status), KILN_STATUS_UNIMPLEMENTED);
    KILN_EXPECT_CONTAINS(kiln_status_message(status), "int8 / uint8 tensors at run time");
    kiln_status_free(status);
    kiln_graph_tensor_deinit(&input);
    kiln_graph_tensor_deinit(&cpu);
    kiln_graph_deinitialize(&g);
    return;
  }
  KILN_ASSERT_OK(kiln_gpu_compile_and_run(&g, &options, &input, &gpu, &stats));
  KILN_EXPECT_EQ(gpu.byte_size, cpu.byte_size);
  size_t differ = 0;
  for (int i = 0; i < M * N; ++i) {
    float a = ((const float*)gpu.data)[i], e = ((const float*)cpu.data)[i];
    if (a != e && differ++ < 4) {
      KILN_ADD_FAILURE("%s factor %g %s element %d: device %.9g, reference %.9g (step %.9g)",
                       f16 ? "f16" : "f32", y_scale_factor, s8 ? "int8" : "uint8", i, a, e, sy);
    }
  }
  KILN_EXPECT_EQ(differ, 0u);
  kiln_graph_tensor_deinit(&input);
  kiln_graph_tensor_deinit(&cpu);
  kiln_graph_tensor_deinit(&gpu);
  kiln_graph_deinitialize(&g);
}

KILN_TEST(OnnxQdqKernelTest, QLinearMatMulRequantizesLikeTheReference) {
  kiln_check_qlinear_matmul(0.5f, false, 64, false);
  kiln_check_qlinear_matmul(0.5f, true, 64, false);
  kiln_check_qlinear_matmul(0.3137f, false, 64, false);
  kiln_check_qlinear_matmul(0.3137f, true, 64, false);
  kiln_check_qlinear_matmul(0.5f, false, 2048, false);  // inexact in fp32: refused
}

// Multiplier 1/64 keeps sums up to about 7000 unsaturated: fp16 would
// round those past 2048 and move a few outputs by a step (2-3 of 128 here).
KILN_TEST(OnnxQdqKernelTest, QLinearMatMulAtF16StaysExact) {
  kiln_check_qlinear_matmul(0.5f, false, 64, true);
  kiln_check_qlinear_matmul(0.015625f, false, 64, true);
  kiln_check_qlinear_matmul(0.015625f, true, 64, true);
}

// A DequantizeLinear on an int8 / uint8 weight initializer: stored int8 in
// the module (qconv2d_gemm / qgemm dequantize it) when its codes minus the
// zero point fit int8 with one scale per output channel, else folded to
// fp32. Conv: int8 W [16, 8, 2, 2] per output channel (axis 0, K = 32);
// MatMul: uint8 B [64, 24] per column (axis 1) with zero points 120..131;
// Gemm (transB): uint8 B [8, 32] per tensor, zero point 3, codes up to 255
// (q - zp > 127: stays fp32). Device against the reference executor on
// the same graph (the folded values) within 1e-4 of max|ref|.
static int32_t kiln_qdq_weight(kiln_graph_t* g, const char* name, kiln_graph_dtype_t dtype,
                               const kiln_graph_shape_t* shape, int32_t axis, uint32_t seed,
                               int32_t q_lo, int32_t q_span, int32_t zp_base, int32_t zp_span) {
  size_t count = 1;
  for (int32_t d = 0; d < shape->rank; ++d) count *= (size_t)shape->dims[d];
  const size_t channels = axis < 0 ? 1 : (size_t)shape->dims[axis];
  uint8_t* q = malloc(count);
  float* scales = malloc(channels * sizeof(float));
  uint8_t* zps = malloc(channels);
  if (!q || !scales || !zps) abort();
  for (size_t i = 0; i < count; ++i) {
    q[i] = (uint8_t)(q_lo + (int32_t)(((i * 2654435761u + seed) >> 11) % (uint32_t)q_span));
  }
  for (size_t c = 0; c < channels; ++c) {
    scales[c] = 0.002f + 0.0005f * (float)((c * 7 + seed) % 11);
    zps[c] = (uint8_t)(zp_base + (int32_t)(c % (size_t)zp_span));
  }
  char buf[64];
  int32_t w = -1, s = -1, z = -1, node = -1, y = -1;
  KILN_EXPECT_OK(kiln_graph_add_constant(g, name, dtype, shape, q, &w));
  kiln_graph_shape_t ps = {axis < 0 ? 0 : 1, {(int64_t)channels}};
  snprintf(buf, sizeof(buf), "%s_scale", name);
  KILN_EXPECT_OK(kiln_graph_add_constant(g, buf, KILN_GRAPH_DTYPE_F32, &ps, scales, &s));
  snprintf(buf, sizeof(buf), "%s_zp", name);
  KILN_EXPECT_OK(kiln_graph_add_constant(g, buf, dtype, &ps, zps, &z));
  const int32_t inputs[3] = {w, s, z};
  KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, "DequantizeLinear", inputs, 3, &node, &y));
  if (axis >= 0) {
    kiln_graph_attr_t attr = {.name = "axis", .type = KILN_GRAPH_ATTR_INT, .i = axis};
    KILN_EXPECT_OK(kiln_graph_node_set_attr(g, node, &attr));
  }
  free(q);
  free(scales);
  free(zps);
  return y;
}

KILN_TEST(OnnxQdqModelTest, Int8WeightsStayInt8) {
  kiln_graph_t g;
  kiln_graph_initialize(kiln_allocator_system(), "qdq_int8_weights", &g);
  g.opset = 13;
  const kiln_graph_shape_t x_shape = {4, {1, 8, 6, 6}}, a_shape = {2, {4, 64}};
  const kiln_graph_shape_t c_shape = {2, {5, 32}};
  int32_t x = -1, a = -1, c = -1, node = -1, y0 = -1, y1 = -1, y2 = -1;
  KILN_ASSERT_OK(kiln_gpu_graph_add_input(&g, "x", &x_shape, &x));
  KILN_ASSERT_OK(kiln_gpu_graph_add_input(&g, "a", &a_shape, &a));
  KILN_ASSERT_OK(kiln_gpu_graph_add_input(&g, "c", &c_shape, &c));
  const kiln_graph_shape_t w_shape = {4, {16, 8, 2, 2}}, b_shape = {2, {64, 24}};
  const kiln_graph_shape_t g_shape = {2, {8, 32}};
  // Codes: int8 -120..120 (zero points -3..3); uint8 8..247 (zero points
  // 120..131, q - zp within int8); uint8 0..255 with zero point 3.
  const int32_t w =
      kiln_qdq_weight(&g, "w", KILN_GRAPH_DTYPE_I8, &w_shape, 0, 1, -120, 241, -3, 7);
  const int32_t b =
      kiln_qdq_weight(&g, "b", KILN_GRAPH_DTYPE_U8, &b_shape, 1, 2, 8, 240, 120, 12);
  const int32_t gb =
      kiln_qdq_weight(&g, "gb", KILN_GRAPH_DTYPE_U8, &g_shape, -1, 3, 0, 256, 3, 1);
  const int32_t conv_in[2] = {x, w}, matmul_in[2] = {a, b}, gemm_in[2] = {c, gb};
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "Conv", conv_in, 2, &node, &y0));
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "MatMul", matmul_in, 2, &node, &y1));
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "Gemm", gemm_in, 2, &node, &y2));
  kiln_graph_attr_t trans = {.name = "transB", .type = KILN_GRAPH_ATTR_INT, .i = 1};
  KILN_ASSERT_OK(kiln_graph_node_set_attr(&g, node, &trans));
  KILN_ASSERT_OK(kiln_gpu_graph_add_output(&g, y0));
  KILN_ASSERT_OK(kiln_gpu_graph_add_output(&g, y1));
  KILN_ASSERT_OK(kiln_gpu_graph_add_output(&g, y2));
  KILN_ASSERT_OK(kiln_graph_infer_shapes(&g));
  kiln_graph_tensor_t inputs[3], cpu[3], gpu[3];
  const kiln_graph_shape_t* shapes[3] = {&x_shape, &a_shape, &c_shape};
  for (size_t i = 0; i < 3; ++i) {
    KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32,
                                              shapes[i], &inputs[i]));
    float* p = (float*)inputs[i].data;
    for (size_t j = 0; j < inputs[i].byte_size / sizeof(float); ++j) {
      p[j] = (float)((j * 40503u + i * 977u) % 1000) / 500.0f - 1.0f;
    }
  }
  KILN_ASSERT_OK(kiln_graph_reference_run(&g, inputs, 3, NULL, kiln_allocator_system(), cpu));
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  char* text = NULL;
  size_t text_size = 0;
  options.statistics_stream = open_memstream(&text, &text_size);
  kiln_gpu_run_stats_t stats;
  kiln_status_t status = kiln_gpu_compile_and_run(&g, &options, inputs, gpu, &stats);
  fclose(options.statistics_stream);
  KILN_ASSERT_OK(status);
  printf("%s", text);
  // Conv and MatMul int8: 16 rows of 4 + 32 bytes and 24 rows of 4 + 64,
  // plus 4 bytes read ahead each (580 + 1636).
  KILN_EXPECT_CONTAINS(text, "qdq int8: 2 weights kept int8, 8192 fp32 bytes -> 2216 bytes");
  KILN_EXPECT_CONTAINS(text, "Gemm");
  KILN_EXPECT_CONTAINS(text, "not int8 codes times one scale per output channel");
  free(text);
  for (size_t i = 0; i < 3; ++i) {
    KILN_EXPECT_TRUE(kiln_graph_shape_equal(&gpu[i].shape, &cpu[i].shape));
    double max_ref = 0, err = 0;
    for (size_t j = 0; j < cpu[i].byte_size / sizeof(float); ++j) {
      const double r = ((const float*)cpu[i].data)[j], d = ((const float*)gpu[i].data)[j];
      max_ref = fmax(max_ref, fabs(r));
      err = fmax(err, fabs(d - r));
    }
    printf("output %zu: device vs reference %.3g of max|ref| %.3g\n", i, err / max_ref, max_ref);
    KILN_EXPECT_TRUE(max_ref > 0);
    KILN_EXPECT_LE(err, 1e-4 * max_ref);
    kiln_graph_tensor_deinit(&inputs[i]);
    kiln_graph_tensor_deinit(&cpu[i]);
    kiln_graph_tensor_deinit(&gpu[i]);
  }
  kiln_graph_deinitialize(&g);
}
