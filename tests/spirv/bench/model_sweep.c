// kiln-kernels-bench --shapes=models: every GEMM / conv / depthwise shape of
// MobileNetV2, ResNet-18, ResNet-50 and EfficientNet-B0 at batch 1, 224x224
// (issue 16's bench models, enumerated from their architectures), and the
// linear layers and patch embedding of BERT-base (128 tokens) and ViT-B/16
// (197 tokens), which the occupancy-aware choice also reaches; each
// timed under the tiling the lowering used before the occupancy-aware
// choice ("old": gemm_small's 64x64 / conv2d_gemm's small tiling), under
// every occupancy candidate (kernels_gemm_tuning.h) and under the one
// kiln_kernel_config_select_shape picks ("pick"); depthwise convs at 64,
// 128 and 256 invocations per workgroup. One row per shape: microseconds
// per dispatch (median of SWEEP_REPS, timestamps where the device has
// them), the fastest column, and per-model totals weighted by how often
// each shape occurs. Every result is checked at sampled outputs (all of
// them for small shapes) against double sums (1e-4 of max |ref|).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/gemm_sweep.h"
#include "kiln/compiler/kernels_gemm_tuning.h"

#define MODEL_SAMPLES 256
#define MODEL_COUNT 6
#define MODEL_MAX_CONFIGS 24

typedef enum { MODEL_GEMM, MODEL_CONV, MODEL_DW } model_kind_t;

typedef struct model_shape_t {
  model_kind_t kind;  // GEMM: a 1x1 stride-1 conv (m = C_out, n = H*W, k = C_in)
  uint32_t cin, cout, kernel, stride, h;  // square input h x h, pad kernel / 2
  uint8_t count[MODEL_COUNT];             // occurrences per model
  uint32_t n;  // GEMM: n when not h * h (linear layers: m = C_out = tokens)
} model_shape_t;

static const char* const kModels[MODEL_COUNT] = {"resnet18", "resnet50", "mobilenetv2",
                                                 "efficientnet-b0", "bert-base", "vit-b16"};

