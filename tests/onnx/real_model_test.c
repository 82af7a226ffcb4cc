// Real models exported from PyTorch by scripts/export_models.py (seeded
// random weights, randomized batch-norm statistics): imported, run through
// every pass and the memory plan, executed by the reference executor and
// compared with PyTorch's float64 output: max|err| <= 1e-4 * max|ref|.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/time.h"
#include "kiln/compiler/graph_memory_plan.h"
#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/graph_reference.h"
#include "kiln/compiler/onnx.h"
#include "kiln_test.h"

static const char* kiln_models_dir(void) {
  const char* dir = getenv("KILN_ONNX_MODELS_DIR");
  return dir ? dir : "tests/onnx/models";
}

static void kiln_check_model(const char* name, const char* input_shape,
                             size_t* out_removed_batch_norms) {
  char path[1024], input_path[1024], output_path[1024];
  snprintf(path, sizeof(path), "%s/%s/model.onnx", kiln_models_dir(), name);
  snprintf(input_path, sizeof(input_path), "%s/%s/input_0.pb",
           kiln_models_dir(), name);
  snprintf(output_path, sizeof(output_path), "%s/%s/output_0.pb",
           kiln_models_dir(), name);
  kiln_onnx_input_shape_t shape;
  kiln_onnx_import_options_t options;
  memset(&options, 0, sizeof(options));
  if (input_shape) {
    KILN_ASSERT_OK(kiln_onnx_parse_input_shape(input_shape, &shape));
    options.input_shapes = &shape;
    options.input_shape_count = 1;
  }
  kiln_graph_t graph;
  KILN_ASSERT_OK(
      kiln_onnx_import_file(path, &options, kiln_allocator_system(), &graph));
  size_t batch_norms_before = 0, batch_norms_after = 0, fused = 0;
  for (size_t n = 0; n < graph.node_count; ++n) {
    batch_norms_before += strcmp(graph.nodes[n].op_type, "BatchNormalization") == 0;
  }
  KILN_ASSERT_OK(kiln_graph_run_default_passes(&graph));
  for (size_t n = 0; n < graph.node_count; ++n) {
    if (graph.nodes[n].removed) continue;
    batch_norms_after += strcmp(graph.nodes[n].op_type, "BatchNormalization") == 0;
    fused += kiln_graph_node_find_attr(&graph.nodes[n], "kiln.activation") ||
             kiln_graph_node_find_attr(&graph.nodes[n], "kiln.residual");
  }
  *out_removed_batch_norms = batch_norms_before - batch_norms_after;
  kiln_graph_memory_plan_t plan;
  // The GPU's plan (lifetimes in levels, views sharing places) must hold
  // too: a view's place taken early gave gpt_block a wrong answer once.
  KILN_ASSERT_OK(kiln_graph_memory_plan_build_by_level(&graph, 256, kiln_allocator_system(),
                                                       &plan));
  KILN_ASSERT_OK(kiln_graph_memory_plan_verify(&graph, &plan));
  kiln_graph_memory_plan_deinit(&plan);
  KILN_ASSERT_OK(
      kiln_graph_memory_plan_build(&graph, 256, kiln_allocator_system(), &plan));
  KILN_ASSERT_OK(kiln_graph_memory_plan_verify(&graph, &plan));
  KILN_EXPECT_LE(plan.peak_bytes, plan.total_bytes);
  kiln_graph_tensor_t input, expected, actual;
  KILN_ASSERT_OK(
      kiln_onnx_read_tensor_file(input_path, kiln_allocator_system(), &input));
  KILN_ASSERT_OK(kiln_onnx_read_tensor_file(output_path,
                                            kiln_allocator_system(), &expected));
  int64_t start = kiln_time_now_ns();
  KILN_ASSERT_OK(kiln_graph_reference_run(&graph, &input, 1, &plan,
                                          kiln_allocator_system(), &actual));
  double seconds = (double)(kiln_time_now_ns() - start) * 1e-9;
  KILN_ASSERT_TRUE(kiln_graph_shape_equal(&actual.shape, &expected.shape));
  size_t count = expected.byte_size / sizeof(float);
  const float* a = (const float*)actual.data;
  const float* e = (const float*)expected.data;
  double max_ref = 0.0, max_err = 0.0;
  for (size_t i = 0; i < count; ++i) {
    max_ref = fmax(max_ref, fabs((double)e[i]));
    double err = fabs((double)a[i] - e[i]);
    if (!(err <= max_err)) max_err = isnan(err) ? INFINITY : err;
  }
  printf("%s: %zu live nodes fused (activation/residual), %zu batch norms "
         "folded, peak %zu of %zu intermediate bytes, max|err| %.3g vs "
         "max|ref| %.3g (ratio %.2g), reference run %.2f s\n",
         name, fused, *out_removed_batch_norms, plan.peak_bytes,
         plan.total_bytes, max_err, max_ref, max_err / max_ref, seconds);
  KILN_EXPECT_TRUE(max_ref > 0.0);
  KILN_EXPECT_TRUE(max_err <= 1e-4 * max_ref);  // values printed above
  kiln_graph_tensor_deinit(&input);
  kiln_graph_tensor_deinit(&expected);
  kiln_graph_tensor_deinit(&actual);
  kiln_graph_memory_plan_deinit(&plan);
  kiln_graph_deinitialize(&graph);
}

KILN_TEST(OnnxRealModelTest, MobileNetV2) {
  size_t folded = 0;
  kiln_check_model("mobilenet_v2", NULL, &folded);
  KILN_EXPECT_EQ(folded, 52u);
}

