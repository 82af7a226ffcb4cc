// Tensor-core lowerings (issue 17) through the real compile + run path on a
// device with cooperative matrix (the GPU machine; lavapipe has none and
// skips): --precision=f16 --cooperative-matrix modules for the device's own
// triple, checked against the C reference executor on the fp32 graph within
// 1e-2 of max|ref| (fp16 operands, fp32 sums). Covered: KxK convs and
// large 1x1s with unaligned rows as conv_columns + gemm_coopmat
// (pads, strides, dilation, bias, residual, relu, batch 2), and products that split k (BERT's 128 x 768,
// k 3072) or stage B k-major (Gemm transB); fused attention on
// attention_coopmat (head dims 32 to 128, masks, causal, long keys). Each
// case also checks that the module runs the tensor-core kernel.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/onnx_compile.h"
#include "kiln/hal/device.h"
#include "kiln/hal/target_triple.h"
#include "kiln/session.h"
#include "attention_graph.h"
#include "conv_graph.h"
#include "graph_build.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"
#include "tensor_compare.h"

// The device's triple when it has cooperative matrix; false (and a SKIP
// line) otherwise.
static bool coop_device_triple(char* triple, size_t size) {
  bool has = false;
  KILN_EXPECT_OK(kiln_gpu_coopmat_triple(triple, size, &has));
  return has;
}

// Whether a disassembly runs products on tensor cores: gemm_coopmat, or
// gemm_coopmat_split (split-K's parts and their sum in one dispatch).
static bool coop_text_uses_coopmat(const char* text) {
  return strstr(text, "executable gemm_coopmat_f16") != NULL ||
         strstr(text, "executable gemm_coopmat_split_f16") != NULL;
}

// Compiles `g` (f16, cooperative matrix, for `triple`), checks that it runs
// `executable` (NULL: gemm_coopmat or gemm_coopmat_split), calls it first on
// `first` inputs (NULL: check->inputs; other values show state a call leaves
// for the next) then on check->inputs and compares with the C reference's
// check->expected (fp16 operands, fp32 sums); releases `check`.
static void coop_check_after(kiln_graph_t* g, const char* triple, const char* label,
                             const char* executable, const kiln_graph_tensor_t* first,
                             kiln_reference_check_t* check) {
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.precision = KILN_ONNX_PRECISION_F16;
  options.cooperative_matrix = true;
  const char* const targets[1] = {triple};
  options.targets = targets;
  options.target_count = 1;
  kiln_gpu_capture_t assembly;
  KILN_ASSERT_OK(kiln_gpu_capture_begin(&options, &assembly));
  kiln_gpu_run_stats_t stats;
  KILN_EXPECT_OK(kiln_gpu_compile_and_run_after(g, &options, first ? first : check->inputs,
                                                check->inputs, &check->actual, &stats));
  kiln_gpu_capture_end(&assembly);
  if (executable) {
    char needle[96];
    snprintf(needle, sizeof(needle), "executable %s", executable);
    KILN_EXPECT_TRUE(strstr(assembly.text, needle) != NULL);
  } else {
    KILN_EXPECT_TRUE(coop_text_uses_coopmat(assembly.text));
  }
  kiln_gpu_capture_release(&assembly);
  kiln_tensor_expect_relative_error(&check->actual, &check->expected, 1e-2, label);
  kiln_reference_check_release(check);
}

static void coop_check_on(kiln_graph_t* g, const char* triple, const char* label,
                          const char* executable, kiln_reference_check_t* check) {
  coop_check_after(g, triple, label, executable, NULL, check);
}

// coop_check_on with random inputs, expecting tensor-core products.
static void coop_check(kiln_graph_t* g, const char* triple, const char* label) {
  kiln_reference_check_t check;
  kiln_reference_check_prepare(g, 4242u, &check);
  coop_check_on(g, triple, label, NULL, &check);
}

static void coop_conv(const kiln_conv_case_t* c, const char* triple) {
  kiln_graph_t g;
  kiln_conv_case_graph(c, &g);
  char label[96];
  snprintf(label, sizeof(label), "conv %lldx%lld, %lld -> %lld channels", (long long)c->w[2],
           (long long)c->w[3], (long long)c->w[1], (long long)c->w[0]);
  coop_check(&g, triple, label);
  kiln_graph_deinitialize(&g);
}

// Compiled only (no device): case `c` as an f16 module for hopper, its
// assembly in `assembly` (release it).
static void coop_conv_compile(const kiln_conv_case_t* c, kiln_gpu_capture_t* assembly) {
  kiln_conv_case_compile(c, "hopper-h100-linux", KILN_ONNX_PRECISION_F16, true, assembly);
}