static const model_shape_t kModelShapes[] = {
    {MODEL_CONV, 3, 64, 7, 2, 224, {1, 1, 0, 0, 0, 0}, 0},
    {MODEL_CONV, 64, 64, 3, 1, 56, {4, 3, 0, 0, 0, 0}, 0},
    {MODEL_CONV, 64, 128, 3, 2, 56, {1, 0, 0, 0, 0, 0}, 0},
    {MODEL_CONV, 128, 128, 3, 1, 28, {3, 3, 0, 0, 0, 0}, 0},
    {MODEL_CONV, 64, 128, 1, 2, 56, {1, 0, 0, 0, 0, 0}, 0},
    {MODEL_CONV, 128, 256, 3, 2, 28, {1, 0, 0, 0, 0, 0}, 0},
    {MODEL_CONV, 256, 256, 3, 1, 14, {3, 5, 0, 0, 0, 0}, 0},
    {MODEL_CONV, 128, 256, 1, 2, 28, {1, 0, 0, 0, 0, 0}, 0},
    {MODEL_CONV, 256, 512, 3, 2, 14, {1, 0, 0, 0, 0, 0}, 0},
    {MODEL_CONV, 512, 512, 3, 1, 7, {3, 2, 0, 0, 0, 0}, 0},
    {MODEL_CONV, 256, 512, 1, 2, 14, {1, 0, 0, 0, 0, 0}, 0},
    {MODEL_GEMM, 64, 64, 1, 1, 56, {0, 1, 0, 0, 0, 0}, 0},
    {MODEL_GEMM, 64, 256, 1, 1, 56, {0, 4, 0, 0, 0, 0}, 0},
    {MODEL_GEMM, 256, 64, 1, 1, 56, {0, 2, 0, 0, 0, 0}, 0},
    {MODEL_GEMM, 256, 128, 1, 1, 56, {0, 1, 0, 0, 0, 0}, 0},
    {MODEL_CONV, 128, 128, 3, 2, 56, {0, 1, 0, 0, 0, 0}, 0},
    {MODEL_GEMM, 128, 512, 1, 1, 28, {0, 4, 0, 0, 0, 0}, 0},
    {MODEL_CONV, 256, 512, 1, 2, 56, {0, 1, 0, 0, 0, 0}, 0},
    {MODEL_GEMM, 512, 128, 1, 1, 28, {0, 3, 0, 0, 0, 0}, 0},
    {MODEL_GEMM, 512, 256, 1, 1, 28, {0, 1, 0, 0, 0, 0}, 0},
    {MODEL_CONV, 256, 256, 3, 2, 28, {0, 1, 0, 0, 0, 0}, 0},
    {MODEL_GEMM, 256, 1024, 1, 1, 14, {0, 6, 0, 0, 0, 0}, 0},
    {MODEL_CONV, 512, 1024, 1, 2, 28, {0, 1, 0, 0, 0, 0}, 0},
    {MODEL_GEMM, 1024, 256, 1, 1, 14, {0, 5, 0, 0, 0, 0}, 0},
    {MODEL_GEMM, 1024, 512, 1, 1, 14, {0, 1, 0, 0, 0, 0}, 0},
    {MODEL_CONV, 512, 512, 3, 2, 14, {0, 1, 0, 0, 0, 0}, 0},
    {MODEL_GEMM, 512, 2048, 1, 1, 7, {0, 3, 0, 0, 0, 0}, 0},
    {MODEL_CONV, 1024, 2048, 1, 2, 14, {0, 1, 0, 0, 0, 0}, 0},
    {MODEL_GEMM, 2048, 512, 1, 1, 7, {0, 2, 0, 0, 0, 0}, 0},
    {MODEL_CONV, 3, 32, 3, 2, 224, {0, 0, 1, 1, 0, 0}, 0},
    {MODEL_DW, 32, 32, 3, 1, 112, {0, 0, 1, 1, 0, 0}, 0},
    {MODEL_GEMM, 32, 16, 1, 1, 112, {0, 0, 1, 1, 0, 0}, 0},
    {MODEL_GEMM, 16, 96, 1, 1, 112, {0, 0, 1, 1, 0, 0}, 0},
    {MODEL_DW, 96, 96, 3, 2, 112, {0, 0, 1, 1, 0, 0}, 0},
    {MODEL_GEMM, 96, 24, 1, 1, 56, {0, 0, 1, 1, 0, 0}, 0},
    {MODEL_GEMM, 24, 144, 1, 1, 56, {0, 0, 2, 2, 0, 0}, 0},
    {MODEL_DW, 144, 144, 3, 1, 56, {0, 0, 1, 1, 0, 0}, 0},
    {MODEL_GEMM, 144, 24, 1, 1, 56, {0, 0, 1, 1, 0, 0}, 0},
    {MODEL_DW, 144, 144, 3, 2, 56, {0, 0, 1, 0, 0, 0}, 0},
    {MODEL_GEMM, 144, 32, 1, 1, 28, {0, 0, 1, 0, 0, 0}, 0},
    {MODEL_GEMM, 32, 192, 1, 1, 28, {0, 0, 3, 0, 0, 0}, 0},
    {MODEL_DW, 192, 192, 3, 1, 28, {0, 0, 2, 0, 0, 0}, 0},
    {MODEL_GEMM, 192, 32, 1, 1, 28, {0, 0, 2, 0, 0, 0}, 0},
    {MODEL_DW, 192, 192, 3, 2, 28, {0, 0, 1, 0, 0, 0}, 0},
    {MODEL_GEMM, 192, 64, 1, 1, 14, {0, 0, 1, 0, 0, 0}, 0},
    {MODEL_GEMM, 64, 384, 1, 1, 14, {0, 0, 4, 0, 0, 0}, 0},
    {MODEL_DW, 384, 384, 3, 1, 14, {0, 0, 4, 0, 0, 0}, 0},
    {MODEL_GEMM, 384, 64, 1, 1, 14, {0, 0, 3, 0, 0, 0}, 0},
    {MODEL_GEMM, 384, 96, 1, 1, 14, {0, 0, 1, 0, 0, 0}, 0},
    {MODEL_GEMM, 96, 576, 1, 1, 14, {0, 0, 3, 0, 0, 0}, 0},
    {MODEL_DW, 576, 576, 3, 1, 14, {0, 0, 2, 0, 0, 0}, 0},
    {MODEL_GEMM, 576, 96, 1, 1, 14, {0, 0, 2, 0, 0, 0}, 0},
    {MODEL_DW, 576, 576, 3, 2, 14, {0, 0, 1, 0, 0, 0}, 0},
    {MODEL_GEMM, 576, 160, 1, 1, 7, {0, 0, 1, 0, 0, 0}, 0},
    {MODEL_GEMM, 160, 960, 1, 1, 7, {0, 0, 3, 0, 0, 0}, 0},
    {MODEL_DW, 960, 960, 3, 1, 7, {0, 0, 3, 0, 0, 0}, 0},
    {MODEL_GEMM, 960, 160, 1, 1, 7, {0, 0, 2, 0, 0, 0}, 0},
    {MODEL_GEMM, 960, 320, 1, 1, 7, {0, 0, 1, 0, 0, 0}, 0},
    {MODEL_GEMM, 320, 1280, 1, 1, 7, {0, 0, 1, 1, 0, 0}, 0},
    {MODEL_GEMM, 32, 8, 1, 1, 1, {0, 0, 0, 1, 0, 0}, 0},
    {MODEL_GEMM, 8, 32, 1, 1, 1, {0, 0, 0, 1, 0, 0}, 0},
    {MODEL_GEMM, 96, 4, 1, 1, 1, {0, 0, 0, 1, 0, 0}, 0},
    {MODEL_GEMM, 4, 96, 1, 1, 1, {0, 0, 0, 1, 0, 0}, 0},
    {MODEL_GEMM, 144, 6, 1, 1, 1, {0, 0, 0, 2, 0, 0}, 0},
    {MODEL_GEMM, 6, 144, 1, 1, 1, {0, 0, 0, 2, 0, 0}, 0},
    {MODEL_DW, 144, 144, 5, 2, 56, {0, 0, 0, 1, 0, 0}, 0},
    {MODEL_GEMM, 144, 40, 1, 1, 28, {0, 0, 0, 1, 0, 0}, 0},
    {MODEL_GEMM, 40, 240, 1, 1, 28, {0, 0, 0, 2, 0, 0}, 0},
    {MODEL_DW, 240, 240, 5, 1, 28, {0, 0, 0, 1, 0, 0}, 0},
    {MODEL_GEMM, 240, 10, 1, 1, 1, {0, 0, 0, 2, 0, 0}, 0},
    {MODEL_GEMM, 10, 240, 1, 1, 1, {0, 0, 0, 2, 0, 0}, 0},
    {MODEL_GEMM, 240, 40, 1, 1, 28, {0, 0, 0, 1, 0, 0}, 0},
    {MODEL_DW, 240, 240, 3, 2, 28, {0, 0, 0, 1, 0, 0}, 0},
    {MODEL_GEMM, 240, 80, 1, 1, 14, {0, 0, 0, 1, 0, 0}, 0},
    {MODEL_GEMM, 80, 480, 1, 1, 14, {0, 0, 0, 3, 0, 0}, 0},
    {MODEL_DW, 480, 480, 3, 1, 14, {0, 0, 0, 2, 0, 0}, 0},
    {MODEL_GEMM, 480, 20, 1, 1, 1, {0, 0, 0, 3, 0, 0}, 0},
    {MODEL_GEMM, 20, 480, 1, 1, 1, {0, 0, 0, 3, 0, 0}, 0},
    {MODEL_GEMM, 480, 80, 1, 1, 14, {0, 0, 0, 2, 0, 0}, 0},
    {MODEL_DW, 480, 480, 5, 1, 14, {0, 0, 0, 1, 0, 0}, 0},
    {MODEL_GEMM, 480, 112, 1, 1, 14, {0, 0, 0, 1, 0, 0}, 0},
    {MODEL_GEMM, 112, 672, 1, 1, 14, {0, 0, 0, 3, 0, 0}, 0},
    {MODEL_DW, 672, 672, 5, 1, 14, {0, 0, 0, 2, 0, 0}, 0},
    {MODEL_GEMM, 672, 28, 1, 1, 1, {0, 0, 0, 3, 0, 0}, 0},
    {MODEL_GEMM, 28, 672, 1, 1, 1, {0, 0, 0, 3, 0, 0}, 0},
    {MODEL_GEMM, 672, 112, 1, 1, 14, {0, 0, 0, 2, 0, 0}, 0},
    {MODEL_DW, 672, 672, 5, 2, 14, {0, 0, 0, 1, 0, 0}, 0},
    {MODEL_GEMM, 672, 192, 1, 1, 7, {0, 0, 0, 1, 0, 0}, 0},
    {MODEL_GEMM, 192, 1152, 1, 1, 7, {0, 0, 0, 4, 0, 0}, 0},
    {MODEL_DW, 1152, 1152, 5, 1, 7, {0, 0, 0, 3, 0, 0}, 0},
    {MODEL_GEMM, 1152, 48, 1, 1, 1, {0, 0, 0, 4, 0, 0}, 0},
    {MODEL_GEMM, 48, 1152, 1, 1, 1, {0, 0, 0, 4, 0, 0}, 0},
    {MODEL_GEMM, 1152, 192, 1, 1, 7, {0, 0, 0, 3, 0, 0}, 0},
    {MODEL_DW, 1152, 1152, 3, 1, 7, {0, 0, 0, 1, 0, 0}, 0},
    {MODEL_GEMM, 1152, 320, 1, 1, 7, {0, 0, 0, 1, 0, 0}, 0},
    // Linear layers as C[tokens][out] = X[tokens][in] x W[in][out]: m =
    // tokens (cout), k = in (cin), n = out; 12 layers each.
    {MODEL_GEMM, 768, 128, 1, 1, 0, {0, 0, 0, 0, 12, 0}, 2304},
    {MODEL_GEMM, 768, 128, 1, 1, 0, {0, 0, 0, 0, 12, 0}, 768},
    {MODEL_GEMM, 768, 128, 1, 1, 0, {0, 0, 0, 0, 12, 0}, 3072},
    {MODEL_GEMM, 3072, 128, 1, 1, 0, {0, 0, 0, 0, 12, 0}, 768},
    {MODEL_GEMM, 768, 197, 1, 1, 0, {0, 0, 0, 0, 0, 12}, 2304},
    {MODEL_GEMM, 768, 197, 1, 1, 0, {0, 0, 0, 0, 0, 12}, 768},
    {MODEL_GEMM, 768, 197, 1, 1, 0, {0, 0, 0, 0, 0, 12}, 3072},
    {MODEL_GEMM, 3072, 197, 1, 1, 0, {0, 0, 0, 0, 0, 12}, 768},
    {MODEL_CONV, 3, 768, 16, 16, 224, {0, 0, 0, 0, 0, 1}, 0},
};

