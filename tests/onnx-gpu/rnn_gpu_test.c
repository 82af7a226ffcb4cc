// LSTM / GRU / RNN through the time-loop kernel (onnx-emit/lower_rnn.c):
// each model runs on the default device (lavapipe in CI) against its
// reference outputs (numpy for kiln's node tests, PyTorch for the exported
// models) within 1e-4 of max|ref|, and its dispatch count is asserted: a
// gemm for the input projection, a copy per initial state, the time loop in
// parts sized to llvmpipe's loop budget, a copy per final state.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/onnx.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"

// Dispatches in the module compiled from `path` (default targets).
static size_t kiln_rnn_dispatches(const char* path) {
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  kiln_gpu_capture_t assembly;
  KILN_EXPECT_OK(kiln_gpu_capture_begin(&options, &assembly));
  if (!assembly.stream) return 0;
  kiln_byte_buffer_t built;
  kiln_byte_buffer_init(&built, kiln_allocator_system());
  KILN_EXPECT_OK(kiln_onnx_compile_file(path, &options, kiln_allocator_system(), &built));
  kiln_gpu_capture_end(&assembly);
  size_t count = kiln_gpu_text_dispatches(assembly.text);
  kiln_gpu_capture_release(&assembly);
  kiln_byte_buffer_deinit(&built);
  return count;
}

// Runs model `dir`/model.onnx on `inputs_dir`'s input_N.pb and compares
// every output_N.pb within 1e-4 of its max|ref|.
static void kiln_rnn_check(const char* dir, const char* data_dir) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/model.onnx", dir);
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  kiln_graph_t graph;
  KILN_ASSERT_OK(kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
  kiln_graph_tensor_t inputs[4], outputs[4], expected;
  memset(inputs, 0, sizeof(inputs));
  memset(outputs, 0, sizeof(outputs));
  KILN_ASSERT_TRUE(graph.input_count >= 1 && graph.input_count <= 4);
  KILN_ASSERT_TRUE(graph.output_count >= 1 && graph.output_count <= 4);
  const size_t output_count = graph.output_count;
  for (size_t i = 0; i < graph.input_count; ++i) {
    snprintf(path, sizeof(path), "%s/input_%zu.pb", data_dir, i);
    KILN_ASSERT_OK(kiln_onnx_read_tensor_file(path, kiln_allocator_system(), &inputs[i]));
  }
  kiln_gpu_run_stats_t stats;
  KILN_ASSERT_OK(kiln_gpu_compile_and_run(&graph, &options, inputs, outputs, &stats));
  for (size_t o = 0; o < output_count; ++o) {
    snprintf(path, sizeof(path), "%s/output_%zu.pb", data_dir, o);
    KILN_ASSERT_OK(kiln_onnx_read_tensor_file(path, kiln_allocator_system(), &expected));
    KILN_EXPECT_TRUE(kiln_graph_shape_equal(&outputs[o].shape, &expected.shape));
    KILN_EXPECT_EQ(outputs[o].byte_size, expected.byte_size);
    size_t count = expected.byte_size / sizeof(float);
    if (outputs[o].byte_size != expected.byte_size) count = 0;
    const float* a = (const float*)outputs[o].data;
    const float* e = (const float*)expected.data;
    double max_ref = 0.0, max_err = 0.0;
    for (size_t i = 0; i < count; ++i) {
      max_ref = fmax(max_ref, fabs((double)e[i]));
      double err = fabs((double)a[i] - e[i]);
      if (!(err <= max_err)) max_err = isnan(err) ? INFINITY : err;
    }
    printf("%s output %zu: max|err| %.3g vs max|ref| %.3g; second call %.2f ms\n", dir, o,
           max_err, max_ref, stats.second_call_ms);
    KILN_EXPECT_TRUE(max_ref > 0.0);
    KILN_EXPECT_TRUE(max_err <= 1e-4 * max_ref);
    kiln_graph_tensor_deinit(&expected);
  }
  for (size_t i = 0; i < 4; ++i) {
    kiln_graph_tensor_deinit(&inputs[i]);
    kiln_graph_tensor_deinit(&outputs[i]);
  }
  kiln_graph_deinitialize(&graph);
}

