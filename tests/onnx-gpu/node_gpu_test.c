// The ONNX node tests of libonnx-testdata compiled to modules and run on the
// default device, compared with the stored outputs (rtol 1e-3, atol 1e-5).
// KILN_NODE_TEST_PRECISION=f16 compiles them with --precision=f16 and
// compares as the f16 model tests do: within 1e-2 of the output's
// max|expected|, plus 4e-3 (a few fp16 steps) of each element; data that
// fp16 cannot hold (kF16OutOfRange) is not compared.
// Each test is passed, unsupported (refused at import or compile with
// UNIMPLEMENTED: op, attribute or dtype without a GPU lowering), refused at
// import for another reason (training-domain models) or failed;
// an accepted model that gives wrong results is a failure, and the passed
// count must not drop below a floor.
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kiln/base/half.h"
#include "kiln/base/time.h"
#include "kiln/compiler/onnx.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"

#define KILN_NODE_DIR "/usr/share/libonnx-testdata/data/node"
// Inputs larger than this are skipped to bound the run time under ASan.
#define KILN_NODE_MAX_INPUT_BYTES (4u << 20)
#define KILN_NODE_MAX_TENSORS 16

typedef enum kiln_gpu_node_result_e {
  KILN_GPU_NODE_PASSED,
  KILN_GPU_NODE_UNSUPPORTED,
  KILN_GPU_NODE_REFUSED,  // refused at import for another reason (as tests/onnx)
  KILN_GPU_NODE_FAILED,
  KILN_GPU_NODE_SKIPPED,
} kiln_gpu_node_result_t;

// Same rule as tests/onnx: atol + rtol * |expected|, NaN matches NaN.
static bool kiln_gpu_compare(const kiln_graph_tensor_t* actual,
                             const kiln_graph_tensor_t* expected, double rtol, double atol,
                             char* message, size_t message_size) {
  if (actual->dtype != expected->dtype ||
      !kiln_graph_shape_equal(&actual->shape, &expected->shape)) {
    char a[128], e[128];
    kiln_graph_shape_format(&actual->shape, a, sizeof(a));
    kiln_graph_shape_format(&expected->shape, e, sizeof(e));
    snprintf(message, message_size, "got %s %s, expected %s %s",
             kiln_graph_dtype_name(actual->dtype), a, kiln_graph_dtype_name(expected->dtype),
             e);
    return false;
  }
  if (actual->dtype == KILN_GRAPH_DTYPE_I64) {
    // Indices (ArgMax/ArgMin) must match exactly.
    const int64_t* xi = (const int64_t*)actual->data;
    const int64_t* yi = (const int64_t*)expected->data;
    for (size_t i = 0; i < actual->byte_size / sizeof(int64_t); ++i) {
      if (xi[i] != yi[i]) {
        snprintf(message, message_size, "element %zu: %lld, expected %lld", i,
                 (long long)xi[i], (long long)yi[i]);
        return false;
      }
    }
    return true;
  }
  if (actual->dtype == KILN_GRAPH_DTYPE_BOOL) {
    // Masks (comparisons, logic) must match exactly.
    const uint8_t* xb = (const uint8_t*)actual->data;
    const uint8_t* yb = (const uint8_t*)expected->data;
    for (size_t i = 0; i < actual->byte_size; ++i) {
      if ((xb[i] != 0) != (yb[i] != 0)) {
        snprintf(message, message_size, "element %zu: %d, expected %d", i, xb[i] != 0,
                 yb[i] != 0);
        return false;
      }
    }
    return true;
  }
  const bool half = actual->dtype == KILN_GRAPH_DTYPE_F16;  // fp16 models' outputs
  if (actual->dtype != KILN_GRAPH_DTYPE_F32 && !half) {
    snprintf(message, message_size, "no comparison for %s outputs",
             kiln_graph_dtype_name(actual->dtype));
    return false;
  }
  const size_t count = actual->byte_size / (half ? sizeof(uint16_t) : sizeof(float));
  for (size_t i = 0; i < count; ++i) {
    float x = half ? kiln_f16_to_f32(((const uint16_t*)actual->data)[i])
                   : ((const float*)actual->data)[i];
    float y = half ? kiln_f16_to_f32(((const uint16_t*)expected->data)[i])
                   : ((const float*)expected->data)[i];
    if (isnan(y) && isnan(x)) continue;
    if (isinf(y) && x == y) continue;
    double diff = fabs((double)x - y);
    // fp16 outputs: one fp16 rounding (2^-11 relative) on top.
    if (!(diff <= atol + (half ? rtol + 1.0 / 2048 : rtol) * fabs((double)y))) {
      snprintf(message, message_size, "element %zu: %.9g, expected %.9g", i, x, y);
      return false;
    }
  }
  return true;
}

