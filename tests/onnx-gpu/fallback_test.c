// Host ops between GPU segments (docs/partitioning.md): TopK, NonZero and
// NonMaxSuppression after GPU work, GPU work after TopK, the data-dependent
// shapes they return, and the refusals (--no-fallback, a consumer of a
// data-dependent output). Results are checked against plain C here.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/onnx_compile.h"
#include "graph_build.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"

static int32_t kiln_add_i64(kiln_graph_t* graph, const char* name, int64_t value) {
  kiln_graph_shape_t shape = {.rank = 1, .dims = {1}};
  int32_t id = -1;
  KILN_EXPECT_OK(kiln_graph_add_constant(graph, name, KILN_GRAPH_DTYPE_I64, &shape, &value, &id));
  return id;
}

static int32_t kiln_add_f32(kiln_graph_t* graph, const char* name, float value) {
  kiln_graph_shape_t shape = {.rank = 1, .dims = {1}};
  int32_t id = -1;
  KILN_EXPECT_OK(kiln_graph_add_constant(graph, name, KILN_GRAPH_DTYPE_F32, &shape, &value, &id));
  return id;
}

// One node with `outputs` new values (ids to out_values).
static int32_t kiln_add(kiln_graph_t* graph, const char* op, const char* name,
                        const int32_t* inputs, size_t input_count, int32_t* out_values,
                        size_t outputs) {
  for (size_t o = 0; o < outputs; ++o) {
    KILN_EXPECT_OK(kiln_graph_add_value(graph, NULL, KILN_GRAPH_DTYPE_INVALID, &out_values[o]));
  }
  int32_t node = -1;
  KILN_EXPECT_OK(
      kiln_graph_add_node(graph, op, name, inputs, input_count, out_values, outputs, &node));
  return node;
}

// A graph for one test: opset 13, the nodes added by the caller.
static void kiln_start(kiln_graph_t* graph, const char* name) {
  kiln_graph_initialize(kiln_allocator_system(), name, graph);
  graph->opset = 13;
}

// Compiles and runs `graph` with its assembly captured in *out_assembly
// (the caller releases it); leaves the test if the run fails.
static void kiln_run_with_text(kiln_graph_t* graph, const kiln_graph_tensor_t* inputs,
                               kiln_graph_tensor_t* outputs, kiln_gpu_capture_t* out_assembly) {
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  KILN_ASSERT_OK(kiln_gpu_capture_begin(&options, out_assembly));
  kiln_gpu_run_stats_t stats;
  kiln_status_t status = kiln_gpu_compile_and_run(graph, &options, inputs, outputs, &stats);
  kiln_gpu_capture_end(out_assembly);
  KILN_ASSERT_OK(status);
  printf("%s: second call %.2f ms\n", graph->source, stats.second_call_ms);
}

// Compiles `graph` with `options` (NULL: defaults), expecting a refusal
// containing `message` and no module.
static void kiln_expect_refusal(kiln_graph_t* graph, const kiln_onnx_compile_options_t* options,
                                const char* message) {
  kiln_byte_buffer_t module;
  kiln_byte_buffer_init(&module, kiln_allocator_system());
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_UNIMPLEMENTED, message,
                             kiln_onnx_compile_graph(graph, options, kiln_allocator_system(),
                                                     &module));
  KILN_EXPECT_EQ(module.size, 0u);
  kiln_byte_buffer_deinit(&module);
}

