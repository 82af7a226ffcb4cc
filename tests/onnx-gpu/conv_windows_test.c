// KxK convs whose windows gemm_coopmat reads from the input in place
// (KILN_SPEC_COOPMAT_CONV_*: no conv_columns copy), under
// --conv-windows, for stride-1 KxK convs of up to 1024 pixels, and
// wherever the columns would pass a binding or 32-bit offsets.
// Compiled-only checks (they run in CI): the packed geometry in
// the executable's name, no columns, no pad or strided copy; geometry past
// the packing keeps the columns. On a device with cooperative matrix (the
// GPU machine; lavapipe skips) every case runs against the C reference
// executor on the fp32 graph within 1e-2 of max|ref|: strides, dilation,
// asymmetric pads, 5x5, the 7x7 stem (K 147), K 4608 in split-K parts of
// whole channels, batch 2, image rows by quads (widths a multiple of 4)
// and value by value (14, 7, odd).
#include <stdio.h>
#include <string.h>

#include "kiln/compiler/onnx_compile.h"
#include "kiln/hal/device.h"
#include "kiln/hal/target_triple.h"
#include "kiln/session.h"
#include "conv_graph.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"
#include "tensor_compare.h"

// Beside the common cases: image rows by quads (widths 16, 28 and 20, the
// window's columns at every place in a quad), batch 2, dilation.
static const kiln_conv_case_t kQuadCases[] = {
    {{2, 16, 16, 16}, {32, 16, 3, 3}, {1, 1, 1, 1}, 1, 1, false, true},
    {{1, 24, 28, 28}, {32, 24, 3, 3}, {1, 1, 1, 1}, 1, 1, true, true},
    {{1, 8, 12, 20}, {16, 8, 3, 3}, {0, 2, 0, 2}, 1, 2, false, false},
};

// Whether case `c` goes through columns at all (a plain 1x1 whose image
// rows are 4-aligned multiplies in place instead).
static bool windows_case_has_columns(const kiln_conv_case_t* c) {
  const bool in_place = c->w[2] == 1 && c->w[3] == 1 && c->stride == 1 &&
                        !(c->pads[0] | c->pads[1] | c->pads[2] | c->pads[3]) &&
                        (c->x[2] * c->x[3]) % 4 == 0;
  return !in_place;
}

// The executable name's suffix the case's packed geometry gives
// (kernels_codes.h: in, kernel, pad, out).
static void windows_case_suffix(const kiln_conv_case_t* c, char* out, size_t size) {
  const int64_t kh = c->w[2], kw = c->w[3], s = c->stride, d = c->dilation;
  const int64_t ow = (c->x[3] + c->pads[1] + c->pads[3] - d * (kw - 1) - 1) / s + 1;
  const uint32_t in = (uint32_t)(c->x[2] | c->x[3] << 16);
  const uint32_t kernel = (uint32_t)(kh | kw << 8 | s << 16 | s << 24);
  const uint32_t pad = (uint32_t)(c->pads[0] | c->pads[1] << 16);
  const uint32_t out_geometry = (uint32_t)(d | d << 8 | ow << 16);
  snprintf(out, size, "_%u_%u_%u_%u", in, kernel, pad, out_geometry);
}

static void windows_options(kiln_onnx_compile_options_t* options, const char** target) {
  kiln_onnx_compile_options_init(options);
  options->precision = KILN_ONNX_PRECISION_F16;
  options->cooperative_matrix = true;
  options->conv_windows = true;
  options->targets = target;
  options->target_count = 1;
}

// Compiled only: case `c` under --conv-windows reads its windows (the
// geometry in a gemm_coopmat executable's name), with no columns, pad or
// strided copy.
static void windows_expect_in_place(const kiln_conv_case_t* c, const char* label) {
  const char* target = "hopper-h100-linux";
  kiln_onnx_compile_options_t options;
  windows_options(&options, &target);
  kiln_gpu_capture_t assembly;
  kiln_conv_case_compile_with(c, &options, &assembly);
  const char* text = assembly.text;
  char suffix[96];
  windows_case_suffix(c, suffix, sizeof(suffix));
  const bool geometry = strstr(text, suffix) != NULL &&
                        (strstr(text, "executable gemm_coopmat_f16") != NULL ||
                         strstr(text, "executable gemm_coopmat_split_f16") != NULL);
  const bool columns = strstr(text, "executable conv_columns") != NULL;
  const bool copy = strstr(text, "executable pad_f16") != NULL ||
                    strstr(text, "executable strided_copy_f16") != NULL;
  if (!geometry || columns || copy) {
    KILN_ADD_FAILURE("%s: windows %s %d, conv_columns %d, pad or strided copy %d", label, suffix,
                     geometry, columns, copy);
  }
  kiln_gpu_capture_release(&assembly);
}

KILN_TEST(OnnxGpuConvWindowsTest, WindowsPackTheGeometry) {
  char label[64];
  for (size_t i = 0; i < kiln_conv_case_count; ++i) {
    if (!windows_case_has_columns(&kiln_conv_cases[i])) continue;
    snprintf(label, sizeof(label), "conv case %zu", i);
    windows_expect_in_place(&kiln_conv_cases[i], label);
  }
  for (size_t i = 0; i < sizeof(kQuadCases) / sizeof(kQuadCases[0]); ++i) {
    snprintf(label, sizeof(label), "quad case %zu", i);
    windows_expect_in_place(&kQuadCases[i], label);
  }
}

