// kiln-compile's progress line: stage, node i/N, bytes written, on a
// terminal only (isatty(stderr)) and only once a compile has run a second.
#ifndef KILN_TOOLS_COMPILE_PROGRESS_H_
#define KILN_TOOLS_COMPILE_PROGRESS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct kiln_compile_progress_t {
  bool enabled;   // stderr is a terminal
  bool shown;     // a line was printed (finish ends it)
  double start;   // seconds, CLOCK_MONOTONIC
  double last;    // last print
} kiln_compile_progress_t;

void kiln_compile_progress_init(kiln_compile_progress_t* progress);
// Matches kiln_onnx_compile_options_t.progress.
void kiln_compile_progress_report(void* user, const char* stage, size_t done, size_t total,
                                  uint64_t bytes);
// Ends the line with the total time and size when one was shown.
void kiln_compile_progress_finish(kiln_compile_progress_t* progress, uint64_t bytes);

#endif  // KILN_TOOLS_COMPILE_PROGRESS_H_