// Output side (convs; pad kernel / 2 except the 16x16 patch embedding).
static uint32_t model_pad(const model_shape_t* s) { return s->kernel % 2 ? s->kernel / 2 : 0; }
static uint32_t model_out(const model_shape_t* s) {
  return (s->h + 2 * model_pad(s) - s->kernel) / s->stride + 1;
}
// Output values per channel (GEMM: n).
static uint32_t model_pixels(const model_shape_t* s) {
  return s->kind == MODEL_GEMM && s->n ? s->n : model_out(s) * model_out(s);
}

static kiln_kernel_conv2d_params_t model_conv(const model_shape_t* s) {
  kiln_kernel_conv2d_params_t p;
  memset(&p, 0, sizeof(p));
  const uint32_t o = model_out(s);
  p.batch = 1, p.in_channels = s->cin, p.in_height = s->h, p.in_width = s->h;
  p.out_channels = s->cout, p.out_height = o, p.out_width = o;
  p.groups = s->kind == MODEL_DW ? s->cin : 1;
  p.kernel_h = p.kernel_w = s->kernel, p.stride_h = p.stride_w = s->stride;
  p.pad_top = p.pad_left = model_pad(s), p.dilation_h = p.dilation_w = 1;
  return p;
}

static kiln_kernel_gemm_params_t model_gemm(const model_shape_t* s) {
  kiln_kernel_gemm_params_t p;
  memset(&p, 0, sizeof(p));
  const uint32_t hw = model_pixels(s);
  p.m = s->cout, p.n = hw, p.k = s->cin, p.batch = 1;
  p.a_row_stride = s->cin, p.a_col_stride = 1;
  p.b_batch_stride = s->cin * hw, p.b_row_stride = hw, p.b_col_stride = 1;
  p.c_batch_stride = s->cout * hw, p.c_row_stride = hw, p.scale = 1.0f;
  return p;
}

