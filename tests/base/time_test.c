#include "kiln/base/time.h"
#include "kiln_test.h"

KILN_TEST(TimeTest, MonotonicAndDeadlines) {
  int64_t a = kiln_time_now_ns();
  int64_t b = kiln_time_now_ns();
  KILN_EXPECT_GE(b, a);
  KILN_EXPECT_EQ(kiln_deadline_from_timeout_ns(KILN_INFINITE_TIMEOUT_NS),
                 KILN_INFINITE_TIMEOUT_NS);
  KILN_EXPECT_EQ(kiln_deadline_remaining_ns(KILN_INFINITE_TIMEOUT_NS),
                 KILN_INFINITE_TIMEOUT_NS);
  // A deadline in the past has no time left; zero timeout means "now".
  KILN_EXPECT_EQ(kiln_deadline_remaining_ns(a - 1), 0);
  KILN_EXPECT_LE(kiln_deadline_from_timeout_ns(0), kiln_time_now_ns());
  int64_t deadline = kiln_deadline_from_timeout_ns(1000000000);
  KILN_EXPECT_GT(kiln_deadline_remaining_ns(deadline), 0);
  KILN_EXPECT_LE(kiln_deadline_remaining_ns(deadline), 1000000000);
}
