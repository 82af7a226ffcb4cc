// kiln-kernels-bench --sweep: every GEMM tiling of the tuning table and of
// the candidate list (kernels_gemm_tuning.h) on the shapes that matter
// (issue 16), on the device KILN_TEST_DEVICE names. Per shape and tiling:
// median GPU time of REPS submissions (timestamps where the device has
// them), TFLOP/s, and GB/s of the minimum traffic (A + B + C once). Each
// result is checked: small shapes in full against the C reference, large
// ones at 64 sampled outputs against double dot products (relative to
// max |ref|: 1e-4 small, 1e-3 large, fp32 reduction order). A tiling that
// does not fit the device is listed as skipped, never dropped silently.
#include "gemm_sweep.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/time.h"
#include "kiln/compiler/kernels_gemm_tuning.h"
#include "reference/reference.h"

#define SWEEP_REPS 7  // submissions of a split-K chain
#define SWEEP_SAMPLES 64

typedef struct sweep_shape_t {
  const char* name;
  bool conv;  // conv2d_gemm (3x3 pad 1 stride 1 on h x w) instead of gemm
  uint32_t m, n, k;  // gemm: C[m][n]; conv: C_out, H*W, C_in
  bool trans_b;      // B stored n x k (Gemm transB: a linear layer's weight)
  uint32_t h, w;     // conv only
} sweep_shape_t;

// ResNet-50's 1x1 convs are GEMMs of weights [C_out, C_in] x image
// [C_in, H*W] (m = C_out, n = H*W, k = C_in).
static const sweep_shape_t kShapes[] = {
    {"check 129x127x131", false, 129, 127, 131, false, 0, 0},
    {"check 1x100x260 transB", false, 1, 100, 260, true, 0, 0},
    {"check conv3x3 16->24 9x11", true, 24, 99, 16, false, 9, 11},
    {"matmul 4096^3", false, 4096, 4096, 4096, false, 0, 0},
    {"gemv 1x4096x4096", false, 1, 4096, 4096, false, 0, 0},
    {"gemv 1x4096x4096 transB", false, 1, 4096, 4096, true, 0, 0},
    {"linear 128x3072 k768", false, 128, 3072, 768, false, 0, 0},
    {"linear 128x768 k3072", false, 128, 768, 3072, false, 0, 0},
    {"linear 128x3072 k768 transB", false, 128, 3072, 768, true, 0, 0},
    {"r50 1x1 64x3136 k64", false, 64, 3136, 64, false, 0, 0},
    {"r50 1x1 256x3136 k64", false, 256, 3136, 64, false, 0, 0},
    {"r50 1x1 64x3136 k256", false, 64, 3136, 256, false, 0, 0},
    {"r50 1x1 128x784 k256", false, 128, 784, 256, false, 0, 0},
    {"r50 1x1 512x784 k128", false, 512, 784, 128, false, 0, 0},
    {"r50 1x1 128x784 k512", false, 128, 784, 512, false, 0, 0},
    {"r50 1x1 1024x196 k256", false, 1024, 196, 256, false, 0, 0},
    {"r50 1x1 256x196 k1024", false, 256, 196, 1024, false, 0, 0},
    {"r50 1x1 2048x49 k512", false, 2048, 49, 512, false, 0, 0},
    {"r50 1x1 512x49 k2048", false, 512, 49, 2048, false, 0, 0},
    {"conv3x3 64->64 56x56", true, 64, 3136, 64, false, 56, 56},
    // ResNet-50's other 3x3 convs (stride 1), and MobileNetV2's 1x1 convs
    // (m = C_out, n = H*W, k = C_in) from 112x112 down to 7x7.
    {"r50 conv3x3 128->128 28x28", true, 128, 784, 128, false, 28, 28},
    {"r50 conv3x3 256->256 14x14", true, 256, 196, 256, false, 14, 14},
    {"r50 conv3x3 512->512 7x7", true, 512, 49, 512, false, 7, 7},
    {"mv2 1x1 16x12544 k32", false, 16, 12544, 32, false, 0, 0},
    {"mv2 1x1 96x12544 k16", false, 96, 12544, 16, false, 0, 0},
    {"mv2 1x1 24x3136 k144", false, 24, 3136, 144, false, 0, 0},
    {"mv2 1x1 144x3136 k24", false, 144, 3136, 24, false, 0, 0},
    {"mv2 1x1 32x784 k192", false, 32, 784, 192, false, 0, 0},
    {"mv2 1x1 192x784 k32", false, 192, 784, 32, false, 0, 0},
    {"mv2 1x1 64x196 k384", false, 64, 196, 384, false, 0, 0},
    {"mv2 1x1 96x196 k576", false, 96, 196, 576, false, 0, 0},
    {"mv2 1x1 160x49 k960", false, 160, 49, 960, false, 0, 0},
    {"mv2 1x1 960x49 k160", false, 960, 49, 160, false, 0, 0},
    {"mv2 1x1 1280x49 k320", false, 1280, 49, 320, false, 0, 0},
};

