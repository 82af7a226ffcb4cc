// Tensors larger than the storage-buffer range (issue 13): a VGG-sized FC
// (Flatten + Gemm, 25088 -> 4096, a 411 MB weight) and a GPT-2-sized
// embedding (Gather from 50257 x 768, 154 MB) with the tied LM head (MatMul
// against the transposed table) run on lavapipe's 128 MiB range; small
// models with a small planned range put split boundaries mid-row; a target
// with a 4 GiB range does not split; a module planned for 4 GiB is refused
// by a 128 MiB device. Weights are random (a fixed LCG, made here, never
// committed); references are plain C loops in double. Tolerance: 1e-4 of
// max |ref|.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/onnx_compile.h"
#include "kiln/format/module_reader.h"
#include "graph_build.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"

static uint32_t kiln_big_state = 2024u;

static float kiln_big_random(void) {
  kiln_big_state = kiln_big_state * 1664525u + 1013904223u;
  return (float)((kiln_big_state >> 8) * (1.0 / 8388608.0) - 1.0);
}

static float* kiln_big_fill(size_t count, float scale) {
  float* data = malloc(count * sizeof(float));
  KILN_EXPECT_NE(data, NULL);
  for (size_t i = 0; data && i < count; ++i) data[i] = scale * kiln_big_random();
  return data;
}

// max |got - want| <= 1e-4 max |want| over `count` values.
static void kiln_big_compare(const char* what, const float* got, const double* want,
                             size_t count) {
  double max_ref = 0, max_err = 0;
  for (size_t i = 0; i < count; ++i) {
    max_ref = fmax(max_ref, fabs(want[i]));
    double err = fabs((double)got[i] - want[i]);
    if (!(err <= max_err)) max_err = err;
  }
  fprintf(stderr, "  %s: max|ref| %.4g, max err %.3g (tolerance %.3g)\n", what, max_ref,
          max_err, 1e-4 * max_ref);
  // Doubles: the shim's EXPECT_LE/GT compare as integers.
  KILN_EXPECT_TRUE(max_ref > 0.0);
  KILN_EXPECT_TRUE(max_err <= 1e-4 * max_ref);
}

// x [batch, in] -> Flatten -> Gemm(weight [out, in] with transB = 1 as
// torch.nn.Linear exports it, else [in, out]; bias [out]) -> Relu. `range`:
// planned storage range (0: the targets' own).
static void kiln_big_linear(int64_t batch, int64_t in, int64_t out, bool trans_b,
                            uint64_t range) {
  kiln_graph_t g;
  kiln_graph_initialize(kiln_allocator_system(), "big-linear", &g);
  g.opset = 13;
  const int64_t x_dims[4] = {batch, in, 1, 1}, b_dims[1] = {out};
  const int64_t w_dims[2] = {trans_b ? out : in, trans_b ? in : out};
  kiln_graph_shape_t x_shape = kiln_test_shape(4, x_dims);
  kiln_graph_shape_t w_shape = kiln_test_shape(2, w_dims), b_shape = kiln_test_shape(1, b_dims);
  float* w = kiln_big_fill((size_t)(out * in), 0.05f);
  float* b = kiln_big_fill((size_t)out, 0.5f);
  int32_t x = -1, wv = -1, bv = -1, flat = -1, flat_node = -1, y = -1, gemm = -1, z = -1,
          relu = -1;
  KILN_ASSERT_OK(kiln_gpu_graph_add_input(&g, "x", &x_shape, &x));
  KILN_ASSERT_OK(kiln_graph_add_constant(&g, "fc.weight", KILN_GRAPH_DTYPE_F32, &w_shape, w, &wv));
  KILN_ASSERT_OK(kiln_graph_add_constant(&g, "fc.bias", KILN_GRAPH_DTYPE_F32, &b_shape, b, &bv));
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "Flatten", &x, 1, &flat_node, &flat));
  const int32_t gemm_in[3] = {flat, wv, bv};
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "Gemm", gemm_in, 3, &gemm, &y));
  kiln_test_attr_int(&g, gemm, "transB", trans_b ? 1 : 0);
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "Relu", &y, 1, &relu, &z));
  KILN_ASSERT_OK(kiln_gpu_graph_add_output(&g, z));

  kiln_graph_tensor_t input, output;
  KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32,
                                            &x_shape, &input));
  float* xs = input.data;
  for (int64_t i = 0; i < batch * in; ++i) xs[i] = kiln_big_random();
  double* want = malloc((size_t)(batch * out) * sizeof(double));
  KILN_ASSERT_NE(want, NULL);
  for (int64_t r = 0; r < batch; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double sum = b[o];
      for (int64_t k = 0; k < in; ++k) {
        sum += (double)xs[r * in + k] * (trans_b ? w[o * in + k] : w[k * out + o]);
      }
      want[r * out + o] = sum > 0 ? sum : 0;
    }
  }
  free(w);
  free(b);
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.max_storage_buffer_range = range;
  kiln_gpu_run_stats_t stats;
  KILN_ASSERT_OK(kiln_gpu_compile_and_run(&g, &options, &input, &output, &stats));
  KILN_ASSERT_EQ(output.byte_size, (size_t)(batch * out) * sizeof(float));
  char what[96];
  snprintf(what, sizeof(what), "linear %lldx%lld -> %lld%s, range %llu", (long long)batch,
           (long long)in, (long long)out, trans_b ? " (transB)" : "",
           (unsigned long long)range);
  kiln_big_compare(what, output.data, want, (size_t)(batch * out));
  fprintf(stderr, "  compile %.0f ms, first call %.0f ms, second call %.1f ms\n",
          stats.compile_ms, stats.first_call_ms, stats.second_call_ms);
  free(want);
  kiln_graph_tensor_deinit(&input);
  kiln_graph_tensor_deinit(&output);
  kiln_graph_deinitialize(&g);
}