// x[3][20] -> Relu (GPU) -> TopK k=5 smallest (host) -> values + values
// (GPU) and the indices as outputs. Relu makes many equal zeros: ties must
// keep the lower index first.
static void kiln_build_topk(kiln_graph_t* graph) {
  kiln_start(graph, "fallback-topk");
  const int64_t dims[2] = {3, 20};
  int32_t x = kiln_test_graph_input(graph, "x", 2, dims);
  int32_t r = -1, k = kiln_add_i64(graph, "k", 5), vi[2] = {-1, -1}, s = -1;
  kiln_add(graph, "Relu", "relu", &x, 1, &r, 1);
  int32_t topk = kiln_add(graph, "TopK", "pick", (const int32_t[]){r, k}, 2, vi, 2);
  kiln_test_attr_int(graph, topk, "axis", 1);
  kiln_test_attr_int(graph, topk, "largest", 0);
  kiln_add(graph, "Add", "twice", (const int32_t[]){vi[0], vi[0]}, 2, &s, 1);
  kiln_test_graph_finish(graph, (const int32_t[]){s, vi[1]}, 2);
}

KILN_TEST(OnnxFallbackTest, TopKBetweenGpuSegmentsMatchesC) {
  kiln_graph_t graph;
  kiln_build_topk(&graph);
  kiln_graph_tensor_t input, outputs[2];
  kiln_test_graph_allocate_inputs(&graph, &input);
  float* x = (float*)input.data;
  for (int i = 0; i < 60; ++i) x[i] = (float)((i * 7) % 11) - 4.0f;
  kiln_gpu_capture_t assembly;
  kiln_run_with_text(&graph, &input, outputs, &assembly);
  // Two GPU segments (Relu; Add) around one host op.
  KILN_EXPECT_EQ(kiln_gpu_text_count(assembly.text, "call.import cpu.topk "), 1u);
  KILN_EXPECT_EQ(kiln_gpu_text_count(assembly.text, "call.import hal.device.submit_and_wait "),
                 2u);
  kiln_gpu_capture_release(&assembly);
  KILN_ASSERT_EQ(outputs[0].byte_size, 15 * sizeof(float));
  KILN_ASSERT_EQ(outputs[1].byte_size, 15 * sizeof(int64_t));
  const float* twice = (const float*)outputs[0].data;
  const int64_t* index = (const int64_t*)outputs[1].data;
  for (int row = 0; row < 3; ++row) {
    // Plain C: the 5 smallest of relu(x) by repeated minimum, lower index on ties.
    bool taken[20] = {false};
    for (int j = 0; j < 5; ++j) {
      int best = -1;
      for (int c = 0; c < 20; ++c) {
        float v = fmaxf(x[row * 20 + c], 0.0f);
        if (!taken[c] && (best < 0 || v < fmaxf(x[row * 20 + best], 0.0f))) best = c;
      }
      taken[best] = true;
      KILN_EXPECT_EQ(index[row * 5 + j], (int64_t)best);
      KILN_EXPECT_EQ(twice[row * 5 + j], 2.0f * fmaxf(x[row * 20 + best], 0.0f));
    }
  }
  kiln_test_tensors_deinit(outputs, 2);
  kiln_test_tensors_deinit(&input, 1);
  kiln_graph_deinitialize(&graph);
}

KILN_TEST(OnnxFallbackTest, NoFallbackRefusesNamingTheNode) {
  kiln_graph_t graph;
  kiln_build_topk(&graph);
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.no_fallback = true;
  kiln_expect_refusal(&graph, &options,
                      "node 'pick' (op TopK, opset 13): it runs only on the host (CPU fallback "
                      "between GPU segments), which --no-fallback forbids");
  kiln_graph_deinitialize(&graph);
}

