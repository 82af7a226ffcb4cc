// See progress.h. Redraws one line (\r) at most 10 times a second.
#include "progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static double kiln_compile_now(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

void kiln_compile_progress_init(kiln_compile_progress_t* progress) {
  progress->enabled = isatty(fileno(stderr)) == 1;
  progress->shown = false;
  progress->start = kiln_compile_now();
  progress->last = 0;
}

void kiln_compile_progress_report(void* user, const char* stage, size_t done, size_t total,
                                  uint64_t bytes) {
  kiln_compile_progress_t* progress = (kiln_compile_progress_t*)user;
  if (!progress->enabled) return;
  double now = kiln_compile_now();
  if (now - progress->start < 1.0 || now - progress->last < 0.1) return;
  progress->last = now;
  progress->shown = true;
  if (total) {
    fprintf(stderr, "\r\033[Kkiln-compile: %s node %zu/%zu", stage, done + 1, total);
  } else if (bytes) {
    fprintf(stderr, "\r\033[Kkiln-compile: %s %.1f MiB", stage, (double)bytes / (1 << 20));
  } else {
    fprintf(stderr, "\r\033[Kkiln-compile: %s", stage);
  }
  fflush(stderr);
}

void kiln_compile_progress_finish(kiln_compile_progress_t* progress, uint64_t bytes) {
  if (!progress->shown) return;
  fprintf(stderr, "\r\033[Kkiln-compile: wrote %.1f MiB in %.1f s\n",
          (double)bytes / (1 << 20), kiln_compile_now() - progress->start);
}
