// kiln-kernels-bench --quant [--arch=A]: the copy bandwidth, then
// quantized GEMVs (the decode shape of a 7B LLM's linear layers: 4096x4096,
// 4096 -> 11008 and back) per weight layout through qgemv and qgemm, with
// the fp32 gemv for comparison, and a few M > 1 rows. Prints the median GPU
// time, the effective bandwidth (weight bytes as stored + A + C over the
// time) and its share of the copy bandwidth; every result is checked
// against a C product over the reference dequantizer's weights (max|err|
// <= 1e-4 max|ref|). `--quant-sweep` times every qgemv tiling candidate
// (qgemv_tuning.c) on the same shapes, to refill the tuning table.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/gemm_sweep.h"
#include "kiln/compiler/kernels_qgemv_tuning.h"
#include "kiln/base/time.h"
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

// One product's operands: A [m][k], the reference weights w [n][k] (the
// dequantized packed ones), and the device buffers a, packed b, bias,
// residual, c.
typedef struct qbench_case_t {
  size_t m, n, k;
  kiln_quant_layout_t layout;  // KILN_QUANT_NONE: fp32 B [n][k]
  uint64_t row_bytes;
  float* a;
  float* w;
  float* got;
  kiln_hal_buffer_t* buffers[5];
} qbench_case_t;

static void qbench_case_free(qbench_case_t* c) {
  for (int i = 0; i < 5; ++i) kiln_hal_buffer_release(c->buffers[i]);
  free(c->a);
  free(c->w);
  free(c->got);
  memset(c, 0, sizeof(*c));
}

static kiln_status_t qbench_case_create(kiln_hal_device_t* device, size_t m, size_t n, size_t k,
                                        kiln_quant_layout_t layout, qbench_case_t* c) {
  memset(c, 0, sizeof(*c));
  c->m = m, c->n = n, c->k = k, c->layout = layout;
  c->row_bytes = layout ? kiln_quant_row_bytes(layout, k) : k * sizeof(float);
  if ((uint64_t)n * c->row_bytes + 16 >
      kiln_hal_device_info(device)->limits.max_storage_buffer_range) {
    printf("| %zu x %5zu x %-5zu | %-5s | above the device's storage-buffer range |\n", m, n, k,
           layout ? kiln_quant_layout_name(layout) : "fp32");
    return kiln_ok_status();  // c->w stays NULL: skipped
  }
  c->a = qbench_random(m * k, 1);
  c->w = qbench_random(n * k, 2);
  c->got = malloc(m * n * sizeof(float));
  size_t w_bytes = ((size_t)(n * c->row_bytes) + 4 + 3) & ~(size_t)3;
  uint8_t* packed = calloc(w_bytes, 1);
  if (!c->got || !packed) abort();
  kiln_status_t status = kiln_ok_status();
  if (layout) {
    status = kiln_quant_pack(layout, c->w, n, k, packed);
    if (!status) status = kiln_quant_unpack(layout, packed, n, k, c->w);  // the reference weights
  } else {
    memcpy(packed, c->w, n * k * sizeof(float));
  }
  if (!status) status = kiln_kernel_test_buffer(device, c->a, m * k, &c->buffers[0]);
  if (!status) {
    status = kiln_kernel_test_buffer(device, (const float*)packed, w_bytes / 4, &c->buffers[1]);
  }
  if (!status) status = kiln_kernel_test_buffer(device, NULL, 4, &c->buffers[2]);
  if (!status) status = kiln_kernel_test_buffer(device, NULL, 4, &c->buffers[3]);
  if (!status) status = kiln_kernel_test_buffer(device, NULL, m * n, &c->buffers[4]);
  free(packed);
  if (status) qbench_case_free(c);
  return status;
}

