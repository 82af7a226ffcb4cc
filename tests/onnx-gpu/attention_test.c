// Fused attention (compiler-bridge/onnx/pass_fuse_attention.c and
// kernels/glsl/attention.comp) through the real compile + run path: small
// graphs written the way exporters write attention (Transpose of K,
// MatMul, Mul by a scale, an additive or Where mask, Softmax, MatMul, the
// head merge Transpose + Reshape) are checked against the plain C
// reference executor run on the unfused graph: max|gpu - ref| <= 1e-4 *
// max|ref| (fp32 sums of at most a few thousand terms). Each case also
// asserts that the pattern fused (one kiln.Attention node) and the number
// of dispatches (1, or 2 where the keys are split into chunks for
// llvmpipe's loop budget).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/graph_reference.h"
#include "kiln/compiler/kernels_codes.h"
#include "attention_graph.h"
#include "graph_build.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"
#include "tensor_compare.h"

// Compiles `g` (options as given) for `target` (NULL: the default
// targets), poses lavapipe as that device and runs it on `inputs`.
static kiln_status_t kiln_attn_run_on(kiln_graph_t* g, kiln_onnx_compile_options_t* options,
                                      const char* target, const kiln_graph_tensor_t* inputs,
                                      kiln_graph_tensor_t* actual,
                                      kiln_gpu_run_stats_t* stats) {
  const char* const targets[1] = {target};
  char pose[128] = "";
  if (target) {
    options->targets = targets;
    options->target_count = 1;
    snprintf(pose, sizeof(pose), "vulkan://0?triple=%s", target);
  }
  kiln_test_pose_t saved;
  KILN_RETURN_IF_ERROR(kiln_test_pose_begin(target ? pose : NULL, NULL, &saved));
  kiln_status_t status = kiln_gpu_compile_and_run(g, options, inputs, actual, stats);
  KILN_EXPECT_OK(kiln_test_pose_end(&saved));
  options->targets = NULL;
  options->target_count = 0;
  return status;
}

// `target` (NULL: the default targets) names the module's one target; the
// run then poses lavapipe as that device. `f16`: compiled with
// --precision=f16 and no cooperative matrix (the SIMT kernels' fp16-storage
// builds), checked against 1e-2 of max|ref| (docs/precision.md).
static void kiln_attn_check_at(const kiln_attn_case_t* c, const char* target, bool f16) {
  fprintf(stderr, "  b %lld h %lld sq %lld sk %lld d %lld mask %d\n", (long long)c->batch,
          (long long)c->heads, (long long)c->sq, (long long)c->sk, (long long)c->d,
          (int)c->mask);
  kiln_graph_t g;
  kiln_attn_build(c, &g);
  kiln_graph_tensor_t inputs[4], expected, fused_ref, actual;
  memset(inputs, 0, sizeof(inputs));
  kiln_attn_fill(&g, inputs, c);
  KILN_ASSERT_OK(kiln_graph_reference_run(&g, inputs, g.input_count, NULL,
                                          kiln_allocator_system(), &expected));
  // The passes alone: one kiln.Attention node left, and its C reference
  // agrees with the unfused graph's.
  kiln_graph_t fused;
  kiln_attn_build(c, &fused);
  KILN_ASSERT_OK(kiln_graph_run_default_passes(&fused));
  size_t live = 0, attention = 0;
  for (size_t n = 0; n < fused.node_count; ++n) {
    if (fused.nodes[n].removed) continue;
    ++live;
    if (strcmp(fused.nodes[n].op_type, "kiln.Attention") == 0) ++attention;
  }
  KILN_EXPECT_EQ(attention, (size_t)1);
  KILN_EXPECT_EQ(live, (size_t)1);
  KILN_ASSERT_OK(kiln_graph_reference_run(&fused, inputs, fused.input_count, NULL,
                                          kiln_allocator_system(), &fused_ref));
  kiln_graph_deinitialize(&fused);
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  if (f16) {
    options.precision = KILN_ONNX_PRECISION_F16;
    options.cooperative_matrix = false;
  }
  kiln_gpu_capture_t assembly;
  KILN_ASSERT_OK(kiln_gpu_capture_begin(&options, &assembly));
  kiln_gpu_run_stats_t stats;
  kiln_status_t status = kiln_attn_run_on(&g, &options, target, inputs, &actual, &stats);
  kiln_gpu_capture_end(&assembly);
  KILN_ASSERT_OK(status);
  // At f16 the inputs and the output are cast too.
  if (!f16) KILN_EXPECT_EQ(kiln_gpu_text_dispatches(assembly.text), c->dispatches);
  if (f16) KILN_EXPECT_TRUE(strstr(assembly.text, "executable attention_tiled_f16_") != NULL);
  kiln_gpu_capture_release(&assembly);
  KILN_ASSERT_EQ(actual.byte_size, expected.byte_size);
  KILN_ASSERT_EQ(fused_ref.byte_size, expected.byte_size);
  const kiln_tensor_error_t gpu = kiln_tensor_max_error(&actual, &expected);
  const double max_ref = gpu.max_ref, max_err = gpu.max_err;
  const double max_fused = kiln_tensor_max_error(&fused_ref, &expected).max_err;
  fprintf(stderr, "    max|ref| %.4g, gpu max err %.3g, fused C reference max err %.3g, "
          "compile %.0f ms, call %.1f ms\n", max_ref, max_err, max_fused, stats.compile_ms,
          stats.second_call_ms);
  // (The shim's EQ/LE compare integers: doubles go through TRUE.)
  KILN_EXPECT_TRUE(max_ref > 0.0);
  KILN_EXPECT_TRUE(max_err <= (f16 ? 1e-2 : 1e-4) * max_ref);
  KILN_EXPECT_TRUE(max_fused <= 1e-4 * max_ref);
  for (size_t i = 0; i < 4; ++i) kiln_graph_tensor_deinit(&inputs[i]);
  kiln_graph_tensor_deinit(&expected);
  kiln_graph_tensor_deinit(&fused_ref);
  kiln_graph_tensor_deinit(&actual);
  kiln_graph_deinitialize(&g);
}

