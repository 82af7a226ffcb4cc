// kiln-kernels-bench --quant [--arch=A]: the copy bandwidth and the floor
// of a trivial dispatch, then quantized GEMVs (the decode shape of a 7B
// LLM's linear layers: 4096x4096, 4096 -> 11008 and back) per weight layout
// through qgemv and qgemm, with the fp32 gemv for comparison, and a few
// M > 1 rows. Each is timed two ways: alone (median of single-dispatch
// submissions: GPU clocks may have dropped between them, and the weights
// stay in the last-level cache from one to the next), and in a stream
// (qbench_stream: back to back as a model's layers run, clocks settled,
// each dispatch reading a different copy of the weights, all copies
// together beyond the cache). The effective bandwidth (weight bytes as
// stored + A + C over the median in-stream dispatch time) and its share of
// the copy bandwidth come from the stream. Every result is checked against
// a C product over the reference dequantizer's weights (max|err| <= 1e-4
// max|ref|). `--quant-sweep` times every qgemv tiling candidate
// (qgemv_tuning.c) in the stream on the same shapes and prints the best
// few per shape, to refill the tuning table.
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
// Weight copies the stream rotates through: together at least
// QBENCH_ROTATE_BYTES (beyond any GPU's last-level cache: H100 50 MB).
#define QBENCH_ROTATE_BYTES (160ull << 20)
#define QBENCH_MAX_COPIES 32
typedef struct qbench_case_t {
  size_t m, n, k;
  kiln_quant_layout_t layout;  // KILN_QUANT_NONE: fp32 B [n][k]
  uint64_t row_bytes;
  float* a;
  float* w;
  float* got;
  kiln_hal_buffer_t* buffers[5];  // buffers[1] is copies[0]
  kiln_hal_buffer_t* copies[QBENCH_MAX_COPIES];
  uint32_t copy_count;
} qbench_case_t;

