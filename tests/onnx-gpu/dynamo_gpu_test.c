// Files written by torch's default (dynamo) ONNX exporter (opset 18, model-
// local functions possible), committed under tests/data/dynamo/<name>/ by
// scripts/export_dynamo_models.py with PyTorch's float64 output: each is
// imported, run by the reference executor and compiled and run on the
// default device (lavapipe in CI); both within 1e-4 max|ref|. At
// --precision=f16 (docs/precision.md) the GPU result is within 1e-2.
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/file.h"
#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/graph_reference.h"
#include "kiln/compiler/onnx.h"
#include "kiln_test.h"
#include "npy_util.h"
#include "onnx_gpu_util.h"

static const char* kiln_dynamo_dir(void) {
  const char* dir = getenv("KILN_DYNAMO_MODELS_DIR");
  return dir ? dir : "tests/data/dynamo";
}

// max|actual - expected| / max|expected| (INFINITY on a shape mismatch or NaN).
static double kiln_relative_error(const kiln_graph_tensor_t* actual,
                                  const kiln_graph_tensor_t* expected) {
  if (!kiln_graph_shape_equal(&actual->shape, &expected->shape)) return INFINITY;
  const float* a = (const float*)actual->data;
  const float* e = (const float*)expected->data;
  double max_ref = 0.0, max_err = 0.0;
  for (size_t i = 0; i < expected->byte_size / sizeof(float); ++i) {
    max_ref = fmax(max_ref, fabs((double)e[i]));
    double err = fabs((double)a[i] - e[i]);
    if (!(err <= max_err)) max_err = isnan(err) ? INFINITY : err;
  }
  return max_ref > 0.0 ? max_err / max_ref : INFINITY;
}

