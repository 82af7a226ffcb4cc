// kiln-kernels-bench: times library kernels through the HAL on the device
// KILN_TEST_DEVICE names, once per target tiling (each run here as a
// portable variant), against the plain C reference measured in the same
// run. Prints one table: what was measured, the median GPU time of the
// dispatch in streams of copies once the clocks are up
// (kiln_bench_time_dispatch: per-dispatch timestamps where the device has
// them, else wall time around submit-and-wait), GFLOP/s, and the ratio to the C
// reference (single-threaded, double accumulation: a floor, not a rival).
// `--sweep [--max-gflop=X]` instead runs every GEMM tiling of the tuning
// table and its candidates on the issue-16 shapes (gemm_sweep.c) and exits
// non-zero when a result fails its check; `--coopmat [--only=PREFIX]` the same for
// gemm_coopmat (coopmat_sweep.c; refused on devices without cooperative
// matrix). `--quant [--arch=A]` times the quantized GEMVs (qgemm_bench.c)
// under arch A's configuration (default hopper; the device picks nothing:
// the config runs as a portable variant). `--shapes=models [--arch=A]`
// times the bench CNNs' conv/GEMM shapes per occupancy candidate
// (model_sweep.c; arch default: the device's); `--quant-sweep [--arch=A]`
// times every qgemv tiling candidate under A's caps. `--cold-l2=MIB`
// (any mode) fills MIB MiB of scratch before each timed copy, so each
// reads its operands from memory as a model's first read of a weight does
// (kiln_bench_set_cold_bytes).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/gemm_sweep.h"
#include "hal/kernel_executable.h"
#include "kiln/base/time.h"
#include "reference/reference.h"
#include "tool_cli.h"

static float* random_values(size_t count, uint32_t seed) {
  float* values = malloc(count * sizeof(float));
  if (!values) abort();
  uint32_t state = seed * 2654435761u + 7u;
  for (size_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    values[i] = (float)((state >> 8) * (2.0 / 16777216.0) - 1.0);
  }
  return values;
}

// One row, with the output read back and checked against the C reference
// (relative to max|want|, bound 1e-4): a time of a wrong result counts as
// a failure (the tool then exits 1), never as a speed.
static kiln_status_t print_row(kiln_hal_device_t* device, kiln_hal_buffer_t* out,
                               const float* want, size_t count, const char* what,
                               const char* tiling, double ns, double flops, double reference_ns,
                               int* failures) {
  float* got = malloc(count * sizeof(float));
  if (!got) abort();
  kiln_status_t status = kiln_hal_device_read_buffer(device, out, 0, got, count * sizeof(float));
  double scale = 0, worst = 0;
  for (size_t i = 0; i < count; ++i) scale = fmax(scale, fabs(want[i]));
  for (size_t i = 0; i < count && !status; ++i) {
    const double e = fabs((double)got[i] - want[i]) / (scale > 0 ? scale : 1);
    if (!(e <= worst)) worst = e;  // NaN stays the worst
  }
  // NaN over the output for the next row, so a row that writes nothing
  // cannot pass on the one before's result.
  const uint32_t nan_bits = 0x7fc00000u;
  kiln_hal_command_buffer_t* cb = NULL;
  if (!status) status = kiln_hal_command_buffer_create(device, 0, &cb);
  if (!status) status = kiln_hal_command_buffer_begin(cb);
  if (!status) status = kiln_hal_command_buffer_fill(cb, out, 0, count * 4, &nan_bits, 4);
  if (!status) status = kiln_hal_command_buffer_end(cb);
  if (!status) status = kiln_kernel_test_submit_and_wait(device, cb);
  kiln_hal_command_buffer_release(cb);
  free(got);
  if (status) return status;
  const bool ok = worst <= 1e-4;
  if (!ok) ++*failures;
  printf("| %-34s | %-8s | %10.3f | %8.2f | %8.1fx | %-4s %.1e |\n", what, tiling, ns / 1e6,
         flops / ns, reference_ns / ns, ok ? "ok" : "FAIL", worst);
  return kiln_ok_status();
}

static const char* const kTilings[] = {"cpu", "unknown", "valhall", "adreno", "ampere"};