// VGG-11's first FC at 224: a 25088 x 4096 weight (411 MB) on lavapipe.
KILN_TEST(OnnxGpuBigTensorTest, VggSizedLinear) {
  kiln_big_linear(1, 25088, 4096, true, 0);
}

// ids [1, t] -> Gather(table [vocab, dim]) -> h; logits = MatMul(h,
// table^T) (tied LM head; the [dim, vocab] transpose is a constant, as
// exporters fold it); both outputs checked.
static void kiln_big_embedding(int64_t vocab, int64_t dim, int64_t t, uint64_t range) {
  kiln_graph_t g;
  kiln_graph_initialize(kiln_allocator_system(), "big-embedding", &g);
  g.opset = 13;
  const int64_t table_dims[2] = {vocab, dim}, id_dims[2] = {1, t};
  kiln_graph_shape_t table_shape = kiln_test_shape(2, table_dims);
  kiln_graph_shape_t id_shape = kiln_test_shape(2, id_dims);
  float* table = kiln_big_fill((size_t)(vocab * dim), 0.1f);
  int32_t ids = -1, tv = -1, h = -1, gather = -1, tt = -1, logits = -1, matmul = -1;
  KILN_ASSERT_OK(kiln_graph_add_value(&g, "ids", KILN_GRAPH_DTYPE_I64, &ids));
  g.values[ids].has_shape = true;
  g.values[ids].shape = id_shape;
  g.values[ids].is_input = true;
  KILN_ASSERT_OK(kiln_allocator_realloc_array(g.allocator, 1, sizeof(int32_t),
                                              (void**)&g.inputs));
  g.inputs[g.input_count++] = ids;
  KILN_ASSERT_OK(
      kiln_graph_add_constant(&g, "wte", KILN_GRAPH_DTYPE_F32, &table_shape, table, &tv));
  const int32_t gather_in[2] = {tv, ids};
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "Gather", gather_in, 2, &gather, &h));
  const int64_t head_dims[2] = {dim, vocab};
  kiln_graph_shape_t head_shape = kiln_test_shape(2, head_dims);
  float* head = malloc((size_t)(vocab * dim) * sizeof(float));
  KILN_ASSERT_NE(head, NULL);
  for (int64_t v = 0; v < vocab; ++v) {
    for (int64_t d = 0; d < dim; ++d) head[d * vocab + v] = table[v * dim + d];
  }
  KILN_ASSERT_OK(
      kiln_graph_add_constant(&g, "wte.T", KILN_GRAPH_DTYPE_F32, &head_shape, head, &tt));
  free(head);
  const int32_t matmul_in[2] = {h, tt};
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "MatMul", matmul_in, 2, &matmul, &logits));
  KILN_ASSERT_OK(kiln_gpu_graph_add_output(&g, h));
  KILN_ASSERT_OK(kiln_gpu_graph_add_output(&g, logits));
  KILN_ASSERT_OK(kiln_graph_infer_shapes(&g));

  kiln_graph_tensor_t input, outputs[2];
  KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_I64,
                                            &id_shape, &input));
  int64_t* id = input.data;
  // First and last rows, both sides of every part boundary, a negative id
  // (wraps) and one out of range (zeros).
  for (int64_t j = 0; j < t; ++j) {
    kiln_big_state = kiln_big_state * 1664525u + 1013904223u;
    id[j] = (int64_t)(kiln_big_state % (uint32_t)vocab);
  }
  id[0] = 0;
  if (t > 1) id[1] = vocab - 1;
  if (t > 2) id[2] = -1;
  if (t > 3) id[3] = vocab;
  if (t > 4) id[4] = vocab / 2;
  double* want_h = calloc((size_t)(t * dim), sizeof(double));
  double* want_logits = calloc((size_t)(t * vocab), sizeof(double));
  KILN_ASSERT_NE(want_h, NULL);
  KILN_ASSERT_NE(want_logits, NULL);
  for (int64_t j = 0; j < t; ++j) {
    int64_t row = id[j] < 0 ? id[j] + vocab : id[j];
    if (row < 0 || row >= vocab) continue;  // zeros (kiln's documented rule)
    for (int64_t d = 0; d < dim; ++d) want_h[j * dim + d] = table[row * dim + d];
  }
  for (int64_t j = 0; j < t; ++j) {
    for (int64_t v = 0; v < vocab; ++v) {
      double sum = 0;
      for (int64_t d = 0; d < dim; ++d) sum += want_h[j * dim + d] * table[v * dim + d];
      want_logits[j * vocab + v] = sum;
    }
  }
  free(table);
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.max_storage_buffer_range = range;
  kiln_gpu_run_stats_t stats;
  KILN_ASSERT_OK(kiln_gpu_compile_and_run(&g, &options, &input, outputs, &stats));
  char what[96];
  snprintf(what, sizeof(what), "embedding %lldx%lld, %lld ids, range %llu", (long long)vocab,
           (long long)dim, (long long)t, (unsigned long long)range);
  KILN_ASSERT_EQ(outputs[0].byte_size, (size_t)(t * dim) * sizeof(float));
  KILN_ASSERT_EQ(outputs[1].byte_size, (size_t)(t * vocab) * sizeof(float));
  kiln_big_compare(what, outputs[0].data, want_h, (size_t)(t * dim));
  kiln_big_compare("  tied LM head", outputs[1].data, want_logits, (size_t)(t * vocab));
  fprintf(stderr, "  compile %.0f ms, first call %.0f ms, second call %.1f ms\n",
          stats.compile_ms, stats.first_call_ms, stats.second_call_ms);
  free(want_h);
  free(want_logits);
  kiln_graph_tensor_deinit(&input);
  kiln_graph_tensor_deinit(&outputs[0]);
  kiln_graph_tensor_deinit(&outputs[1]);
  kiln_graph_deinitialize(&g);
}