static int sweep_compare(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : (x > y ? 1 : 0);
}

static float* sweep_values(size_t count, uint32_t seed) {
  float* values = malloc((count ? count : 1) * sizeof(float));
  if (!values) abort();
  uint32_t state = seed * 2654435761u + 7u;
  for (size_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    values[i] = (float)((state >> 8) * (2.0 / 16777216.0) - 1.0);
  }
  return values;
}

static double shape_flops(const sweep_shape_t* s) {
  return 2.0 * s->m * s->n * (double)s->k * (s->conv ? 9 : 1);
}

// Element counts of the operands: A (weights), B (image / right operand), C.
static void shape_counts(const sweep_shape_t* s, size_t* a, size_t* b, size_t* c) {
  *a = (size_t)s->m * s->k * (s->conv ? 9 : 1);
  *b = (size_t)s->k * (s->conv ? (size_t)s->h * s->w : s->n);
  *c = (size_t)s->m * s->n;
}

static kiln_kernel_gemm_params_t shape_gemm(const sweep_shape_t* s) {
  kiln_kernel_gemm_params_t p;
  memset(&p, 0, sizeof(p));
  p.m = s->m, p.n = s->n, p.k = s->k, p.batch = 1;
  p.a_row_stride = s->k, p.a_col_stride = 1;
  p.b_row_stride = s->trans_b ? 1 : s->n;
  p.b_col_stride = s->trans_b ? s->k : 1;
  p.c_batch_stride = s->m * s->n, p.c_row_stride = s->n;
  p.scale = 1.0f;
  return p;
}

static kiln_kernel_conv2d_params_t shape_conv(const sweep_shape_t* s) {
  kiln_kernel_conv2d_params_t p;
  memset(&p, 0, sizeof(p));
  p.batch = 1, p.in_channels = s->k, p.in_height = s->h, p.in_width = s->w;
  p.out_channels = s->m, p.out_height = s->h, p.out_width = s->w, p.groups = 1;
  p.kernel_h = 3, p.kernel_w = 3, p.stride_h = 1, p.stride_w = 1;
  p.pad_top = 1, p.pad_left = 1, p.dilation_h = 1, p.dilation_w = 1;
  return p;
}

// One output of the shape in double (row i, column j).
static double shape_ref_at(const sweep_shape_t* s, const float* a, const float* b, size_t i,
                           size_t j) {
  double sum = 0;
  if (!s->conv) {
    for (size_t k = 0; k < s->k; ++k) {
      double bv = s->trans_b ? b[j * s->k + k] : b[k * s->n + j];
      sum += (double)a[i * s->k + k] * bv;
    }
    return sum;
  }
  const size_t y = j / s->w, x = j % s->w;
  for (size_t c = 0; c < s->k; ++c) {
    for (size_t kh = 0; kh < 3; ++kh) {
      for (size_t kw = 0; kw < 3; ++kw) {
        long iy = (long)(y + kh) - 1, ix = (long)(x + kw) - 1;
        if (iy < 0 || ix < 0 || iy >= (long)s->h || ix >= (long)s->w) continue;
        sum += (double)a[((i * s->k + c) * 3 + kh) * 3 + kw] *
               b[(c * s->h + (size_t)iy) * s->w + (size_t)ix];
      }
    }
  }
  return sum;
}