static kiln_status_t bench_gemm(kiln_hal_device_t* device, size_t size, int* failures) {
  const size_t m = size, n = size, k = size;
  float* a = random_values(m * k, 1);
  float* b = random_values(k * n, 2);
  float* c = malloc(m * n * sizeof(float));
  if (!c) abort();
  int64_t start = kiln_time_now_ns();
  ref_gemm(1, m, n, k, a, true, false, b, true, false, 1, NULL, false, NULL, 0, 0, 0, c);
  double reference_ns = (double)(kiln_time_now_ns() - start);
  kiln_hal_buffer_t* buffers[5] = {NULL};
  kiln_status_t status = kiln_kernel_test_buffer(device, a, m * k, &buffers[0]);
  if (!status) status = kiln_kernel_test_buffer(device, b, k * n, &buffers[1]);
  if (!status) status = kiln_kernel_test_buffer(device, NULL, 4, &buffers[2]);
  if (!status) status = kiln_kernel_test_buffer(device, NULL, 4, &buffers[3]);
  if (!status) status = kiln_kernel_test_buffer(device, NULL, m * n, &buffers[4]);
  char what[64];
  snprintf(what, sizeof(what), "gemm %zux%zux%zu", m, n, k);
  kiln_kernel_gemm_params_t p = {(uint32_t)m, (uint32_t)n, (uint32_t)k, 1, 0, (uint32_t)k, 1,
                                 0, (uint32_t)n, 1, 0, (uint32_t)n, 0, 0, 0, 0, 0, 1, 0, 0};
  for (size_t t = 0; t < sizeof(kTilings) / sizeof(kTilings[0]) && !status; ++t) {
    kiln_kernel_executable_t kernel;
    status = kiln_kernel_executable_create_portable(device, KILN_KERNEL_GEMM, kTilings[t],
                                                    NULL, 0, &kernel);
    if (status) break;
    uint32_t grid[3];
    double ns = 0;
    status = kiln_kernel_grid_gemm(&kernel.config, &p, grid);
    if (!status) {
      status = kiln_bench_sweep_time(device, &kernel, &p, sizeof(p), buffers, grid, &ns);
    }
    if (!status) {
      status = print_row(device, buffers[4], c, m * n, what, kTilings[t], ns, 2.0 * m * n * k,
                         reference_ns, failures);
    }
    kiln_hal_executable_release(kernel.executable);
  }
  // Other tilings of the shared-memory kernel: kiln-kernels-bench --sweep.
  for (int i = 0; i < 5; ++i) kiln_hal_buffer_release(buffers[i]);
  free(a);
  free(b);
  free(c);
  return status;
}

// ResNet-18 stage 2 conv: 64 -> 64 channels, 3x3 pad 1 on 28x28, as the
// direct conv (conv2d.comp under the ampere tiling with every CO_BLOCK;
// conv2d_cpu, whose tile is fixed at 8 x 8, under cpu) and as conv2d_gemm.
static kiln_status_t bench_conv(kiln_hal_device_t* device, int* failures) {
  ref_conv2d_t c = {1, 64, 28, 28, 64, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
  size_t x_count = 64 * 28 * 28, w_count = 64 * 64 * 9;
  float* x = random_values(x_count, 3);
  float* w = random_values(w_count, 4);
  float* y = malloc(x_count * sizeof(float));
  if (!y) abort();
  int64_t start = kiln_time_now_ns();
  ref_conv2d(&c, x, w, NULL, NULL, 0, 0, 0, y);
  double reference_ns = (double)(kiln_time_now_ns() - start);
  kiln_hal_buffer_t* buffers[5] = {NULL};
  kiln_status_t status = kiln_kernel_test_buffer(device, x, x_count, &buffers[0]);
  if (!status) status = kiln_kernel_test_buffer(device, w, w_count, &buffers[1]);
  if (!status) status = kiln_kernel_test_buffer(device, NULL, 64, &buffers[2]);
  if (!status) status = kiln_kernel_test_buffer(device, NULL, 4, &buffers[3]);
  if (!status) status = kiln_kernel_test_buffer(device, NULL, x_count, &buffers[4]);
  kiln_kernel_conv2d_params_t p = {1, 64, 28, 28, 64, 28, 28, 1, 3, 3, 1, 1, 1, 1, 1, 1, 0, 0};
  double flops = 2.0 * 64 * 64 * 9 * 28 * 28;
  const uint32_t blocks[] = {1, 4, 8, 16, 0};  // 0: conv2d_cpu's own tile
  for (size_t i = 0; i < 5 && !status; ++i) {
    kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_CONV_CO_BLOCK, blocks[i]}};
    kiln_kernel_executable_t kernel;
    status = kiln_kernel_executable_create_portable(device, KILN_KERNEL_CONV2D,
                                                    blocks[i] ? "ampere" : "cpu", ops,
                                                    blocks[i] ? 1 : 0, &kernel);
    if (status) break;
    uint32_t grid[3];
    double ns = 0;
    status = kiln_kernel_grid_conv2d(&kernel.config, &p, grid);
    if (!status) {
      status = kiln_bench_sweep_time(device, &kernel, &p, sizeof(p), buffers, grid, &ns);
    }
    char what[64];
    snprintf(what, sizeof(what), "conv2d 64->64 3x3 28x28 CO_BLOCK=%u", blocks[i] ? blocks[i] : 8);
    if (!status) {
      status = print_row(device, buffers[4], y, x_count, what, blocks[i] ? "ampere" : "cpu", ns,
                         flops, reference_ns, failures);
    }
    kiln_hal_executable_release(kernel.executable);
  }
  for (size_t t = 0; t < sizeof(kTilings) / sizeof(kTilings[0]) && !status; ++t) {
    kiln_kernel_executable_t kernel;
    status = kiln_kernel_executable_create_portable(device, KILN_KERNEL_CONV2D_GEMM,
                                                    kTilings[t], NULL, 0, &kernel);
    if (status) break;
    uint32_t grid[3];
    double ns = 0;
    status = kiln_kernel_grid_conv2d_gemm(&kernel.config, &p, grid);
    if (!status) {
      status = kiln_bench_sweep_time(device, &kernel, &p, sizeof(p), buffers, grid, &ns);
    }
    if (!status) {
      status = print_row(device, buffers[4], y, x_count, "conv2d_gemm 64->64 3x3 28x28",
                         kTilings[t], ns, flops, reference_ns, failures);
    }
    kiln_hal_executable_release(kernel.executable);
  }
  for (int i = 0; i < 5; ++i) kiln_hal_buffer_release(buffers[i]);
  free(x);
  free(w);
  free(y);
  return status;
}

