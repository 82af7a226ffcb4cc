// Dynamic quantization (onnxruntime's quantize_dynamic) on the device:
// DynamicQuantizeLinear -> MatMulInteger / ConvInteger -> Cast -> Mul, run
// through pass_qinteger.c (integer values as exact fp32, the parameters
// computed on the device). The models under tests/data/qdq/dyn_* are written
// by scripts/make_dynamic_quant_models.py (onnxruntime 1.32) with
// onnxruntime's output of the graph as written (optimizations off).
//
// Tolerance: 1e-4 of max|ref| against onnxruntime, the bound. Every
// quantized value is computed exactly as ONNX defines it, so the MLP, CNN
// and wide models match onnxruntime bit for bit (measured on lavapipe,
// 2026-11-24: 0); the encoder's fp32 LayerNorm / Softmax / GELU differ in
// summation order (1.7e-7 measured). A value that lands within rounding of
// a quantization boundary could flip one step; the bound allows for that in
// a value of the encoder but not a systematic error.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/graph_reference.h"
#include "kiln/compiler/onnx.h"
#include "kiln_test.h"
#include "npy_util.h"
#include "onnx_gpu_util.h"

#define KILN_DYNAMIC_QUANT_BOUND 1e-4

static const char* kiln_dq_dir(void) {
  const char* dir = getenv("KILN_QDQ_MODELS_DIR");
  return dir ? dir : "tests/data/qdq";
}

// max|a - e| / max|e| (INFINITY on a shape mismatch or NaN).
static double kiln_dq_relative(const kiln_graph_tensor_t* a, const kiln_graph_tensor_t* e) {
  if (!kiln_graph_shape_equal(&a->shape, &e->shape) || a->byte_size != e->byte_size) {
    return INFINITY;
  }
  double worst = 0.0, max_ref = 0.0;
  for (size_t i = 0; i < e->byte_size / sizeof(float); ++i) {
    double x = ((const float*)a->data)[i], r = ((const float*)e->data)[i];
    double d = fabs(x - r);
    if (!(d <= worst)) worst = isnan(d) ? INFINITY : d;
    max_ref = fmax(max_ref, fabs(r));
  }
  return max_ref > 0.0 ? worst / max_ref : INFINITY;
}

static void kiln_dq_read(const char* name, const char* file, kiln_graph_tensor_t* out) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s/%s", kiln_dq_dir(), name, file);
  KILN_ASSERT_OK(kiln_test_read_npy_f32(path, out));
}

// Whether a live node's name ends with `suffix` (the radix split's sums).
static bool kiln_dq_has_node(const kiln_graph_t* g, const char* suffix) {
  for (size_t n = 0; n < g->node_count; ++n) {
    const char* name = g->nodes[n].name;
    size_t a = name ? strlen(name) : 0, b = strlen(suffix);
    if (!g->nodes[n].removed && a >= b && strcmp(name + a - b, suffix) == 0) return true;
  }
  return false;
}

// Compiles and runs `g` on the device: refused UNIMPLEMENTED, the message
// containing `needle` (the node at fault).
static void kiln_dq_expect_refused(kiln_graph_t* g, const kiln_onnx_compile_options_t* options,
                                   const kiln_graph_tensor_t* input, const char* needle) {
  kiln_graph_tensor_t out;
  kiln_gpu_run_stats_t stats;
  kiln_status_t status = kiln_gpu_compile_and_run(g, options, input, &out, &stats);
  KILN_EXPECT_EQ(kiln_status_code(status), KILN_STATUS_UNIMPLEMENTED);
  KILN_EXPECT_CONTAINS(kiln_status_message(status), needle);
  kiln_status_free(status);
}

// A float32 tensor of integer values as int64 (token ids).
static void kiln_dq_to_int64(kiln_graph_tensor_t* t) {
  kiln_graph_tensor_t ids;
  KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_I64,
                                            &t->shape, &ids));
  for (size_t i = 0; i < t->byte_size / sizeof(float); ++i) {
    ((int64_t*)ids.data)[i] = (int64_t)((const float*)t->data)[i];
  }
  kiln_graph_tensor_deinit(t);
  *t = ids;
}