// Compiled only: case `c` runs on gemm_coopmat or not, as `on_coopmat` says.
static void coop_conv_choice(const kiln_conv_case_t* c, bool on_coopmat) {
  kiln_gpu_capture_t assembly;
  coop_conv_compile(c, &assembly);
  const bool found = coop_text_uses_coopmat(assembly.text);
  if (found != on_coopmat) {
    KILN_ADD_FAILURE("1x1 conv %lld -> %lld channels at %lldx%lld: gemm_coopmat %s, expected %s",
                     (long long)c->w[1], (long long)c->w[0], (long long)c->x[2],
                     (long long)c->x[3], found ? "used" : "not used",
                     on_coopmat ? "used" : "not used");
  }
  kiln_gpu_capture_release(&assembly);
}

KILN_TEST(OnnxGpuCoopmatTest, ConvAsColumnsAndCoopmatGemm) {
  char triple[128];
  if (!coop_device_triple(triple, sizeof(triple))) return;
  for (size_t i = 0; i < kiln_conv_case_count; ++i) {
    coop_conv(&kiln_conv_cases[i], triple);
  }
}

// Which 1x1 convs take tensor cores (kiln_lower_conv): rows aligned to 4
// in place (14x14 by quads); others (7x7) through padded columns only from
// 32 M multiply-adds per image (ResNet-50's 51 M), not MobileNetV2's
// (7.5 M).
KILN_TEST(OnnxGpuCoopmatTest, PointwiseConvKernelByShape) {
  const kiln_conv_case_t resnet_7x7 = {{1, 512, 7, 7}, {2048, 512, 1, 1}, {0, 0, 0, 0}, 1, 1,
                                       true, true};
  const kiln_conv_case_t resnet_14x14 = {{1, 1024, 14, 14}, {256, 1024, 1, 1}, {0, 0, 0, 0},
                                         1, 1, false, true};
  const kiln_conv_case_t mobilenet_7x7 = {{1, 960, 7, 7}, {160, 960, 1, 1}, {0, 0, 0, 0},
                                          1, 1, false, false};
  const kiln_conv_case_t aligned_28x28 = {{1, 64, 28, 28}, {128, 64, 1, 1}, {0, 0, 0, 0},
                                          1, 1, false, true};
  const kiln_conv_case_t mobilenet_14x14 = {{1, 384, 14, 14}, {64, 384, 1, 1}, {0, 0, 0, 0},
                                            1, 1, false, false};
  coop_conv_choice(&resnet_7x7, true);
  coop_conv_choice(&resnet_14x14, true);
  coop_conv_choice(&mobilenet_7x7, false);
  coop_conv_choice(&aligned_28x28, true);
  coop_conv_choice(&mobilenet_14x14, true);
}

// Compiled only: every conv case gathers its columns in one conv_columns
// dispatch (the windows' zero pad included), with no pad or strided copy
// before it, and multiplies on gemm_coopmat; a plain 1x1 whose image rows
// are 4-aligned (14x14: 196) multiplies in place, its rows by quads
// (KILN_SPEC_COOPMAT_B_QUADS), and a stride-1 KxK conv of at most 1024
// output pixels reads its windows in place (conv_windows_test.c), with no
// columns.
KILN_TEST(OnnxGpuCoopmatTest, ConvColumnsGatherInOneDispatch) {
  for (size_t i = 0; i < kiln_conv_case_count; ++i) {
    const kiln_conv_case_t* c = &kiln_conv_cases[i];
    const int64_t oh = (c->x[2] + c->pads[0] + c->pads[2] - c->dilation * (c->w[2] - 1) - 1) /
                       c->stride + 1;
    const int64_t ow = (c->x[3] + c->pads[1] + c->pads[3] - c->dilation * (c->w[3] - 1) - 1) /
                       c->stride + 1;
    const bool windows = c->w[2] * c->w[3] > 1 && c->stride == 1 && oh * ow <= 1024;
    const bool in_place = windows ||
                          (c->w[2] == 1 && c->w[3] == 1 && c->stride == 1 &&
                           !(c->pads[0] | c->pads[1] | c->pads[2] | c->pads[3]) &&
                           (c->x[2] * c->x[3]) % 4 == 0);
    kiln_gpu_capture_t assembly;
    coop_conv_compile(c, &assembly);
    const char* text = assembly.text;
    const char* first = strstr(text, "executable conv_columns_f16");
    const bool once =
        in_place ? !first : first && !strstr(first + 1, "executable conv_columns_f16");
    const bool gemm = coop_text_uses_coopmat(text);
    const bool pad = strstr(text, "executable pad_f16") != NULL;
    const bool copy = strstr(text, "executable strided_copy_f16") != NULL;
    if (!once || !gemm || pad || copy) {
      KILN_ADD_FAILURE("conv case %zu: conv_columns once %d, gemm_coopmat %d, pad %d, "
                       "strided_copy %d",
                       i, once, gemm, pad, copy);
    }
    kiln_gpu_capture_release(&assembly);
  }
}

