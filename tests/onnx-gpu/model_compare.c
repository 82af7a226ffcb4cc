// See model_compare.h.
#include "model_compare.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kiln_test.h"

const char* kiln_test_model_dir(void) {
  const char* dir = getenv("KILN_ONNX_MODELS_DIR");
  return dir ? dir : "tests/onnx/models";
}

void kiln_test_model_path(const char* name, const char* file, char* path, size_t size) {
  snprintf(path, size, "%s/%s/%s", kiln_test_model_dir(), name, file);
}

void kiln_test_model_read(const char* name, const char* file, kiln_graph_tensor_t* out) {
  char path[1024];
  kiln_test_model_path(name, file, path, sizeof(path));
  KILN_ASSERT_OK(kiln_onnx_read_tensor_file(path, kiln_allocator_system(), out));
}

static bool kiln_test_model_file_exists(const char* path) {
  struct stat info;
  return stat(path, &info) == 0 && S_ISREG(info.st_mode);
}

void kiln_test_model_require(const char* name) {
  const char* check = getenv("KILN_GPU_CHECK");
  if (!check || strcmp(check, "1") != 0) return;
  static const char* const kFiles[] = {"model.onnx", "input_0.pb", "output_0.pb"};
  char path[1024];
  for (size_t i = 0; i < sizeof(kFiles) / sizeof(kFiles[0]); ++i) {
    kiln_test_model_path(name, kFiles[i], path, sizeof(path));
    if (kiln_test_model_file_exists(path)) continue;
    // The exporter's one-line reason, when gpu-check.sh recorded one.
    char reason[512] = "no export-failed.txt beside it: not exported on this machine";
    char reason_path[1024];
    kiln_test_model_path(name, "export-failed.txt", reason_path, sizeof(reason_path));
    FILE* file = fopen(reason_path, "r");
    if (file) {
      size_t used = fread(reason, 1, sizeof(reason) - 1, file);
      fclose(file);
      reason[used] = 0;
      while (used && (reason[used - 1] == '\n' || reason[used - 1] == '\r')) reason[--used] = 0;
    }
    KILN_SKIP("%s is missing (KILN_GPU_CHECK=1: this machine's PyTorch did not export "
              "model '%s'): %s",
              path, name, reason);
  }
}

void kiln_test_model_load(const char* name, const char* input_shape, kiln_test_model_case_t* out) {
  memset(out, 0, sizeof(*out));
  kiln_onnx_compile_options_init(&out->options);
  if (input_shape) {
    KILN_ASSERT_OK(kiln_onnx_parse_input_shape(input_shape, &out->shape));
    out->options.import.input_shapes = &out->shape;
    out->options.import.input_shape_count = 1;
  }
  char path[1024];
  kiln_test_model_path(name, "model.onnx", path, sizeof(path));
  KILN_ASSERT_OK(
      kiln_onnx_import_file(path, &out->options.import, kiln_allocator_system(), &out->graph));
  // input_0.pb, input_1.pb...: one per graph input (token ids and mask).
  KILN_ASSERT_TRUE(out->graph.input_count >= 1 &&
                   out->graph.input_count <= KILN_TEST_MODEL_MAX_INPUTS);
  for (size_t i = 0; i < out->graph.input_count; ++i) {
    char file[32];
    snprintf(file, sizeof(file), "input_%zu.pb", i);
    kiln_test_model_read(name, file, &out->inputs[i]);
  }
  kiln_test_model_read(name, "output_0.pb", &out->expected);
}

void kiln_test_model_release(kiln_test_model_case_t* model) {
  for (size_t i = 0; i < KILN_TEST_MODEL_MAX_INPUTS; ++i) kiln_graph_tensor_deinit(&model->inputs[i]);
  kiln_graph_tensor_deinit(&model->expected);
  kiln_graph_deinitialize(&model->graph);
}
