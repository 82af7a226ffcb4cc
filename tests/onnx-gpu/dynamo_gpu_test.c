// Files written by torch's default (dynamo) ONNX exporter (opset 18, model-
// local functions possible), committed under tests/data/dynamo/<name>/ by
// scripts/export_dynamo_models.py with PyTorch's float64 output: each is
// imported, run by the reference executor and compiled and run on the
// default device (lavapipe in CI); both within 1e-4 max|ref|.
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/file.h"
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

static void kiln_check_dynamo_model(const char* name) {
  char path[1024], input_path[1024], output_path[1024];
  snprintf(path, sizeof(path), "%s/%s/model.onnx", kiln_dynamo_dir(), name);
  snprintf(input_path, sizeof(input_path), "%s/%s/input_0.npy", kiln_dynamo_dir(), name);
  snprintf(output_path, sizeof(output_path), "%s/%s/output_0.npy", kiln_dynamo_dir(), name);
  kiln_graph_tensor_t input, expected, cpu, gpu;
  KILN_ASSERT_OK(kiln_test_read_npy_f32(input_path, &input));
  KILN_ASSERT_OK(kiln_test_read_npy_f32(output_path, &expected));
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  kiln_graph_t graph;
  KILN_ASSERT_OK(kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
  KILN_ASSERT_TRUE(graph.opset >= 18);
  KILN_ASSERT_OK(kiln_graph_reference_run(&graph, &input, 1, NULL, kiln_allocator_system(), &cpu));
  double cpu_error = kiln_relative_error(&cpu, &expected);
  kiln_graph_deinitialize(&graph);
  KILN_ASSERT_OK(kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
  kiln_gpu_run_stats_t stats;
  KILN_ASSERT_OK(kiln_gpu_compile_and_run(&graph, &options, &input, &gpu, &stats));
  double gpu_error = kiln_relative_error(&gpu, &expected);
  printf("%s (opset %lld): max|err|/max|ref| reference %.2g, GPU %.2g; compile %.0f ms, "
         "second call %.1f ms\n",
         name, (long long)graph.opset, cpu_error, gpu_error, stats.compile_ms,
         stats.second_call_ms);
  KILN_EXPECT_TRUE(cpu_error <= 1e-4);
  KILN_EXPECT_TRUE(gpu_error <= 1e-4);
  kiln_graph_tensor_deinit(&input);
  kiln_graph_tensor_deinit(&expected);
  kiln_graph_tensor_deinit(&cpu);
  kiln_graph_tensor_deinit(&gpu);
  kiln_graph_deinitialize(&graph);
}

static int kiln_compare_names(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

KILN_TEST(OnnxDynamoModelTest, EveryCommittedExportMatchesPyTorch) {
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
    kiln_check_dynamo_model(names[i]);
    free(names[i]);
  }
}
