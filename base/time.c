#include "kiln/base/time.h"

#include <time.h>

int64_t kiln_time_now_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

int64_t kiln_deadline_from_timeout_ns(int64_t timeout_ns) {
  if (timeout_ns <= 0) return kiln_time_now_ns();
  int64_t now = kiln_time_now_ns();
  if (timeout_ns >= KILN_INFINITE_TIMEOUT_NS - now) {
    return KILN_INFINITE_TIMEOUT_NS;
  }
  return now + timeout_ns;
}

int64_t kiln_deadline_remaining_ns(int64_t deadline_ns) {
  if (deadline_ns == KILN_INFINITE_TIMEOUT_NS) return KILN_INFINITE_TIMEOUT_NS;
  int64_t now = kiln_time_now_ns();
  return deadline_ns > now ? deadline_ns - now : 0;
}
