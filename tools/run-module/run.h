// The run path of kiln-run-module: load modules, convert --input values,
// invoke the function, then print, write or compare the results.
#ifndef KILN_TOOLS_RUN_MODULE_RUN_H_
#define KILN_TOOLS_RUN_MODULE_RUN_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kiln/base/status.h"

enum { KILN_RUN_MAX_VALUES = 64 };

typedef struct kiln_run_options_t {
  const char* modules[KILN_RUN_MAX_VALUES];  // dependencies first
  size_t module_count;
  const char* device;    // URI; NULL: "vulkan" (the first device)
  const char* function;  // NULL: the module's only export
  const char* inputs[KILN_RUN_MAX_VALUES];
  size_t input_count;
  const char* outputs[KILN_RUN_MAX_VALUES];  // "-", "@f.npy", "+f.npy", "@f.bin"
  size_t output_count;
  const char* expected_outputs[KILN_RUN_MAX_VALUES];
  size_t expected_output_count;
  double expected_f16_threshold;
  double expected_f32_threshold;
  double expected_f64_threshold;
  size_t output_max_element_count;
  bool validation;
  bool trace_execution;
  bool print_statistics;
  bool no_timestamps;  // statistics without GPU timestamps
  bool span_timestamps;  // statistics with GPU timestamps per submission only
  size_t slowest_dispatches;  // statistics: how many of the slowest to list
  int call_count;  // >= 1; statistics report the median call
  const char* pipeline_cache;
  uint64_t fuel;              // per call; 0: unlimited
  uint64_t deadline_ms;       // per call; 0: none
  uint64_t memory_budget_mb;  // 0: the session's default
  // Then this many more sessions on the first one's model, one thread each
  // (0: none); each makes call_count calls, checked against the first.
  int sessions;
} kiln_run_options_t;

void kiln_run_options_init(kiln_run_options_t* options);

// Runs and reports to `out`. *out_exit_code is 0 on success and 1 when the
// expected outputs did not match (the status is OK in that case: the
// mismatch was reported). Any other failure is an error status.
kiln_status_t kiln_run(const kiln_run_options_t* options, FILE* out,
                       int* out_exit_code);

#endif  // KILN_TOOLS_RUN_MODULE_RUN_H_
