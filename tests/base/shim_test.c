// The shim must turn a failing C assertion into a failed googletest test and
// a failing process. The deliberately failing tests below are registered only
// when KILN_TEST_DELIBERATE_FAILURES=1; ShimTest runs them in a child.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "kiln_test.h"

static int kiln_shim_after_assert_reached = 0;

KILN_TEST(ShimDeliberate, ExpectFails) { KILN_EXPECT_EQ(1 + 1, 3); }

KILN_TEST(ShimDeliberate, AssertStopsTheTest) {
  KILN_ASSERT_TRUE(false);
  // Never reached: the assertion leaves the test.
  kiln_shim_after_assert_reached = 1;
  printf("AFTER-ASSERT-REACHED\n");
}

KILN_TEST(ShimDeliberate, StatusMismatchFails) {
  KILN_EXPECT_OK(kiln_make_status(KILN_STATUS_NOT_FOUND, "marker-status-7"));
}

KILN_TEST(ShimDeliberate, Passes) { KILN_EXPECT_EQ(2, 2); }

KILN_TEST(ShimDeliberate, SkipLeavesTheTest) {
  KILN_SKIP("marker-skip-%d", 9);
  printf("AFTER-SKIP-REACHED\n");
}

// Runs this binary on one filter and returns its exit code and output.
static int kiln_run_child(const char* filter, char* output, size_t size) {
  char command[4096];
  snprintf(command, sizeof(command),
           "KILN_TEST_DELIBERATE_FAILURES=1 '%s' --gtest_filter='%s' 2>&1",
           kiln_test_self_path(), filter);
  FILE* pipe = popen(command, "r");
  if (!pipe) return -1;
  size_t used = fread(output, 1, size - 1, pipe);
  output[used] = 0;
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

KILN_TEST(ShimTest, FailingExpectFailsTheRun) {
  static char output[65536];
  int code = kiln_run_child("ShimDeliberate.ExpectFails", output, sizeof(output));
  KILN_EXPECT_NE(code, 0);
  KILN_EXPECT_CONTAINS(output, "expected 1 + 1 == 3, got 2 vs 3");
  KILN_EXPECT_CONTAINS(output, "[  FAILED  ] ShimDeliberate.ExpectFails");
}

KILN_TEST(ShimTest, FailingAssertLeavesTheTest) {
  static char output[65536];
  int code = kiln_run_child("ShimDeliberate.AssertStopsTheTest", output,
                            sizeof(output));
  KILN_EXPECT_NE(code, 0);
  KILN_EXPECT_CONTAINS(output, "expected false to be true");
  KILN_EXPECT_TRUE(strstr(output, "AFTER-ASSERT-REACHED") == NULL);
}

KILN_TEST(ShimTest, StatusMismatchShowsTheStatus) {
  static char output[65536];
  int code = kiln_run_child("ShimDeliberate.StatusMismatchFails", output,
                            sizeof(output));
  KILN_EXPECT_NE(code, 0);
  KILN_EXPECT_CONTAINS(output, "NOT_FOUND: marker-status-7");
}

KILN_TEST(ShimTest, PassingTestPassesTheRun) {
  static char output[65536];
  int code = kiln_run_child("ShimDeliberate.Passes", output, sizeof(output));
  KILN_EXPECT_EQ(code, 0);
  KILN_EXPECT_CONTAINS(output, "[  PASSED  ] 1 test");
}

// A skip is googletest's: reported with its message, the run passes, and
// nothing after it runs.
KILN_TEST(ShimTest, SkipIsReportedAndLeavesTheTest) {
  static char output[65536];
  int code = kiln_run_child("ShimDeliberate.SkipLeavesTheTest", output, sizeof(output));
  KILN_EXPECT_EQ(code, 0);
  KILN_EXPECT_CONTAINS(output, "marker-skip-9");
  KILN_EXPECT_CONTAINS(output, "[  SKIPPED ] 1 test");
  KILN_EXPECT_TRUE(strstr(output, "AFTER-SKIP-REACHED") == NULL);
}

KILN_TEST(ShimTest, NearAndBytesCompare) {
  KILN_EXPECT_NEAR(1.0, 1.0 + 1e-7, 1e-6);
  uint8_t a[3] = {1, 2, 3}, b[3] = {1, 2, 3};
  KILN_EXPECT_BYTES_EQ(a, b, 3);
  KILN_EXPECT_STREQ("kiln", "kiln");
}