// max|got - want| / max|want| with want = a x w^T.
static double qbench_error(const qbench_case_t* c) {
  double worst = 0, max_ref = 0;
  for (size_t r = 0; r < c->m; ++r) {
    for (size_t j = 0; j < c->n; ++j) {
      double sum = 0;
      for (size_t i = 0; i < c->k; ++i) sum += (double)c->a[r * c->k + i] * c->w[j * c->k + i];
      max_ref = fmax(max_ref, fabs(sum));
      double e = fabs(c->got[r * c->n + j] - sum);
      if (!(e <= worst)) worst = e;
    }
  }
  return max_ref > 0 ? worst / max_ref : INFINITY;
}

// Times `kernel` on the case, checks it and prints one row.
static kiln_status_t qbench_run(kiln_hal_device_t* device, qbench_case_t* c,
                                const kiln_kernel_executable_t* kernel, const char* label,
                                double copy_gbps, int* failures) {
  if (!c->w) return kiln_ok_status();  // skipped (qbench_case_create)
  kiln_kernel_gemm_params_t p = {
      .m = (uint32_t)c->m, .n = (uint32_t)c->n, .k = (uint32_t)c->k, .batch = 1,
      .a_batch_stride = (uint32_t)(c->m * c->k), .a_row_stride = (uint32_t)c->k,
      .a_col_stride = 1, .b_row_stride = c->layout ? (uint32_t)c->row_bytes : 1,
      .b_col_stride = c->layout ? 0 : (uint32_t)c->k, .c_batch_stride = (uint32_t)(c->m * c->n),
      .c_row_stride = (uint32_t)c->n, .scale = 1.0f};
  for (size_t i = 0; i < c->m * c->n; ++i) c->got[i] = NAN;
  KILN_RETURN_IF_ERROR(kiln_hal_device_write_buffer(device, c->buffers[4], 0, c->got,
                                                    c->m * c->n * sizeof(float)));
  uint32_t grid[3];
  double ns = 0;
  KILN_RETURN_IF_ERROR(kiln_kernel_grid_gemm(&kernel->config, &p, grid));
  KILN_RETURN_IF_ERROR(kiln_bench_sweep_time(device, kernel, &p, sizeof(p), c->buffers, grid, &ns));
  KILN_RETURN_IF_ERROR(kiln_hal_device_read_buffer(device, c->buffers[4], 0, c->got,
                                                   c->m * c->n * sizeof(float)));
  double err = qbench_error(c);
  bool ok = err <= 1e-4;
  if (!ok) ++*failures;
  double bytes = (double)c->n * c->row_bytes + (double)c->m * (c->k + c->n) * sizeof(float);
  printf("| %zu x %5zu x %-5zu | %-5s | %-22s | %9.4f | %6.4f | %5.1f%% | %8.2g %-4s |\n", c->m,
         c->n, c->k, c->layout ? kiln_quant_layout_name(c->layout) : "fp32", label, ns / 1e6,
         bytes / ns / 1e3, 100.0 * (bytes / ns) / copy_gbps, err, ok ? "ok" : "FAIL");
  fflush(stdout);
  return kiln_ok_status();
}

// `kernel` under `arch`'s configuration with the layout and TM constants.
static kiln_status_t qbench_run_kernel(kiln_hal_device_t* device, qbench_case_t* c,
                                       kiln_kernel_id_t id, const char* arch, uint32_t tm,
                                       const char* label, double copy_gbps, int* failures) {
  kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_GEMM_TM, tm}, {KILN_SPEC_QGEMM_LAYOUT, c->layout}};
  kiln_kernel_executable_t kernel = {0};
  KILN_RETURN_IF_ERROR(kiln_kernel_executable_create_portable(
      device, id, arch, c->layout ? ops : NULL, c->layout ? 2 : 0, &kernel));
  kiln_status_t status = qbench_run(device, c, &kernel, label, copy_gbps, failures);
  kiln_hal_executable_release(kernel.executable);
  return status;
}