KILN_TEST(OnnxGpuCoopmatTest, SplitKAndTransposedProducts) {
  char triple[128];
  if (!coop_device_triple(triple, sizeof(triple))) return;
  {
    // BERT's FFN down-projection: 128 x 768, k 3072 (24 blocks of 64x64:
    // split into k parts, fp16 partials summed by gemv_f16).
    kiln_graph_t g;
    kiln_graph_initialize(kiln_allocator_system(), "coop-splitk", &g);
    g.opset = 13;
    const int64_t a[3] = {1, 128, 3072}, b[2] = {3072, 768};
    const int32_t in[2] = {kiln_test_graph_input(&g, "a", 3, a),
                           kiln_test_graph_input(&g, "b", 2, b)};
    int32_t node = -1, y = -1;
    KILN_EXPECT_OK(kiln_gpu_graph_add_node(&g, "MatMul", in, 2, &node, &y));
    KILN_EXPECT_OK(kiln_gpu_graph_add_output(&g, y));
    coop_check(&g, triple, "matmul 128 x 768, k 3072");
    kiln_graph_deinitialize(&g);
  }
  {
    // Gemm transB (B staged k-major) with a bias row, 197 rows (ViT).
    kiln_graph_t g;
    kiln_graph_initialize(kiln_allocator_system(), "coop-transb", &g);
    g.opset = 13;
    const int64_t a[2] = {197, 256}, b[2] = {384, 256}, c[1] = {384};
    const int32_t in[3] = {kiln_test_graph_input(&g, "a", 2, a),
                           kiln_test_graph_input(&g, "b", 2, b),
                           kiln_test_graph_input(&g, "c", 1, c)};
    int32_t node = -1, y = -1;
    KILN_EXPECT_OK(kiln_gpu_graph_add_node(&g, "Gemm", in, 3, &node, &y));
    kiln_test_attr_int(&g, node, "transB", 1);
    KILN_EXPECT_OK(kiln_gpu_graph_add_output(&g, y));
    coop_check(&g, triple, "gemm transB 197 x 384, k 256");
    kiln_graph_deinitialize(&g);
  }
}

// Split-K on tensor cores (lower_splitk.c): a product whose blocks leave
// SMs idle runs its equal k parts and their sum in one gemm_coopmat_split
// dispatch, the last part of each block summing the parts' f32 partials
// in order, through block counters the module zeroes at the start of
// every call. Cases: BERT-base's FFN-down (128 x 768, k 3072); a Gemm of
// 37 rows and 136 columns (blocks cut in both) with bias, a residual Add
// and Relu in the epilogue; ResNet-50's last 3x3 conv (512 channels at
// 7x7, k 4608, 49 columns: rows off the quad) with Relu.
static void coop_split_gemm_graph(int64_t m, int64_t k, int64_t n, bool epilogue,
                                  kiln_graph_t* g) {
  kiln_graph_initialize(kiln_allocator_system(), "coop-split", g);
  g->opset = 13;
  const int64_t a[2] = {m, k}, b[2] = {k, n}, c[1] = {n}, r[2] = {m, n};
  const int32_t in[3] = {kiln_test_graph_input(g, "a", 2, a), kiln_test_graph_input(g, "b", 2, b),
                         epilogue ? kiln_test_graph_input(g, "c", 1, c) : -1};
  int32_t node = -1, y = -1;
  KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, "Gemm", in, epilogue ? 3 : 2, &node, &y));
  if (epilogue) {
    const int32_t add_in[2] = {y, kiln_test_graph_input(g, "r", 2, r)};
    int32_t sum = -1;
    KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, "Add", add_in, 2, &node, &sum));
    KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, "Relu", &sum, 1, &node, &y));
  }
  KILN_EXPECT_OK(kiln_gpu_graph_add_output(g, y));
  KILN_EXPECT_OK(kiln_graph_infer_shapes(g));
}

static const struct {
  int64_t m, k, n;
  bool epilogue;
} kCoopSplitGemms[] = {{128, 3072, 768, false}, {37, 3072, 136, true}};
static const kiln_conv_case_t kCoopSplitConv = {{1, 512, 7, 7}, {512, 512, 3, 3},
                                                {1, 1, 1, 1}, 1, 1, false, true, true};

