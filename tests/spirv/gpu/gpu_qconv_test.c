// qconv2d_gemm (conv2d_gemm reading a quantized weight) on the test device
// against the plain C conv reference over the weights the quant
// reference dequantizer gives for the packed bytes. Tolerance 1e-4 of
// max|ref| (fp32 accumulation over up to 9 x 256 terms of magnitude <= 1).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "kiln/compiler/kernels_params.h"
#include "kiln/compiler/quant.h"
#include "kiln_test.h"
#include "reference/reference.h"

// Channels are multiples of the layout's block (`blocks` x 32, or x 256
// for q4_K) so that K = C_in/groups * KH * KW is a whole number of blocks.
typedef struct qconv_case_t {
  size_t batch, blocks_in, in_h, in_w, out_channels, groups;
  size_t kernel, stride, pad, dilation;
  bool bias, residual;
  uint32_t act;
} qconv_case_t;

// `f16`: qconv2d_gemm_f16 (config's variant): image, bias and residual
// rounded to fp16 and passed as halves, the output read back as halves;
// the reference convolves the rounded values, and one fp16 rounding of
// the result is allowed on top of 1e-4 of max|ref| (rtol 2^-10).
static void run_qconv_case(const char* what, kiln_quant_layout_t layout, const qconv_case_t* k,
                           kiln_kernel_config_t config, bool f16) {
  const size_t block = kiln_quant_block_elements(layout) < 32 ? 32
                                                              : kiln_quant_block_elements(layout);
  ref_conv2d_t c = {.batch = k->batch, .in_channels = k->blocks_in * block * k->groups,
                    .in_h = k->in_h, .in_w = k->in_w, .out_channels = k->out_channels,
                    .groups = k->groups, .kernel_h = k->kernel, .kernel_w = k->kernel,
                    .stride_h = k->stride, .stride_w = k->stride, .pad_top = k->pad,
                    .pad_left = k->pad, .pad_bottom = k->pad, .pad_right = k->pad,
                    .dilation_h = k->dilation, .dilation_w = k->dilation};
  const size_t out_h = ref_conv2d_out_h(&c), out_w = ref_conv2d_out_w(&c);
  const size_t kk = c.in_channels / c.groups * c.kernel_h * c.kernel_w;
  const size_t x_count = c.batch * c.in_channels * c.in_h * c.in_w;
  const size_t w_count = c.out_channels * kk;
  const size_t out_count = c.batch * c.out_channels * out_h * out_w;
  const uint64_t row_bytes = kiln_quant_row_bytes(layout, kk);
  KILN_ASSERT_GT(row_bytes, 0);
  float* x = gpu_random_alloc(x_count, 31, -1, 1);
  float* w = gpu_random_alloc(w_count, 32 + kk, -1, 1);
  float* bias = gpu_random_alloc(c.out_channels, 33, -1, 1);
  float* residual = gpu_random_alloc(out_count, 34, -1, 1);
  float* deq = gpu_alloc(w_count);
  float* want = gpu_alloc(out_count);
  float* got = gpu_alloc(out_count);
  uint16_t *hx = NULL, *hbias = NULL, *hresidual = NULL, *hgot = NULL;
  if (f16) {
    hx = gpu_round_to_halves(x, x_count);
    hbias = gpu_round_to_halves(bias, c.out_channels);
    hresidual = gpu_round_to_halves(residual, out_count);
    hgot = malloc(out_count * 2 + 2);
    KILN_ASSERT_TRUE(hgot != NULL);
  }
  const size_t w_bytes = ((size_t)(c.out_channels * row_bytes) + 4 + 3) & ~(size_t)3;
  uint8_t* packed = calloc(w_bytes, 1);
  KILN_ASSERT_TRUE(packed != NULL);
  KILN_ASSERT_OK(kiln_quant_pack(layout, w, c.out_channels, kk, packed));
  KILN_ASSERT_OK(kiln_quant_unpack(layout, packed, c.out_channels, kk, deq));
  ref_conv2d(&c, x, deq, k->bias ? bias : NULL, k->residual ? residual : NULL, k->act, 0, 6,
             want);
  double max_ref = 0;
  for (size_t i = 0; i < out_count; ++i) max_ref = fmax(max_ref, fabs(want[i]));
  kiln_kernel_conv2d_attrs_t attrs = {
      (int64_t)c.batch, (int64_t)c.in_channels, (int64_t)c.in_h, (int64_t)c.in_w,
      (int64_t)c.out_channels, (int64_t)c.groups, (int64_t)c.kernel_h, (int64_t)c.kernel_w,
      (int64_t)c.stride_h, (int64_t)c.stride_w, (int64_t)c.pad_top, (int64_t)c.pad_left,
      (int64_t)c.pad_bottom, (int64_t)c.pad_right, (int64_t)c.dilation_h,
      (int64_t)c.dilation_w, 0, 0};
  kiln_kernel_conv2d_params_t p;
  memset(&p, 0, sizeof(p));
  KILN_ASSERT_OK(kiln_kernel_params_conv2d(&attrs, 0, 6, &p));
  KILN_ASSERT_EQ(p.out_height, out_h);
  KILN_ASSERT_EQ(p.out_width, out_w);
  KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_QGEMM_LAYOUT, layout));
  KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_ACTIVATION, k->act));
  KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_HAS_BIAS, k->bias));
  KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_HAS_RESIDUAL, k->residual));
  uint32_t grid[3];
  KILN_ASSERT_OK(kiln_kernel_grid_conv2d_gemm(&config, &p, grid));
  const size_t fb = f16 ? 2 : 4;
  gpu_arg_t args[5] = {{f16 ? (const void*)hx : x, x_count * fb},
                       {packed, w_bytes},
                       {f16 ? (const void*)hbias : bias, c.out_channels * fb},
                       {f16 ? (const void*)hresidual : residual, out_count * fb},
                       {NULL, out_count * fb}};
  gpu_run(KILN_KERNEL_QCONV2D_GEMM, config.variant, &config, &p, sizeof(p), args, 5, 4,
          f16 ? (void*)hgot : got, out_count * fb, grid);
  for (size_t i = 0; f16 && i < out_count; ++i) got[i] = gpu_half_to_float(hgot[i]);
  gpu_expect_close(what, got, want, out_count, 1e-4 * max_ref, f16 ? 1.0 / 1024 : 0);
  free(hx);
  free(hbias);
  free(hresidual);
  free(hgot);
  free(x);
  free(w);
  free(bias);
  free(residual);
  free(deq);
  free(want);
  free(got);
  free(packed);
}