static void qbench_case_free(qbench_case_t* c) {
  for (int i = 0; i < 5; ++i) {
    if (i != 1) kiln_hal_buffer_release(c->buffers[i]);
  }
  for (uint32_t i = 0; i < c->copy_count; ++i) kiln_hal_buffer_release(c->copies[i]);
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
  uint64_t copies = (QBENCH_ROTATE_BYTES + w_bytes - 1) / w_bytes;
  if (copies > QBENCH_MAX_COPIES) copies = QBENCH_MAX_COPIES;
  for (uint32_t i = 0; i < copies && !status; ++i) {
    status = kiln_kernel_test_buffer(device, (const float*)packed, w_bytes / 4, &c->copies[i]);
    if (!status) c->copy_count = i + 1;
  }
  if (!status) c->buffers[1] = c->copies[0];
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

static int qbench_compare(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : (x > y ? 1 : 0);
}

#define QBENCH_WARM_NS 150000000ll  // GPU busy this long before timing
#define QBENCH_STREAM_REPS 5
#define QBENCH_STREAM_MIN 48  // dispatches per submission

// In-stream time of `kernel`: one submission of R dispatches with a
// barrier between consecutive ones (as a model's layers), dispatch i
// binding rotation[i % copies] at binding `rotate` (copies 0: no rotation);
// submitted until the GPU has been kept busy for QBENCH_WARM_NS (clocks
// settle), then QBENCH_STREAM_REPS timed submissions. Out: the median
// per-dispatch GPU time (timestamps; the wall clock over R without them)
// and the whole submission's GPU time over R (barriers and gaps included),
// medians over the timed submissions.
static kiln_status_t qbench_stream(kiln_hal_device_t* device,
                                   const kiln_kernel_executable_t* kernel, const void* push,
                                   uint32_t push_bytes, kiln_hal_buffer_t* const* buffers,
                                   uint32_t buffer_count, uint32_t rotate,
                                   kiln_hal_buffer_t* const* rotation, uint32_t copies,
                                   uint32_t min_dispatches, const uint32_t grid[3],
                                   double* out_dispatch_ns, double* out_stream_ns) {
  const bool timestamps = kiln_hal_device_info(device)->timestamps;
  const uint32_t per = copies ? copies : 1;
  const uint32_t count = per * ((min_dispatches + per - 1) / per);
  kiln_hal_buffer_t* bound[KILN_KERNEL_MAX_BINDINGS];
  if (buffer_count > KILN_KERNEL_MAX_BINDINGS) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "%u buffers", buffer_count);
  }
  memcpy(bound, buffers, buffer_count * sizeof(bound[0]));
  kiln_hal_command_buffer_t* cb = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_command_buffer_create(
      device, timestamps ? KILN_HAL_COMMAND_BUFFER_TIMESTAMPS : 0, &cb));
  double* each = malloc(count * sizeof(double));
  if (!each) abort();
  kiln_status_t status = kiln_hal_command_buffer_begin(cb);
  for (uint32_t i = 0; i < count && !status; ++i) {
    if (copies) bound[rotate] = rotation[i % copies];
    if (i > 0) {
      status = kiln_hal_command_buffer_barrier(cb, KILN_HAL_STAGE_DISPATCH,
                                               KILN_HAL_STAGE_DISPATCH);
    }
    if (!status) {
      status = kiln_kernel_test_dispatch(cb, kernel, push, push_bytes, bound, buffer_count, grid);
    }
  }
  if (!status) status = kiln_hal_command_buffer_end(cb);
  const int64_t warm_start = kiln_time_now_ns();
  for (int i = 0; !status && (i < 2 || kiln_time_now_ns() - warm_start < QBENCH_WARM_NS); ++i) {
    status = kiln_kernel_test_submit_and_wait(device, cb);
  }
  double dispatch[QBENCH_STREAM_REPS], stream[QBENCH_STREAM_REPS];
  for (int r = 0; r < QBENCH_STREAM_REPS && !status; ++r) {
    const int64_t start = kiln_time_now_ns();
    status = kiln_kernel_test_submit_and_wait(device, cb);
    stream[r] = dispatch[r] = (double)(kiln_time_now_ns() - start) / count;
    if (!status && timestamps) {
      for (uint32_t i = 0; i < count && !status; ++i) {
        status = kiln_hal_command_buffer_dispatch_time_ns(cb, i, &each[i]);
      }
      if (!status) status = kiln_hal_command_buffer_total_time_ns(cb, &stream[r]);
      if (!status) {
        qsort(each, count, sizeof(double), qbench_compare);
        dispatch[r] = each[count / 2];
        stream[r] /= count;
      }
    }
  }
  free(each);
  kiln_hal_command_buffer_release(cb);
  if (status) return status;
  qsort(dispatch, QBENCH_STREAM_REPS, sizeof(double), qbench_compare);
  qsort(stream, QBENCH_STREAM_REPS, sizeof(double), qbench_compare);
  *out_dispatch_ns = dispatch[QBENCH_STREAM_REPS / 2];
  *out_stream_ns = stream[QBENCH_STREAM_REPS / 2];
  return kiln_ok_status();
}

// One measurement of a kernel on a case: times (ns) and the check.
typedef struct qbench_result_t {
  double alone_ns, dispatch_ns, stream_ns, err;
  bool ok;
} qbench_result_t;

static double qbench_bytes(const qbench_case_t* c) {
  return (double)c->n * c->row_bytes + (double)c->m * (c->k + c->n) * sizeof(float);
}

// Times `kernel` on the case (in the stream; alone too where `alone`) and
// checks it.
static kiln_status_t qbench_measure(kiln_hal_device_t* device, qbench_case_t* c,
                                    const kiln_kernel_executable_t* kernel, bool alone,
                                    qbench_result_t* out) {
  memset(out, 0, sizeof(*out));
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
  KILN_RETURN_IF_ERROR(kiln_kernel_grid_gemm(&kernel->config, &p, grid));
  if (alone) {
    KILN_RETURN_IF_ERROR(
        kiln_bench_sweep_time(device, kernel, &p, sizeof(p), c->buffers, grid, &out->alone_ns));
  }
  KILN_RETURN_IF_ERROR(qbench_stream(device, kernel, &p, sizeof(p), c->buffers, 5, 1, c->copies,
                                     c->copy_count, QBENCH_STREAM_MIN, grid, &out->dispatch_ns,
                                     &out->stream_ns));
  KILN_RETURN_IF_ERROR(kiln_hal_device_read_buffer(device, c->buffers[4], 0, c->got,
                                                   c->m * c->n * sizeof(float)));
  out->err = qbench_error(c);
  out->ok = out->err <= 1e-4;
  return kiln_ok_status();
}

