// Helpers for tests that drive kiln-run-module as a user would: write inputs
// and expected outputs as .npy files, run the tool, capture its output.
#ifndef KILN_TESTS_SAMPLES_SAMPLE_RUNNER_H_
#define KILN_TESTS_SAMPLES_SAMPLE_RUNNER_H_

#include <stddef.h>
#include <stdint.h>

#include "host_tensor.h"

// A deterministic generator for test data (xorshift): values in [lo, hi).
typedef struct kiln_test_rng_t {
  uint64_t state;
} kiln_test_rng_t;
float kiln_test_rng_uniform(kiln_test_rng_t* rng, float lo, float hi);

// Makes a f32 host tensor of the given shape (aborts the test on failure).
kiln_host_tensor_t kiln_test_f32_tensor(size_t rank, const int64_t* dims);
float* kiln_test_f32_data(kiln_host_tensor_t* tensor);

// Writes `tensor` to a fresh file in the test's temporary folder and returns
// "@path" (static storage, valid until the next call with the same slot).
const char* kiln_test_npy_argument(const kiln_host_tensor_t* tensor,
                                   int slot);

// Removes `path` when the test process exits (the temporary files the
// tests write, named after their pid, would otherwise pile up in /tmp).
// Up to 256 paths; paths are copied.
void kiln_test_remove_at_exit(const char* path);

// Runs kiln-run-module (KILN_RUN_MODULE) with `args` (a shell-quoted string)
// and returns its exit code; stdout+stderr land in `output`.
int kiln_test_run_tool(const char* args, char* output, size_t output_size);

// Path of a sample module in KILN_SAMPLES_DIR ("matmul" -> .../matmul.kiln).
const char* kiln_test_sample_path(const char* name);

#endif  // KILN_TESTS_SAMPLES_SAMPLE_RUNNER_H_