// GPT-2's token embedding (50257 x 768) on lavapipe's 128 MiB range.
KILN_TEST(OnnxGpuBigTensorTest, Gpt2SizedEmbeddingAndTiedHead) {
  kiln_big_embedding(50257, 768, 6, 0);
}

// x [rows, 4, 70] + bias [4, 1] (broadcast) -> Relu with a 64 KiB range:
// the Add in blocks of x's outer rows (280-float slices: a range ends
// mid-slice), the Relu in tiles over offsets.
static void kiln_big_add_relu(int64_t rows) {
  kiln_graph_t g;
  kiln_graph_initialize(kiln_allocator_system(), "big-add", &g);
  g.opset = 13;
  const int64_t x_dims[3] = {rows, 4, 70}, b_dims[2] = {4, 1};
  kiln_graph_shape_t x_shape = kiln_test_shape(3, x_dims), b_shape = kiln_test_shape(2, b_dims);
  const float bias[4] = {0.25f, -0.5f, 0.0f, 1.0f};
  int32_t x = -1, bv = -1, sum = -1, add = -1, y = -1, relu = -1;
  KILN_ASSERT_OK(kiln_gpu_graph_add_input(&g, "x", &x_shape, &x));
  KILN_ASSERT_OK(kiln_graph_add_constant(&g, "bias", KILN_GRAPH_DTYPE_F32, &b_shape, bias, &bv));
  const int32_t in[2] = {x, bv};
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "Add", in, 2, &add, &sum));
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "Relu", &sum, 1, &relu, &y));
  KILN_ASSERT_OK(kiln_gpu_graph_add_output(&g, y));
  kiln_graph_tensor_t input, output;
  KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32,
                                            &x_shape, &input));
  const size_t count = (size_t)(rows * 4 * 70);
  double* want = malloc(count * sizeof(double));
  KILN_ASSERT_NE(want, NULL);
  float* xs = input.data;
  for (size_t i = 0; i < count; ++i) {
    xs[i] = kiln_big_random();
    double v = (double)xs[i] + bias[(i / 70) % 4];
    want[i] = v > 0 ? v : 0;
  }
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.max_storage_buffer_range = 64 << 10;
  kiln_gpu_run_stats_t stats;
  KILN_ASSERT_OK(kiln_gpu_compile_and_run(&g, &options, &input, &output, &stats));
  KILN_ASSERT_EQ(output.byte_size, count * sizeof(float));
  kiln_big_compare("add + relu, range 65536", output.data, want, count);
  free(want);
  kiln_graph_tensor_deinit(&input);
  kiln_graph_tensor_deinit(&output);
  kiln_graph_deinitialize(&g);
}