KILN_TEST(OnnxRealModelTest, ResNet18) {
  size_t folded = 0;
  kiln_check_model("resnet18", NULL, &folded);
  KILN_EXPECT_EQ(folded, 20u);
}

KILN_TEST(OnnxRealModelTest, TransformerEncoderLayerWithInputShape) {
  size_t folded = 0;
  kiln_check_model("transformer_encoder", "input:2x10x64", &folded);
  KILN_EXPECT_EQ(folded, 0u);
}

// The small ones of the added exports, through the reference executor (the
// GPU test covers all of them): 1-D windows, recurrences, folded
// shape arithmetic, DepthToSpace, Swin's folded masks.
KILN_TEST(OnnxRealModelTest, SmallAddedModels) {
  static const char* const kNames[] = {"conv1d_net", "mlp_softmax", "shape_ops", "lstm_net",
                                       "gru_net", "rnn_net", "lstm_bidir_net",
                                       "super_resolution", "unet_small", "swin_small",
                                       "activation_zoo", "gpt_block"};
  for (size_t i = 0; i < sizeof(kNames) / sizeof(kNames[0]); ++i) {
    size_t folded = 0;
    kiln_check_model(kNames[i], NULL, &folded);
  }
}

// Copies rewritten to opsets 18, 20 and 21 by scripts/make_opset_models.py
// (Reduce* axes as inputs), against the opset-13..17 originals' reference
// (the CNN only at 18: it has no op whose form changed, and takes 14 s).
KILN_TEST(OnnxRealModelTest, UpgradedToOpsets18To21) {
  static const char* const kNames[] = {
      "mobilenet_v2_opset18",        "transformer_encoder_opset18", "transformer_encoder_opset20",
      "transformer_encoder_opset21", "mlp_softmax_opset18",         "mlp_softmax_opset20",
      "mlp_softmax_opset21",         "swin_small_opset18",          "swin_small_opset20",
      "swin_small_opset21"};
  for (size_t i = 0; i < sizeof(kNames) / sizeof(kNames[0]); ++i) {
    size_t folded = 0;
    kiln_check_model(kNames[i],
                     strncmp(kNames[i], "transformer_encoder", 19) == 0 ? "input:2x10x64" : NULL,
                     &folded);
  }
}

// Text models taking int64 token ids through the reference executor.
KILN_TEST(OnnxRealModelTest, TextModelsWithTokenIds) {
  static const char* const kNames[] = {"text_classifier", "tiny_bert"};
  for (size_t i = 0; i < sizeof(kNames) / sizeof(kNames[0]); ++i) {
    size_t folded = 0;
    kiln_check_model(kNames[i], NULL, &folded);
  }
}

// Two int64 inputs (token ids and an attention mask) through the reference
// executor against PyTorch's float64 output.
KILN_TEST(OnnxRealModelTest, MaskedEncoderTwoIntegerInputs) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/masked_encoder/model.onnx", kiln_models_dir());
  kiln_graph_t graph;
  KILN_ASSERT_OK(kiln_onnx_import_file(path, NULL, kiln_allocator_system(), &graph));
  KILN_ASSERT_EQ(graph.input_count, 2u);
  KILN_ASSERT_OK(kiln_graph_run_default_passes(&graph));
  kiln_graph_memory_plan_t plan;
  KILN_ASSERT_OK(kiln_graph_memory_plan_build(&graph, 256, kiln_allocator_system(), &plan));
  kiln_graph_tensor_t inputs[2], expected, actual;
  for (size_t i = 0; i < 2; ++i) {
    snprintf(path, sizeof(path), "%s/masked_encoder/input_%zu.pb", kiln_models_dir(), i);
    KILN_ASSERT_OK(kiln_onnx_read_tensor_file(path, kiln_allocator_system(), &inputs[i]));
    KILN_EXPECT_EQ(inputs[i].dtype, KILN_GRAPH_DTYPE_I64);
  }
  snprintf(path, sizeof(path), "%s/masked_encoder/output_0.pb", kiln_models_dir());
  KILN_ASSERT_OK(kiln_onnx_read_tensor_file(path, kiln_allocator_system(), &expected));
  KILN_ASSERT_OK(kiln_graph_reference_run(&graph, inputs, 2, &plan, kiln_allocator_system(),
                                          &actual));
  KILN_ASSERT_TRUE(kiln_graph_shape_equal(&actual.shape, &expected.shape));
  const float* a = (const float*)actual.data;
  const float* e = (const float*)expected.data;
  double max_ref = 0.0, max_err = 0.0;
  for (size_t i = 0; i < expected.byte_size / sizeof(float); ++i) {
    max_ref = fmax(max_ref, fabs((double)e[i]));
    double err = fabs((double)a[i] - e[i]);
    if (!(err <= max_err)) max_err = isnan(err) ? INFINITY : err;
  }
  printf("masked_encoder (reference): max|err| %.3g vs max|ref| %.3g\n", max_err, max_ref);
  KILN_EXPECT_TRUE(max_ref > 0.0);
  KILN_EXPECT_TRUE(max_err <= 1e-4 * max_ref);
  for (size_t i = 0; i < 2; ++i) kiln_graph_tensor_deinit(&inputs[i]);
  kiln_graph_tensor_deinit(&expected);
  kiln_graph_tensor_deinit(&actual);
  kiln_graph_memory_plan_deinit(&plan);
  kiln_graph_deinitialize(&graph);
}