// Output (co, pixel) in double; x is [cin][h][h], w [cout][cin/groups][k][k].
static double model_ref_at(const model_shape_t* s, const float* x, const float* w, size_t co,
                           size_t pix) {
  if (s->kind == MODEL_GEMM) {  // w [m][k] x x [k][n]
    double sum = 0;
    for (size_t c = 0; c < s->cin; ++c) {
      sum += (double)w[co * s->cin + c] * x[c * model_pixels(s) + pix];
    }
    return sum;
  }
  const uint32_t o = model_out(s), pad = model_pad(s);
  const size_t oy = pix / o, ox = pix % o;
  const size_t cig = s->kind == MODEL_DW ? 1 : s->cin;
  const size_t c0 = s->kind == MODEL_DW ? co : 0;
  double sum = 0;
  for (size_t c = 0; c < cig; ++c) {
    for (size_t kh = 0; kh < s->kernel; ++kh) {
      for (size_t kw = 0; kw < s->kernel; ++kw) {
        long iy = (long)(oy * s->stride + kh) - (long)pad;
        long ix = (long)(ox * s->stride + kw) - (long)pad;
        if (iy < 0 || ix < 0 || iy >= (long)s->h || ix >= (long)s->h) continue;
        sum += (double)w[((co * cig + c) * s->kernel + kh) * s->kernel + kw] *
               x[((c0 + c) * s->h + (size_t)iy) * s->h + (size_t)ix];
      }
    }
  }
  return sum;
}

