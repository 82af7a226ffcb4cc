// Tests in C, run by googletest. A test is
//
//   KILN_TEST(ReaderTest, ReadsPastEndFail) {
//     KILN_EXPECT_EQ(3, 1 + 2);
//     KILN_ASSERT_OK(kiln_do_something());   // stops the test on failure
//   }
//
// Each KILN_TEST registers itself at load time; tests/shim/gtest_register.cc
// hands every registered test to googletest, so filters, output and exit
// codes are googletest's. EXPECT_* records a failure and continues; ASSERT_*
// records it and leaves the test (longjmp back to the runner; cleanup in the
// test body is skipped, which only matters for a test that already failed).
#ifndef KILN_TESTS_SHIM_KILN_TEST_H_
#define KILN_TESTS_SHIM_KILN_TEST_H_

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kiln/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*kiln_test_fn_t)(void);

typedef struct kiln_test_case_t {
  const char* suite;
  const char* name;
  kiln_test_fn_t fn;
  const char* file;
  int line;
} kiln_test_case_t;

void kiln_test_register(const char* suite, const char* name, kiln_test_fn_t fn,
                        const char* file, int line);
size_t kiln_test_count(void);
const kiln_test_case_t* kiln_test_at(size_t index);

// Runs one test; failures reach the reporter installed below.
void kiln_test_invoke(const kiln_test_case_t* test);
typedef void (*kiln_test_failure_reporter_t)(const char* file, int line,
                                             const char* message);
void kiln_test_set_failure_reporter(kiln_test_failure_reporter_t reporter);

// Assertion plumbing: records a failure; `fatal` leaves the current test.
void kiln_test_fail(bool fatal, const char* file, int line, const char* format,
                    ...) KILN_PRINTF_LIKE(4, 5);
// Marks the current test skipped (googletest's GTEST_SKIP, with the
// message) and leaves it like a fatal assertion. Only for a test whose
// optional input is absent on purpose; a skip must say which and why.
void kiln_test_skip(const char* file, int line, const char* format, ...)
    KILN_PRINTF_LIKE(3, 4);
void kiln_test_set_skip_reporter(kiln_test_failure_reporter_t reporter);
// Checks a status: passes when its code is `expected` and (if not NULL) its
// formatted text contains `substring`. Always frees the status.
bool kiln_test_check_status(bool fatal, const char* file, int line,
                            const char* expression, kiln_status_t status,
                            kiln_status_code_t expected,
                            const char* substring);
bool kiln_test_check_bytes(bool fatal, const char* file, int line,
                           const char* expression_a, const void* a,
                           const char* expression_b, const void* b,
                           size_t length);
bool kiln_test_check_near(bool fatal, const char* file, int line,
                          const char* expression_a, double a,
                          const char* expression_b, double b,
                          double tolerance);
bool kiln_test_check_str(bool fatal, const char* file, int line,
                         const char* expression_a, const char* a,
                         const char* expression_b, const char* b,
                         bool want_equal);
bool kiln_test_check_contains(bool fatal, const char* file, int line,
                              const char* expression, const char* text,
                              const char* substring);

// Path of the running test binary and the current test's name, for tests
// that re-run the binary in a child process.
const char* kiln_test_self_path(void);
const kiln_test_case_t* kiln_test_current(void);

#define KILN_TEST_CONCAT_(a, b) a##b
#define KILN_TEST_CONCAT(a, b) KILN_TEST_CONCAT_(a, b)

#define KILN_TEST(suite, name)                                             \
  static void kiln_test_##suite##_##name(void);                            \
  __attribute__((constructor)) static void kiln_test_register_##suite##_##name( \
      void) {                                                              \
    kiln_test_register(#suite, #name, kiln_test_##suite##_##name, __FILE__, \
                       __LINE__);                                          \
  }                                                                        \
  static void kiln_test_##suite##_##name(void)

// Comparisons: integers (and pointers) widen to intmax_t; when either side
// is a float, double or long double both compare as long double, so a
// tolerance check such as KILN_EXPECT_LE(error, 1e-4) cannot pass by
// truncating the error to 0.
#ifndef __cplusplus
static inline long double kiln_test_ld_(long double value) { return value; }
// Never called for a value: only chosen (and compiled) for operands that
// are not floating (pointers, structs of enums...).
static inline long double kiln_test_ld_none_() { return 0; }
#define KILN_TEST_IS_FLOAT_(x) \
  _Generic((x), float: 1, double: 1, long double: 1, default: 0)
