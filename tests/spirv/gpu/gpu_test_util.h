// Shared plumbing of the GPU kernel tests: one harness per process, seeded
// random data, a run-and-read-back helper, and tolerance checks that report
// the worst element.
#ifndef KILN_TESTS_SPIRV_GPU_TEST_UTIL_H_
#define KILN_TESTS_SPIRV_GPU_TEST_UTIL_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/compiler/kernels.h"
#include "kiln/compiler/kernels_target.h"
#include "vk_harness.h"

// The process-wide harness (created on first use, destroyed at exit).
// Fails the current test if no device can be created.
kiln_vk_harness_t* gpu_harness(void);

// Deterministic uniform values in [lo, hi).
void gpu_random(float* values, size_t count, uint32_t seed, float lo, float hi);
// Allocates (abort on failure) and fills with gpu_random.
float* gpu_random_alloc(size_t count, uint32_t seed, float lo, float hi);
float* gpu_alloc(size_t count);

typedef struct gpu_arg_t {
  const void* data;  // initial contents; NULL for zeros
  size_t bytes;
} gpu_arg_t;

// The config the library picks for this device, with `storage`.
kiln_kernel_config_t gpu_config(kiln_kernel_id_t kernel, kiln_kernel_storage_t storage);

// Binds args[i] at binding i, runs `variant` of `kernel` with `config` and
// copies binding `out_binding` back into `out`. Fails the test on any
// error or validation message.
void gpu_run(kiln_kernel_id_t kernel, kiln_kernel_variant_t variant,
             const kiln_kernel_config_t* config, const void* push,
             uint32_t push_size, const gpu_arg_t* args, uint32_t arg_count,
             uint32_t out_binding, void* out, size_t out_bytes,
             const uint32_t grid[3]);

// Passes when |got - want| <= atol + rtol * |want| everywhere; otherwise
// reports the count of mismatches and the worst one, prefixed by `what`.
void gpu_expect_close(const char* what, const float* got, const float* want,
                      size_t count, double atol, double rtol);

// fp16 round trips for the fp16-storage variants.
uint16_t gpu_float_to_half(float value);
float gpu_half_to_float(uint16_t value);
// Rounds `values` to fp16 in place and returns the halves (malloc'd, abort
// on failure; free them).
uint16_t* gpu_round_to_halves(float* values, size_t count);

#endif  // KILN_TESTS_SPIRV_GPU_TEST_UTIL_H_