// The copy bandwidth, the better of two measurements (bytes read + written
// over the time, GB/s): the copy kernel over 2 x 128 MiB (beyond any GPU's
// last-level cache; GPU timestamps), and vkCmdCopyBuffer of 256 MiB, 10
// copies in one submission timed by the wall clock.
static kiln_status_t qbench_copy(kiln_hal_device_t* device, const char* arch, double* out_gbps) {
  const uint32_t count = 32u << 20;
  kiln_hal_buffer_t* buffers[2] = {NULL};
  kiln_kernel_executable_t kernel = {0};
  kiln_hal_command_buffer_t* cb = NULL;
  kiln_status_t status = kiln_kernel_test_buffer(device, NULL, 2 * (size_t)count, &buffers[0]);
  if (!status) status = kiln_kernel_test_buffer(device, NULL, 2 * (size_t)count, &buffers[1]);
  if (!status) {
    status = kiln_kernel_executable_create_portable(device, KILN_KERNEL_COPY, arch, NULL, 0,
                                                    &kernel);
  }
  kiln_kernel_copy_params_t p = {count};
  uint32_t grid[3];
  double ns = 0;
  if (!status) status = kiln_kernel_grid_linear(&kernel.config, count, grid);
  if (!status) {
    status = kiln_bench_time_dispatch(device, &kernel, &p, sizeof(p), buffers, 2, grid, &ns);
  }
  double kernel_gbps = 0, cmd_gbps = 0;
  if (!status) {
    kernel_gbps = 2.0 * count * sizeof(float) / ns;
    printf("| copy %-13s | fp32  | %-22s | %9.4f | %6.3f |        |               |\n",
           "2 x 128 MiB", "copy kernel", ns / 1e6, kernel_gbps / 1e3);
  }
  const uint64_t bytes = 2ull * count * sizeof(float);
  const int copies = 10;
  if (!status) status = kiln_hal_command_buffer_create(device, 0, &cb);
  if (!status) status = kiln_hal_command_buffer_begin(cb);
  for (int i = 0; i < copies && !status; ++i) {
    status = kiln_hal_command_buffer_copy(cb, buffers[i & 1], 0, buffers[(i + 1) & 1], 0, bytes);
    if (!status) {
      status = kiln_hal_command_buffer_barrier(cb, KILN_HAL_STAGE_TRANSFER,
                                               KILN_HAL_STAGE_TRANSFER);
    }
  }
  if (!status) status = kiln_hal_command_buffer_end(cb);
  if (!status) status = kiln_kernel_test_submit_and_wait(device, cb);  // warm-up
  if (!status) {
    const int64_t start = kiln_time_now_ns();
    status = kiln_kernel_test_submit_and_wait(device, cb);
    const double copy_ns = (double)(kiln_time_now_ns() - start);
    cmd_gbps = 2.0 * (double)bytes * copies / copy_ns;
    printf("| copy %-13s | fp32  | %-22s | %9.4f | %6.3f |        |               |\n",
           "10 x 256 MiB", "vkCmdCopyBuffer", copy_ns / copies / 1e6, cmd_gbps / 1e3);
  }
  *out_gbps = kernel_gbps > cmd_gbps ? kernel_gbps : cmd_gbps;
  if (cb) kiln_hal_command_buffer_release(cb);
  if (kernel.executable) kiln_hal_executable_release(kernel.executable);
  for (int i = 0; i < 2; ++i) kiln_hal_buffer_release(buffers[i]);
  return status;
}

static const size_t kShapes[][2] = {{4096, 4096}, {11008, 4096}, {4096, 11008}};  // n x k
static const kiln_quant_layout_t kLayouts[] = {KILN_QUANT_Q4_0, KILN_QUANT_Q8_0, KILN_QUANT_Q4_K,
                                               KILN_QUANT_INT8};

static void qbench_header(void) {
  printf("| %-18s | %-5s | %-22s | %9s | %6s | %6s | %-13s |\n", "m x n x k", "B", "kernel",
         "median ms", "TB/s", "% copy", "max err");
  printf("|--------------------|-------|------------------------|-----------|--------|--------|"
         "---------------|\n");
}