// x [1, ci, 10, 10] -> Conv(w [co, ci, 3, 3], bias, pads 1) -> Relu with a
// 64 KiB range: the weight (ci*9 floats per channel) and output (400 bytes
// per channel) in blocks of output channels.
static void kiln_big_conv(int64_t ci, int64_t co) {
  kiln_graph_t g;
  kiln_graph_initialize(kiln_allocator_system(), "big-conv", &g);
  g.opset = 13;
  const int64_t x_dims[4] = {1, ci, 10, 10}, w_dims[4] = {co, ci, 3, 3}, b_dims[1] = {co};
  kiln_graph_shape_t x_shape = kiln_test_shape(4, x_dims), w_shape = kiln_test_shape(4, w_dims);
  kiln_graph_shape_t b_shape = kiln_test_shape(1, b_dims);
  float* w = kiln_big_fill((size_t)(co * ci * 9), 0.2f);
  float* bias = kiln_big_fill((size_t)co, 0.5f);
  int32_t x = -1, wv = -1, bv = -1, conv = -1, y = -1, relu = -1, z = -1;
  KILN_ASSERT_OK(kiln_gpu_graph_add_input(&g, "x", &x_shape, &x));
  KILN_ASSERT_OK(kiln_graph_add_constant(&g, "w", KILN_GRAPH_DTYPE_F32, &w_shape, w, &wv));
  KILN_ASSERT_OK(kiln_graph_add_constant(&g, "b", KILN_GRAPH_DTYPE_F32, &b_shape, bias, &bv));
  const int32_t in[3] = {x, wv, bv};
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "Conv", in, 3, &conv, &y));
  kiln_graph_attr_t pads;
  memset(&pads, 0, sizeof(pads));
  const int64_t pad_values[4] = {1, 1, 1, 1};
  pads.name = "pads";
  pads.type = KILN_GRAPH_ATTR_INTS;
  pads.ints = pad_values;
  pads.count = 4;
  KILN_ASSERT_OK(kiln_graph_node_set_attr(&g, conv, &pads));
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "Relu", &y, 1, &relu, &z));
  KILN_ASSERT_OK(kiln_gpu_graph_add_output(&g, z));
  KILN_ASSERT_OK(kiln_graph_infer_shapes(&g));
  kiln_graph_tensor_t input, output;
  KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32,
                                            &x_shape, &input));
  float* xs = input.data;
  for (int64_t i = 0; i < ci * 100; ++i) xs[i] = kiln_big_random();
  const size_t count = (size_t)(co * 100);
  double* want = malloc(count * sizeof(double));
  KILN_ASSERT_NE(want, NULL);
  for (int64_t o = 0; o < co; ++o) {
    for (int64_t r = 0; r < 10; ++r) {
      for (int64_t c = 0; c < 10; ++c) {
        double sum = bias[o];
        for (int64_t i = 0; i < ci; ++i) {
          for (int64_t kr = 0; kr < 3; ++kr) {
            for (int64_t kc = 0; kc < 3; ++kc) {
              int64_t yr = r + kr - 1, xc = c + kc - 1;
              if (yr < 0 || yr >= 10 || xc < 0 || xc >= 10) continue;
              sum += (double)xs[(i * 10 + yr) * 10 + xc] * w[((o * ci + i) * 3 + kr) * 3 + kc];
            }
          }
        }
        want[(o * 10 + r) * 10 + c] = sum > 0 ? sum : 0;
      }
    }
  }
  free(w);
  free(bias);
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.max_storage_buffer_range = 64 << 10;
  kiln_gpu_run_stats_t stats;
  KILN_ASSERT_OK(kiln_gpu_compile_and_run(&g, &options, &input, &output, &stats));
  KILN_ASSERT_EQ(output.byte_size, count * sizeof(float));
  kiln_big_compare("conv 3x3, range 65536", output.data, want, count);
  free(want);
  kiln_graph_tensor_deinit(&input);
  kiln_graph_tensor_deinit(&output);
  kiln_graph_deinitialize(&g);
}