// x[4][5] -> Relu (GPU) -> NonZero (host): [2, count] int64, not the bound.
KILN_TEST(OnnxFallbackTest, NonZeroReturnsItsRealCount) {
  kiln_graph_t graph;
  kiln_start(&graph, "fallback-nonzero");
  const int64_t dims[2] = {4, 5};
  int32_t x = kiln_test_graph_input(&graph, "x", 2, dims), r = -1, nz = -1;
  kiln_add(&graph, "Relu", "relu", &x, 1, &r, 1);
  kiln_add(&graph, "NonZero", "nz", &r, 1, &nz, 1);
  kiln_test_graph_finish(&graph, &nz, 1);
  kiln_graph_tensor_t input, output;
  kiln_test_graph_allocate_inputs(&graph, &input);
  float* data = (float*)input.data;
  size_t expected = 0;
  for (int i = 0; i < 20; ++i) {
    data[i] = (i % 3 == 1) ? 1.5f + (float)i : -(float)i;  // 0 at i = 0 is zero too
    expected += data[i] > 0;
  }
  kiln_gpu_run_stats_t stats;
  KILN_ASSERT_OK(kiln_gpu_compile_and_run(&graph, NULL, &input, &output, &stats));
  KILN_ASSERT_EQ(output.shape.rank, 2);
  KILN_EXPECT_EQ(output.shape.dims[0], 2);
  KILN_ASSERT_EQ(output.shape.dims[1], (int64_t)expected);
  const int64_t* coords = (const int64_t*)output.data;
  size_t j = 0;
  for (int i = 0; i < 20; ++i) {
    if (!(data[i] > 0)) continue;
    KILN_EXPECT_EQ(coords[j], (int64_t)(i / 5));
    KILN_EXPECT_EQ(coords[expected + j], (int64_t)(i % 5));
    ++j;
  }
  kiln_test_tensors_deinit(&output, 1);
  kiln_test_tensors_deinit(&input, 1);
  kiln_graph_deinitialize(&graph);
}

KILN_TEST(OnnxFallbackTest, DataDependentOutputReadByANodeIsRefused) {
  kiln_graph_t graph;
  kiln_start(&graph, "fallback-consumer");
  const int64_t dims[2] = {4, 5};
  int32_t x = kiln_test_graph_input(&graph, "x", 2, dims), nz = -1, f = -1;
  kiln_add(&graph, "NonZero", "nz", &x, 1, &nz, 1);
  int32_t cast = kiln_add(&graph, "Cast", "to_float", &nz, 1, &f, 1);
  kiln_test_attr_int(&graph, cast, "to", 1);
  kiln_test_graph_finish(&graph, &f, 1);
  kiln_expect_refusal(&graph, NULL, "and node 'to_float' (op Cast) reads it");
  kiln_graph_deinitialize(&graph);
}

// ONNX's suppress_by_IOU example with the scores through Sigmoid on the GPU
// first (order-preserving): boxes 3, 0, 5 survive in that order.
KILN_TEST(OnnxFallbackTest, NonMaxSuppressionAfterGpuWork) {
  kiln_graph_t graph;
  kiln_start(&graph, "fallback-nms");
  const int64_t box_dims[3] = {1, 6, 4}, score_dims[3] = {1, 1, 6};
  int32_t boxes = kiln_test_graph_input(&graph, "boxes", 3, box_dims);
  int32_t scores = kiln_test_graph_input(&graph, "scores", 3, score_dims);
  int32_t sig = -1, selected = -1;
  kiln_add(&graph, "Sigmoid", "sig", &scores, 1, &sig, 1);
  int32_t operands[5] = {boxes, sig, kiln_add_i64(&graph, "max", 3),
                         kiln_add_f32(&graph, "iou", 0.5f), kiln_add_f32(&graph, "score", 0.0f)};
  kiln_add(&graph, "NonMaxSuppression", "nms", operands, 5, &selected, 1);
  kiln_test_graph_finish(&graph, &selected, 1);
  kiln_graph_tensor_t inputs[2], output;
  kiln_test_graph_allocate_inputs(&graph, inputs);
  const float box_data[24] = {0, 0,  1, 1,  0, 0.1f, 1, 1.1f, 0, -0.1f, 1, 0.9f,
                              0, 10, 1, 11, 0, 10.1f, 1, 11.1f, 0, 100, 1, 101};
  const float score_data[6] = {0.9f, 0.75f, 0.6f, 0.95f, 0.5f, 0.3f};
  memcpy(inputs[0].data, box_data, sizeof(box_data));
  memcpy(inputs[1].data, score_data, sizeof(score_data));
  kiln_gpu_run_stats_t stats;
  KILN_ASSERT_OK(kiln_gpu_compile_and_run(&graph, NULL, inputs, &output, &stats));
  KILN_ASSERT_EQ(output.shape.rank, 2);
  KILN_ASSERT_EQ(output.shape.dims[0], 3);
  const int64_t expected[9] = {0, 0, 3, 0, 0, 0, 0, 0, 5};
  for (int i = 0; i < 9; ++i) KILN_EXPECT_EQ(((const int64_t*)output.data)[i], expected[i]);
  kiln_test_tensors_deinit(&output, 1);
  kiln_test_tensors_deinit(inputs, 2);
  kiln_graph_deinitialize(&graph);
}

