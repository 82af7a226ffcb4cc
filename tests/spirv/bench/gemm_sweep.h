// kiln-kernels-bench --sweep (gemm_sweep.c): every GEMM tiling on the
// issue-16 shapes, timed and checked.
#ifndef KILN_TESTS_SPIRV_BENCH_GEMM_SWEEP_H_
#define KILN_TESTS_SPIRV_BENCH_GEMM_SWEEP_H_

#include "hal/kernel_executable.h"

// Runs the sweep, skipping shapes of more than `max_gflop` GFLOP; counts
// results that failed their check in `out_failures`.
kiln_status_t kiln_bench_gemm_sweep(kiln_hal_device_t* device, double max_gflop,
                                    int* out_failures);

#endif  // KILN_TESTS_SPIRV_BENCH_GEMM_SWEEP_H_