// Times `kernel` on the case, checks it and prints one row.
static kiln_status_t qbench_run(kiln_hal_device_t* device, qbench_case_t* c,
                                const kiln_kernel_executable_t* kernel, const char* label,
                                double copy_gbps, int* failures) {
  if (!c->w) return kiln_ok_status();  // skipped (qbench_case_create)
  qbench_result_t r;
  KILN_RETURN_IF_ERROR(qbench_measure(device, c, kernel, true, &r));
  if (!r.ok) ++*failures;
  const double bytes = qbench_bytes(c);
  printf("| %zux%5zux%-5zu | %-5s | %-6s | %7.4f | %7.4f | %7.4f | %5.3f | %5.1f%% | %7.2g %-4s|\n",
         c->m, c->n, c->k, c->layout ? kiln_quant_layout_name(c->layout) : "fp32", label,
         r.alone_ns / 1e6, r.dispatch_ns / 1e6, r.stream_ns / 1e6, bytes / r.dispatch_ns / 1e3,
         100.0 * (bytes / r.dispatch_ns) / copy_gbps, r.err, r.ok ? "ok" : "FAIL");
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

// The copy bandwidth, the best of three measurements (bytes read +
// written over the time, GB/s): the copy kernel over 2 x 128 MiB (beyond
// any GPU's last-level cache; GPU timestamps) alone and in a stream, and
// vkCmdCopyBuffer of 256 MiB, 10 copies in one submission timed by the
// wall clock. Then the floor of a dispatch: the copy kernel on 64 floats
// (one workgroup), alone and in a stream.
static kiln_status_t qbench_copy(kiln_hal_device_t* device, const char* arch, double* out_gbps) {
  uint32_t count = 32u << 20;  // halved where the storage range is smaller (lavapipe: 128 MiB)
  while ((uint64_t)count * 8 > kiln_hal_device_info(device)->limits.max_storage_buffer_range) {
    count /= 2;
  }
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
  double ns = 0, dispatch_ns = 0, stream_ns = 0;
  if (!status) status = kiln_kernel_grid_linear(&kernel.config, count, grid);
  if (!status) {
    status = kiln_bench_time_dispatch(device, &kernel, &p, sizeof(p), buffers, 2, grid, &ns);
  }
  if (!status) {
    status = qbench_stream(device, &kernel, &p, sizeof(p), buffers, 2, 0, NULL, 0, 10, grid,
                           &dispatch_ns, &stream_ns);
  }
  double kernel_gbps = 0, cmd_gbps = 0;
  if (!status) {
    const double best = ns < dispatch_ns ? ns : dispatch_ns;
    kernel_gbps = 2.0 * count * sizeof(float) / best;
    printf("| copy 2x%4u MiB  | fp32  | copy   | %7.4f | %7.4f | %7.4f | %5.3f |        |            |\n",
           count >> 18, ns / 1e6, dispatch_ns / 1e6, stream_ns / 1e6, kernel_gbps / 1e3);
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
    printf("| copy 10x%4u MiB | fp32  | vkCopy |         |         | %7.4f | %5.3f |        |            |\n",
           count >> 17, copy_ns / copies / 1e6, cmd_gbps / 1e3);
  }
  // The trivial dispatch: what any dispatch costs at least.
  p.count = 64;
  if (!status) status = kiln_kernel_grid_linear(&kernel.config, p.count, grid);
  if (!status) {
    status = kiln_bench_time_dispatch(device, &kernel, &p, sizeof(p), buffers, 2, grid, &ns);
  }
  if (!status) {
    status = qbench_stream(device, &kernel, &p, sizeof(p), buffers, 2, 0, NULL, 0,
                           QBENCH_STREAM_MIN, grid, &dispatch_ns, &stream_ns);
  }
  if (!status) {
    printf("| trivial 64 floats| fp32  | copy   | %7.4f | %7.4f | %7.4f |       |        |            |\n",
           ns / 1e6, dispatch_ns / 1e6, stream_ns / 1e6);
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

// alone: median ms of single-dispatch submissions; disp: median ms of a
// dispatch in the stream; strm: the stream's GPU time per dispatch
// (barriers and gaps included); TB/s and % copy from disp.
static void qbench_header(void) {
  printf("| %-16s | %-5s | %-6s | %7s | %7s | %7s | %5s | %6s | %-10s |\n", "m x n x k", "B",
         "kernel", "alone", "disp", "strm", "TB/s", "% copy", "max err");
  printf("|------------------|-------|--------|---------|---------|---------|-------|--------|"
         "------------|\n");
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
// arithmetic, else the shared-memory tree) on the case, timed in the
// stream; *out_fits false where the tiling does not fit the arch.
typedef struct qbench_sweep_row_t {
  char label[24];
  qbench_result_t r;
} qbench_sweep_row_t;

static kiln_status_t qbench_sweep_one(kiln_hal_device_t* device, qbench_case_t* c,
                                      const kiln_kernel_arch_caps_t* caps, uint32_t tm,
                                      const kiln_kernel_qgemv_tiling_t* t, bool tree,
                                      qbench_sweep_row_t* out, bool* out_fits) {
  *out_fits = false;
  kiln_kernel_config_t config;
  KILN_RETURN_IF_ERROR(
      kiln_kernel_config_select(KILN_KERNEL_QGEMV, caps, KILN_KERNEL_STORAGE_FP32, &config));
  if (config.variant == KILN_KERNEL_VARIANT_CPU) {
    // qgemm_cpu's 8 lanes, `rows` weight rows each.
    KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_TN, t->rows));
    snprintf(out->label, sizeof(out->label), "cpu 8x%u", t->rows);
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
    snprintf(out->label, sizeof(out->label), "%s%ux%uu%us%u", tree ? "tree " : "", t->wg,
             t->rows, t->unroll, t->span);
  }
  KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_TM, tm));
  KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(&config, KILN_SPEC_QGEMM_LAYOUT, c->layout));
  kiln_kernel_executable_t kernel = {0};
  KILN_RETURN_IF_ERROR(kiln_kernel_executable_create_from_config(device, &config, &kernel));
  kiln_status_t status = qbench_measure(device, c, &kernel, false, &out->r);
  kiln_hal_executable_release(kernel.executable);
  *out_fits = !status;
  return status;
}

