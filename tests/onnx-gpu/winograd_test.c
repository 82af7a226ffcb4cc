// Winograd F(2x2, 3x3) (lower_winograd.c): large fp32 3x3 stride-1 convs
// with a constant weight, on modules whose every target is a desktop GPU or
// the CPU, run as winograd_input + a batch-16 gemm + winograd_output.
// Modules for a desktop triple (ampere-rtx3080-windows) run on lavapipe
// posing as that device, modules for the CPU (cpu-llvmpipe-linux: the gemm
// is gemm_cpu) on lavapipe as itself, both checked against the C reference executor (direct convolution)
// within 1e-6 * sqrt(K) of max|ref| (K the reduction length), as the
// direct kernels are: the transforms' few extra roundings per output stay
// far inside it (5e-7 of max|ref| at K 1152 on lavapipe).
// Each run also checks that the module took the Winograd kernels.
#include <stdio.h>
#include <string.h>

#include "kiln/compiler/onnx_compile.h"
#include "conv_graph.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"
#include "tensor_compare.h"

static const char kDesktop[] = "ampere-rtx3080-windows";
static const char kCpu[] = "cpu-llvmpipe-linux";

// At least KILN_WINOGRAD_MIN_MACS multiply-adds each (smaller convs keep
// the columns path), with tilings that fit lavapipe's 32 KiB of shared
// memory.
static const kiln_conv_case_t kCases[] = {
    // ResNet's 3x3 at 28x28 (here 30x30), bias + relu.
    {{4, 128, 30, 30}, {128, 128, 3, 3}, {1, 1, 1, 1}, 1, 1, false, true, true},
    // Odd output sizes (a cut last tile), no pads, residual + relu, a
    // channel count off every alignment (K 1143), tiles T = 2 * 15 * 17
    // (rows of V and M padded to a multiple of 4).
    {{2, 127, 31, 35}, {200, 127, 3, 3}, {0, 0, 0, 0}, 1, 1, true, true, true},
    // ResNet's 64-channel 3x3 (at 46x46): its products (64 rows, 16 x 4 x
    // 529 tiles) take the tiled gemm in blocks of 64 rows, not 128.
    {{4, 64, 46, 46}, {64, 64, 3, 3}, {1, 1, 1, 1}, 1, 1, true, true, true},
    // Asymmetric pads (the patches start off the grid of the input) and no
    // activation.
    {{4, 96, 40, 26}, {160, 96, 3, 3}, {2, 0, 0, 1}, 1, 1, false, false, true},
};

// Case `c` for `target`: on Winograd, and right when run on the test
// device posing as that triple.
static void winograd_check(const kiln_conv_case_t* c, const char* target) {
  char label[160];
  snprintf(label, sizeof(label), "conv 3x3 %lldx%lld, %lld -> %lld channels, batch %lld, %s",
           (long long)c->x[2], (long long)c->x[3], (long long)c->w[1], (long long)c->w[0],
           (long long)c->x[0], target);
  kiln_gpu_capture_t assembly;
  kiln_conv_case_compile(c, target, KILN_ONNX_PRECISION_F32, false, &assembly);
  const bool input = strstr(assembly.text, "# executable 'winograd_input") != NULL;
  const bool output = strstr(assembly.text, "# executable 'winograd_output") != NULL;
  const bool others = strstr(assembly.text, "# executable 'conv_columns") != NULL ||
                      strstr(assembly.text, "# executable 'conv2d_gemm") != NULL;
  if (!input || !output || others) {
    KILN_ADD_FAILURE("%s: winograd_input %d, winograd_output %d, columns or implicit %d",
                     label, input, output, others);
  }
  kiln_gpu_capture_release(&assembly);

  kiln_conv_case_check_posed(c, target, KILN_ONNX_PRECISION_F32, 4242u, label);
}

KILN_TEST(OnnxGpuWinogradTest, LargeConvsMatchDirectReference) {
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
    winograd_check(&kCases[i], kDesktop);
  }
}

// The CPU target: the same cases, plus ResNet's 3x3 at 14x14, whose
// products' B rows are 49 tiles padded to 52. gemm_cpu had skipped the
// first k & ~3 terms of that layout (GpuGemmTest's padded-row cases).
KILN_TEST(OnnxGpuWinogradTest, CpuTargetMatchesDirectReference) {
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) winograd_check(&kCases[i], kCpu);
  const kiln_conv_case_t padded_rows = {{1, 256, 14, 14}, {256, 256, 3, 3}, {1, 1, 1, 1}, 1, 1,
                                        false, true, true};
  winograd_check(&padded_rows, kCpu);
}

// Compiled only: what keeps its path. A conv below the size threshold, a
// strided one, a weight that is a graph input (no compile-time transform),
// fp16 storage, a mobile target and the default targets take no Winograd
// kernel.
KILN_TEST(OnnxGpuWinogradTest, OtherConvsAndTargetsKeepTheirPath) {
  const kiln_conv_case_t small = {{1, 64, 14, 14}, {64, 64, 3, 3}, {1, 1, 1, 1}, 1, 1,
                                  false, true, true};
  kiln_conv_case_t strided = kCases[0];
  strided.stride = 2;
  kiln_conv_case_t input_weight = kCases[0];
  input_weight.constant_weight = false;
  const struct {
    const kiln_conv_case_t* conv;
    const char* target;
    kiln_onnx_precision_t precision;
  } kKept[] = {
      {&small, kDesktop, KILN_ONNX_PRECISION_F32},
      {&strided, kDesktop, KILN_ONNX_PRECISION_F32},
      {&input_weight, kDesktop, KILN_ONNX_PRECISION_F32},
      {&kCases[0], kDesktop, KILN_ONNX_PRECISION_F16},
      {&kCases[0], "valhall-g78-android30", KILN_ONNX_PRECISION_F32},
  };
  for (size_t i = 0; i < sizeof(kKept) / sizeof(kKept[0]); ++i) {
    kiln_gpu_capture_t assembly;
    kiln_conv_case_compile(kKept[i].conv, kKept[i].target, kKept[i].precision, false,
                           &assembly);
    if (strstr(assembly.text, "# executable 'winograd_") != NULL) {
      KILN_ADD_FAILURE("case %zu (%s): took Winograd", i,
                       kKept[i].target);
    }
    kiln_gpu_capture_release(&assembly);
  }
  // V (16 x 128 channels x 900 tiles: 7.4 MB) past a 4 MiB storage-buffer
  // range: the columns path (whose own parts fit) takes the conv. And the
  // default targets (lavapipe's among them, and a mobile one).
  for (int i = 0; i < 2; ++i) {
    kiln_onnx_compile_options_t options;
    kiln_onnx_compile_options_init(&options);
    const char* const targets[1] = {kDesktop};
    if (i == 0) {
      options.cooperative_matrix = false;
      options.targets = targets;
      options.target_count = 1;
      options.max_storage_buffer_range = 4u << 20;
    }
    kiln_gpu_capture_t assembly;
    kiln_conv_case_compile_with(&kCases[0], &options, &assembly);
    if (strstr(assembly.text, "# executable 'winograd_") != NULL) {
      KILN_ADD_FAILURE("%s: took Winograd", i == 0 ? "a 4 MiB range" : "the default targets");
    }
    kiln_gpu_capture_release(&assembly);
  }
}