// Small models with a 256 KiB planned range, whose rows (4000, 280, 2800,
// 1200, 4004 bytes) do not divide it: a range would end mid-row, so parts
// are cut at whole rows, at steps that keep every binding 256-byte aligned.
KILN_TEST(OnnxGpuBigTensorTest, SplitBoundariesMidRow) {
  const uint64_t range = 256 << 10;
  kiln_big_linear(3, 1000, 300, true, range);    // 1.2 MB weight: n blocks
  kiln_big_linear(2, 5000, 70, false, range);    // 1.4 MB weight: k blocks, accumulated
  kiln_big_linear(200, 700, 500, true, range);   // A and output too: m x n blocks
  kiln_big_embedding(1001, 300, 9, range);       // table row ranges; head k blocks
  kiln_big_embedding(333, 100, 700, range);      // index blocks; head m blocks
  kiln_big_add_relu(300);                        // 336 KB activations
  kiln_big_conv(16, 300);                        // 173 KB weight, 120 KB output
}

// Desktop targets plan for 4 GiB: the VGG-sized weight is one binding there
// (one dispatch), and four n blocks for lavapipe's 128 MiB.
KILN_TEST(OnnxGpuBigTensorTest, FourGigabyteTargetDoesNotSplit) {
  const char* const targets[2][1] = {{"hopper"}, {"cpu"}};
  const size_t want[2] = {1, 4};
  for (int t = 0; t < 2; ++t) {
    kiln_graph_t g;
    kiln_graph_initialize(kiln_allocator_system(), "big-4g", &g);
    g.opset = 13;
    const int64_t x_dims[2] = {1, 25088}, w_dims[2] = {4096, 25088};
    kiln_graph_shape_t x_shape = kiln_test_shape(2, x_dims), w_shape = kiln_test_shape(2, w_dims);
    float* w = calloc((size_t)(4096 * 25088), sizeof(float));
    KILN_ASSERT_NE(w, NULL);
    int32_t x = -1, wv = -1, y = -1, gemm = -1;
    KILN_ASSERT_OK(kiln_gpu_graph_add_input(&g, "x", &x_shape, &x));
    KILN_ASSERT_OK(kiln_graph_add_constant(&g, "w", KILN_GRAPH_DTYPE_F32, &w_shape, w, &wv));
    free(w);
    const int32_t in[2] = {x, wv};
    KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "Gemm", in, 2, &gemm, &y));
    kiln_test_attr_int(&g, gemm, "transB", 1);
    KILN_ASSERT_OK(kiln_gpu_graph_add_output(&g, y));
    kiln_onnx_compile_options_t options;
    kiln_onnx_compile_options_init(&options);
    options.targets = targets[t];
    options.target_count = 1;
    kiln_byte_buffer_t module;
    kiln_byte_buffer_init(&module, kiln_allocator_system());
    KILN_ASSERT_OK(kiln_onnx_compile_graph(&g, &options, kiln_allocator_system(), &module));
    KILN_EXPECT_EQ(kiln_gpu_module_dispatch_count(&module, 1), want[t]);
    kiln_byte_buffer_deinit(&module);
    kiln_graph_deinitialize(&g);
  }
}