static void kiln_check_dynamic_model(const char* name, bool radix, bool indices) {
  kiln_graph_tensor_t input, expected, fp32, cpu, passed, gpu;
  kiln_dq_read(name, "input_0.npy", &input);
  if (indices) kiln_dq_to_int64(&input);
  kiln_dq_read(name, "output_0.npy", &expected);
  kiln_dq_read(name, "output_fp32.npy", &fp32);
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s/model.onnx", kiln_dq_dir(), name);
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  kiln_graph_t graph;
  KILN_ASSERT_OK(kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
  KILN_ASSERT_OK(kiln_graph_reference_run(&graph, &input, 1, NULL, kiln_allocator_system(), &cpu));
  // The rewrite is exact: the reference gives the same values after the
  // passes (the encoder's attention fusion may reorder an fp32 sum).
  KILN_ASSERT_OK(kiln_graph_run_default_passes(&graph));
  KILN_ASSERT_OK(
      kiln_graph_reference_run(&graph, &input, 1, NULL, kiln_allocator_system(), &passed));
  size_t integers = 0;
  for (size_t v = 0; v < graph.value_count; ++v) {
    kiln_graph_dtype_t d = graph.values[v].dtype;
    bool live = graph.values[v].producer >= 0 && !graph.nodes[graph.values[v].producer].removed;
    integers += live && (d == KILN_GRAPH_DTYPE_I8 || d == KILN_GRAPH_DTYPE_U8 ||
                         d == KILN_GRAPH_DTYPE_I32);
  }
  KILN_EXPECT_EQ(integers, 0u);  // nothing left for the int8 refusal
  KILN_EXPECT_EQ(kiln_dq_has_node(&graph, "/sum_hi"), radix);
  kiln_graph_deinitialize(&graph);
  KILN_ASSERT_OK(kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
  kiln_gpu_run_stats_t stats;
  KILN_ASSERT_OK(kiln_gpu_compile_and_run(&graph, &options, &input, &gpu, &stats));
  const double ref_err = kiln_dq_relative(&cpu, &expected);
  const double pass_err = kiln_dq_relative(&passed, &cpu);
  const double gpu_err = kiln_dq_relative(&gpu, &expected);
  const double gpu_ref = kiln_dq_relative(&gpu, &cpu);
  printf("%s: device %.3g of max|ref| from onnxruntime, %.3g from the reference; reference "
         "%.3g from onnxruntime, %.3g after the passes; %.3g from the fp32 model%s\n",
         name, gpu_err, gpu_ref, ref_err, pass_err, kiln_dq_relative(&gpu, &fp32),
         radix ? " (radix-split sums)" : "");
  KILN_EXPECT_LE(ref_err, KILN_DYNAMIC_QUANT_BOUND);
  KILN_EXPECT_LE(pass_err, KILN_DYNAMIC_QUANT_BOUND);
  KILN_EXPECT_LE(gpu_err, KILN_DYNAMIC_QUANT_BOUND);
  kiln_graph_tensor_deinit(&input);
  kiln_graph_tensor_deinit(&expected);
  kiln_graph_tensor_deinit(&fp32);
  kiln_graph_tensor_deinit(&cpu);
  kiln_graph_tensor_deinit(&passed);
  kiln_graph_tensor_deinit(&gpu);
  kiln_graph_deinitialize(&graph);
}

KILN_TEST(OnnxDynamicQuantTest, QuantizeDynamicModelsMatchOnnxruntime) {
  static const struct {
    const char* name;
    bool radix, indices;
  } kModels[] = {{"dyn_mlp_s8_tensor", false, false},     {"dyn_mlp_u8_channel", false, false},
                 {"dyn_cnn_s8_channel", false, false},    {"dyn_cnn_u8_tensor", false, false},
                 {"dyn_encoder_s8_tensor", false, false}, {"dyn_wide_s8_channel", true, false},
                 {"dyn_embed_u8_tensor", false, true}};
  for (size_t i = 0; i < sizeof(kModels) / sizeof(kModels[0]); ++i) {
    kiln_check_dynamic_model(kModels[i].name, kModels[i].radix, kModels[i].indices);
  }
}

// fp16 storage would round the run-time scale: refused, naming the node.
KILN_TEST(OnnxDynamicQuantTest, F16IsRefusedNamingTheNode) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/dyn_mlp_s8_tensor/model.onnx", kiln_dq_dir());
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.precision = KILN_ONNX_PRECISION_F16;
  kiln_graph_t graph;
  KILN_ASSERT_OK(kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
  kiln_graph_tensor_t input;
  kiln_dq_read("dyn_mlp_s8_tensor", "input_0.npy", &input);
  kiln_dq_expect_refused(&graph, &options, &input,
                         "(op DynamicQuantizeLinear): dynamic quantization runs at fp32; "
                         "compile with --precision=f32");
  kiln_graph_tensor_deinit(&input);
  kiln_graph_deinitialize(&graph);
}

// x [rows, k] -> DynamicQuantizeLinear -> MatMulInteger(., B [k, 1] int8,
// zero points) -> Cast -> y: the int32 sums, exact.
static void kiln_dq_build(kiln_graph_t* g, int64_t rows, int64_t k, const int8_t* b,
                          int32_t* out_x) {
  kiln_graph_initialize(kiln_allocator_system(), "dynamic_matmul", g);
  g->opset = 13;
  kiln_graph_shape_t shape = {2, {rows, k}}, b_shape = {2, {k, 1}}, scalar = {0, {0}};
  int32_t x = -1, bw = -1, bz = -1, node = -1, sum = -1, y = -1;
  KILN_ASSERT_OK(kiln_gpu_graph_add_input(g, "x", &shape, &x));
  KILN_ASSERT_OK(kiln_graph_add_constant(g, "B", KILN_GRAPH_DTYPE_I8, &b_shape, b, &bw));
  const int8_t zero = 3;
  KILN_ASSERT_OK(kiln_graph_add_constant(g, "B_zp", KILN_GRAPH_DTYPE_I8, &scalar, &zero, &bz));
  int32_t q[3] = {-1, -1, -1};
  for (int i = 0; i < 3; ++i) {
    KILN_ASSERT_OK(kiln_graph_add_value(g, NULL, KILN_GRAPH_DTYPE_INVALID, &q[i]));
  }
  KILN_ASSERT_OK(kiln_graph_add_node(g, "DynamicQuantizeLinear", "dql", &x, 1, q, 3, &node));
  KILN_ASSERT_OK(kiln_graph_add_value(g, NULL, KILN_GRAPH_DTYPE_INVALID, &sum));
  int32_t mm_in[4] = {q[0], bw, q[2], bz};
  KILN_ASSERT_OK(kiln_graph_add_node(g, "MatMulInteger", "mmi", mm_in, 4, &sum, 1, &node));
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(g, "Cast", &sum, 1, &node, &y));
  kiln_graph_attr_t to = {.name = "to", .type = KILN_GRAPH_ATTR_INT, .i = 1};
  KILN_ASSERT_OK(kiln_graph_node_set_attr(g, node, &to));
  KILN_ASSERT_OK(kiln_gpu_graph_add_output(g, y));
  KILN_ASSERT_OK(kiln_graph_infer_shapes(g));
  *out_x = x;
}

// Sums past 2^24 (k = 2048, |b - b_zp| up to 131, a quantized to 254 or
// 255): the radix split gives the correctly rounded sum, bit for bit the
// reference's Cast(int32 -> float) of the exact sum computed here.
KILN_TEST(OnnxDynamicQuantTest, LargeSumsAreCorrectlyRounded) {
  const int64_t rows = 3, k = 2048;
  int8_t* b = malloc((size_t)k);
  KILN_ASSERT_TRUE(b != NULL);
  for (int64_t i = 0; i < k; ++i) b[i] = (int8_t)(i % 5 == 0 ? 127 : -128 + (int)(i % 7));
  kiln_graph_t g;
  int32_t x = -1;
  kiln_dq_build(&g, rows, k, b, &x);
  kiln_graph_shape_t shape = {2, {rows, k}};
  kiln_graph_tensor_t input, cpu, gpu;
  KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32,
                                            &shape, &input));
  float* px = (float*)input.data;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < k; ++i) {
      // x in [0, 4]: scale 4 / 255, zero point 0 (per tensor).
      px[r * k + i] = r > 0 ? (float)((i * 37 + r * 11) % 97) * 0.04f
                      : i % 3 == 0 ? 4.0f * 254.0f / 255.0f : 4.0f;
    }
  }
  // Row 0 quantizes to 254 / 255 (scale 4 / 255, zero point 0): its exact
  // sum, computed here, is past 2^24 and not a float.
  int64_t exact = 0;
  for (int64_t i = 0; i < k; ++i) exact += (i % 3 == 0 ? 254 : 255) * (int64_t)(b[i] - 3);
  KILN_EXPECT_GT(llabs(exact), 16777216);
  KILN_EXPECT_NE((int64_t)(float)exact, exact);
  KILN_ASSERT_OK(kiln_graph_reference_run(&g, &input, 1, NULL, kiln_allocator_system(), &cpu));
  const float* pc = (const float*)cpu.data;
  KILN_EXPECT_EQ(pc[0], (float)exact);  // Cast(int32 -> float) of the sum
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  kiln_gpu_run_stats_t stats;
  KILN_ASSERT_OK(kiln_gpu_compile_and_run(&g, &options, &input, &gpu, &stats));
  KILN_EXPECT_EQ(gpu.byte_size, cpu.byte_size);
  KILN_EXPECT_BYTES_EQ(gpu.data, cpu.data, cpu.byte_size);
  printf("row sums %.9g (exact %lld) %.9g %.9g (device equal: %d)\n", pc[0],
         (long long)exact, pc[1], pc[2],
         memcmp(gpu.data, cpu.data, cpu.byte_size) == 0);
  kiln_graph_tensor_deinit(&input);
  kiln_graph_tensor_deinit(&cpu);
  kiln_graph_tensor_deinit(&gpu);
  kiln_graph_deinitialize(&g);
  free(b);
}