// Compiled only (CI): each case records gemm_coopmat_split, no gemv sum,
// and one fill of the counters before the first dispatch.
KILN_TEST(OnnxGpuCoopmatTest, SplitKSumsInTheProductDispatch) {
  for (size_t i = 0; i <= sizeof(kCoopSplitGemms) / sizeof(kCoopSplitGemms[0]); ++i) {
    kiln_gpu_capture_t assembly;
    if (i < sizeof(kCoopSplitGemms) / sizeof(kCoopSplitGemms[0])) {
      kiln_graph_t g;
      coop_split_gemm_graph(kCoopSplitGemms[i].m, kCoopSplitGemms[i].k, kCoopSplitGemms[i].n,
                            kCoopSplitGemms[i].epilogue, &g);
      kiln_onnx_compile_options_t options;
      kiln_onnx_compile_options_init(&options);
      options.precision = KILN_ONNX_PRECISION_F16;
      options.cooperative_matrix = true;
      const char* const targets[1] = {"hopper-h100-linux"};
      options.targets = targets;
      options.target_count = 1;
      size_t dispatches = 0;
      KILN_ASSERT_OK(kiln_gpu_capture_begin(&options, &assembly));
      KILN_EXPECT_OK(kiln_gpu_dispatch_count(&g, &options, &dispatches));
      kiln_gpu_capture_end(&assembly);
      kiln_graph_deinitialize(&g);
    } else {
      coop_conv_compile(&kCoopSplitConv, &assembly);
    }
    const char* text = assembly.text;
    const size_t splits = kiln_gpu_text_count(text, "executable gemm_coopmat_split_f16");
    const size_t sums = kiln_gpu_text_count(text, "executable gemv_f16");
    // The import's declaration and one call.
    const size_t fills = kiln_gpu_text_count(text, "hal.command_buffer.fill");
    if (splits != 1 || sums != 0 || fills != 2) {
      KILN_ADD_FAILURE("split case %zu: %zu gemm_coopmat_split executables, %zu gemv, "
                       "%zu mentions of the fill",
                       i, splits, sums, fills);
    }
    kiln_gpu_capture_release(&assembly);
  }
}

// On the device: each case called first on other inputs, so that a result
// leaning on the counters or partials a call leaves fails.
KILN_TEST(OnnxGpuCoopmatTest, SplitKSumsInTheProductOnDevice) {
  char triple[128];
  if (!coop_device_triple(triple, sizeof(triple))) return;
  for (size_t i = 0; i <= sizeof(kCoopSplitGemms) / sizeof(kCoopSplitGemms[0]); ++i) {
    kiln_graph_t g;
    char label[96];
    if (i < sizeof(kCoopSplitGemms) / sizeof(kCoopSplitGemms[0])) {
      coop_split_gemm_graph(kCoopSplitGemms[i].m, kCoopSplitGemms[i].k, kCoopSplitGemms[i].n,
                            kCoopSplitGemms[i].epilogue, &g);
      snprintf(label, sizeof(label), "split gemm %lld x %lld, k %lld",
               (long long)kCoopSplitGemms[i].m, (long long)kCoopSplitGemms[i].n,
               (long long)kCoopSplitGemms[i].k);
    } else {
      kiln_conv_case_graph(&kCoopSplitConv, &g);
      snprintf(label, sizeof(label), "split 3x3 conv, 512 channels at 7x7");
    }
    kiln_reference_check_t before, check;
    kiln_reference_check_prepare(&g, 99u + (uint32_t)i, &before);
    kiln_reference_check_prepare(&g, 4242u, &check);
    coop_check_after(&g, triple, label, "gemm_coopmat_split_f16", before.inputs, &check);
    kiln_reference_check_release(&before);
    kiln_graph_deinitialize(&g);
  }
}

