// Overflow-checked size arithmetic: every size computed from untrusted input
// (module files, tensor shapes) goes through these.
#ifndef KILN_BASE_SIZE_MATH_H_
#define KILN_BASE_SIZE_MATH_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Each returns false (and leaves *out untouched) when the result overflows.
static inline bool kiln_size_add(size_t a, size_t b, size_t* out) {
  if (a > SIZE_MAX - b) return false;
  *out = a + b;
  return true;
}

static inline bool kiln_size_mul(size_t a, size_t b, size_t* out) {
  if (a != 0 && b > SIZE_MAX / a) return false;
  *out = a * b;
  return true;
}

static inline bool kiln_u64_add(uint64_t a, uint64_t b, uint64_t* out) {
  if (a > UINT64_MAX - b) return false;
  *out = a + b;
  return true;
}

static inline bool kiln_u64_mul(uint64_t a, uint64_t b, uint64_t* out) {
  if (a != 0 && b > UINT64_MAX / a) return false;
  *out = a * b;
  return true;
}

// Rounds value up to a multiple of alignment (a power of two).
static inline bool kiln_size_align_up(size_t value, size_t alignment,
                                      size_t* out) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) return false;
  size_t bumped;
  if (!kiln_size_add(value, alignment - 1, &bumped)) return false;
  *out = bumped & ~(alignment - 1);
  return true;
}

static inline bool kiln_is_power_of_two(uint64_t value) {
  return value != 0 && (value & (value - 1)) == 0;
}

// True when [offset, offset + length) lies inside [0, size).
static inline bool kiln_range_fits(uint64_t offset, uint64_t length,
                                   uint64_t size) {
  return offset <= size && length <= size - offset;
}

#ifdef __cplusplus
}
#endif

#endif  // KILN_BASE_SIZE_MATH_H_
