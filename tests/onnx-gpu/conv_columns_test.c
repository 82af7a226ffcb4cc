// KxK convs as columns and the SIMT gemm (issue 16): on desktop GPUs
// without tensor cores (or with them turned off) conv_columns gathers a
// conv's windows and gemm / gemm_small multiplies, where the columns take
// at most 128 MiB (kiln_lower_conv_columns); larger columns, and every conv
// of mobile and CPU targets, stay on conv2d_gemm (implicit GEMM).
// Modules for a desktop triple (ampere-rtx3080-windows) run on lavapipe
// posing as that device, checked against the C reference executor: fp32
// within 1e-6 * sqrt(K) * max|ref| (K the reduction length), fp16 storage
// within 1e-2 of max|ref|. Each run also checks the module's kernels.
#include <stdio.h>
#include <string.h>

#include "kiln/compiler/onnx_compile.h"
#include "kiln/hal/device.h"
#include "kiln/session.h"
#include "conv_graph.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"
#include "tensor_compare.h"

static const char kDesktop[] = "ampere-rtx3080-windows";

// Sizes whose products fill an ampere's 108 units with blocks of the
// small tiling, whose 17 KiB of shared memory fit lavapipe's 32 (narrower
// blocks with k split inside the workgroup take up to 48).
static const kiln_conv_case_t kCases[] = {
    // ResNet's 3x3 at 14x14 (rows of 196 padded to 200), relu.
    {{9, 64, 14, 14}, {128, 64, 3, 3}, {1, 1, 1, 1}, 1, 1, false, true},
    // stride 2, dilation 2, asymmetric pads, odd sizes.
    {{20, 32, 33, 35}, {64, 32, 3, 3}, {1, 0, 2, 1}, 2, 2, false, false},
    // 5x5 (K 400), no pads, residual + relu.
    {{8, 16, 36, 36}, {64, 16, 5, 5}, {0, 0, 0, 0}, 1, 1, true, true},
    // 3x3 at 7x7 (rows of 49) with 128 channels: K 1152.
    {{36, 128, 7, 7}, {128, 128, 3, 3}, {1, 1, 1, 1}, 1, 1, false, true},
    // 61 input channels: K 549, rows of A off every alignment.
    {{10, 61, 19, 21}, {64, 61, 3, 3}, {1, 1, 1, 1}, 1, 1, true, false},
    // A ResNet stem: 7x7 over 3 channels, stride 2 (K 147), the weight a
    // constant.
    {{5, 3, 64, 62}, {64, 3, 7, 7}, {3, 3, 3, 3}, 2, 1, false, true, true},
};

// Case `c` compiled for `target` with SIMT kernels only.
static void conv_compile(const kiln_conv_case_t* c, const char* target,
                         kiln_onnx_precision_t precision, kiln_gpu_capture_t* assembly) {
  kiln_conv_case_compile(c, target, precision, false, assembly);
}

// Whether `text` gathers columns once and multiplies them on the SIMT gemm
// (and not on conv2d_gemm); reports what it found under `label`.
static bool conv_on_columns(const char* text, const char* label) {
  const size_t columns = kiln_gpu_text_count(text, "# executable 'conv_columns");
  const bool gemm = strstr(text, "# executable 'gemm_") != NULL;
  const bool implicit = strstr(text, "# executable 'conv2d_gemm") != NULL;
  fprintf(stderr, "%s: conv_columns %zu, gemm %d, conv2d_gemm %d\n", label, columns, gemm,
          implicit);
  return columns == 1 && gemm && !implicit;
}

// Case `c` for the desktop triple: on columns, and right when run on the
// test device posing as that triple.
static void conv_check(const kiln_conv_case_t* c, kiln_onnx_precision_t precision) {
  const bool f16 = precision == KILN_ONNX_PRECISION_F16;
  char label[128];
  snprintf(label, sizeof(label), "conv %lldx%lld, %lld -> %lld channels, batch %lld%s",
           (long long)c->w[2], (long long)c->w[3], (long long)c->w[1], (long long)c->w[0],
           (long long)c->x[0], f16 ? " (f16)" : "");
  kiln_gpu_capture_t assembly;
  conv_compile(c, kDesktop, precision, &assembly);
  if (!conv_on_columns(assembly.text, label)) KILN_ADD_FAILURE("%s: not on columns", label);
  kiln_gpu_capture_release(&assembly);

  kiln_conv_case_check_posed(c, kDesktop, precision, 9001u, label);
}