static float* model_values(size_t count, uint32_t seed) {
  float* values = malloc((count ? count : 1) * sizeof(float));
  if (!values) abort();
  uint32_t state = seed * 2654435761u + 7u;
  for (size_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    values[i] = (float)((state >> 8) * (2.0 / 16777216.0) - 1.0);
  }
  return values;
}

typedef struct model_config_t {
  char label[24];
  kiln_kernel_config_t config;
  bool usable;  // fits the arch's caps
} model_config_t;

// The columns of one shape kind: old, the candidates, (depthwise: 3
// workgroup sizes).
static size_t model_configs(model_kind_t kind, const kiln_kernel_arch_caps_t* caps,
                            model_config_t* out) {
  size_t count = 0;
  const kiln_kernel_id_t kernel = kind == MODEL_CONV ? KILN_KERNEL_CONV2D_GEMM
                                                     : KILN_KERNEL_GEMM_SMALL;
  if (kind == MODEL_DW) {
    static const uint32_t kWg[] = {256, 128, 64};
    for (size_t i = 0; i < 3; ++i) {
      model_config_t* c = &out[count++];
      memset(c, 0, sizeof(*c));
      c->usable = !kiln_kernel_config_select(KILN_KERNEL_DEPTHWISE_CONV2D, caps,
                                             KILN_KERNEL_STORAGE_FP32, &c->config);
      c->config.workgroup_size[0] = kWg[i];
      c->usable = c->usable && !kiln_kernel_config_set_spec(&c->config, KILN_SPEC_WORKGROUP_X,
                                                            kWg[i]);
      snprintf(c->label, sizeof(c->label), "wg%u", kWg[i]);
    }
    return count;
  }
  model_config_t* old = &out[count++];
  memset(old, 0, sizeof(*old));
  snprintf(old->label, sizeof(old->label), "old");
  old->usable = !kiln_kernel_config_select(kernel, caps, KILN_KERNEL_STORAGE_FP32, &old->config);
  for (size_t i = 0; i < kiln_kernel_gemm_occupancy_candidate_count() && count < MODEL_MAX_CONFIGS;
       ++i) {
    const kiln_kernel_gemm_tiling_t* t = kiln_kernel_gemm_occupancy_candidate(i);
    model_config_t* c = &out[count++];
    memset(c, 0, sizeof(*c));
    snprintf(c->label, sizeof(c->label), "c%zu", i);
    c->usable = !kiln_kernel_config_select(kernel, caps, KILN_KERNEL_STORAGE_FP32, &c->config) &&
                !kiln_kernel_gemm_tiling_apply(t, caps, &c->config) &&
                !kiln_kernel_config_set_spec(&c->config, KILN_SPEC_WORKGROUP_X,
                                             c->config.workgroup_size[0]) &&
                !kiln_kernel_config_set_spec(&c->config, KILN_SPEC_WORKGROUP_Y,
                                             c->config.workgroup_size[1]);
  }
  return count;
}