static void kiln_attn_check(const kiln_attn_case_t* c) { kiln_attn_check_at(c, NULL, false); }

// Every case for the desktop GPU triple the tests pose as.
static const char kDesktop[] = "ampere-rtx3080-windows";
static void kiln_attn_check_desktop(const kiln_attn_case_t* cases, size_t count, bool f16) {
  for (size_t i = 0; i < count; ++i) kiln_attn_check_at(&cases[i], kDesktop, f16);
}

KILN_TEST(OnnxGpuAttentionTest, ShortSequencesNoMask) {
  const kiln_attn_case_t cases[] = {{1, 2, 1, 1, 32, kMaskNone, 1},
                                    {2, 3, 7, 7, 64, kMaskNone, 1},
                                    {1, 2, 5, 9, 32, kMaskNone, 1}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) kiln_attn_check(&cases[i]);
}

KILN_TEST(OnnxGpuAttentionTest, AdditiveAndPaddingMasks) {
  const kiln_attn_case_t cases[] = {{1, 2, 7, 7, 32, kMaskAdd, 1},
                                    {2, 2, 128, 128, 64, kMaskPadding, 1},
                                    {1, 1, 300, 300, 32, kMaskAdd, 1}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) kiln_attn_check(&cases[i]);
}

// The Where(tril == 0, -inf) mask becomes the kernel's causal flag.
KILN_TEST(OnnxGpuAttentionTest, CausalMask) {
  const kiln_attn_case_t cases[] = {{1, 2, 7, 7, 64, kMaskCausal, 1},
                                    {1, 2, 128, 128, 64, kMaskCausal, 1},
                                    {1, 1, 300, 300, 32, kMaskCausal, 1}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) kiln_attn_check(&cases[i]);
}

// Desktop GPU modules take attention_tiled for heads of up to 64 dims (16
// query rows per workgroup, 8 invocations a row, 32-key tiles): compiled
// for an Ampere triple and run on lavapipe posing as it. Rows and keys not
// multiples of the workgroup's 16 rows, its 8 lanes or the 32-key tile
// (one key, 33 keys, 300), every mask kind, head dims 4 to 64 (30: not
// 4-aligned, read element by element), batches, and 6000 keys (188 tiles
// in one pass).
KILN_TEST(OnnxGpuAttentionTest, TiledOnDesktopTargets) {
  const kiln_attn_case_t cases[] = {{1, 2, 1, 1, 32, kMaskNone, 1},
                                    {1, 2, 3, 2, 4, kMaskNone, 1},
                                    {2, 3, 7, 7, 64, kMaskNone, 1},
                                    {1, 2, 5, 9, 30, kMaskAdd, 1},
                                    {1, 2, 17, 33, 64, kMaskAdd, 1},
                                    {2, 2, 128, 128, 64, kMaskPadding, 1},
                                    {1, 2, 37, 37, 64, kMaskCausal, 1},
                                    {1, 1, 300, 300, 32, kMaskCausal, 1},
                                    {1, 1, 5, 6000, 64, kMaskAdd, 1}};
  kiln_attn_check_desktop(cases, sizeof(cases) / sizeof(cases[0]), false);
}