// Worst |got - ref| / max |ref| over every output (small shapes) or
// SWEEP_SAMPLES of them.
static double shape_error(const sweep_shape_t* s, const float* a, const float* b,
                          const float* got, bool full) {
  size_t count = (size_t)s->m * s->n;
  size_t samples = full ? count : SWEEP_SAMPLES;
  double worst = 0, scale = 1e-30;
  double* refs = malloc(samples * sizeof(double));
  size_t* at = malloc(samples * sizeof(size_t));
  if (!refs || !at) abort();
  uint32_t state = 12345;
  for (size_t i = 0; i < samples; ++i) {
    state = state * 1664525u + 1013904223u;
    at[i] = full ? i : (size_t)state % count;
    refs[i] = shape_ref_at(s, a, b, at[i] / s->n, at[i] % s->n);
    if (fabs(refs[i]) > scale) scale = fabs(refs[i]);
  }
  for (size_t i = 0; i < samples; ++i) {
    double e = fabs(got[at[i]] - refs[i]) / scale;
    if (!(e <= worst)) worst = e;  // NaN propagates as a failure
  }
  free(refs);
  free(at);
  return worst;
}

kiln_status_t kiln_bench_sweep_time(kiln_hal_device_t* device,
                                    const kiln_kernel_executable_t* kernel, const void* push,
                                    uint32_t push_bytes, kiln_hal_buffer_t* const* buffers,
                                    const uint32_t grid[3], double* out_ns) {
  return kiln_bench_time_dispatch(device, kernel, push, push_bytes, buffers, 5, grid, out_ns);
}

kiln_status_t kiln_bench_warm_clocks(kiln_hal_device_t* device, kiln_hal_command_buffer_t* cb) {
  const int64_t start = kiln_time_now_ns();
  // At least one submission (it also warms the driver's caches); bounded in
  // count for a device whose submissions return at once.
  kiln_status_t status = kiln_ok_status();
  for (int i = 0; i < 1000000 && !status; ++i) {
    status = kiln_kernel_test_submit_and_wait(device, cb);
    if (kiln_time_now_ns() - start >= (int64_t)KILN_BENCH_WARM_MS * 1000000) break;
  }
  return status;
}

static uint64_t g_cold_bytes;

void kiln_bench_set_cold_bytes(uint64_t bytes) { g_cold_bytes = bytes / 4 * 4; }

kiln_status_t kiln_bench_time_dispatch(kiln_hal_device_t* device,
                                       const kiln_kernel_executable_t* kernel, const void* push,
                                       uint32_t push_bytes, kiln_hal_buffer_t* const* buffers,
                                       uint32_t buffer_count, const uint32_t grid[3],
                                       double* out_ns) {
  bool timestamps = kiln_hal_device_info(device)->timestamps;
  kiln_hal_buffer_t* scratch = NULL;
  if (g_cold_bytes > 0) {
    KILN_RETURN_IF_ERROR(kiln_kernel_test_buffer(device, NULL, g_cold_bytes / 4, &scratch));
  }
  kiln_hal_command_buffer_t* cb = NULL;
  kiln_status_t status = kiln_hal_command_buffer_create(
      device, timestamps ? KILN_HAL_COMMAND_BUFFER_TIMESTAMPS : 0, &cb);
  if (!status) status = kiln_hal_command_buffer_begin(cb);
  const kiln_hal_stages_t stages = KILN_HAL_STAGE_DISPATCH | KILN_HAL_STAGE_TRANSFER;
  for (int i = 0; i < KILN_BENCH_STREAM && !status; ++i) {
    if (i > 0) status = kiln_hal_command_buffer_barrier(cb, stages, stages);
    if (!status && scratch) {
      const uint32_t pattern = (uint32_t)i;
      status = kiln_hal_command_buffer_fill(cb, scratch, 0, g_cold_bytes, &pattern, 4);
      if (!status) status = kiln_hal_command_buffer_barrier(cb, stages, stages);
    }
    if (!status) {
      status = kiln_kernel_test_dispatch(cb, kernel, push, push_bytes, buffers, buffer_count,
                                         grid);
    }
  }
  if (!status) status = kiln_hal_command_buffer_end(cb);
  if (!status) status = kiln_bench_warm_clocks(device, cb);
  double times[KILN_BENCH_REPS * KILN_BENCH_STREAM];
  for (int r = 0; r < KILN_BENCH_REPS && !status; ++r) {
    int64_t start = kiln_time_now_ns();
    status = kiln_kernel_test_submit_and_wait(device, cb);
    const double wall = (double)(kiln_time_now_ns() - start) / KILN_BENCH_STREAM;
    for (int i = 0; i < KILN_BENCH_STREAM && !status; ++i) {
      double* t = &times[r * KILN_BENCH_STREAM + i];
      *t = wall;
      if (timestamps) status = kiln_hal_command_buffer_dispatch_time_ns(cb, (uint32_t)i, t);
    }
  }
  kiln_hal_command_buffer_release(cb);
  kiln_hal_buffer_release(scratch);
  if (status) return status;
  qsort(times, KILN_BENCH_REPS * KILN_BENCH_STREAM, sizeof(double), sweep_compare);
  *out_ns = times[KILN_BENCH_REPS * KILN_BENCH_STREAM / 2];
  return kiln_ok_status();
}