// Times `config` on shape `s` (buffers: x or A, w or B, bias, residual,
// out) and checks it; *out_us < 0 when it failed the check.
static kiln_status_t model_time(kiln_hal_device_t* device, const model_shape_t* s,
                                const kiln_kernel_executable_t* kernel,
                                kiln_hal_buffer_t* const* buffers, const float* x,
                                const float* w, float* got, double* out_us, double* out_err) {
  const size_t pixels = model_pixels(s);
  const size_t c_count = (size_t)s->cout * pixels;
  for (size_t i = 0; i < c_count; ++i) got[i] = NAN;
  KILN_RETURN_IF_ERROR(
      kiln_hal_device_write_buffer(device, buffers[4], 0, got, c_count * sizeof(float)));
  kiln_kernel_gemm_params_t gemm = model_gemm(s);
  kiln_kernel_conv2d_params_t conv = model_conv(s);
  uint32_t grid[3];
  if (s->kind == MODEL_GEMM) {
    KILN_RETURN_IF_ERROR(kiln_kernel_grid_gemm(&kernel->config, &gemm, grid));
  } else if (s->kind == MODEL_CONV) {
    KILN_RETURN_IF_ERROR(kiln_kernel_grid_conv2d_gemm(&kernel->config, &conv, grid));
  } else {
    KILN_RETURN_IF_ERROR(kiln_kernel_grid_linear(&kernel->config, c_count, grid));
  }
  double ns = 0;
  KILN_RETURN_IF_ERROR(kiln_bench_sweep_time(
      device, kernel, s->kind == MODEL_GEMM ? (const void*)&gemm : (const void*)&conv,
      s->kind == MODEL_GEMM ? sizeof(gemm) : sizeof(conv), buffers, grid, &ns));
  KILN_RETURN_IF_ERROR(
      kiln_hal_device_read_buffer(device, buffers[4], 0, got, c_count * sizeof(float)));
  const bool full = c_count <= MODEL_SAMPLES;
  double worst = 0, scale = 1e-30;
  double refs[MODEL_SAMPLES];
  size_t at[MODEL_SAMPLES];
  const size_t samples = full ? c_count : MODEL_SAMPLES;
  uint32_t state = 99;
  for (size_t i = 0; i < samples; ++i) {
    state = state * 1664525u + 1013904223u;
    at[i] = full ? i : (size_t)state % c_count;
    refs[i] = model_ref_at(s, x, w, at[i] / pixels, at[i] % pixels);
    if (fabs(refs[i]) > scale) scale = fabs(refs[i]);
  }
  for (size_t i = 0; i < samples; ++i) {
    double e = fabs(got[at[i]] - refs[i]) / scale;
    if (!(e <= worst)) worst = e;
  }
  *out_err = worst;
  *out_us = worst <= 1e-4 ? ns / 1e3 : -1;
  return kiln_ok_status();
}

