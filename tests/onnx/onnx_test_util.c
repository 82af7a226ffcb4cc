// ONNX test helpers (see onnx_test_util.h).
#include "onnx_test_util.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kiln/compiler/graph_memory_plan.h"
#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/graph_reference.h"
#include "kiln/compiler/onnx.h"

// Data sets whose input files total more than this are skipped to keep the
// runner under a minute with sanitizers on two cores.
#define KILN_NODE_TEST_MAX_INPUT_BYTES (8u << 20)

bool kiln_onnx_test_compare(const kiln_graph_tensor_t* actual,
                            const kiln_graph_tensor_t* expected, double rtol,
                            double atol, char* message, size_t message_size) {
  if (actual->dtype != expected->dtype) {
    snprintf(message, message_size, "dtype %s, expected %s",
             kiln_graph_dtype_name(actual->dtype),
             kiln_graph_dtype_name(expected->dtype));
    return false;
  }
  if (!kiln_graph_shape_equal(&actual->shape, &expected->shape)) {
    char a[128], e[128];
    kiln_graph_shape_format(&actual->shape, a, sizeof(a));
    kiln_graph_shape_format(&expected->shape, e, sizeof(e));
    snprintf(message, message_size, "shape %s, expected %s", a, e);
    return false;
  }
  size_t count = actual->byte_size / kiln_graph_dtype_size(actual->dtype);
  if (actual->dtype != KILN_GRAPH_DTYPE_F32) {
    if (memcmp(actual->data, expected->data, actual->byte_size) != 0) {
      snprintf(message, message_size, "%s values differ",
               kiln_graph_dtype_name(actual->dtype));
      return false;
    }
    return true;
  }
  const float* a = (const float*)actual->data;
  const float* e = (const float*)expected->data;
  for (size_t i = 0; i < count; ++i) {
    if (isnan(e[i]) && isnan(a[i])) continue;
    if (isinf(e[i]) && a[i] == e[i]) continue;
    double diff = fabs((double)a[i] - e[i]);
    if (!(diff <= atol + rtol * fabs((double)e[i]))) {
      snprintf(message, message_size,
               "element %zu: %.9g, expected %.9g (|diff| %.3g > %.3g)", i,
               a[i], e[i], diff, atol + rtol * fabs((double)e[i]));
      return false;
    }
  }
  return true;
}

static size_t kiln_file_size(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 ? (size_t)st.st_size : 0;
}

// Reads prefix_N.pb for N = 0.. into tensors; returns how many were read.
static kiln_status_t kiln_read_tensors(const char* dir, const char* prefix,
                                       kiln_graph_tensor_t* tensors,
                                       size_t capacity, size_t* out_count) {
  *out_count = 0;
  for (size_t i = 0; i < capacity; ++i) {
    char path[1024];
    snprintf(path, sizeof(path), "%.900s/%s_%zu.pb", dir, prefix, i);
    struct stat st;
    if (stat(path, &st) != 0) break;
    KILN_RETURN_IF_ERROR(kiln_onnx_read_tensor_file(
        path, kiln_allocator_system(), &tensors[i]));
    *out_count = i + 1;
  }
  return kiln_ok_status();
}

static void kiln_free_tensors(kiln_graph_tensor_t* tensors, size_t count) {
  for (size_t i = 0; i < count; ++i) kiln_graph_tensor_deinit(&tensors[i]);
}

static void kiln_status_message_into(kiln_status_t status, const char* prefix,
                                     char* message, size_t message_size) {
  char* text = kiln_status_to_string(status);
  snprintf(message, message_size, "%s%s", prefix, text);
  free(text);
}

// Runs `graph` on `inputs` and compares with `expected`.
static bool kiln_run_and_compare(const kiln_graph_t* graph,
                                 const kiln_graph_memory_plan_t* plan,
                                 const kiln_graph_tensor_t* inputs,
                                 size_t input_count,
                                 const kiln_graph_tensor_t* expected,
                                 size_t expected_count, const char* label,
                                 double rtol, double atol, char* message,
                                 size_t message_size) {
  if (expected_count != graph->output_count || graph->output_count > 16) {
    snprintf(message, message_size, "%s: %zu outputs, %zu expected", label,
             graph->output_count, expected_count);
    return false;
  }
  kiln_graph_tensor_t actual[16];
  kiln_status_t status = kiln_graph_reference_run(
      graph, inputs, input_count, plan, kiln_allocator_system(), actual);
  if (!kiln_status_is_ok(status)) {
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "%s: run failed: ", label);
    kiln_status_message_into(status, prefix, message, message_size);
    kiln_status_free(status);
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < expected_count && ok; ++i) {
    char detail[256];
    if (!kiln_onnx_test_compare(&actual[i], &expected[i], rtol, atol, detail,
                                sizeof(detail))) {
      snprintf(message, message_size, "%s: output %zu: %s", label, i, detail);
      ok = false;
    }
  }
  kiln_free_tensors(actual, graph->output_count);
  return ok;
}