// The tilings: the table's rows (deduplicated) then the candidates.
static size_t sweep_tilings(kiln_kernel_gemm_tiling_t* out, const char** labels, size_t max) {
  size_t count = 0;
  size_t rows = kiln_kernel_gemm_tuning_count();
  for (size_t i = 0; i < rows + kiln_kernel_gemm_candidate_count() && count < max; ++i) {
    const kiln_kernel_gemm_tiling_t* t =
        i < rows ? kiln_kernel_gemm_tuning(kiln_kernel_gemm_tuning_arch(i))
                 : kiln_kernel_gemm_candidate(i - rows);
    bool seen = false;
    for (size_t j = 0; j < count; ++j) seen |= memcmp(&out[j], t, sizeof(*t)) == 0;
    if (seen) continue;
    out[count] = *t;
    labels[count] = i < rows ? "table" : "candidate";
    ++count;
  }
  return count;
}

// Builds `config` (workgroup spec constants added here), times it on the
// shape and checks the result; prints one row.
static kiln_status_t sweep_run(kiln_hal_device_t* device, const sweep_shape_t* s,
                               kiln_kernel_config_t* config, const char* label,
                               kiln_hal_buffer_t* const* buffers, const float* a, const float* b,
                               float* got, int* failures) {
  size_t a_count, b_count, c_count;
  shape_counts(s, &a_count, &b_count, &c_count);
  KILN_RETURN_IF_ERROR(
      kiln_kernel_config_set_spec(config, KILN_SPEC_WORKGROUP_X, config->workgroup_size[0]));
  KILN_RETURN_IF_ERROR(
      kiln_kernel_config_set_spec(config, KILN_SPEC_WORKGROUP_Y, config->workgroup_size[1]));
  // NaNs first, so a tiling that leaves outputs unwritten fails its check
  // rather than passing on the previous tiling's results.
  for (size_t i = 0; i < c_count; ++i) got[i] = NAN;
  KILN_RETURN_IF_ERROR(
      kiln_hal_device_write_buffer(device, buffers[4], 0, got, c_count * sizeof(float)));
  kiln_kernel_executable_t kernel;
  memset(&kernel, 0, sizeof(kernel));
  KILN_RETURN_IF_ERROR(kiln_kernel_executable_create_from_config(device, config, &kernel));
  kiln_kernel_gemm_params_t gemm = shape_gemm(s);
  kiln_kernel_conv2d_params_t conv = shape_conv(s);
  uint32_t grid[3];
  kiln_status_t status = s->conv ? kiln_kernel_grid_conv2d_gemm(&kernel.config, &conv, grid)
                                 : kiln_kernel_grid_gemm(&kernel.config, &gemm, grid);
  double ns = 0;
  if (!status) {
    status = kiln_bench_sweep_time(device, &kernel, s->conv ? (const void*)&conv : (const void*)&gemm,
                        s->conv ? sizeof(conv) : sizeof(gemm), buffers, grid, &ns);
  }
  if (!status) {
    status = kiln_hal_device_read_buffer(device, buffers[4], 0, got, c_count * sizeof(float));
  }
  kiln_hal_executable_release(kernel.executable);
  if (status) return status;
  const bool full = shape_flops(s) < 1e8;
  const double bytes = 4.0 * (double)(a_count + b_count + c_count);
  double error = shape_error(s, a, b, got, full);
  bool ok = error <= (full ? 1e-4 : 1e-3);
  if (!ok) ++*failures;
  printf("| %-30s | %-28s | %10.4f | %8.2f | %8.1f | %-4s %.1e |\n", s->name, label, ns / 1e6,
         shape_flops(s) / ns / 1e3, bytes / ns, ok ? "ok" : "FAIL", error);
  fflush(stdout);
  return kiln_ok_status();
}