static int qbench_row_compare(const void* a, const void* b) {
  const qbench_sweep_row_t *x = a, *y = b;
  return x->r.dispatch_ns < y->r.dispatch_ns ? -1 : (x->r.dispatch_ns > y->r.dispatch_ns ? 1 : 0);
}

// Every candidate (and the tree build of the table's tiling) on the case;
// prints the best QBENCH_SWEEP_TOP (in-stream dispatch ms and % of copy),
// the table's row for `arch` and the slowest, and counts failed checks.
#define QBENCH_SWEEP_TOP 5
static kiln_status_t qbench_sweep_case(kiln_hal_device_t* device, qbench_case_t* c,
                                       const kiln_kernel_arch_caps_t* caps, uint32_t tm,
                                       double copy, int* failures) {
  if (!c->w) return kiln_ok_status();
  const size_t total = kiln_kernel_qgemv_candidate_count() + 2;
  qbench_sweep_row_t* rows = calloc(total, sizeof(*rows));
  if (!rows) abort();
  const kiln_kernel_qgemv_tiling_t* table = kiln_kernel_qgemv_tuning(caps->arch);
  kiln_status_t status = kiln_ok_status();
  size_t count = 0;
  char table_label[24] = "";
  for (size_t i = 0; i < total && !status; ++i) {
    const bool tree = i == total - 1;
    const kiln_kernel_qgemv_tiling_t* t = i < total - 2 ? kiln_kernel_qgemv_candidate(i) : table;
    if (tree && !caps->subgroup_arithmetic) continue;
    if (!t) continue;
    bool fits = false;
    status = qbench_sweep_one(device, c, caps, tm, t, tree, &rows[count], &fits);
    if (!status && fits) {
      if (!rows[count].r.ok) ++*failures;
      if (i == total - 2) memcpy(table_label, rows[count].label, sizeof(table_label));
      ++count;
    }
  }
  if (!status && count) {
    qsort(rows, count, sizeof(*rows), qbench_row_compare);
    const double bytes = qbench_bytes(c);
    printf("%zux%zux%zu %s:", c->m, c->n, c->k, c->layout ? kiln_quant_layout_name(c->layout) : "fp32");
    for (size_t i = 0; i < count; ++i) {
      const bool is_table = strcmp(rows[i].label, table_label) == 0;
      if (i >= QBENCH_SWEEP_TOP && !is_table && i != count - 1) continue;
      printf(" %s%s %.4f %.0f%%%s |", is_table ? "table=" : "", rows[i].label,
             rows[i].r.dispatch_ns / 1e6, 100.0 * (bytes / rows[i].r.dispatch_ns) / copy,
             rows[i].r.ok ? "" : " FAIL");
    }
    printf("\n");
    fflush(stdout);
  }
  free(rows);
  return status;
}