kiln_status_t kiln_bench_model_sweep(kiln_hal_device_t* device, const char* arch,
                                     int* out_failures) {
  *out_failures = 0;
  kiln_kernel_arch_caps_t caps;
  KILN_RETURN_IF_ERROR(kiln_kernel_arch_caps_for_arch(arch, &caps));
  const kiln_hal_device_info_t* info = kiln_hal_device_info(device);
  printf("Model shapes on %s-%s-%s under arch '%s' (%u units), us per dispatch, median of "
         "%s; columns: old, candidates c0.. (kernels_gemm_tuning.h order), pick = "
         "kiln_kernel_config_select_shape's; FAIL = wrong result\n",
         info->triple.arch, info->triple.product, info->triple.os, arch,
         kiln_kernel_gemm_compute_units(arch), info->timestamps ? "timestamps" : "wall clock");
  for (size_t i = 0; i < kiln_kernel_gemm_occupancy_candidate_count(); ++i) {
    const kiln_kernel_gemm_tiling_t* t = kiln_kernel_gemm_occupancy_candidate(i);
    printf("  c%zu = %ux%u x %ux%u TK%u KS%u\n", i, t->wg_x, t->wg_y, t->tm, t->tn, t->tk,
           kiln_kernel_gemm_tiling_ks(t));
  }
  // Executables per kind and column, made once.
  model_config_t configs[3][MODEL_MAX_CONFIGS];
  kiln_kernel_executable_t exes[3][MODEL_MAX_CONFIGS];
  size_t config_count[3];
  memset(exes, 0, sizeof(exes));
  kiln_status_t status = kiln_ok_status();
  for (int kind = 0; kind < 3 && !status; ++kind) {
    config_count[kind] = model_configs((model_kind_t)kind, &caps, configs[kind]);
    for (size_t c = 0; c < config_count[kind] && !status; ++c) {
      if (!configs[kind][c].usable) continue;
      // A config past the device's limits is a column of "-", not an abort.
      kiln_status_t made = kiln_kernel_executable_create_from_config(
          device, &configs[kind][c].config, &exes[kind][c]);
      if (made) {
        printf("  (%s %s: %s)\n", kind == MODEL_DW ? "depthwise" : kind == MODEL_CONV ? "conv" : "gemm",
               configs[kind][c].label, kiln_status_message(made));
        kiln_status_free(made);
        configs[kind][c].usable = false;
      }
    }
  }
  double total_old[MODEL_COUNT] = {0}, total_pick[MODEL_COUNT] = {0},
         total_best[MODEL_COUNT] = {0};
  for (size_t i = 0; i < sizeof(kModelShapes) / sizeof(kModelShapes[0]) && !status; ++i) {
    const model_shape_t* s = &kModelShapes[i];
    const uint32_t o = model_out(s), pixels = model_pixels(s);
    const size_t x_count = (size_t)s->cin * (s->kind == MODEL_GEMM ? pixels : s->h * s->h);
    const size_t w_count = (size_t)s->cout * (s->kind == MODEL_DW ? 1 : s->cin) * s->kernel *
                           s->kernel;
    const size_t c_count = (size_t)s->cout * pixels;
    float* x = model_values(x_count, 11 + (uint32_t)i);
    float* w = model_values(w_count, 23 + (uint32_t)i);
    float* got = malloc(c_count * sizeof(float));
    if (!got) abort();
    kiln_hal_buffer_t* buffers[5] = {NULL};
    // gemm binds A (weights) then B (image); the convs x then w.
    status = kiln_kernel_test_buffer(device, s->kind == MODEL_GEMM ? w : x,
                                     s->kind == MODEL_GEMM ? w_count : x_count, &buffers[0]);
    if (!status) {
      status = kiln_kernel_test_buffer(device, s->kind == MODEL_GEMM ? x : w,
                                       s->kind == MODEL_GEMM ? x_count : w_count, &buffers[1]);
    }
    if (!status) status = kiln_kernel_test_buffer(device, NULL, 4, &buffers[2]);
    if (!status) status = kiln_kernel_test_buffer(device, NULL, 4, &buffers[3]);
    if (!status) status = kiln_kernel_test_buffer(device, NULL, c_count, &buffers[4]);
    char name[64];
    if (s->kind == MODEL_GEMM) {
      snprintf(name, sizeof(name), "gemm m%u n%u k%u", s->cout, pixels, s->cin);
    } else {
      snprintf(name, sizeof(name), "%s %u>%u k%u s%u %ux%u", s->kind == MODEL_DW ? "dw" : "conv",
               s->cin, s->cout, s->kernel, s->stride, o, o);
    }
    printf("%-26s %u/%u/%u/%u/%u/%u |", name, s->count[0], s->count[1], s->count[2], s->count[3],
           s->count[4], s->count[5]);
    double us[MODEL_MAX_CONFIGS];
    for (size_t c = 0; c < MODEL_MAX_CONFIGS; ++c) us[c] = -1;
    size_t best = 0;
    for (size_t c = 0; c < config_count[s->kind] && !status; ++c) {
      us[c] = -1;
      if (!configs[s->kind][c].usable) {
        printf("     - ");
        continue;
      }
      double err = 0;
      status = model_time(device, s, &exes[s->kind][c], buffers, x, w, got, &us[c], &err);
      if (status) break;
      if (us[c] < 0) {
        ++*out_failures;
        printf(" FAIL%.0e", err);
      } else {
        printf(" %6.1f", us[c]);
        if (us[best] < 0 || us[c] < us[best]) best = c;
      }
    }
    // The pick (depthwise: the config.c workgroup, column 0).
    double pick_us = us[0];
    if (!status && s->kind != MODEL_DW) {
      kiln_kernel_config_t pick;
      const kiln_kernel_gemm_params_t g = model_gemm(s);
      const uint64_t k = (uint64_t)s->cin * s->kernel * s->kernel;
      status = kiln_kernel_config_select_shape(
          s->kind == MODEL_CONV ? KILN_KERNEL_CONV2D_GEMM : KILN_KERNEL_GEMM_SMALL, &caps,
          KILN_KERNEL_STORAGE_FP32, g.m, pixels, k, 1, false, &pick);
      for (size_t c = 1; c < config_count[s->kind] && !status; ++c) {
        if (configs[s->kind][c].usable &&
            pick.workgroup_size[0] == configs[s->kind][c].config.workgroup_size[0] &&
            pick.workgroup_size[1] == configs[s->kind][c].config.workgroup_size[1] &&
            pick.spec_count == configs[s->kind][c].config.spec_count &&
            memcmp(pick.spec, configs[s->kind][c].config.spec,
                   pick.spec_count * sizeof(pick.spec[0])) == 0) {
          pick_us = us[c];
          printf(" | pick %s %.1f", configs[s->kind][c].label, us[c]);
          break;
        }
      }
    }
    if (!status) {
      printf(" | best %s %.1f\n", configs[s->kind][best].label, us[best]);
      for (int m = 0; m < MODEL_COUNT; ++m) {
        total_old[m] += s->count[m] * us[0];
        total_pick[m] += s->count[m] * pick_us;
        total_best[m] += s->count[m] * us[best];
      }
    }
    fflush(stdout);
    for (int b = 0; b < 5; ++b) kiln_hal_buffer_release(buffers[b]);
    free(x);
    free(w);
    free(got);
  }
  for (int kind = 0; kind < 3; ++kind) {
    for (size_t c = 0; c < MODEL_MAX_CONFIGS; ++c) {
      if (exes[kind][c].executable) kiln_hal_executable_release(exes[kind][c].executable);
    }
  }
  if (status) return status;
  printf("\nPer model, sum over its conv / gemm / depthwise dispatches (us): old | pick | best "
         "column per shape\n");
  for (int m = 0; m < MODEL_COUNT; ++m) {
    printf("  %-16s %9.1f | %9.1f | %9.1f\n", kModels[m], total_old[m], total_pick[m],
           total_best[m]);
  }
  return kiln_ok_status();
}