typedef struct kiln_rnn_case_t {
  const char* name;
  size_t dispatches;
} kiln_rnn_case_t;

// kiln's node tests (scripts/export_node_tests.py), numpy references.
KILN_TEST(OnnxGpuRnnTest, NodeTestsMatchNumpyInFewDispatches) {
  const char* root = getenv("KILN_NODE_TEST_ROOT");
  KILN_ASSERT_TRUE(root != NULL);
  // gemm + h0 copy + loop parts + Y_h copy (+ Y_c copy for LSTM).
  static const kiln_rnn_case_t kCases[] = {
      {"lstm_constant_weights", 5},
      {"lstm_bidirectional_batch_first", 5},
      {"gru_linear_before_reset", 4},
      {"gru_reverse_reset_first", 4},
      {"rnn_bidirectional", 4},
      {"lstm_sequence_lens_bidirectional", 6},  // and a c0 copy
      {"gru_sequence_lens_reverse_batch_first", 4},
      {"rnn_sequence_lens_clip", 4},
      {"lstm_clip_input_forget", 6},
      {"gru_clip_linear_before_reset", 4},
      {"rnn_relu_bidirectional", 4},
      {"lstm_activations", 6},
      {"gru_activations_reset_first", 4},
      {"lstm_long_chunked", 6},  // the loop in 2 parts on lavapipe
      {"gru_long_chunked_reset_first", 6},  // 3 parts
      {"rnn_long_chunked", 5},  // 2 parts
      {"lstm_peepholes", 6},  // P rides in the params blob: nothing added
      {"lstm_peepholes_runtime_bidirectional", 8},  // + blob copy + P copy
      {"lstm_peepholes_lens_clip_input_forget", 5},
      {"lstm_peepholes_long_chunked", 5},
      // Run-time lengths: + blob copy, cast to float, copy into the blob.
      {"lstm_runtime_lens_bidirectional", 9},
      {"gru_runtime_lens_int64_reverse", 7},
      {"rnn_runtime_lens_long", 7},
  };
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
    char dir[1024], data[1100], model[1100];
    snprintf(dir, sizeof(dir), "%s/test_kiln_%s", root, kCases[i].name);
    snprintf(data, sizeof(data), "%s/test_data_set_0", dir);
    snprintf(model, sizeof(model), "%s/model.onnx", dir);
    size_t dispatches = kiln_rnn_dispatches(model);
    printf("%s: %zu dispatches\n", kCases[i].name, dispatches);
    if (kCases[i].dispatches) KILN_EXPECT_EQ(dispatches, kCases[i].dispatches);
    kiln_rnn_check(dir, data);
  }
}

// PyTorch exports (scripts/export_models.py): 2-layer stacks, batch first.
// Each layer: gemm + h0 copy (+ c0 copy) + loop parts + Y_h copy (+ Y_c);
// PyTorch's export adds Transpose/Reshape/Slice nodes around them. The
// Squeeze of each layer's Y (or Reshape, bidirectional) is a view in the
// memory plan: 2 dispatches fewer than when it was a copy.
KILN_TEST(OnnxGpuRnnTest, ExportedModelsInFewDispatches) {
  const char* root = getenv("KILN_ONNX_MODELS_DIR");
  KILN_ASSERT_TRUE(root != NULL);
  static const kiln_rnn_case_t kCases[] = {
      {"lstm_net", 21}, {"gru_net", 19}, {"rnn_net", 17}, {"lstm_bidir_net", 23}};
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
    char model[1100];
    snprintf(model, sizeof(model), "%s/%s/model.onnx", root, kCases[i].name);
    size_t dispatches = kiln_rnn_dispatches(model);
    printf("%s: %zu dispatches\n", kCases[i].name, dispatches);
    if (kCases[i].dispatches) KILN_EXPECT_EQ(dispatches, kCases[i].dispatches);
  }
}