kiln_status_t kiln_bench_qgemm(kiln_hal_device_t* device, const char* arch, int* out_failures) {
  double copy = 0;
  qbench_header();
  KILN_RETURN_IF_ERROR(qbench_copy(device, arch, &copy));
  for (size_t s = 0; s < sizeof(kShapes) / sizeof(kShapes[0]); ++s) {
    qbench_case_t c;
    KILN_RETURN_IF_ERROR(
        qbench_case_create(device, 1, kShapes[s][0], kShapes[s][1], KILN_QUANT_NONE, &c));
    kiln_status_t status =
        qbench_run_kernel(device, &c, KILN_KERNEL_GEMV, arch, 1, "gemv", copy, out_failures);
    qbench_case_free(&c);
    KILN_RETURN_IF_ERROR(status);
    for (size_t l = 0; l < sizeof(kLayouts) / sizeof(kLayouts[0]); ++l) {
      KILN_RETURN_IF_ERROR(
          qbench_case_create(device, 1, kShapes[s][0], kShapes[s][1], kLayouts[l], &c));
      status = qbench_run_kernel(device, &c, KILN_KERNEL_QGEMV, arch, 1, "qgemv", copy,
                                 out_failures);
      if (!status) {
        status = qbench_run_kernel(device, &c, KILN_KERNEL_QGEMM, arch, 1, "qgemm", copy,
                                   out_failures);
      }
      qbench_case_free(&c);
      KILN_RETURN_IF_ERROR(status);
    }
  }
  // A few rows of A sharing each weight read: qgemv up to its bound, qgemm
  // as the lowering would run it (TM 4 / 8).
  const size_t rows[] = {2, 4, 8};
  for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); ++r) {
    qbench_case_t c;
    KILN_RETURN_IF_ERROR(qbench_case_create(device, rows[r], 4096, 4096, KILN_QUANT_Q4_0, &c));
    kiln_status_t status = qbench_run_kernel(device, &c, KILN_KERNEL_QGEMV, arch,
                                             (uint32_t)rows[r], "qgemv", copy, out_failures);
    if (!status) {
      status = qbench_run_kernel(device, &c, KILN_KERNEL_QGEMM, arch, rows[r] >= 8 ? 8 : 4,
                                 "qgemm", copy, out_failures);
    }
    qbench_case_free(&c);
    KILN_RETURN_IF_ERROR(status);
  }
  return kiln_ok_status();
}

// One qgemv tiling candidate (subgroup build where the arch has subgroup
// arithmetic, else the shared-memory tree) on the case.
static kiln_status_t qbench_sweep_one(kiln_hal_device_t* device, qbench_case_t* c,
                                      const kiln_kernel_arch_caps_t* caps, uint32_t tm,
                                      const kiln_kernel_qgemv_tiling_t* t, bool tree,
                                      double copy, int* failures) {
  kiln_kernel_config_t config;
  KILN_RETURN_IF_ERROR(
      kiln_kernel_config_select(KILN_KERNEL_QGEMV, caps, KILN_KERNEL_STORAGE_FP32, &config));
  char label[32];
  if (config.variant == KILN_KERNEL_VARIANT_CPU) {
    // qgemm_cpu's 8 lanes, `rows` weight rows each.
    KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_TN, t->rows));
    snprintf(label, sizeof(label), "qgemv cpu 8 x %u", t->rows);
  } else if (tree) {
    config.variant = KILN_KERNEL_VARIANT_FP32;
    config.required_features &= ~(uint32_t)KILN_FORMAT_FEATURE_SUBGROUP_OPS;
  }
  if (config.variant != KILN_KERNEL_VARIANT_CPU) {
    kiln_status_t fits = kiln_kernel_qgemv_tiling_apply(t, caps, &config);
    if (fits) {  // not on this arch
      kiln_status_free(fits);
      return kiln_ok_status();
    }
    KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(&config, KILN_SPEC_WORKGROUP_X, t->wg));
    KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(&config, KILN_SPEC_WORKGROUP_Y, 1));
    snprintf(label, sizeof(label), "qgemv%s %u x %u u%u", tree ? " tree" : "", t->wg, t->rows,
             t->unroll);
  }
  KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_TM, tm));
  KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(&config, KILN_SPEC_QGEMM_LAYOUT, c->layout));
  kiln_kernel_executable_t kernel = {0};
  KILN_RETURN_IF_ERROR(kiln_kernel_executable_create_from_config(device, &config, &kernel));
  kiln_status_t status = qbench_run(device, c, &kernel, label, copy, failures);
  kiln_hal_executable_release(kernel.executable);
  return status;
}