// k (gemm: in 64-k chunks) or input channels (conv) per split-K part.
static uint64_t sweep_split_step(const sweep_shape_t* s, uint32_t parts) {
  uint64_t step = (s->k + parts - 1) / parts;
  return s->conv ? step : (step + 63) / 64 * 64;
}

// Split-K as the lowering records it (onnx-emit/lower_splitk.c): `parts`
// dispatches of the small tiling over k ranges (gemm: operands bound at
// 64-k offsets; conv: input-channel ranges) into a scratch buffer of
// per-part slices, a barrier, and gemv summing the slices. Timed as the
// GPU span of the whole recording; checked like the rows above.
static kiln_status_t sweep_split_k(kiln_hal_device_t* device, const sweep_shape_t* s,
                                   const kiln_kernel_arch_caps_t* caps, uint32_t parts,
                                   bool rule, kiln_hal_buffer_t* const* buffers, const float* a,
                                   const float* b, float* got, int* failures) {
  size_t a_count, b_count, c_count;
  shape_counts(s, &a_count, &b_count, &c_count);
  const uint64_t k = s->k;  // gemm: k; conv: input channels
  const uint64_t step = sweep_split_step(s, parts);
  parts = (uint32_t)((k + step - 1) / step);
  char label[64];
  snprintf(label, sizeof(label), "split-K %u small%s", parts, rule ? " *" : "");
  if (parts < 2) {
    printf("| %-30s | %-28s | skipped: k too short\n", s->name, label);
    return kiln_ok_status();
  }
  const uint64_t slice = (c_count + 63) / 64 * 64;
  kiln_kernel_config_t stage, sum;
  KILN_RETURN_IF_ERROR(kiln_kernel_config_select(s->conv ? KILN_KERNEL_CONV2D_GEMM
                                                         : KILN_KERNEL_GEMM_SMALL,
                                                 caps, KILN_KERNEL_STORAGE_FP32, &stage));
  KILN_RETURN_IF_ERROR(kiln_kernel_config_select(KILN_KERNEL_GEMV, caps,
                                                 KILN_KERNEL_STORAGE_FP32, &sum));
  KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(&sum, KILN_SPEC_GEMM_ACTIVATION, 0));
  float ones[64];
  for (uint32_t i = 0; i < parts && i < 64; ++i) ones[i] = 1.0f;
  kiln_hal_buffer_t *scratch = NULL, *ones_buffer = NULL;
  kiln_kernel_executable_t stage_kernel, sum_kernel;
  memset(&stage_kernel, 0, sizeof(stage_kernel));
  memset(&sum_kernel, 0, sizeof(sum_kernel));
  kiln_hal_command_buffer_t* cb = NULL;
  for (size_t i = 0; i < c_count; ++i) got[i] = NAN;
  kiln_status_t status = kiln_kernel_test_buffer(device, NULL, parts * slice, &scratch);
  if (!status) status = kiln_kernel_test_buffer(device, ones, parts, &ones_buffer);
  if (!status) {
    status = kiln_hal_device_write_buffer(device, buffers[4], 0, got, c_count * sizeof(float));
  }
  if (!status) status = kiln_kernel_executable_create_from_config(device, &stage, &stage_kernel);
  if (!status) status = kiln_kernel_executable_create_from_config(device, &sum, &sum_kernel);
  const bool timestamps = kiln_hal_device_info(device)->timestamps;
  if (!status) {
    status = kiln_hal_command_buffer_create(
        device, timestamps ? KILN_HAL_COMMAND_BUFFER_TIMESTAMPS : 0, &cb);
  }
  if (!status) status = kiln_hal_command_buffer_begin(cb);
  for (uint32_t part = 0; part < parts && !status; ++part) {
    kiln_kernel_gemm_params_t gemm = shape_gemm(s);
    kiln_kernel_conv2d_params_t conv = shape_conv(s);
    const uint64_t k0 = part * step;
    kiln_hal_binding_t bind[5];
    for (uint32_t i = 0; i < 5; ++i) {
      bind[i] = (kiln_hal_binding_t){0, i, buffers[i], 0, 0, KILN_HAL_WHOLE_BUFFER};
    }
    bind[4].buffer = scratch;
    bind[4].offset = part * slice * sizeof(float);
    bind[4].length = c_count * sizeof(float);
    uint32_t grid[3];
    if (s->conv) {
      conv.ci_begin = (uint32_t)k0;
      conv.ci_end = (uint32_t)(k0 + step < k ? k0 + step : k);
      status = kiln_kernel_grid_conv2d_gemm(&stage_kernel.config, &conv, grid);
    } else {
      gemm.k = (uint32_t)(k - k0 < step ? k - k0 : step);
      bind[0].offset = k0 * gemm.a_col_stride * sizeof(float);
      bind[1].offset = k0 * gemm.b_row_stride * sizeof(float);
      status = kiln_kernel_grid_gemm(&stage_kernel.config, &gemm, grid);
    }
    kiln_hal_dispatch_t d = {stage_kernel.executable, 0, {grid[0], grid[1], grid[2]},
                             s->conv ? (const void*)&conv : (const void*)&gemm,
                             s->conv ? sizeof(conv) : sizeof(gemm), bind, 5};
    if (!status) status = kiln_hal_command_buffer_dispatch(cb, &d);
  }
  if (!status) {
    status = kiln_hal_command_buffer_barrier(cb, KILN_HAL_STAGE_DISPATCH, KILN_HAL_STAGE_DISPATCH);
  }
  if (!status) {
    kiln_kernel_gemm_params_t q;
    memset(&q, 0, sizeof(q));
    q.m = 1, q.n = s->n, q.k = parts, q.batch = s->m;
    q.a_row_stride = parts, q.a_col_stride = 1;
    q.b_batch_stride = s->n, q.b_row_stride = (uint32_t)slice, q.b_col_stride = 1;
    q.c_batch_stride = s->n, q.c_row_stride = s->n, q.scale = 1.0f;
    kiln_hal_buffer_t* sum_buffers[5] = {ones_buffer, scratch, ones_buffer, ones_buffer,
                                         buffers[4]};
    uint32_t grid[3];
    status = kiln_kernel_grid_gemm(&sum_kernel.config, &q, grid);
    if (!status) {
      status = kiln_kernel_test_dispatch(cb, &sum_kernel, &q, sizeof(q), sum_buffers, 5, grid);
    }
  }
  if (!status) status = kiln_hal_command_buffer_end(cb);
  if (!status) status = kiln_bench_warm_clocks(device, cb);
  double times[SWEEP_REPS];
  for (int r = 0; r < SWEEP_REPS && !status; ++r) {
    int64_t start = kiln_time_now_ns();
    status = kiln_kernel_test_submit_and_wait(device, cb);
    times[r] = (double)(kiln_time_now_ns() - start);
    if (!status && timestamps) status = kiln_hal_command_buffer_total_time_ns(cb, &times[r]);
  }
  if (!status) {
    status = kiln_hal_device_read_buffer(device, buffers[4], 0, got, c_count * sizeof(float));
  }
  if (cb) kiln_hal_command_buffer_release(cb);
  if (stage_kernel.executable) kiln_hal_executable_release(stage_kernel.executable);
  if (sum_kernel.executable) kiln_hal_executable_release(sum_kernel.executable);
  kiln_hal_buffer_release(scratch);
  kiln_hal_buffer_release(ones_buffer);
  if (status) return status;
  qsort(times, SWEEP_REPS, sizeof(double), sweep_compare);
  const double ns = times[SWEEP_REPS / 2];
  const bool full = shape_flops(s) < 1e8;
  const double bytes = 4.0 * (double)(a_count + b_count + c_count);
  double error = shape_error(s, a, b, got, full);
  bool ok = error <= (full ? 1e-4 : 1e-3);
  if (!ok) ++*failures;
  printf("| %-30s | %-28s | %10.4f | %8.2f | %8.1f | %-4s %.1e |\n", s->name, label, ns / 1e6,
         shape_flops(s) / ns / 1e3, bytes / ns, ok ? "ok" : "FAIL", error);
  fflush(stdout);
  return kiln_ok_status();
}