// A run-time mask as masked_fill exports it: Equal on int64 token ids
// (host) -> Where(mask, -100, relu(x)) with the constant broadcast (host,
// after the GPU's Relu) -> +1 on the GPU; the bool mask leaves as an output.
KILN_TEST(OnnxFallbackTest, RunTimeMaskWhereBetweenGpuSegments) {
  kiln_graph_t graph;
  kiln_start(&graph, "fallback-mask");
  const int64_t dims[2] = {2, 6};
  int32_t x = kiln_test_graph_input(&graph, "x", 2, dims);
  int32_t ids = kiln_test_graph_input(&graph, "ids", 2, dims);
  graph.values[ids].dtype = KILN_GRAPH_DTYPE_I64;
  int32_t zero = -1, fill = -1, r = -1, mask = -1, w = -1, y = -1;
  const int64_t zero_value = 0;
  const float fill_value = -100.0f, one_value = 1.0f;
  kiln_graph_shape_t scalar = {.rank = 0};
  KILN_ASSERT_OK(
      kiln_graph_add_constant(&graph, "zero", KILN_GRAPH_DTYPE_I64, &scalar, &zero_value, &zero));
  KILN_ASSERT_OK(
      kiln_graph_add_constant(&graph, "fill", KILN_GRAPH_DTYPE_F32, &scalar, &fill_value, &fill));
  int32_t one = kiln_add_f32(&graph, "one", one_value);
  kiln_add(&graph, "Relu", "relu", &x, 1, &r, 1);
  kiln_add(&graph, "Equal", "is_pad", (const int32_t[]){ids, zero}, 2, &mask, 1);
  kiln_add(&graph, "Where", "masked", (const int32_t[]){mask, fill, r}, 3, &w, 1);
  kiln_add(&graph, "Add", "plus_one", (const int32_t[]){w, one}, 2, &y, 1);
  kiln_test_graph_finish(&graph, (const int32_t[]){y, mask}, 2);
  kiln_graph_tensor_t inputs[2], outputs[2];
  kiln_test_graph_allocate_inputs(&graph, inputs);
  KILN_ASSERT_EQ(inputs[1].dtype, KILN_GRAPH_DTYPE_I64);
  float* xs = (float*)inputs[0].data;
  int64_t* id = (int64_t*)inputs[1].data;
  for (int i = 0; i < 12; ++i) {
    xs[i] = (float)(i % 5) - 1.5f;
    id[i] = i % 4 == 3 ? 0 : (INT64_C(1) << 33) + i;  // the high word alone is not zero
  }
  kiln_gpu_capture_t assembly;
  kiln_run_with_text(&graph, inputs, outputs, &assembly);
  KILN_EXPECT_EQ(kiln_gpu_text_count(assembly.text, "call.import cpu.elementwise "), 2u);
  kiln_gpu_capture_release(&assembly);
  KILN_ASSERT_EQ(outputs[1].dtype, KILN_GRAPH_DTYPE_BOOL);
  const float* ys = (const float*)outputs[0].data;
  const uint8_t* ms = (const uint8_t*)outputs[1].data;
  for (int i = 0; i < 12; ++i) {
    bool pad = id[i] == 0;
    KILN_EXPECT_EQ(ms[i] != 0, pad);
    KILN_EXPECT_EQ(ys[i], (pad ? -100.0f : fmaxf(xs[i], 0.0f)) + 1.0f);
  }
  kiln_test_tensors_deinit(outputs, 2);
  kiln_test_tensors_deinit(inputs, 2);
  kiln_graph_deinitialize(&graph);
}