static kiln_status_t kiln_gpu_read_tensors(const char* dir, const char* prefix,
                                           kiln_graph_tensor_t* tensors, size_t* out_count,
                                           size_t* out_bytes) {
  *out_count = 0;
  for (size_t i = 0; i < KILN_NODE_MAX_TENSORS; ++i) {
    char path[1200];
    snprintf(path, sizeof(path), "%s/%s_%zu.pb", dir, prefix, i);
    struct stat st;
    if (stat(path, &st) != 0) break;
    *out_bytes += (size_t)st.st_size;
    KILN_RETURN_IF_ERROR(
        kiln_onnx_read_tensor_file(path, kiln_allocator_system(), &tensors[i]));
    *out_count = i + 1;
  }
  return kiln_ok_status();
}

// Whether the node tests run at --precision=f16.
static bool kiln_node_f16(void) {
  const char* precision = getenv("KILN_NODE_TEST_PRECISION");
  return precision && strcmp(precision, "f16") == 0;
}

// Node tests whose data fp16 storage cannot hold, so that f16 answers differ
// from the float32 expectation by design (as PyTorch's .half() would).
static const struct {
  const char* name;
  const char* why;
} kF16OutOfRange[] = {
    {"test_softmax_large_number", "inputs 10000..10003 are one fp16 value (spacing 8)"},
    {"test_softmax_large_number_expanded", "inputs 10000..10003 are one fp16 value"},
    {"test_logsoftmax_large_number", "inputs 10000..10003 are one fp16 value (spacing 8)"},
    {"test_logsoftmax_large_number_expanded", "inputs 10000..10003 are one fp16 value"},
    {"test_reduce_prod_default_axes_keepdims_example", "12! = 479001600 is past fp16's 65504"},
};

static const char* kiln_f16_out_of_range(const char* name) {
  for (size_t i = 0; i < sizeof(kF16OutOfRange) / sizeof(kF16OutOfRange[0]); ++i) {
    if (strcmp(kF16OutOfRange[i].name, name) == 0) return kF16OutOfRange[i].why;
  }
  return NULL;
}

// The largest finite |value| of a float32 tensor (0 for other dtypes).
static double kiln_max_abs(const kiln_graph_tensor_t* t) {
  double max_abs = 0.0;
  if (t->dtype != KILN_GRAPH_DTYPE_F32) return 0.0;
  for (size_t i = 0; i < t->byte_size / sizeof(float); ++i) {
    const double v = fabs(((const float*)t->data)[i]);
    if (isfinite(v) && v > max_abs) max_abs = v;
  }
  return max_abs;
}

static kiln_gpu_node_result_t kiln_gpu_classify(kiln_status_t status, char* message,
                                                size_t message_size) {
  char* text = kiln_status_to_string(status);
  snprintf(message, message_size, "%s", text);
  free(text);
  return kiln_status_consume_code(status) == KILN_STATUS_UNIMPLEMENTED
             ? KILN_GPU_NODE_UNSUPPORTED
             : KILN_GPU_NODE_FAILED;
}