static kiln_status_t sweep_shape(kiln_hal_device_t* device, const sweep_shape_t* s,
                                 const kiln_kernel_gemm_tiling_t* tilings,
                                 const char* const* labels, size_t tiling_count,
                                 const char* device_arch, int* failures) {
  size_t a_count, b_count, c_count;
  shape_counts(s, &a_count, &b_count, &c_count);
  float* a = sweep_values(a_count, 1);
  float* b = sweep_values(b_count, 2);
  float* got = malloc(c_count * sizeof(float));
  if (!got) abort();
  kiln_hal_buffer_t* buffers[5] = {NULL};
  kiln_status_t status = kiln_kernel_test_buffer(device, s->conv ? b : a,
                                                 s->conv ? b_count : a_count, &buffers[0]);
  if (!status) {
    status = kiln_kernel_test_buffer(device, s->conv ? a : b, s->conv ? a_count : b_count,
                                     &buffers[1]);
  }
  if (!status) status = kiln_kernel_test_buffer(device, NULL, 4, &buffers[2]);
  if (!status) status = kiln_kernel_test_buffer(device, NULL, 4, &buffers[3]);
  if (!status) status = kiln_kernel_test_buffer(device, NULL, c_count, &buffers[4]);
  const kiln_kernel_gemm_tiling_t* table = kiln_kernel_gemm_tuning(device_arch);
  const kiln_hal_device_info_t* info = kiln_hal_device_info(device);
  kiln_kernel_arch_caps_t caps = {info->limits.subgroup_size, info->limits.max_workgroup_invocations,
                                  info->limits.max_shared_memory_bytes, false, false, false,
                                  false, 0, NULL};
  for (size_t t = 0; t < tiling_count && !status; ++t) {
    const kiln_kernel_gemm_tiling_t* tiling = &tilings[t];
    char label[64];
    snprintf(label, sizeof(label), "%ux%u x %ux%u TK%u %s%s", tiling->wg_x, tiling->wg_y,
             tiling->tm, tiling->tn, tiling->tk, labels[t],
             table && memcmp(table, tiling, sizeof(*table)) == 0 ? " *" : "");
    kiln_kernel_config_t config;
    memset(&config, 0, sizeof(config));
    config.kernel = s->conv ? KILN_KERNEL_CONV2D_GEMM : KILN_KERNEL_GEMM;
    config.variant = KILN_KERNEL_VARIANT_FP32;
    config.workgroup_size[2] = 1;
    kiln_status_t fit = kiln_kernel_gemm_tiling_apply(tiling, &caps, &config);
    if (fit) {
      printf("| %-30s | %-28s | skipped: %s\n", s->name, label, kiln_status_message(fit));
      kiln_status_free(fit);
      continue;
    }
    status = sweep_run(device, s, &config, label, buffers, a, b, got, failures);
  }
  // One-row shapes: gemv at several workgroup shapes (column quads x k
  // slices); the first is what config.c picks for desktop GPUs.
  static const uint32_t kGemv[][2] = {{8, 32}, {16, 16}, {4, 64}, {8, 16}, {32, 8}, {8, 8}};
  for (size_t g = 0; g < sizeof(kGemv) / sizeof(kGemv[0]) && s->m == 1 && !s->conv && !status;
       ++g) {
    kiln_kernel_config_t config;
    memset(&config, 0, sizeof(config));
    config.kernel = KILN_KERNEL_GEMV;
    config.variant = KILN_KERNEL_VARIANT_FP32;
    config.workgroup_size[0] = kGemv[g][0];
    config.workgroup_size[1] = kGemv[g][1];
    config.workgroup_size[2] = 1;
    config.shared_memory_bytes = kGemv[g][0] * kGemv[g][1] * 16;
    char label[64];
    snprintf(label, sizeof(label), "gemv %ux%u%s", kGemv[g][0], kGemv[g][1], g == 0 ? " *" : "");
    if (kGemv[g][0] * kGemv[g][1] > caps.max_workgroup_invocations) {
      printf("| %-30s | %-28s | skipped: too many invocations\n", s->name, label);
      continue;
    }
    status = sweep_run(device, s, &config, label, buffers, a, b, got, failures);
  }
  // Split-K rows for products that are not one row: the part counts the
  // rule picks for the device's arch (marked *) and 2, 4, 8, 16.
  kiln_kernel_arch_caps_t arch_caps = caps;
  arch_caps.arch = table ? device_arch : NULL;
  const uint32_t rule =
      kiln_kernel_gemm_split_k_parts(&arch_caps, s->m, s->n,
                                     (uint64_t)s->k * (s->conv ? 9 : 1), 1);
  const uint32_t kParts[] = {rule, 2, 4, 8, 16};
  uint32_t done[5] = {0};  // effective part counts already timed
  for (size_t i = 0; i < sizeof(kParts) / sizeof(kParts[0]) && s->m > 1 && !status; ++i) {
    if (kParts[i] < 2) continue;
    const uint64_t step = sweep_split_step(s, kParts[i]);
    const uint32_t effective = (uint32_t)((s->k + step - 1) / step);
    bool seen = false;
    for (size_t j = 0; j < i; ++j) seen |= done[j] == effective;
    done[i] = effective;
    if (seen) continue;
    status = sweep_split_k(device, s, &arch_caps, kParts[i], i == 0, buffers, a, b, got,
                           failures);
  }
  for (int i = 0; i < 5; ++i) kiln_hal_buffer_release(buffers[i]);
  free(a);
  free(b);
  free(got);
  return status;
}