// K of one block (1x1 over one block of channels) and of many (3x3:
// 9 blocks and more); output channels and pixels not multiples of the
// tile; stride, pad, dilation, groups, batches, every epilogue.
static const qconv_case_t kCases[] = {
    {1, 1, 5, 6, 13, 1, 1, 1, 0, 1, true, false, KILN_ACT_NONE},
    {1, 1, 9, 9, 19, 1, 3, 2, 1, 1, true, true, KILN_ACT_RELU},
    {2, 1, 7, 8, 9, 1, 3, 1, 2, 2, false, true, KILN_ACT_CLIP},
    {1, 2, 6, 5, 70, 1, 1, 1, 0, 1, true, false, KILN_ACT_GELU},
    {1, 1, 6, 6, 10, 2, 3, 1, 1, 1, true, false, KILN_ACT_RELU},
};

// The CPU-like, H100 and portable targets' tilings (those the device can
// run), every layout; `storage` FP16: the qconv2d_gemm_f16 build.
static void run_qconv_every_arch(kiln_kernel_storage_t storage) {
  const bool f16 = storage == KILN_KERNEL_STORAGE_FP16;
  const char* arches[] = {"cpu", "hopper", "unknown"};
  const kiln_quant_layout_t layouts[] = {KILN_QUANT_INT8, KILN_QUANT_Q8_0, KILN_QUANT_Q4_0,
                                         KILN_QUANT_Q4_K};
  const kiln_kernel_arch_caps_t* device = kiln_vk_harness_caps(gpu_harness());
  size_t ran = 0;
  for (size_t a = 0; a < sizeof(arches) / sizeof(arches[0]); ++a) {
    kiln_kernel_arch_caps_t caps;
    KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch(arches[a], &caps));
    caps.fp16_storage = caps.fp16_storage || f16;
    kiln_kernel_config_t config;
    KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_QCONV2D_GEMM, &caps, storage, &config));
    KILN_ASSERT_EQ(config.variant,
                   f16 ? KILN_KERNEL_VARIANT_FP16_STORAGE : KILN_KERNEL_VARIANT_FP32);
    if (config.workgroup_size[0] * config.workgroup_size[1] > device->max_workgroup_invocations ||
        config.shared_memory_bytes > device->max_shared_memory_bytes) {
      continue;
    }
    for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]); ++l) {
      for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
        // Pipelines are built per case and CI has 2 cores: the geometry
        // cases once (q4_0, CPU tiling), every layout on cases 0-1 there
        // and on case 1 at the GPU tilings.
        // f16: case 1 only for the other layouts, q4_0 only at the GPU
        // tilings (the f16 build differs in the image, bias, residual and
        // output, not in the decoders).
        const bool all = a == 0 && layouts[l] == KILN_QUANT_Q4_0;
        const bool some = f16 ? i == 1 && (a == 0 || layouts[l] == KILN_QUANT_Q4_0)
                              : (a == 0 ? i <= 1 : i == 1);
        if (!all && !some) continue;
        char what[96];
        snprintf(what, sizeof(what), "qconv2d_gemm%s %s case %zu, %s config",
                 f16 ? "_f16" : "", kiln_quant_layout_name(layouts[l]), i, arches[a]);
        run_qconv_case(what, layouts[l], &kCases[i], config, f16);
        ++ran;
      }
    }
  }
  KILN_EXPECT_GT(ran, 0);
}

KILN_TEST(GpuQconvTest, EveryLayoutEveryArch) { run_qconv_every_arch(KILN_KERNEL_STORAGE_FP32); }

// --precision=f16 convs: the same cases on qconv2d_gemm_f16 (devices with
// 16-bit storage).
KILN_TEST(GpuQconvTest, F16EveryLayoutEveryArch) {
  if (!kiln_vk_harness_caps(gpu_harness())->fp16_storage) return;
  run_qconv_every_arch(KILN_KERNEL_STORAGE_FP16);
}