// Runs `name` (at `precision`); false when the compiler refused it (the
// refusal printed).
static bool kiln_check_dynamo_model(const char* name, kiln_onnx_precision_t precision) {
  char path[1024], input_path[1024], output_path[1024];
  snprintf(path, sizeof(path), "%s/%s/model.onnx", kiln_dynamo_dir(), name);
  snprintf(input_path, sizeof(input_path), "%s/%s/input_0.npy", kiln_dynamo_dir(), name);
  snprintf(output_path, sizeof(output_path), "%s/%s/output_0.npy", kiln_dynamo_dir(), name);
  kiln_graph_tensor_t input, expected, cpu, gpu;
  KILN_ASSERT_OK(kiln_test_read_npy_f32(input_path, &input));
  KILN_ASSERT_OK(kiln_test_read_npy_f32(output_path, &expected));
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.precision = precision;
  const bool f16 = precision == KILN_ONNX_PRECISION_F16;
  const double tolerance = f16 ? 1e-2 : 1e-4;
  kiln_graph_t graph;
  bool ran = true;
  KILN_ASSERT_OK(kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
  KILN_ASSERT_TRUE(graph.opset >= 18);
  KILN_ASSERT_OK(kiln_graph_reference_run(&graph, &input, 1, NULL, kiln_allocator_system(), &cpu));
  double cpu_error = kiln_relative_error(&cpu, &expected);
  kiln_graph_deinitialize(&graph);
  KILN_ASSERT_OK(kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
  kiln_gpu_run_stats_t stats;
  memset(&gpu, 0, sizeof(gpu));
  kiln_status_t status = kiln_gpu_compile_and_run(&graph, &options, &input, &gpu, &stats);
  if (f16 && kiln_status_code(status) == KILN_STATUS_UNIMPLEMENTED) {
    printf("%s at f16: refused: %s\n", name, kiln_status_message(status));
    kiln_status_free(status);
    ran = false;
  } else {
    KILN_ASSERT_OK(status);
    double gpu_error = kiln_relative_error(&gpu, &expected);
    printf("%s (opset %lld, %s): max|err|/max|ref| reference %.2g, GPU %.2g; compile %.0f ms, "
           "second call %.1f ms\n",
           name, (long long)graph.opset, f16 ? "f16" : "f32", cpu_error, gpu_error,
           stats.compile_ms, stats.second_call_ms);
    KILN_EXPECT_TRUE(gpu_error <= tolerance);
  }
  KILN_EXPECT_TRUE(cpu_error <= 1e-4);
  kiln_graph_tensor_deinit(&input);
  kiln_graph_tensor_deinit(&expected);
  kiln_graph_tensor_deinit(&cpu);
  kiln_graph_tensor_deinit(&gpu);
  kiln_graph_deinitialize(&graph);
  return ran;
}

static int kiln_compare_names(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

static void kiln_check_every_dynamo_model(kiln_onnx_precision_t precision) {
  DIR* dir = opendir(kiln_dynamo_dir());
  KILN_ASSERT_TRUE(dir != NULL);
  char* names[64];
  size_t count = 0;
  for (struct dirent* entry; (entry = readdir(dir)) != NULL && count < 64;) {
    if (entry->d_name[0] == '.') continue;
    char model[1024];
    snprintf(model, sizeof(model), "%s/%s/model.onnx", kiln_dynamo_dir(), entry->d_name);
    FILE* file = fopen(model, "rb");
    if (!file) continue;
    fclose(file);
    names[count++] = strdup(entry->d_name);
  }
  closedir(dir);
  qsort(names, count, sizeof(names[0]), kiln_compare_names);
  KILN_EXPECT_GE(count, 5u);  // tiny CNN, MLP, encoder layer, GPT block, LSTM
  for (size_t i = 0; i < count; ++i) {
    bool ran = kiln_check_dynamo_model(names[i], precision);
    // Every export runs at f16 too: the LSTM's recurrent kernel (float32
    // only) between Casts (docs/precision.md, "Nodes kept at float32").
    if (!ran) KILN_ADD_FAILURE("%s: refused at %s", names[i], precision ==
                               KILN_ONNX_PRECISION_F16 ? "f16" : "f32");
    free(names[i]);
  }
}

KILN_TEST(OnnxDynamoModelTest, EveryCommittedExportMatchesPyTorch) {
  kiln_check_every_dynamo_model(KILN_ONNX_PRECISION_F32);
}

// fp16 storage, fp32 math: within 1e-2 of max|ref| (each model's figure is
// printed; docs/precision.md lists them).
KILN_TEST(OnnxDynamoModelTest, EveryCommittedExportAtF16) {
  kiln_check_every_dynamo_model(KILN_ONNX_PRECISION_F16);
}

// torch 2.x's TorchScript exporter writes nn.MultiheadAttention's head split
// as Reshape/Unsqueeze/Transpose/Squeeze and a Gather per Q, K and V: the
// attention pass must see through it (one kiln.Attention per layer, 10
// dispatches per encoder layer as for torch 1.13's Slice form; 17 without).
KILN_TEST(OnnxDynamoModelTest, TorchScriptEncoderHeadSplitFuses) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/encoder_gelu_torchscript/model.onnx", kiln_dynamo_dir());
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  kiln_graph_t graph;
  KILN_ASSERT_OK(kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
  size_t gathers = 0;
  for (size_t n = 0; n < graph.node_count; ++n) {
    gathers += strcmp(graph.nodes[n].op_type, "Gather") == 0;
  }
  KILN_EXPECT_GE(gathers, 6u);  // the form under test: 3 per layer
  KILN_ASSERT_OK(kiln_graph_run_default_passes(&graph));
  size_t attention = 0;
  for (size_t n = 0; n < graph.node_count; ++n) {
    if (!graph.nodes[n].removed && strcmp(graph.nodes[n].op_type, "kiln.Attention") == 0) {
      ++attention;
    }
  }
  KILN_EXPECT_EQ(attention, 2u);
  kiln_graph_deinitialize(&graph);
  // Q, K and V read in place (no copy per Gather), and the [1, s, d] <->
  // [s, 1, d] transposes and the reshape around attention planned as views
  // (no copy): 7 dispatches a layer, plus a copy of the graph input (which
  // has no place in the plan to share) for the first layer's transpose.
  KILN_ASSERT_OK(kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
  char input_path[1024];
  snprintf(input_path, sizeof(input_path), "%s/encoder_gelu_torchscript/input_0.npy",
           kiln_dynamo_dir());
  kiln_graph_tensor_t input, output;
  KILN_ASSERT_OK(kiln_test_read_npy_f32(input_path, &input));
  kiln_gpu_capture_t assembly;
  KILN_ASSERT_OK(kiln_gpu_capture_begin(&options, &assembly));
  kiln_gpu_run_stats_t stats;
  memset(&output, 0, sizeof(output));
  kiln_status_t status = kiln_gpu_compile_and_run(&graph, &options, &input, &output, &stats);
  kiln_gpu_capture_end(&assembly);
  KILN_ASSERT_OK(status);
  KILN_EXPECT_EQ(kiln_gpu_text_dispatches(assembly.text), 15u);
  kiln_gpu_capture_release(&assembly);
  kiln_graph_tensor_deinit(&input);
  kiln_graph_tensor_deinit(&output);
  kiln_graph_deinitialize(&graph);
}