// A bool graph input reshaped and cast to float on the host, then used by
// GPU math (x * mask); its negation leaves as a bool output. At
// --precision=f16 the host's Cast writes float32 and a Cast to float16
// follows it (kiln_emit_node_runs_f32_only); x's values are exact in fp16.
static void kiln_bool_mask_case(kiln_onnx_precision_t precision) {
  kiln_graph_t graph;
  kiln_start(&graph, "fallback-bool");
  const int64_t x_dims[2] = {2, 3}, m_dims[1] = {6}, target[2] = {2, 3};
  int32_t x = kiln_test_graph_input(&graph, "x", 2, x_dims);
  int32_t m = kiln_test_graph_input(&graph, "m", 1, m_dims);
  graph.values[m].dtype = KILN_GRAPH_DTYPE_BOOL;
  kiln_graph_shape_t shape_of_shape = {.rank = 1, .dims = {2}};
  int32_t shape = -1, m2 = -1, mf = -1, y = -1, not_m = -1;
  KILN_ASSERT_OK(kiln_graph_add_constant(&graph, "shape", KILN_GRAPH_DTYPE_I64, &shape_of_shape,
                                         target, &shape));
  kiln_add(&graph, "Reshape", "mask_2d", (const int32_t[]){m, shape}, 2, &m2, 1);
  int32_t cast = kiln_add(&graph, "Cast", "mask_f", &m2, 1, &mf, 1);
  kiln_test_attr_int(&graph, cast, "to", 1);
  kiln_add(&graph, "Mul", "masked", (const int32_t[]){x, mf}, 2, &y, 1);
  kiln_add(&graph, "Not", "keep", &m2, 1, &not_m, 1);
  kiln_test_graph_finish(&graph, (const int32_t[]){y, not_m}, 2);
  kiln_graph_tensor_t inputs[2], outputs[2];
  kiln_test_graph_allocate_inputs(&graph, inputs);
  KILN_ASSERT_EQ(inputs[1].dtype, KILN_GRAPH_DTYPE_BOOL);
  float* xs = (float*)inputs[0].data;
  uint8_t* ms = (uint8_t*)inputs[1].data;
  for (int i = 0; i < 6; ++i) {
    xs[i] = 0.5f + (float)i;
    ms[i] = (uint8_t)(i % 3 != 1);
  }
  kiln_gpu_run_stats_t stats;
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.precision = precision;
  KILN_ASSERT_OK(kiln_gpu_compile_and_run(&graph, &options, inputs, outputs, &stats));
  const float* ys = (const float*)outputs[0].data;
  const uint8_t* keep = (const uint8_t*)outputs[1].data;
  KILN_ASSERT_EQ(outputs[0].dtype, KILN_GRAPH_DTYPE_F32);
  KILN_ASSERT_EQ(outputs[1].byte_size, 6u);
  for (int i = 0; i < 6; ++i) {
    KILN_EXPECT_EQ(ys[i], ms[i] ? xs[i] : 0.0f);
    KILN_EXPECT_EQ(keep[i] != 0, ms[i] == 0);
  }
  kiln_test_tensors_deinit(outputs, 2);
  kiln_test_tensors_deinit(inputs, 2);
  kiln_graph_deinitialize(&graph);
}

KILN_TEST(OnnxFallbackTest, BoolMaskReshapeCastIntoGpuMath) {
  kiln_bool_mask_case(KILN_ONNX_PRECISION_F32);
}

KILN_TEST(OnnxFallbackTest, BoolMaskCastIntoGpuMathAtF16) {
  kiln_bool_mask_case(KILN_ONNX_PRECISION_F16);
}