// One data set: import (freezing all inputs but the first when the model
// insists on constant shape arguments), run raw and optimized, compare.
static kiln_node_test_result_t kiln_run_data_set(
    const char* model, const char* set_dir, double rtol, double atol,
    char* message, size_t message_size) {
  kiln_graph_tensor_t inputs[16], expected[16];
  memset(inputs, 0, sizeof(inputs));
  memset(expected, 0, sizeof(expected));
  size_t input_count = 0, expected_count = 0;
  kiln_node_test_result_t result = KILN_NODE_TEST_FAILED;
  kiln_graph_t raw, optimized;
  bool have_raw = false, have_optimized = false, have_plan = false;
  kiln_graph_memory_plan_t plan;
  kiln_status_t status =
      kiln_read_tensors(set_dir, "input", inputs, 16, &input_count);
  if (kiln_status_is_ok(status)) {
    status = kiln_read_tensors(set_dir, "output", expected, 16, &expected_count);
  }
  if (!kiln_status_is_ok(status)) {
    // Data kiln cannot even hold (doubles, strings, ...): the model must
    // then be refused at import.
    kiln_status_message_into(status, "reading data: ", message, message_size);
    kiln_status_free(status);
    status = kiln_onnx_import_file(model, NULL, kiln_allocator_system(), &raw);
    if (kiln_status_is_ok(status)) {
      kiln_graph_deinitialize(&raw);
    } else {
      kiln_status_message_into(status, "", message, message_size);
      result = kiln_status_consume_code(status) == KILN_STATUS_UNIMPLEMENTED
                   ? KILN_NODE_TEST_UNSUPPORTED
                   : KILN_NODE_TEST_REFUSED;
    }
    goto done;
  }
  kiln_onnx_frozen_input_t frozen[16];
  kiln_onnx_import_options_t options;
  memset(&options, 0, sizeof(options));
  status = kiln_onnx_import_file(model, &options, kiln_allocator_system(), &raw);
  // The node tests feed shape arguments (axes, pads, sizes, ...) as graph
  // inputs; freeze them to the data set's values, as an exporter would:
  // first all inputs but the data (input 0), then (ConstantOfShape, Range)
  // all of them. The frozen inputs are no longer fed at run time.
  for (int pass = 0; pass < 2; ++pass) {
    size_t keep = pass == 0 ? 1 : 0;
    if (kiln_status_is_ok(status) ||
        kiln_status_code(status) != KILN_STATUS_UNIMPLEMENTED ||
        !strstr(kiln_status_message(status), "must be a constant")) {
      break;
    }
    if (input_count <= keep) continue;
    kiln_status_free(status);
    for (size_t i = keep; i < input_count; ++i) {
      frozen[i - keep].name = NULL;
      frozen[i - keep].index = i;
      frozen[i - keep].value = &inputs[i];
    }
    options.frozen_inputs = frozen;
    options.frozen_input_count = input_count - keep;
    status = kiln_onnx_import_file(model, &options, kiln_allocator_system(), &raw);
    if (kiln_status_is_ok(status)) input_count = keep;
  }
  if (!kiln_status_is_ok(status)) {
    kiln_status_message_into(status, "", message, message_size);
    result = kiln_status_consume_code(status) == KILN_STATUS_UNIMPLEMENTED
                 ? KILN_NODE_TEST_UNSUPPORTED
                 : KILN_NODE_TEST_REFUSED;
    goto done;
  }
  have_raw = true;
  status = kiln_onnx_import_file(model, &options, kiln_allocator_system(),
                                 &optimized);
  if (kiln_status_is_ok(status)) {
    have_optimized = true;
    status = kiln_graph_run_default_passes(&optimized);
  }
  if (kiln_status_is_ok(status)) {
    status = kiln_graph_memory_plan_build(&optimized, 64,
                                          kiln_allocator_system(), &plan);
    if (kiln_status_is_ok(status)) have_plan = true;
  }
  if (kiln_status_is_ok(status)) {
    status = kiln_graph_memory_plan_verify(&optimized, &plan);
  }
  if (!kiln_status_is_ok(status)) {
    kiln_status_message_into(status, "passes/plan failed: ", message,
                             message_size);
    kiln_status_free(status);
    goto done;
  }
  // Data-dependent output shapes (NonZero, NonMaxSuppression on run-time
  // data): the reference executor has static shapes only; compiled modules
  // run these on the host (tests/onnx-gpu, docs/partitioning.md).
  for (size_t n = 0; n < optimized.node_count; ++n) {
    const kiln_graph_node_t* node = &optimized.nodes[n];
    if (!node->removed && (strcmp(node->op_type, "NonZero") == 0 ||
                           strcmp(node->op_type, "NonMaxSuppression") == 0)) {
      snprintf(message, message_size, "%s has a data-dependent output shape",
               node->op_type);
      result = KILN_NODE_TEST_UNSUPPORTED;
      goto done;
    }
  }
  if (kiln_run_and_compare(&raw, NULL, inputs, input_count, expected,
                           expected_count, "raw graph", rtol, atol, message,
                           message_size) &&
      kiln_run_and_compare(&optimized, &plan, inputs, input_count, expected,
                           expected_count, "after passes", rtol, atol,
                           message, message_size)) {
    result = KILN_NODE_TEST_PASSED;
  }
done:
  if (have_plan) kiln_graph_memory_plan_deinit(&plan);
  if (have_optimized) kiln_graph_deinitialize(&optimized);
  if (have_raw) kiln_graph_deinitialize(&raw);
  kiln_free_tensors(inputs, 16);
  kiln_free_tensors(expected, 16);
  return result;
}