KILN_TEST(OnnxGpuConvColumnsTest, KxKConvsOnDesktopGpusMatchReference) {
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
    conv_check(&kCases[i], KILN_ONNX_PRECISION_F32);
  }
}

KILN_TEST(OnnxGpuConvColumnsTest, Fp16StorageWithoutTensorCores) {
  conv_check(&kCases[0], KILN_ONNX_PRECISION_F16);
  conv_check(&kCases[5], KILN_ONNX_PRECISION_F16);
}

// On a device with a desktop GPU's 48 KiB of shared memory (the GPU
// machine); lavapipe, with 32, skips.
KILN_TEST(OnnxGpuConvColumnsTest, SmallKxKConvsOnDeviceWithDesktopSharedMemory) {
  kiln_session_t* session = NULL;
  KILN_ASSERT_OK(kiln_gpu_open(&session));
  const kiln_hal_device_info_t* info = kiln_hal_device_info(kiln_session_device(session));
  const uint32_t shared = info->limits.max_shared_memory_bytes;
  if (shared < 48u * 1024u) {
    fprintf(stderr, "SKIPPED: device '%s' has %u bytes of shared memory, not 48 KiB\n",
            info->name, shared);
  }
  kiln_session_destroy(session);
  if (shared < 48u * 1024u) return;
  // The lowering tests' common cases (batch 1 and 2: few blocks, so
  // narrow tilings with k split inside the workgroup, up to 48 KiB of
  // shared memory, and in parts summed after), KxK ones: 1x1s stay gemms.
  for (size_t i = 0; i < kiln_conv_case_count; ++i) {
    const kiln_conv_case_t* c = &kiln_conv_cases[i];
    if (c->w[2] * c->w[3] > 1) conv_check(c, KILN_ONNX_PRECISION_F32);
  }
}

// Compiled only: columns past 128 MiB (ResNet-50 batch 32's 3x3 at 56x56:
// 231 MB of fp32 columns) ran slower than conv2d_gemm on an H100, so the
// conv keeps it; so does every conv on a mobile GPU and in the default
// (multi-target, CPU included) module.
KILN_TEST(OnnxGpuConvColumnsTest, LargeColumnsAndOtherTargetsKeepImplicitGemm) {
  const kiln_conv_case_t large = {{32, 64, 56, 56}, {64, 64, 3, 3}, {1, 1, 1, 1}, 1, 1,
                                  false, true};
  const struct {
    const kiln_conv_case_t* conv;
    const char* target;
  } kKept[] = {{&large, kDesktop}, {&kCases[0], "valhall-g78-android30"}};
  for (size_t i = 0; i < sizeof(kKept) / sizeof(kKept[0]); ++i) {
    kiln_gpu_capture_t assembly;
    conv_compile(kKept[i].conv, kKept[i].target, KILN_ONNX_PRECISION_F32, &assembly);
    const bool implicit = strstr(assembly.text, "# executable 'conv2d_gemm") != NULL;
    const bool columns = strstr(assembly.text, "# executable 'conv_columns") != NULL;
    if (!implicit || columns) {
      KILN_ADD_FAILURE("case %zu for %s: conv2d_gemm %d, conv_columns %d", i, kKept[i].target,
                       implicit, columns);
    }
    kiln_gpu_capture_release(&assembly);
  }
  // The default targets.
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  kiln_gpu_capture_t assembly;
  kiln_conv_case_compile_with(&kCases[0], &options, &assembly);
  KILN_EXPECT_TRUE(strstr(assembly.text, "# executable 'conv2d_gemm") != NULL);
  KILN_EXPECT_TRUE(strstr(assembly.text, "# executable 'conv_columns") == NULL);
  kiln_gpu_capture_release(&assembly);
}