kiln_status_t kiln_bench_qgemv_sweep(kiln_hal_device_t* device, const char* arch,
                                     int* out_failures) {
  kiln_kernel_arch_caps_t caps;
  KILN_RETURN_IF_ERROR(kiln_kernel_arch_caps_for_arch(arch, &caps));
  double copy = 0;
  qbench_header();
  KILN_RETURN_IF_ERROR(qbench_copy(device, arch, &copy));
  printf("\nper shape: the best %d qgemv tilings (wg x rows, unroll, span) by in-stream dispatch "
         "ms and %% of copy, the table's, the slowest\n",
         QBENCH_SWEEP_TOP);
  if (caps.subgroup_size <= 8) {  // CPU-like: qgemm_cpu at 1, 2, 4, 8 rows per lane, 4096 x 4096
    const kiln_kernel_qgemv_tiling_t cpu[] = {{8, 1, 1, 4}, {8, 2, 1, 4}, {8, 4, 1, 4}, {8, 8, 1, 4}};
    for (size_t l = 0; l < sizeof(kLayouts) / sizeof(kLayouts[0]); ++l) {
      qbench_case_t c;
      KILN_RETURN_IF_ERROR(qbench_case_create(device, 1, 4096, 4096, kLayouts[l], &c));
      kiln_status_t status = kiln_ok_status();
      for (size_t i = 0; !status && i < sizeof(cpu) / sizeof(cpu[0]); ++i) {
        qbench_sweep_row_t row;
        bool fits = false;
        status = qbench_sweep_one(device, &c, &caps, 1, &cpu[i], false, &row, &fits);
        if (!status && fits) {
          if (!row.r.ok) ++*out_failures;
          printf("4096x4096 %s %s: %.4f ms%s\n", kiln_quant_layout_name(kLayouts[l]), row.label,
                 row.r.dispatch_ns / 1e6, row.r.ok ? "" : " FAIL");
        }
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
      kiln_status_t status = qbench_sweep_case(device, &c, &caps, 1, copy, out_failures);
      qbench_case_free(&c);
      KILN_RETURN_IF_ERROR(status);
    }
  }
  // M = 4 on q4_0 4096x4096 per candidate: where rows of A stop paying.
  qbench_case_t c;
  KILN_RETURN_IF_ERROR(qbench_case_create(device, 4, 4096, 4096, KILN_QUANT_Q4_0, &c));
  kiln_status_t status = qbench_sweep_case(device, &c, &caps, 4, copy, out_failures);
  qbench_case_free(&c);
  return status;
}