kiln_status_t kiln_bench_qgemv_sweep(kiln_hal_device_t* device, const char* arch,
                                     int* out_failures) {
  kiln_kernel_arch_caps_t caps;
  KILN_RETURN_IF_ERROR(kiln_kernel_arch_caps_for_arch(arch, &caps));
  double copy = 0;
  qbench_header();
  KILN_RETURN_IF_ERROR(qbench_copy(device, arch, &copy));
  if (caps.subgroup_size <= 8) {  // CPU-like: qgemm_cpu at 1, 2, 4, 8 rows per lane, 4096 x 4096
    const kiln_kernel_qgemv_tiling_t cpu[] = {{8, 1, 1}, {8, 2, 1}, {8, 4, 1}, {8, 8, 1}};
    for (size_t l = 0; l < sizeof(kLayouts) / sizeof(kLayouts[0]); ++l) {
      qbench_case_t c;
      KILN_RETURN_IF_ERROR(qbench_case_create(device, 1, 4096, 4096, kLayouts[l], &c));
      kiln_status_t status = kiln_ok_status();
      for (size_t i = 0; !status && i < sizeof(cpu) / sizeof(cpu[0]); ++i) {
        status = qbench_sweep_one(device, &c, &caps, 1, &cpu[i], false, copy, out_failures);
      }
      qbench_case_free(&c);
      KILN_RETURN_IF_ERROR(status);
    }
    return kiln_ok_status();
  }
  for (size_t s = 0; s < sizeof(kShapes) / sizeof(kShapes[0]); ++s) {
    for (size_t l = 0; l < sizeof(kLayouts) / sizeof(kLayouts[0]); ++l) {
      qbench_case_t c;
      KILN_RETURN_IF_ERROR(
          qbench_case_create(device, 1, kShapes[s][0], kShapes[s][1], kLayouts[l], &c));
      kiln_status_t status = kiln_ok_status();
      for (size_t i = 0; !status && i < kiln_kernel_qgemv_candidate_count(); ++i) {
        status = qbench_sweep_one(device, &c, &caps, 1, kiln_kernel_qgemv_candidate(i), false,
                                  copy, out_failures);
      }
      const kiln_kernel_qgemv_tiling_t tree = {128, 4, 2};
      if (!status && caps.subgroup_arithmetic) {
        status = qbench_sweep_one(device, &c, &caps, 1, &tree, true, copy, out_failures);
      }
      qbench_case_free(&c);
      KILN_RETURN_IF_ERROR(status);
    }
  }
  // M = 4 on q4_0 4096x4096 per candidate: where rows of A stop paying.
  qbench_case_t c;
  KILN_RETURN_IF_ERROR(qbench_case_create(device, 4, 4096, 4096, KILN_QUANT_Q4_0, &c));
  kiln_status_t status = kiln_ok_status();
  for (size_t i = 0; !status && i < kiln_kernel_qgemv_candidate_count(); ++i) {
    status = qbench_sweep_one(device, &c, &caps, 4, kiln_kernel_qgemv_candidate(i), false, copy,
                              out_failures);
  }
  qbench_case_free(&c);
  return status;
}