// First data set of one node test: import (freezing shape arguments fed as
// inputs, as tests/onnx does), compile, run on the GPU, compare.
static kiln_gpu_node_result_t kiln_gpu_run_node_test(const char* dir, char* message,
                                                     size_t message_size) {
  char model[1200], set_dir[1200];
  snprintf(model, sizeof(model), "%s/model.onnx", dir);
  snprintf(set_dir, sizeof(set_dir), "%s/test_data_set_0", dir);
  kiln_graph_tensor_t inputs[KILN_NODE_MAX_TENSORS], expected[KILN_NODE_MAX_TENSORS];
  kiln_graph_tensor_t actual[KILN_NODE_MAX_TENSORS];
  memset(inputs, 0, sizeof(inputs));
  memset(expected, 0, sizeof(expected));
  memset(actual, 0, sizeof(actual));
  size_t input_count = 0, expected_count = 0, bytes = 0;
  kiln_gpu_node_result_t result = KILN_GPU_NODE_FAILED;
  kiln_status_t status = kiln_gpu_read_tensors(set_dir, "input", inputs, &input_count, &bytes);
  if (!status) {
    status = kiln_gpu_read_tensors(set_dir, "output", expected, &expected_count, &bytes);
  }
  if (status) {
    // Data kiln cannot hold (doubles, strings): unsupported by definition.
    kiln_gpu_classify(status, message, message_size);
    result = KILN_GPU_NODE_UNSUPPORTED;
    goto done;
  }
  if (bytes > KILN_NODE_MAX_INPUT_BYTES) {
    snprintf(message, message_size, "skipped: %zu bytes of data", bytes);
    result = KILN_GPU_NODE_SKIPPED;
    goto done;
  }
  kiln_onnx_frozen_input_t frozen[KILN_NODE_MAX_TENSORS];
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  if (kiln_node_f16()) options.precision = KILN_ONNX_PRECISION_F16;
  kiln_graph_t graph;
  status = kiln_onnx_import_file(model, &options.import, kiln_allocator_system(), &graph);
  for (int pass = 0; pass < 2; ++pass) {
    size_t keep = pass == 0 ? 1 : 0;
    if (!status || kiln_status_code(status) != KILN_STATUS_UNIMPLEMENTED ||
        !strstr(kiln_status_message(status), "must be a constant")) {
      break;
    }
    if (input_count <= keep) continue;
    kiln_status_free(status);
    for (size_t i = keep; i < input_count; ++i) {
      frozen[i - keep] = (kiln_onnx_frozen_input_t){NULL, i, &inputs[i]};
    }
    options.import.frozen_inputs = frozen;
    options.import.frozen_input_count = input_count - keep;
    status = kiln_onnx_import_file(model, &options.import, kiln_allocator_system(), &graph);
    if (!status) input_count = keep;
  }
  if (status) {
    result = kiln_gpu_classify(status, message, message_size);
    if (result == KILN_GPU_NODE_FAILED) result = KILN_GPU_NODE_REFUSED;
    goto done;
  }
  if (graph.input_count != input_count || graph.output_count != expected_count) {
    snprintf(message, message_size, "%zu inputs / %zu outputs, data has %zu / %zu",
             graph.input_count, graph.output_count, input_count, expected_count);
    kiln_graph_deinitialize(&graph);
    goto done;
  }
  kiln_gpu_run_stats_t stats;
  status = kiln_gpu_compile_and_run(&graph, &options, inputs, actual, &stats);
  if (status) {
    result = kiln_gpu_classify(status, message, message_size);
    kiln_graph_deinitialize(&graph);
    goto done;
  }
  result = KILN_GPU_NODE_PASSED;
  for (size_t o = 0; o < expected_count && result == KILN_GPU_NODE_PASSED; ++o) {
    char detail[256];
    const bool f16 = kiln_node_f16();
    const double rtol = f16 ? 4e-3 : 1e-3;
    const double atol = f16 ? 1e-2 * kiln_max_abs(&expected[o]) + 1e-5 : 1e-5;
    if (!kiln_gpu_compare(&actual[o], &expected[o], rtol, atol, detail, sizeof(detail))) {
      snprintf(message, message_size, "output %zu: %s", o, detail);
      result = KILN_GPU_NODE_FAILED;
    }
  }
  for (size_t o = 0; o < expected_count; ++o) kiln_graph_tensor_deinit(&actual[o]);
  kiln_graph_deinitialize(&graph);
done:
  for (size_t i = 0; i < KILN_NODE_MAX_TENSORS; ++i) {
    kiln_graph_tensor_deinit(&inputs[i]);
    kiln_graph_tensor_deinit(&expected[i]);
  }
  return result;
}