// Where even the radix digits' sums could pass 2^24 (k = 8400, every
// weight -128), the graph is left to the reference executor and the device
// compile refuses it naming the node.
KILN_TEST(OnnxDynamicQuantTest, SumsTooLargeForFp32AreRefused) {
  const int64_t k = 8400;
  int8_t* b = malloc((size_t)k);
  KILN_ASSERT_TRUE(b != NULL);
  memset(b, 0x80, (size_t)k);
  kiln_graph_t g;
  int32_t x = -1;
  kiln_dq_build(&g, 1, k, b, &x);
  kiln_graph_shape_t shape = {2, {1, k}};
  kiln_graph_tensor_t input;
  KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32,
                                            &shape, &input));
  for (int64_t i = 0; i < k; ++i) ((float*)input.data)[i] = (float)(i % 3) - 1.0f;
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  kiln_dq_expect_refused(&g, &options, &input, "node 'dql'");
  kiln_graph_tensor_deinit(&input);
  kiln_graph_deinitialize(&g);
  free(b);
}

// A DequantizeLinear whose parameters are a DynamicQuantizeLinear's
// run-time outputs is not carried: the graph is refused by the device
// compile naming the node; the reference executor runs it.
KILN_TEST(OnnxDynamicQuantTest, RunTimeDequantizeParametersAreRefused) {
  kiln_graph_t g;
  kiln_graph_initialize(kiln_allocator_system(), "dynamic_quant", &g);
  g.opset = 13;
  kiln_graph_shape_t shape = {2, {2, 8}};
  int32_t x = -1, node = -1, y = -1;
  KILN_ASSERT_OK(kiln_gpu_graph_add_input(&g, "x", &shape, &x));
  int32_t outs[3] = {-1, -1, -1};
  for (int i = 0; i < 3; ++i) {
    KILN_ASSERT_OK(kiln_graph_add_value(&g, NULL, KILN_GRAPH_DTYPE_INVALID, &outs[i]));
  }
  KILN_ASSERT_OK(kiln_graph_add_node(&g, "DynamicQuantizeLinear", "dql", &x, 1, outs, 3, &node));
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "DequantizeLinear", outs, 3, &node, &y));
  KILN_ASSERT_OK(kiln_gpu_graph_add_output(&g, y));
  KILN_ASSERT_OK(kiln_graph_infer_shapes(&g));
  kiln_graph_tensor_t input, out;
  KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32,
                                            &shape, &input));
  for (size_t i = 0; i < 16; ++i) ((float*)input.data)[i] = (float)i * 0.3f - 2.0f;
  // The reference: y = (q - zp) * scale, within half a step of x.
  KILN_ASSERT_OK(kiln_graph_reference_run(&g, &input, 1, NULL, kiln_allocator_system(), &out));
  for (size_t i = 0; i < 16; ++i) {
    KILN_EXPECT_NEAR(((float*)out.data)[i], ((float*)input.data)[i], 6.5f / 255.0f);
  }
  kiln_graph_tensor_deinit(&out);
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  kiln_dq_expect_refused(&g, &options, &input, "node 'dql'");
  kiln_graph_tensor_deinit(&input);
  kiln_graph_deinitialize(&g);
}
