// kiln_status_t: the error type every fallible kiln call returns.
// OK is a NULL pointer, so the success path costs one compare and no memory.
// An error owns a heap message plus the source location that made it and the
// annotations added while it propagated; whoever receives it must consume it
// (return it, kiln_status_free it, or hand it to the caller).
#ifndef KILN_BASE_STATUS_H_
#define KILN_BASE_STATUS_H_

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_status_code_e {
  KILN_STATUS_OK = 0,
  KILN_STATUS_CANCELLED,
  KILN_STATUS_UNKNOWN,
  KILN_STATUS_INVALID_ARGUMENT,
  KILN_STATUS_DEADLINE_EXCEEDED,
  KILN_STATUS_NOT_FOUND,
  KILN_STATUS_ALREADY_EXISTS,
  KILN_STATUS_PERMISSION_DENIED,
  KILN_STATUS_RESOURCE_EXHAUSTED,
  KILN_STATUS_FAILED_PRECONDITION,
  KILN_STATUS_ABORTED,
  KILN_STATUS_OUT_OF_RANGE,
  KILN_STATUS_UNIMPLEMENTED,
  KILN_STATUS_INTERNAL,
  KILN_STATUS_UNAVAILABLE,
  KILN_STATUS_DATA_LOSS,
  KILN_STATUS_INCOMPATIBLE,  // e.g. a module of a newer format version
  KILN_STATUS_CODE_COUNT,
} kiln_status_code_t;

typedef struct kiln_status_storage_t* kiln_status_t;
#define kiln_ok_status() ((kiln_status_t)NULL)

#if defined(__GNUC__)
#define KILN_PRINTF_LIKE(fmt_index, first_arg) \
  __attribute__((format(printf, fmt_index, first_arg)))
#define KILN_MUST_USE __attribute__((warn_unused_result))
#define KILN_LIKELY(x) __builtin_expect(!!(x), 1)
#define KILN_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define KILN_PRINTF_LIKE(fmt_index, first_arg)
#define KILN_MUST_USE
#define KILN_LIKELY(x) (x)
#define KILN_UNLIKELY(x) (x)
#endif

// Makes an error status. Never returns OK: KILN_STATUS_OK is turned into
// KILN_STATUS_INTERNAL so a caller cannot lose an error by mistake.
kiln_status_t kiln_status_make_at(const char* file, int line,
                                  kiln_status_code_t code, const char* format,
                                  ...) KILN_PRINTF_LIKE(4, 5);
kiln_status_t kiln_status_make_at_v(const char* file, int line,
                                    kiln_status_code_t code,
                                    const char* format, va_list args);
#define kiln_make_status(code, ...) \
  kiln_status_make_at(__FILE__, __LINE__, (code), __VA_ARGS__)

// Adds context to an error as it propagates ("while loading 'm.kiln'").
// Returns the same status; OK passes through untouched.
kiln_status_t kiln_status_annotate_at(kiln_status_t status, const char* file,
                                      int line, const char* format, ...)
    KILN_PRINTF_LIKE(4, 5);
#define kiln_status_annotate(status, ...) \
  kiln_status_annotate_at((status), __FILE__, __LINE__, __VA_ARGS__)

static inline bool kiln_status_is_ok(kiln_status_t status) {
  return status == NULL;
}
kiln_status_code_t kiln_status_code(kiln_status_t status);
const char* kiln_status_code_name(kiln_status_code_t code);
// The first message only (no code, no annotations); "" for OK.
const char* kiln_status_message(kiln_status_t status);
// Number of annotations and the i-th one (0 = innermost).
size_t kiln_status_annotation_count(kiln_status_t status);
const char* kiln_status_annotation(kiln_status_t status, size_t index);
// Where the status was made ("base/reader.c:42"); NULL for OK.
const char* kiln_status_source_file(kiln_status_t status);
int kiln_status_source_line(kiln_status_t status);

// "INVALID_ARGUMENT: message; annotation; annotation". Writes at most
// buffer_size bytes including the terminator and returns the full length
// that the text needs (like snprintf).
size_t kiln_status_format(kiln_status_t status, char* buffer,
                          size_t buffer_size);
// Same text, heap-allocated; the caller frees it with free(). Never NULL.
char* kiln_status_to_string(kiln_status_t status);

void kiln_status_free(kiln_status_t status);
// Frees the status and returns its code (handy in tests and tools).
kiln_status_code_t kiln_status_consume_code(kiln_status_t status);
// Frees the status; used where an error is deliberately dropped.
static inline void kiln_status_ignore(kiln_status_t status) {
  kiln_status_free(status);
}

#define KILN_RETURN_IF_ERROR(expr)                    \
  do {                                                \
    kiln_status_t kiln_status_tmp_ = (expr);          \
    if (KILN_UNLIKELY(kiln_status_tmp_ != NULL)) {    \
      return kiln_status_tmp_;                        \
    }                                                 \
  } while (0)

#define KILN_RETURN_IF_ERROR_ANNOTATE(expr, ...)                          \
  do {                                                                    \
    kiln_status_t kiln_status_tmp_ = (expr);                              \
    if (KILN_UNLIKELY(kiln_status_tmp_ != NULL)) {                        \
      return kiln_status_annotate(kiln_status_tmp_, __VA_ARGS__);         \
    }                                                                     \
  } while (0)

#ifdef __cplusplus
}
#endif

#endif  // KILN_BASE_STATUS_H_