static int kiln_compare_names(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

KILN_TEST(OnnxGpuNodeTest, AllNodeTests) {
  // KILN_NODE_TEST_ROOT / KILN_NODE_TEST_MIN_PASSED select another suite
  // (kiln's own, scripts/export_node_tests.py) and its floor.
  const char* root = getenv("KILN_NODE_TEST_ROOT");
  if (!root) root = KILN_NODE_DIR;
  const char* floor_text = getenv("KILN_NODE_TEST_MIN_PASSED");
  size_t min_passed = floor_text ? (size_t)strtoul(floor_text, NULL, 10) : 505u;
  DIR* dir = opendir(root);
  KILN_ASSERT_TRUE(dir != NULL);
  char** names = NULL;
  size_t count = 0, capacity = 0;
  const char* filter = getenv("KILN_NODE_TEST_FILTER");
  for (struct dirent* entry; (entry = readdir(dir)) != NULL;) {
    if (strncmp(entry->d_name, "test_", 5) != 0) continue;
    if (filter && !strstr(entry->d_name, filter)) continue;
    if (count == capacity) {
      capacity = capacity ? capacity * 2 : 256;
      names = realloc(names, capacity * sizeof(*names));
      KILN_ASSERT_TRUE(names != NULL);
    }
    names[count++] = strdup(entry->d_name);
  }
  closedir(dir);
  qsort(names, count, sizeof(*names), kiln_compare_names);
  size_t passed = 0, unsupported = 0, refused = 0, failed = 0, skipped = 0;
  int64_t start = kiln_time_now_ns();
  for (size_t i = 0; i < count; ++i) {
    char path[1024], message[1024] = "";
    snprintf(path, sizeof(path), "%s/%s", root, names[i]);
    kiln_gpu_node_result_t result = kiln_gpu_run_node_test(path, message, sizeof(message));
    const char* out_of_range = kiln_node_f16() ? kiln_f16_out_of_range(names[i]) : NULL;
    if (out_of_range && result == KILN_GPU_NODE_FAILED) {
      printf("%s at f16: not compared (%s): %s\n", names[i], out_of_range, message);
      result = KILN_GPU_NODE_SKIPPED;
    }
    switch (result) {
      case KILN_GPU_NODE_PASSED:
        // kiln's own suites name the forms that must be refused.
        if (strstr(names[i], "test_refused_")) {
          ++failed;
          KILN_ADD_FAILURE("accepted but must be refused: %s", names[i]);
          break;
        }
        ++passed;
        break;
      case KILN_GPU_NODE_UNSUPPORTED:
        ++unsupported;
        if (getenv("KILN_NODE_TEST_VERBOSE")) printf("unsupported %s: %s\n", names[i], message);
        break;
      case KILN_GPU_NODE_REFUSED:
        ++refused;
        break;
      case KILN_GPU_NODE_SKIPPED:
        ++skipped;
        break;
      case KILN_GPU_NODE_FAILED:
        ++failed;
        KILN_ADD_FAILURE("%s: %s", names[i], message);
        break;
    }
    free(names[i]);
  }
  free(names);
  printf("ONNX node tests on the GPU: %zu passed, %zu failed, %zu unsupported, %zu refused "
         "at import, %zu skipped (%.1f s)\n",
         passed, failed, unsupported, refused, skipped, (double)(kiln_time_now_ns() - start) * 1e-9);
  if (!filter) KILN_EXPECT_GE(passed, min_passed);
}