static const char kUsage[] =
    "usage: kiln-kernels-bench [--sweep | --coopmat [--only=PREFIX]] [--max-gflop=X] | "
    "--quant | --quant-sweep [--arch=A] | --shapes=models [--arch=A]; [--cold-l2=MIB]\n"
    "Times kiln's kernels on KILN_TEST_DEVICE's device beside a C reference "
    "(default), or sweeps\ntheir tilings (see tests/spirv/bench/kernels_bench.c).\n";

int main(int argc, char** argv) {
  if (kiln_tool_help_or_version(argc, argv, "kiln-kernels-bench", kUsage)) return 0;
  bool sweep = false, coopmat = false, quant = false, quant_sweep = false, models = false;
  const char* arch = NULL;
  const char* only = NULL;
  double max_gflop = 1e9;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--sweep") == 0) {
      sweep = true;
    } else if (strcmp(argv[i], "--coopmat") == 0) {
      coopmat = true;
    } else if (strcmp(argv[i], "--shapes=models") == 0) {
      models = true;
    } else if (strcmp(argv[i], "--quant") == 0) {
      quant = true;
    } else if (strcmp(argv[i], "--quant-sweep") == 0) {
      quant = quant_sweep = true;
    } else if (strncmp(argv[i], "--arch=", 7) == 0) {
      arch = argv[i] + 7;
    } else if (strncmp(argv[i], "--only=", 7) == 0) {
      only = argv[i] + 7;
    } else if (strncmp(argv[i], "--max-gflop=", 12) == 0) {
      max_gflop = atof(argv[i] + 12);
    } else if (strncmp(argv[i], "--cold-l2=", 10) == 0) {
      char* end = NULL;
      const long mib = strtol(argv[i] + 10, &end, 10);
      if (end == argv[i] + 10 || *end || mib < 1 || mib > 4096) {
        fprintf(stderr, "%s--cold-l2: '%s' is not a size of 1 to 4096 MiB\n", kUsage,
                argv[i] + 10);
        return 2;
      }
      kiln_bench_set_cold_bytes((uint64_t)mib << 20);
    } else {
      fprintf(stderr, "%sunknown argument '%s'\n", kUsage, argv[i]);
      return 2;
    }
  }
  kiln_hal_device_t* device = NULL;
  kiln_status_t status = kiln_kernel_test_device_create(&device);
  int failures = 0;
  if (!status && models) {
    status = kiln_bench_model_sweep(
        device, arch ? arch : kiln_hal_device_info(device)->triple.arch, &failures);
    kiln_hal_device_release(device);
  } else if (!status && (sweep || coopmat)) {
    status = coopmat ? kiln_bench_coopmat_sweep(device, max_gflop, only, &failures)
                     : kiln_bench_gemm_sweep(device, max_gflop, &failures);
    kiln_hal_device_release(device);
  } else if (!status && quant) {
    const kiln_hal_device_info_t* info = kiln_hal_device_info(device);
    printf("device: %s-%s-%s, GPU times from %s\n\n", info->triple.arch, info->triple.product,
           info->triple.os, info->timestamps ? "timestamps" : "wall clock");
    status = quant_sweep ? kiln_bench_qgemv_sweep(device, arch ? arch : "hopper", &failures)
                         : kiln_bench_qgemm(device, arch ? arch : "hopper", &failures);
    kiln_hal_device_release(device);
  } else if (!status) {
    const kiln_hal_device_info_t* info = kiln_hal_device_info(device);
    printf("device: %s-%s-%s, GPU times from %s; median of %d\n\n", info->triple.arch,
           info->triple.product, info->triple.os,
           info->timestamps ? "timestamps" : "wall clock", KILN_BENCH_REPS * KILN_BENCH_STREAM);
    printf("| %-34s | %-8s | %10s | %8s | %9s | %-12s |\n", "kernel", "tiling", "median ms",
           "GFLOP/s", "vs C ref", "check");
    printf("|------------------------------------|----------|------------|----------|-----------|"
           "--------------|\n");
    status = bench_gemm(device, 256, &failures);
    if (!status) status = bench_conv(device, &failures);
    kiln_hal_device_release(device);
  }
  if (status) {
    char* text = kiln_status_to_string(status);
    fprintf(stderr, "kiln-kernels-bench: %s\n", text);
    free(text);
    kiln_status_free(status);
    return 1;
  }
  if (failures) {
    fprintf(stderr, "kiln-kernels-bench: %d results failed their check\n", failures);
    return 1;
  }
  return 0;
}