// Fused attention on tensor cores: BERT's and ViT's heads, padding and
// additive masks, causal, head dims below the builds' 64 and 128 (zero
// padded), rows and keys not multiples of the 16-row blocks and 32-key
// tiles, 257 keys (the first of the 8 subgroups takes a second tile of one
// key), and 300 and 4096 keys (many tiles per subgroup: the running max
// and the accumulator's rescale, for both builds).
KILN_TEST(OnnxGpuCoopmatTest, AttentionOnTensorCores) {
  char triple[128];
  if (!coop_device_triple(triple, sizeof(triple))) return;
  const kiln_attn_case_t cases[] = {{1, 12, 128, 128, 64, kMaskPadding, 1},
                                    {1, 12, 197, 197, 64, kMaskNone, 1},
                                    {1, 2, 300, 300, 64, kMaskCausal, 1},
                                    {2, 3, 7, 9, 32, kMaskAdd, 1},
                                    {1, 1, 1, 1, 64, kMaskNone, 1},
                                    {1, 2, 40, 100, 128, kMaskNone, 1},
                                    {1, 2, 33, 47, 80, kMaskAdd, 1},
                                    {1, 2, 37, 37, 128, kMaskCausal, 1},
                                    {1, 2, 64, 4096, 64, kMaskPadding, 1},
                                    {1, 2, 50, 257, 64, kMaskAdd, 1},
                                    {1, 2, 20, 300, 128, kMaskPadding, 1}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    const kiln_attn_case_t* c = &cases[i];
    kiln_graph_t g;
    kiln_attn_build(c, &g);
    kiln_reference_check_t check;
    kiln_reference_check_init(&g, &check);
    kiln_attn_fill(&g, check.inputs, c);
    kiln_reference_check_run_reference(&g, &check);
    char label[128];
    snprintf(label, sizeof(label), "attention b %lld h %lld sq %lld sk %lld d %lld mask %d",
             (long long)c->batch, (long long)c->heads, (long long)c->sq, (long long)c->sk,
             (long long)c->d, (int)c->mask);
    coop_check_on(&g, triple, label, "attention_coopmat_f16", &check);
    kiln_graph_deinitialize(&g);
  }
}

// Which attention kernel a module gets (compile only, on any machine):
// attention_coopmat for f16 heads of up to 128 dims when every target has
// cooperative matrix and it is not opted out; else attention_tiled for
// heads of up to 64 dims when every target is a desktop-sized GPU;
// attention otherwise.
static void coop_attention_choice(const kiln_attn_case_t* c, const char* target, bool f16,
                                  bool coopmat, const char* expected) {
  kiln_graph_t g;
  kiln_attn_build(c, &g);
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.precision = f16 ? KILN_ONNX_PRECISION_F16 : KILN_ONNX_PRECISION_F32;
  options.cooperative_matrix = coopmat;
  kiln_gpu_capture_t assembly;
  KILN_ASSERT_OK(kiln_gpu_capture_begin(&options, &assembly));
  const char* const targets[1] = {target};
  if (target) {
    options.targets = targets;
    options.target_count = 1;
  }
  size_t dispatches = 0;
  kiln_status_t status = kiln_gpu_dispatch_count(&g, &options, &dispatches);
  kiln_gpu_capture_end(&assembly);
  KILN_EXPECT_OK(status);
  // Executables are named by kernel, then spec values ("attention_16_1_0"):
  // the kernel's name ends where a digit follows.
  char needle[96];
  snprintf(needle, sizeof(needle), "executable %s_", expected);
  bool found = false;
  for (const char* at = strstr(assembly.text, needle); at && !found;
       at = strstr(at + 1, needle)) {
    const char next = at[strlen(needle)];
    found = next >= '0' && next <= '9';
  }
  if (!found) {
    KILN_ADD_FAILURE("d %lld, target %s, f16 %d, coopmat %d: no '%s'", (long long)c->d,
                     target ? target : "(default)", (int)f16, (int)coopmat, needle);
  }
  KILN_EXPECT_GE(dispatches, (size_t)1);  // plus the f16 casts of inputs and output
  kiln_gpu_capture_release(&assembly);
  kiln_graph_deinitialize(&g);
}

KILN_TEST(OnnxGpuCoopmatTest, AttentionKernelByTargetAndShape) {
  const kiln_attn_case_t bert = {1, 12, 128, 128, 64, kMaskPadding, 1};
  const kiln_attn_case_t wide = {1, 2, 16, 16, 160, kMaskNone, 1};
  const char* hopper = "hopper-h100-linux";
  coop_attention_choice(&bert, hopper, true, true, "attention_coopmat_f16");
  coop_attention_choice(&bert, hopper, true, false, "attention_tiled_f16");
  coop_attention_choice(&bert, hopper, false, true, "attention_tiled");
  coop_attention_choice(&wide, hopper, true, true, "attention_f16");
  coop_attention_choice(&wide, hopper, false, true, "attention");
  // Default targets include lavapipe, which has no cooperative matrix and
  // is no desktop-sized GPU; so is a phone.
  coop_attention_choice(&bert, NULL, true, true, "attention_f16");
  coop_attention_choice(&bert, NULL, false, true, "attention");
  coop_attention_choice(&bert, "valhall-g78-android30", false, true, "attention");
}