kiln_node_test_result_t kiln_onnx_run_node_test(const char* dir, double rtol,
                                                double atol, char* message,
                                                size_t message_size) {
  message[0] = 0;
  char path[1024];
  snprintf(path, sizeof(path), "%s/model.onnx", dir);
  char sets[8][1024];
  size_t set_count = 0;
  DIR* listing = opendir(dir);
  if (!listing) {
    snprintf(message, message_size, "cannot list %s", dir);
    return KILN_NODE_TEST_FAILED;
  }
  struct dirent* entry;
  while ((entry = readdir(listing)) && set_count < 8) {
    if (strncmp(entry->d_name, "test_data_set_", 14) != 0) continue;
    snprintf(sets[set_count++], sizeof(sets[0]), "%.700s/%.256s", dir,
             entry->d_name);
  }
  closedir(listing);
  for (size_t s = 0; s < set_count; ++s) {
    size_t bytes = 0;
    for (int i = 0; i < 16; ++i) {
      char input[1100];
      snprintf(input, sizeof(input), "%.1000s/input_%d.pb", sets[s], i);
      bytes += kiln_file_size(input);
    }
    if (bytes > KILN_NODE_TEST_MAX_INPUT_BYTES) {
      snprintf(message, message_size, "inputs of %zu bytes over the limit",
               bytes);
      return KILN_NODE_TEST_SKIPPED;
    }
  }
  if (set_count == 0) {
    // No data: import only, which must still succeed or refuse cleanly.
    kiln_graph_t graph;
    kiln_status_t status =
        kiln_onnx_import_file(path, NULL, kiln_allocator_system(), &graph);
    if (!kiln_status_is_ok(status)) {
      kiln_status_message_into(status, "", message, message_size);
      return kiln_status_consume_code(status) == KILN_STATUS_UNIMPLEMENTED
                 ? KILN_NODE_TEST_UNSUPPORTED
                 : KILN_NODE_TEST_REFUSED;
    }
    kiln_graph_deinitialize(&graph);
    snprintf(message, message_size, "no test data sets");
    return KILN_NODE_TEST_SKIPPED;
  }
  for (size_t s = 0; s < set_count; ++s) {
    kiln_node_test_result_t result =
        kiln_run_data_set(path, sets[s], rtol, atol, message, message_size);
    if (result != KILN_NODE_TEST_PASSED) return result;
  }
  return KILN_NODE_TEST_PASSED;
}
