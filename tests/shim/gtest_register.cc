// The C++ half of the test shim: registers every C test with googletest and
// forwards C assertion failures as googletest failures.
//
// Tests whose suite starts with "ShimDeliberate" fail on purpose; they are
// registered only when KILN_TEST_DELIBERATE_FAILURES=1 so the shim's own test
// can run them in a child process and check that failure is reported.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

extern "C" {
#include "kiln_test.h"
}

namespace {

void ReportFailure(const char* file, int line, const char* message) {
  ADD_FAILURE_AT(file, line) << message;
}

// GTEST_SKIP's own report (a skip part result); the C side then leaves
// the test body.
void ReportSkip(const char* file, int line, const char* message) {
  GTEST_MESSAGE_AT_(file, line, message, ::testing::TestPartResult::kSkip);
}

class KilnCTest : public testing::Test {
 public:
  explicit KilnCTest(const kiln_test_case_t* test) : test_(test) {}
  void TestBody() override { kiln_test_invoke(test_); }

 private:
  const kiln_test_case_t* test_;
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  kiln_test_set_failure_reporter(ReportFailure);
  kiln_test_set_skip_reporter(ReportSkip);
  const char* deliberate = std::getenv("KILN_TEST_DELIBERATE_FAILURES");
  bool with_deliberate = deliberate && std::strcmp(deliberate, "1") == 0;
  for (size_t i = 0; i < kiln_test_count(); ++i) {
    const kiln_test_case_t* test = kiln_test_at(i);
    if (!with_deliberate &&
        std::strncmp(test->suite, "ShimDeliberate", 14) == 0) {
      continue;
    }
    testing::RegisterTest(test->suite, test->name, nullptr, nullptr,
                          test->file, test->line,
                          [test]() -> testing::Test* { return new KilnCTest(test); });
  }
  return RUN_ALL_TESTS();
}

// Under AddressSanitizer, a failed huge allocation must return NULL (tests
// check that kiln turns it into a status) rather than abort the process.
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1:detect_leaks=1";
}
