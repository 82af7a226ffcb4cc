// The C half of the test shim: the registry, the assertion checks, and the
// setjmp/longjmp that lets ASSERT_* leave a test without C++ exceptions
// crossing C frames.
#include "kiln_test.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static kiln_test_case_t* kiln_tests = NULL;
static size_t kiln_test_total = 0;
static size_t kiln_test_capacity = 0;

static kiln_test_failure_reporter_t kiln_test_reporter = NULL;
static kiln_test_failure_reporter_t kiln_test_skip_reporter = NULL;
static jmp_buf kiln_test_jump;
static bool kiln_test_running = false;
static const kiln_test_case_t* kiln_test_current_case = NULL;

void kiln_test_register(const char* suite, const char* name, kiln_test_fn_t fn,
                        const char* file, int line) {
  if (kiln_test_total == kiln_test_capacity) {
    kiln_test_capacity = kiln_test_capacity ? kiln_test_capacity * 2 : 64;
    kiln_tests = (kiln_test_case_t*)realloc(
        kiln_tests, kiln_test_capacity * sizeof(*kiln_tests));
    if (!kiln_tests) abort();  // registration runs before main: nothing to do
  }
  kiln_test_case_t* test = &kiln_tests[kiln_test_total++];
  test->suite = suite;
  test->name = name;
  test->fn = fn;
  test->file = file;
  test->line = line;
}

size_t kiln_test_count(void) { return kiln_test_total; }
const kiln_test_case_t* kiln_test_at(size_t index) {
  return index < kiln_test_total ? &kiln_tests[index] : NULL;
}
const kiln_test_case_t* kiln_test_current(void) {
  return kiln_test_current_case;
}

void kiln_test_set_failure_reporter(kiln_test_failure_reporter_t reporter) {
  kiln_test_reporter = reporter;
}

void kiln_test_invoke(const kiln_test_case_t* test) {
  kiln_test_current_case = test;
  kiln_test_running = true;
  if (setjmp(kiln_test_jump) == 0) {
    test->fn();
  }
  kiln_test_running = false;
  kiln_test_current_case = NULL;
}

// Formats a failure or skip message and hands it to `reporter` (stderr
// when none is installed).
static void kiln_test_report(kiln_test_failure_reporter_t reporter, const char* kind,
                             const char* file, int line, const char* format,
                             va_list args) {
  char message[2048];
  vsnprintf(message, sizeof(message), format, args);
  if (reporter) {
    reporter(file, line, message);
  } else {
    fprintf(stderr, "%s:%d: %s: %s\n", file, line, kind, message);
  }
}

void kiln_test_fail(bool fatal, const char* file, int line, const char* format,
                    ...) {
  va_list args;
  va_start(args, format);
  kiln_test_report(kiln_test_reporter, "failure", file, line, format, args);
  va_end(args);
  if (fatal && kiln_test_running) longjmp(kiln_test_jump, 1);
}

void kiln_test_set_skip_reporter(kiln_test_failure_reporter_t reporter) {
  kiln_test_skip_reporter = reporter;
}

void kiln_test_skip(const char* file, int line, const char* format, ...) {
  va_list args;
  va_start(args, format);
  kiln_test_report(kiln_test_skip_reporter, "skipped", file, line, format, args);
  va_end(args);
  if (kiln_test_running) longjmp(kiln_test_jump, 1);
}

bool kiln_test_check_status(bool fatal, const char* file, int line,
                            const char* expression, kiln_status_t status,
                            kiln_status_code_t expected,
                            const char* substring) {
  char* text = kiln_status_to_string(status);
  kiln_status_code_t code = kiln_status_code(status);
  kiln_status_free(status);
  bool ok = code == expected && (!substring || strstr(text, substring));
  if (!ok) {
    char message[2048];
    if (code != expected) {
      snprintf(message, sizeof(message), "%s: expected status %s, got %s",
               expression, kiln_status_code_name(expected), text);
    } else {
      snprintf(message, sizeof(message),
               "%s: status text \"%s\" does not contain \"%s\"", expression,
               text, substring);
    }
    free(text);
    kiln_test_fail(fatal, file, line, "%s", message);
    return false;
  }
  free(text);
  return true;
}

bool kiln_test_check_bytes(bool fatal, const char* file, int line,
                           const char* expression_a, const void* a,
                           const char* expression_b, const void* b,
                           size_t length) {
  const uint8_t* pa = (const uint8_t*)a;
  const uint8_t* pb = (const uint8_t*)b;
  for (size_t i = 0; i < length; ++i) {
    if (pa[i] != pb[i]) {
      kiln_test_fail(fatal, file, line,
                     "%s and %s differ first at byte %zu of %zu: 0x%02x vs "
                     "0x%02x",
                     expression_a, expression_b, i, length, pa[i], pb[i]);
      return false;
    }
  }
  return true;
}

bool kiln_test_check_near(bool fatal, const char* file, int line,
                          const char* expression_a, double a,
                          const char* expression_b, double b,
                          double tolerance) {
  if (fabs(a - b) <= tolerance) return true;  // false for NaN
  kiln_test_fail(fatal, file, line,
                 "expected |%s - %s| <= %g, got %.9g vs %.9g (diff %.3g)",
                 expression_a, expression_b, tolerance, a, b, fabs(a - b));
  return false;
}

bool kiln_test_check_str(bool fatal, const char* file, int line,
                         const char* expression_a, const char* a,
                         const char* expression_b, const char* b,
                         bool want_equal) {
  bool equal = (a == NULL && b == NULL) ||
               (a != NULL && b != NULL && strcmp(a, b) == 0);
  if (equal == want_equal) return true;
  kiln_test_fail(fatal, file, line, "expected %s %s %s: \"%s\" vs \"%s\"",
                 expression_a, want_equal ? "==" : "!=", expression_b,
                 a ? a : "(null)", b ? b : "(null)");
  return false;
}

bool kiln_test_check_contains(bool fatal, const char* file, int line,
                              const char* expression, const char* text,
                              const char* substring) {
  if (text && substring && strstr(text, substring)) return true;
  kiln_test_fail(fatal, file, line, "expected %s (\"%s\") to contain \"%s\"",
                 expression, text ? text : "(null)",
                 substring ? substring : "(null)");
  return false;
}

const char* kiln_test_self_path(void) {
  static char path[4096];
  if (path[0] == 0) {
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    if (n <= 0) return NULL;
    path[n] = 0;
  }
  return path;
}