kiln_status_t kiln_bench_gemm_sweep(kiln_hal_device_t* device, double max_gflop,
                                    int* out_failures) {
  *out_failures = 0;
  kiln_kernel_gemm_tiling_t tilings[64];
  const char* labels[64];
  size_t tiling_count = sweep_tilings(tilings, labels, 64);
  const kiln_hal_device_info_t* info = kiln_hal_device_info(device);
  printf("GEMM sweep on %s-%s-%s: %zu tilings (WGxWG x TMxTN TK; * = the table's row for "
         "'%s'), median of %d dispatches (split-K chains: of %d), GPU times from %s\n\n",
         info->triple.arch, info->triple.product, info->triple.os, tiling_count,
         info->triple.arch, KILN_BENCH_REPS * KILN_BENCH_STREAM, SWEEP_REPS,
         info->timestamps ? "timestamps" : "wall clock");
  printf("| %-30s | %-28s | %10s | %8s | %8s | %-12s |\n", "shape", "tiling", "median ms",
         "TFLOP/s", "GB/s", "check");
  printf("|--------------------------------|------------------------------|------------|"
         "----------|----------|--------------|\n");
  kiln_status_t status = kiln_ok_status();
  for (size_t i = 0; i < sizeof(kShapes) / sizeof(kShapes[0]) && !status; ++i) {
    if (shape_flops(&kShapes[i]) > max_gflop * 1e9) {
      printf("| %-30s | (over --max-gflop=%g)\n", kShapes[i].name, max_gflop);
      continue;
    }
    status = sweep_shape(device, &kShapes[i], tilings, labels, tiling_count, info->triple.arch,
                         out_failures);
  }
  return status;
}