// The same kernel's fp16-storage build (f16 modules for GPUs without
// cooperative matrix): f16 Q, K, V and output, fp32 math.
KILN_TEST(OnnxGpuAttentionTest, TiledF16OnDesktopTargets) {
  const kiln_attn_case_t cases[] = {{1, 2, 17, 33, 64, kMaskAdd, 1},
                                    {1, 2, 5, 9, 30, kMaskNone, 1},
                                    {1, 2, 37, 37, 64, kMaskCausal, 1}};
  kiln_attn_check_desktop(cases, sizeof(cases) / sizeof(cases[0]), true);
}

// Wider heads on desktop GPUs run attention.comp with 4 invocations per
// query row (KEY_LANES), each on every 4th key, their softmax states
// merged at the end. Rows and keys not multiples of the 8 rows per
// workgroup or the 4 lanes, fewer keys than lanes, every mask kind.
KILN_TEST(OnnxGpuAttentionTest, KeyLanesOnDesktopTargets) {
  const kiln_attn_case_t cases[] = {{1, 2, 1, 1, 80, kMaskNone, 1},
                                    {1, 2, 3, 2, 68, kMaskNone, 1},
                                    {2, 3, 7, 7, 128, kMaskNone, 1},
                                    {1, 2, 5, 9, 96, kMaskAdd, 1},
                                    {1, 2, 64, 64, 128, kMaskPadding, 1},
                                    {1, 2, 37, 37, 80, kMaskCausal, 1}};
  kiln_attn_check_desktop(cases, sizeof(cases) / sizeof(cases[0]), false);
}

// PyTorch's semantics at the edges, on both SIMT kernels (default targets:
// attention.comp; the desktop triple: attention_tiled): a query row whose
// keys are all masked (-inf) is NaN in every head, and a NaN in one head's
// query makes that head's row NaN; every other row matches the C reference.
static void kiln_attn_check_nan_rows(const char* target) {
  const kiln_attn_case_t c = {1, 2, 20, 40, 64, kMaskAdd, 1};
  kiln_graph_t g;
  kiln_attn_build(&c, &g);
  kiln_graph_tensor_t inputs[4], expected, actual;
  memset(inputs, 0, sizeof(inputs));
  kiln_attn_fill(&g, inputs, &c);
  float* mask = inputs[3].data;
  for (int64_t j = 0; j < c.sk; ++j) mask[3 * c.sk + j] = -INFINITY;  // row 3
  float* q = inputs[0].data;
  q[((1 * c.sq) + 7) * c.d + 5] = NAN;  // head 1, row 7
  KILN_ASSERT_OK(kiln_graph_reference_run(&g, inputs, g.input_count, NULL,
                                          kiln_allocator_system(), &expected));
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  kiln_gpu_run_stats_t stats;
  KILN_ASSERT_OK(kiln_attn_run_on(&g, &options, target, inputs, &actual, &stats));
  KILN_ASSERT_EQ(actual.byte_size, expected.byte_size);
  const float* want = expected.data;
  const float* got = actual.data;
  double max_ref = 0.0;
  for (size_t e = 0; e < expected.byte_size / 4; ++e) {
    if (!isnan(want[e]) && fabs(want[e]) > max_ref) max_ref = fabs(want[e]);
  }
  size_t nan_rows = 0, wrong = 0;
  for (size_t e = 0; e < expected.byte_size / 4; ++e) {
    const size_t row = e / (size_t)(c.heads * c.d), head = e / (size_t)c.d % (size_t)c.heads;
    const bool want_nan = row == 3 || (row == 7 && head == 1);
    if (want_nan != (bool)isnan(want[e])) ++wrong;  // the reference's own semantics
    if (want_nan) {
      nan_rows += isnan(got[e]) ? 1 : 0;
      if (!isnan(got[e])) ++wrong;
    } else if (!(fabs(got[e] - want[e]) <= 1e-4 * max_ref)) {
      ++wrong;
    }
  }
  fprintf(stderr, "  %s: %zu NaN outputs where PyTorch has them, %zu wrong\n",
          target ? target : "default targets", nan_rows, wrong);
  KILN_EXPECT_EQ(nan_rows, (size_t)(2 * 64 + 64));
  KILN_EXPECT_EQ(wrong, (size_t)0);
  for (size_t i = 0; i < 4; ++i) kiln_graph_tensor_deinit(&inputs[i]);
  kiln_graph_tensor_deinit(&expected);
  kiln_graph_tensor_deinit(&actual);
  kiln_graph_deinitialize(&g);
}