#define KILN_TEST_AS_LD_(x)                                                  \
  _Generic((x), float: kiln_test_ld_, double: kiln_test_ld_,                 \
           long double: kiln_test_ld_, default: kiln_test_ld_none_)(x)
#define KILN_TEST_CMP_(fatal, a, op, b, ta, tb)                              \
  do {                                                                       \
    if (KILN_TEST_IS_FLOAT_(a) || KILN_TEST_IS_FLOAT_(b)) {                  \
      long double kiln_fa_ = KILN_TEST_IS_FLOAT_(a) ? KILN_TEST_AS_LD_(a)    \
                                                    : (long double)(intmax_t)(a); \
      long double kiln_fb_ = KILN_TEST_IS_FLOAT_(b) ? KILN_TEST_AS_LD_(b)    \
                                                    : (long double)(intmax_t)(b); \
      if (!(kiln_fa_ op kiln_fb_)) {                                         \
        kiln_test_fail((fatal), __FILE__, __LINE__,                          \
                       "expected %s %s %s, got %.9Lg vs %.9Lg", ta, #op, tb, \
                       kiln_fa_, kiln_fb_);                                  \
      }                                                                      \
    } else {                                                                 \
      intmax_t kiln_a_ = (intmax_t)(a);                                      \
      intmax_t kiln_b_ = (intmax_t)(b);                                      \
      if (!(kiln_a_ op kiln_b_)) {                                           \
        kiln_test_fail((fatal), __FILE__, __LINE__,                          \
                       "expected %s %s %s, got %jd vs %jd", ta, #op, tb,     \
                       kiln_a_, kiln_b_);                                    \
      }                                                                      \
    }                                                                        \
  } while (0)
#endif

#define KILN_EXPECT_EQ(a, b) KILN_TEST_CMP_(false, a, ==, b, #a, #b)
#define KILN_EXPECT_NE(a, b) KILN_TEST_CMP_(false, a, !=, b, #a, #b)
#define KILN_EXPECT_LT(a, b) KILN_TEST_CMP_(false, a, <, b, #a, #b)
#define KILN_EXPECT_LE(a, b) KILN_TEST_CMP_(false, a, <=, b, #a, #b)
#define KILN_EXPECT_GT(a, b) KILN_TEST_CMP_(false, a, >, b, #a, #b)
#define KILN_EXPECT_GE(a, b) KILN_TEST_CMP_(false, a, >=, b, #a, #b)
#define KILN_ASSERT_EQ(a, b) KILN_TEST_CMP_(true, a, ==, b, #a, #b)
#define KILN_ASSERT_NE(a, b) KILN_TEST_CMP_(true, a, !=, b, #a, #b)
#define KILN_ASSERT_LT(a, b) KILN_TEST_CMP_(true, a, <, b, #a, #b)
#define KILN_ASSERT_LE(a, b) KILN_TEST_CMP_(true, a, <=, b, #a, #b)
#define KILN_ASSERT_GT(a, b) KILN_TEST_CMP_(true, a, >, b, #a, #b)
#define KILN_ASSERT_GE(a, b) KILN_TEST_CMP_(true, a, >=, b, #a, #b)

// Unsigned 64-bit comparison (values above INTMAX_MAX).
#define KILN_TEST_UCMP_(fatal, a, op, b, ta, tb)                                     \
  do {                                                                       \
    uintmax_t kiln_a_ = (uintmax_t)(a);                                      \
    uintmax_t kiln_b_ = (uintmax_t)(b);                                      \
    if (!(kiln_a_ op kiln_b_)) {                                             \
      kiln_test_fail((fatal), __FILE__, __LINE__,                            \
                     "expected %s %s %s, got %ju vs %ju", ta, #op, tb,       \
                     kiln_a_, kiln_b_);                                      \
    }                                                                        \
  } while (0)