// A module planned for a 4 GiB range (arc: lavapipe's subgroup size and
// shared memory, so nothing else stops it) on a device reporting 128 MiB:
// refused before anything runs, naming the binding and the device's range.
KILN_TEST(OnnxGpuBigTensorTest, DeviceRangeSmallerThanPlannedIsRefused) {
  kiln_graph_t g;
  kiln_graph_initialize(kiln_allocator_system(), "big-refused", &g);
  g.opset = 13;
  const int64_t x_dims[2] = {1, 8320}, w_dims[2] = {4096, 8320};  // 136 MB weight
  kiln_graph_shape_t x_shape = kiln_test_shape(2, x_dims), w_shape = kiln_test_shape(2, w_dims);
  float* w = calloc((size_t)(4096 * 8320), sizeof(float));
  KILN_ASSERT_NE(w, NULL);
  int32_t x = -1, wv = -1, y = -1, gemm = -1;
  KILN_ASSERT_OK(kiln_gpu_graph_add_input(&g, "x", &x_shape, &x));
  KILN_ASSERT_OK(kiln_graph_add_constant(&g, "w", KILN_GRAPH_DTYPE_F32, &w_shape, w, &wv));
  free(w);
  const int32_t in[2] = {x, wv};
  KILN_ASSERT_OK(kiln_gpu_graph_add_node(&g, "Gemm", in, 2, &gemm, &y));
  kiln_test_attr_int(&g, gemm, "transB", 1);
  KILN_ASSERT_OK(kiln_gpu_graph_add_output(&g, y));
  const char* const arc[] = {"arc"};
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.targets = arc;
  options.target_count = 1;
  kiln_graph_tensor_t input, output;
  KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32,
                                            &x_shape, &input));
  memset(&output, 0, sizeof(output));
  kiln_test_pose_t pose;
  KILN_ASSERT_OK(kiln_test_pose_begin("vulkan://0?triple=arc", NULL, &pose));
  kiln_gpu_run_stats_t stats;
  kiln_status_t status = kiln_gpu_compile_and_run(&g, &options, &input, &output, &stats);
  KILN_EXPECT_OK(kiln_test_pose_end(&pose));
  char text[1024] = "";
  kiln_status_format(status, text, sizeof(text));
  fprintf(stderr, "  refused: %s\n", text);
  // A device whose own range holds the binding (NVIDIA: 4 GiB, whatever
  // the triple says) runs it; only a 128 MiB device must refuse.
  kiln_session_t* session = NULL;
  KILN_ASSERT_OK(kiln_gpu_open(&session));
  uint64_t device_range =
      kiln_hal_device_info(kiln_session_device(session))->limits.max_storage_buffer_range;
  kiln_session_destroy(session);
  if (device_range >= 136314880u) {
    KILN_EXPECT_OK(status);
    kiln_graph_tensor_deinit(&input);
    kiln_graph_tensor_deinit(&output);
    kiln_graph_deinitialize(&g);
    return;
  }
  KILN_EXPECT_EQ(kiln_status_code(status), KILN_STATUS_OUT_OF_RANGE);
  KILN_EXPECT_NE(strstr(text, "storage"), NULL);
  KILN_EXPECT_NE(strstr(text, "136314880"), NULL);  // the weight binding's bytes
  kiln_status_free(status);
  kiln_graph_tensor_deinit(&input);
  kiln_graph_tensor_deinit(&output);
  kiln_graph_deinitialize(&g);
}
