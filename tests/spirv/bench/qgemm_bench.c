// kiln-kernels-bench --quant [--arch=A]: qgemm GEMVs (one row of A, the
// decode shape of a 7B LLM's linear layers: 4096x4096, and 4096 -> 11008
// and back) per weight layout, with the fp32 gemv for comparison. Prints
// the median GPU time and the effective bandwidth (weight bytes as stored
// + A + C over the time); every result is checked against a C product over
// the reference dequantizer's weights (max|err| <= 1e-4 max|ref|).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/gemm_sweep.h"
#include "kiln/compiler/quant.h"

static float* qbench_random(size_t count, uint32_t seed) {
  float* values = malloc(count * sizeof(float));
  if (!values) abort();
  uint32_t state = seed * 2654435761u + 7u;
  for (size_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    values[i] = (float)((state >> 8) * (2.0 / 16777216.0) - 1.0);
  }
  return values;
}

// max|got - want| / max|want| with want = a x w^T (w [n][k]).
static double qbench_error(const float* a, const float* w, const float* got, size_t n,
                           size_t k) {
  double worst = 0, max_ref = 0;
  for (size_t j = 0; j < n; ++j) {
    double sum = 0;
    for (size_t i = 0; i < k; ++i) sum += (double)a[i] * w[j * k + i];
    max_ref = fmax(max_ref, fabs(sum));
    double e = fabs(got[j] - sum);
    if (!(e <= worst)) worst = e;
  }
  return max_ref > 0 ? worst / max_ref : INFINITY;
}

// One layout (KILN_QUANT_NONE: the fp32 gemv on B [n][k], transB) at n x k.
static kiln_status_t qbench_shape(kiln_hal_device_t* device, const char* arch, size_t n,
                                  size_t k, kiln_quant_layout_t layout, int* failures) {
  uint64_t row_bytes = layout ? kiln_quant_row_bytes(layout, k) : k * sizeof(float);
  if ((uint64_t)n * row_bytes + 16 > kiln_hal_device_info(device)->limits.max_storage_buffer_range) {
    printf("| gemv %5zu x %-5zu | %-5s | %-8s | above the device's storage-buffer range    |\n", n,
           k, layout ? kiln_quant_layout_name(layout) : "fp32", arch);
    return kiln_ok_status();
  }
  float* a = qbench_random(k, 1);
  float* w = qbench_random(n * k, 2);
  float* got = malloc(n * sizeof(float));
  if (!got) abort();
  size_t w_bytes = ((size_t)(n * row_bytes) + 4 + 3) & ~(size_t)3;
  uint8_t* packed = calloc(w_bytes, 1);
  if (!packed) abort();
  kiln_status_t status = kiln_ok_status();
  if (layout) {
    status = kiln_quant_pack(layout, w, n, k, packed);
    if (!status) status = kiln_quant_unpack(layout, packed, n, k, w);  // the reference weights
  } else {
    memcpy(packed, w, n * k * sizeof(float));
  }
  kiln_hal_buffer_t* buffers[5] = {NULL};
  if (!status) status = kiln_kernel_test_buffer(device, a, k, &buffers[0]);
  if (!status) {
    status = kiln_kernel_test_buffer(device, (const float*)packed, w_bytes / 4, &buffers[1]);
  }
  if (!status) status = kiln_kernel_test_buffer(device, NULL, 4, &buffers[2]);
  if (!status) status = kiln_kernel_test_buffer(device, NULL, 4, &buffers[3]);
  if (!status) status = kiln_kernel_test_buffer(device, NULL, n, &buffers[4]);
  kiln_kernel_gemm_params_t p = {
      .m = 1, .n = (uint32_t)n, .k = (uint32_t)k, .batch = 1, .a_row_stride = (uint32_t)k,
      .a_col_stride = 1, .b_row_stride = layout ? (uint32_t)row_bytes : 1,
      .b_col_stride = layout ? 0 : (uint32_t)k, .c_batch_stride = (uint32_t)n,
      .c_row_stride = (uint32_t)n, .scale = 1.0f};
  kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_GEMM_TM, 1}, {KILN_SPEC_QGEMM_LAYOUT, layout}};
  kiln_kernel_executable_t kernel = {0};
  if (!status) {
    status = kiln_kernel_executable_create_portable(
        device, layout ? KILN_KERNEL_QGEMM : KILN_KERNEL_GEMV, arch, layout ? ops : NULL,
        layout ? 2 : 0, &kernel);
  }
  uint32_t grid[3];
  double ns = 0;
  if (!status) status = kiln_kernel_grid_gemm(&kernel.config, &p, grid);
  if (!status) status = kiln_bench_sweep_time(device, &kernel, &p, sizeof(p), buffers, grid, &ns);
  if (!status) status = kiln_hal_device_read_buffer(device, buffers[4], 0, got, n * sizeof(float));
  if (!status) {
    double err = qbench_error(a, w, got, n, k);
    bool ok = err <= 1e-4;
    if (!ok) ++*failures;
    double bytes = (double)n * row_bytes + (double)(k + n) * sizeof(float);
    printf("| gemv %5zu x %-5zu | %-5s | %-8s | %10.4f | %9.3f | %8.2g %s |\n", n, k,
           layout ? kiln_quant_layout_name(layout) : "fp32", arch, ns / 1e6, bytes / ns, err,
           ok ? "ok" : "FAIL");
  }
  if (kernel.executable) kiln_hal_executable_release(kernel.executable);
  for (int i = 0; i < 5; ++i) kiln_hal_buffer_release(buffers[i]);
  free(a);
  free(w);
  free(got);
  free(packed);
  return status;
}

kiln_status_t kiln_bench_qgemm(kiln_hal_device_t* device, const char* arch, int* out_failures) {
  const size_t shapes[][2] = {{4096, 4096}, {11008, 4096}, {4096, 11008}};  // n x k
  const kiln_quant_layout_t layouts[] = {KILN_QUANT_NONE, KILN_QUANT_Q4_0, KILN_QUANT_Q4_K,
                                         KILN_QUANT_Q8_0, KILN_QUANT_INT8};
  printf("| %-19s | %-5s | %-8s | %10s | %9s | %-11s |\n", "shape (n x k)", "B", "tiling",
         "median ms", "GB/s", "max err");
  printf("|---------------------|-------|----------|------------|-----------|-------------|\n");
  for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); ++s) {
    for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]); ++l) {
      KILN_RETURN_IF_ERROR(
          qbench_shape(device, arch, shapes[s][0], shapes[s][1], layouts[l], out_failures));
    }
  }
  return kiln_ok_status();
}
