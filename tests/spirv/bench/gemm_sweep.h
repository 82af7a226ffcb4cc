// kiln-kernels-bench --sweep (gemm_sweep.c): every GEMM tiling on the
// issue-16 shapes, timed and checked.
#ifndef KILN_TESTS_SPIRV_BENCH_GEMM_SWEEP_H_
#define KILN_TESTS_SPIRV_BENCH_GEMM_SWEEP_H_

#include "hal/kernel_executable.h"

// Runs the sweep, skipping shapes of more than `max_gflop` GFLOP; counts
// results that failed their check in `out_failures`.
kiln_status_t kiln_bench_gemm_sweep(kiln_hal_device_t* device, double max_gflop,
                                    int* out_failures);

// Submits `cb` until KILN_BENCH_WARM_MS of wall time have passed: a GPU
// left idle between dispatches (the checks run on the host) clocks down,
// and NVIDIA's clocks up only under sustained load. Without it an H200
// timed the sweeps' dispatches at 345 MHz of its 1980 (nvidia-smi,
// 2026-11-26): one tiling and shape ran 0.21 ms in one run, 0.81 in the
// next.
#define KILN_BENCH_WARM_MS 500
kiln_status_t kiln_bench_warm_clocks(kiln_hal_device_t* device, kiln_hal_command_buffer_t* cb);
// Copies of the dispatch in one timed submission, and timed submissions.
#define KILN_BENCH_STREAM 16
#define KILN_BENCH_REPS 3

// Median GPU time (timestamps where the device has them, else wall clock)
// of one dispatch of `kernel` binding buffers[0..4]: KILN_BENCH_STREAM
// copies with barriers between them (as a model's dispatches run) in each
// of KILN_BENCH_REPS submissions, after kiln_bench_warm_clocks.
kiln_status_t kiln_bench_sweep_time(kiln_hal_device_t* device,
                                    const kiln_kernel_executable_t* kernel, const void* push,
                                    uint32_t push_bytes, kiln_hal_buffer_t* const* buffers,
                                    const uint32_t grid[3], double* out_ns);
// With `bytes` > 0 (kiln-kernels-bench --cold-l2=MIB), every timed copy
// follows a fill of a scratch buffer of that many bytes, so that it reads
// its operands from memory, not from the L2 the copy before left them in:
// a model reads each layer's weights from memory once (on an H200,
// BERT-base's FFN-up took 24 us a dispatch in the model against 17 us in
// the warm sweep). Pessimistic for activations, which a model's previous
// dispatch leaves in L2. Without timestamps the wall time includes the fills.
void kiln_bench_set_cold_bytes(uint64_t bytes);
// The same binding buffers[0 .. buffer_count - 1].
kiln_status_t kiln_bench_time_dispatch(kiln_hal_device_t* device,
                                       const kiln_kernel_executable_t* kernel, const void* push,
                                       uint32_t push_bytes, kiln_hal_buffer_t* const* buffers,
                                       uint32_t buffer_count, const uint32_t grid[3],
                                       double* out_ns);

// kiln-kernels-bench --coopmat (coopmat_sweep.c): gemm_coopmat (f16 and
// f32 buffers) over its tilings on MatMul 4096^3 and the bench models'
// GEMM shapes, timed and checked; refuses on devices without the feature.
// `only`: one shape's name (e.g. "matmul 4096^3"), or NULL for all.
kiln_status_t kiln_bench_coopmat_sweep(kiln_hal_device_t* device, double max_gflop,
                                       const char* only, int* out_failures);

// kiln-kernels-bench --shapes=models [--arch=A] (model_sweep.c): every
// GEMM / conv / depthwise shape of the four bench CNNs at batch 1 under
// the old tiling, each occupancy candidate and the shape-aware pick (arch
// A's caps, default the device's arch), timed and checked.
kiln_status_t kiln_bench_model_sweep(kiln_hal_device_t* device, const char* arch,
                                     int* out_failures);

// kiln-kernels-bench --quant (qgemm_bench.c): the copy bandwidth and the
// quantized GEMVs through qgemv and qgemm, checked.
kiln_status_t kiln_bench_qgemm(kiln_hal_device_t* device, const char* arch, int* out_failures);
// kiln-kernels-bench --quant-sweep: every qgemv tiling candidate, checked.
kiln_status_t kiln_bench_qgemv_sweep(kiln_hal_device_t* device, const char* arch,
                                     int* out_failures);

#endif  // KILN_TESTS_SPIRV_BENCH_GEMM_SWEEP_H_