#define KILN_EXPECT_EQ_U64(a, b) KILN_TEST_UCMP_(false, a, ==, b, #a, #b)
#define KILN_ASSERT_EQ_U64(a, b) KILN_TEST_UCMP_(true, a, ==, b, #a, #b)

// The expression text is stringified by the outer macro, before expansion.
#define KILN_TEST_BOOL_(fatal, cond, text, want)                            \
  do {                                                                      \
    if ((bool)(cond) != (want)) {                                           \
      kiln_test_fail((fatal), __FILE__, __LINE__, "expected %s to be %s",   \
                     text, (want) ? "true" : "false");                      \
    }                                                                       \
  } while (0)
#define KILN_EXPECT_TRUE(cond) KILN_TEST_BOOL_(false, cond, #cond, true)
#define KILN_EXPECT_FALSE(cond) KILN_TEST_BOOL_(false, cond, #cond, false)
#define KILN_ASSERT_TRUE(cond) KILN_TEST_BOOL_(true, cond, #cond, true)
#define KILN_ASSERT_FALSE(cond) KILN_TEST_BOOL_(true, cond, #cond, false)

// |a - b| <= tolerance; NaN never matches.
#define KILN_EXPECT_NEAR(a, b, tol) \
  kiln_test_check_near(false, __FILE__, __LINE__, #a, (a), #b, (b), (tol))
#define KILN_ASSERT_NEAR(a, b, tol) \
  kiln_test_check_near(true, __FILE__, __LINE__, #a, (a), #b, (b), (tol))

#define KILN_EXPECT_STREQ(a, b) \
  kiln_test_check_str(false, __FILE__, __LINE__, #a, (a), #b, (b), true)
#define KILN_ASSERT_STREQ(a, b) \
  kiln_test_check_str(true, __FILE__, __LINE__, #a, (a), #b, (b), true)
#define KILN_EXPECT_STRNE(a, b) \
  kiln_test_check_str(false, __FILE__, __LINE__, #a, (a), #b, (b), false)
#define KILN_EXPECT_CONTAINS(text, substring) \
  kiln_test_check_contains(false, __FILE__, __LINE__, #text, (text), (substring))
#define KILN_ASSERT_CONTAINS(text, substring) \
  kiln_test_check_contains(true, __FILE__, __LINE__, #text, (text), (substring))

#define KILN_EXPECT_BYTES_EQ(a, b, length) \
  kiln_test_check_bytes(false, __FILE__, __LINE__, #a, (a), #b, (b), (length))
#define KILN_ASSERT_BYTES_EQ(a, b, length) \
  kiln_test_check_bytes(true, __FILE__, __LINE__, #a, (a), #b, (b), (length))

// Status checks consume the status (free it).
#define KILN_EXPECT_OK(expr)                                           \
  kiln_test_check_status(false, __FILE__, __LINE__, #expr, (expr),     \
                         KILN_STATUS_OK, NULL)
#define KILN_ASSERT_OK(expr)                                           \
  kiln_test_check_status(true, __FILE__, __LINE__, #expr, (expr),      \
                         KILN_STATUS_OK, NULL)
#define KILN_EXPECT_STATUS(code, expr) \
  kiln_test_check_status(false, __FILE__, __LINE__, #expr, (expr), (code), NULL)
#define KILN_ASSERT_STATUS(code, expr) \
  kiln_test_check_status(true, __FILE__, __LINE__, #expr, (expr), (code), NULL)
// Code and a substring of the formatted status text.
#define KILN_EXPECT_STATUS_MESSAGE(code, substring, expr)                   \
  kiln_test_check_status(false, __FILE__, __LINE__, #expr, (expr), (code), \
                         (substring))
#define KILN_ASSERT_STATUS_MESSAGE(code, substring, expr)                  \
  kiln_test_check_status(true, __FILE__, __LINE__, #expr, (expr), (code), \
                         (substring))

#define KILN_SKIP(...) kiln_test_skip(__FILE__, __LINE__, __VA_ARGS__)
#define KILN_FAIL(...) kiln_test_fail(true, __FILE__, __LINE__, __VA_ARGS__)
#define KILN_ADD_FAILURE(...) \
  kiln_test_fail(false, __FILE__, __LINE__, __VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif  // KILN_TESTS_SHIM_KILN_TEST_H_