KILN_TEST(OnnxGpuAttentionTest, MaskedAndNanRowsAreNan) {
  kiln_attn_check_nan_rows(NULL);
  kiln_attn_check_nan_rows(kDesktop);
}

// Keys past one invocation's loop budget: a partial dispatch over key
// chunks and a merge. Just under the pass model's limit (2400 keys at head
// dim 32, 1350 at 64: about 58000 modelled passes with the 8-key tiles of
// the targets below 32 KiB of shared memory) stays one dispatch, and
// a model that undercounted would show here as keys cut short on lavapipe.
KILN_TEST(OnnxGpuAttentionTest, LongKeysSplitIntoChunks) {
  const kiln_attn_case_t cases[] = {{1, 2, 8, 6000, 32, kMaskNone, 2},
                                    {1, 1, 5, 4100, 64, kMaskAdd, 2},
                                    {1, 1, 4, 2400, 32, kMaskNone, 1},
                                    {1, 1, 4, 1350, 64, kMaskAdd, 1}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) kiln_attn_check(&cases[i]);
}

// kiln.Attention can arrive in an untrusted file: the checker refuses views
// that reach past their inputs, huge strides, and an output view that does
// not write every element once (no device needed).
KILN_TEST(OnnxGpuAttentionTest, CheckerRefusesBadViews) {
  struct {
    int64_t q_view[4], out_view[4];
    bool ok;
  } cases[] = {
      {{0, 0, 32, 4}, {0, 0, 16, 4}, true},           // [2 heads, 4 rows, 4 dims]
      {{16, 0, 32, 4}, {0, 0, 16, 4}, true},          // ends at q's last element
      {{17, 0, 32, 4}, {0, 0, 16, 4}, false},         // one element past q
      {{0, 0, (int64_t)1 << 40, 4}, {0, 0, 16, 4}, false},
      {{0, 0, 32, 4}, {0, 0, 16, 2}, false},          // rows overlap
      {{0, 0, 32, 4}, {4, 0, 16, 4}, false},          // offset output
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    kiln_graph_t g;
    kiln_graph_initialize(kiln_allocator_system(), "attention-checker", &g);
    g.opset = 17;
    const int64_t dims[3] = {2, 8, 4};  // q rows 4 apart: 2 x 32 floats
    int32_t in[3];
    in[0] = kiln_test_graph_input(&g, "q", 3, dims);
    in[1] = kiln_test_graph_input(&g, "k", 3, dims);
    in[2] = kiln_test_graph_input(&g, "v", 3, dims);
    int32_t node = -1;
    int32_t y = kiln_attn_node(&g, "kiln.Attention", in, 3, &node);
    const int64_t shape[6] = {1, 2, 4, 4, 4, 4}, kv[4] = {0, 0, 32, 4};
    const int64_t out_shape[3] = {2, 4, 4};
    kiln_test_attr_ints(&g, node, "kiln.dims", shape, 6);
    kiln_test_attr_ints(&g, node, "kiln.q_view", cases[i].q_view, 4);
    kiln_test_attr_ints(&g, node, "kiln.k_view", kv, 4);
    kiln_test_attr_ints(&g, node, "kiln.v_view", kv, 4);
    kiln_test_attr_ints(&g, node, "kiln.out_view", cases[i].out_view, 4);
    kiln_test_attr_ints(&g, node, "kiln.out_shape", out_shape, 3);
    KILN_EXPECT_OK(kiln_gpu_graph_add_output(&g, y));
    kiln_status_t status = kiln_graph_infer_shapes(&g);
    KILN_EXPECT_EQ(status == NULL, cases[i].ok);
    kiln_status_ignore(status);
    kiln_graph_deinitialize(&g);
  }
}
