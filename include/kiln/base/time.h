// Monotonic clock for timeouts and benchmarks.
#ifndef KILN_BASE_TIME_H_
#define KILN_BASE_TIME_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Nanoseconds since an arbitrary fixed point; never goes backwards.
int64_t kiln_time_now_ns(void);

// Timeouts: a relative duration becomes an absolute deadline once, so retry
// loops do not stretch the wait.
#define KILN_INFINITE_TIMEOUT_NS INT64_MAX
int64_t kiln_deadline_from_timeout_ns(int64_t timeout_ns);
// Nanoseconds until `deadline_ns` (0 once it has passed).
int64_t kiln_deadline_remaining_ns(int64_t deadline_ns);

#ifdef __cplusplus
}
#endif

#endif  // KILN_BASE_TIME_H_
