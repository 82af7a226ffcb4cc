// The exported test models (scripts/export_models.py and
// export_fp16_models.py): models/<name>/model.onnx with its inputs
// input_<i>.pb and PyTorch's reference output_0.pb. Finding, loading and
// comparing them, shared by the GPU model tests.
#ifndef KILN_TESTS_ONNX_GPU_MODEL_COMPARE_H_
#define KILN_TESTS_ONNX_GPU_MODEL_COMPARE_H_

#include <stddef.h>

#include "kiln/compiler/graph.h"
#include "kiln/compiler/graph_tensor.h"
#include "kiln/compiler/onnx.h"
#include "kiln/compiler/onnx_compile.h"

#define KILN_TEST_MODEL_MAX_INPUTS 4

// KILN_ONNX_MODELS_DIR, else tests/onnx/models.
const char* kiln_test_model_dir(void);
// "<dir>/<name>/<file>" into `path`.
void kiln_test_model_path(const char* name, const char* file, char* path, size_t size);

// Reads models/<name>/<file> (a TensorProto) into `out`; leaves the test
// (fatal assertion) on an error.
void kiln_test_model_read(const char* name, const char* file, kiln_graph_tensor_t* out);

// On a GPU-machine run (KILN_GPU_CHECK=1, set by scripts/gpu-check.sh) a
// model that machine's PyTorch could not export is absent: the test is
// skipped, naming the missing file and the reason gpu-check.sh recorded
// (models/<name>/export-failed.txt). Anywhere else (CI, lavapipe) the build
// exports every model, so this does nothing and a missing file fails the
// test where it is read.
void kiln_test_model_require(const char* name);

// One model ready to run: the imported graph, its inputs and reference.
typedef struct kiln_test_model_case_t {
  kiln_onnx_input_shape_t shape;        // the input-shape override, if any
  kiln_onnx_compile_options_t options;  // defaults + the override
  kiln_graph_t graph;
  kiln_graph_tensor_t inputs[KILN_TEST_MODEL_MAX_INPUTS];  // graph.input_count of them
  kiln_graph_tensor_t expected;                       // output_0.pb
} kiln_test_model_case_t;

// Loads models/<name> (`input_shape`: "input:2x10x64"-style override of the
// first input, or NULL); leaves the test (fatal assertion) on any error.
// The caller may set further options before compiling; `out` must not move
// (options point at its shape).
void kiln_test_model_load(const char* name, const char* input_shape, kiln_test_model_case_t* out);
void kiln_test_model_release(kiln_test_model_case_t* model);

#endif  // KILN_TESTS_ONNX_GPU_MODEL_COMPARE_H_