// Compiled only, without --conv-windows: columns past 2^32 values (4
// images of 256 channels at 512x512, 3x3: 2.4 G) fit no binding and no
// 32-bit offset, so gemm_coopmat reads the windows (the conv used to fall
// back to conv2d_gemm, SIMT); a strided conv's columns that fit stay
// columns; a stride-1 3x3 at 14x14 reads its windows (the default rule).
KILN_TEST(OnnxGpuConvWindowsTest, WindowsByDefaultWhereFasterOrColumnsPassRange) {
  const kiln_conv_case_t huge = {{4, 256, 512, 512}, {256, 256, 3, 3}, {1, 1, 1, 1}, 1, 1,
                                 false, true};
  kiln_gpu_capture_t assembly;
  kiln_conv_case_compile(&huge, "hopper-h100-linux", KILN_ONNX_PRECISION_F16, true, &assembly);
  char suffix[96];
  windows_case_suffix(&huge, suffix, sizeof(suffix));
  KILN_EXPECT_TRUE(strstr(assembly.text, "executable conv_columns_f16") == NULL);
  KILN_EXPECT_TRUE(strstr(assembly.text, "executable conv2d_gemm_f16") == NULL);
  KILN_EXPECT_TRUE(strstr(assembly.text, suffix) != NULL);
  kiln_gpu_capture_release(&assembly);

  kiln_conv_case_compile(&kiln_conv_cases[1], "hopper-h100-linux", KILN_ONNX_PRECISION_F16, true,
                         &assembly);
  KILN_EXPECT_TRUE(strstr(assembly.text, "executable conv_columns_f16") != NULL);
  kiln_gpu_capture_release(&assembly);
  kiln_conv_case_compile(&kiln_conv_cases[0], "hopper-h100-linux", KILN_ONNX_PRECISION_F16, true,
                         &assembly);
  windows_case_suffix(&kiln_conv_cases[0], suffix, sizeof(suffix));
  KILN_EXPECT_TRUE(strstr(assembly.text, "executable conv_columns_f16") == NULL);
  KILN_EXPECT_TRUE(strstr(assembly.text, suffix) != NULL);
  kiln_gpu_capture_release(&assembly);
}

// Compiled only: a window past the packed constants (a 1x256 kernel: 8
// bits of kernel width), and a reduction past KILN_COOPMAT_WINDOWS_MAX_K
// (2048 channels x 9 taps: windows cannot be split by k chunks for the
// loop budget), keep their columns under --conv-windows.
KILN_TEST(OnnxGpuConvWindowsTest, WindowsPastTheirLimitsKeepColumns) {
  const kiln_conv_case_t cases[2] = {
      {{1, 1, 4, 300}, {16, 1, 1, 256}, {0, 0, 0, 0}, 1, 1, false, false},
      {{1, 2048, 6, 6}, {16, 2048, 3, 3}, {1, 1, 1, 1}, 1, 1, false, false},
  };
  const char* target = "hopper-h100-linux";
  for (size_t i = 0; i < 2; ++i) {
    kiln_onnx_compile_options_t options;
    windows_options(&options, &target);
    kiln_gpu_capture_t assembly;
    kiln_conv_case_compile_with(&cases[i], &options, &assembly);
    if (strstr(assembly.text, "executable conv_columns_f16") == NULL) {
      KILN_ADD_FAILURE("case %zu: no columns", i);
    }
    kiln_gpu_capture_release(&assembly);
  }
}

// The device's triple when it has cooperative matrix; false (and a SKIP
// line) otherwise.
static bool windows_device_triple(char* triple, size_t size) {
  bool has = false;
  KILN_EXPECT_OK(kiln_gpu_coopmat_triple(triple, size, &has));
  return has;
}

static void windows_check(const kiln_conv_case_t* c, const char* triple, const char* label) {
  kiln_graph_t g;
  kiln_conv_case_graph(c, &g);
  kiln_reference_check_t check;
  kiln_reference_check_prepare(&g, 777u, &check);
  kiln_onnx_compile_options_t options;
  windows_options(&options, &triple);
  kiln_gpu_capture_t assembly;
  KILN_ASSERT_OK(kiln_gpu_capture_begin(&options, &assembly));
  kiln_gpu_run_stats_t stats;
  KILN_EXPECT_OK(kiln_gpu_compile_and_run(&g, &options, check.inputs, &check.actual, &stats));
  kiln_gpu_capture_end(&assembly);
  char suffix[96];
  windows_case_suffix(c, suffix, sizeof(suffix));
  if (strstr(assembly.text, suffix) == NULL) {
    KILN_ADD_FAILURE("%s: no executable reads the windows (%s)", label, suffix);
  }
  kiln_gpu_capture_release(&assembly);
  kiln_tensor_expect_relative_error(&check.actual, &check.expected, 1e-2, label);
  kiln_reference_check_release(&check);
  kiln_graph_deinitialize(&g);
}

KILN_TEST(OnnxGpuConvWindowsTest, WindowsMatchReference) {
  char triple[128];
  if (!windows_device_triple(triple, sizeof(triple))) return;
  char label[64];
  for (size_t i = 0; i < kiln_conv_case_count; ++i) {
    if (!windows_case_has_columns(&kiln_conv_cases[i])) continue;
    snprintf(label, sizeof(label), "conv case %zu", i);
    windows_check(&kiln_conv_cases[i], triple, label);
  }
  for (size_t i = 0; i < sizeof(kQuadCases) / sizeof(kQuadCases[0]); ++i) {
    snprintf(label, sizeof(label), "quad case %zu", i);
    windows_check(&kQuadCases[i], triple, label);
  }
}
