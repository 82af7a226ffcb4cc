#include "kiln/base/allocator.h"

#include <stdint.h>
#include <stdlib.h>

#include "kiln/base/size_math.h"

static kiln_status_t kiln_system_ctl(void* self,
                                     kiln_allocator_command_t command,
                                     size_t byte_count, void** inout_ptr) {
  (void)self;
  void* result = NULL;
  switch (command) {
    case KILN_ALLOCATOR_MALLOC:
      result = malloc(byte_count);
      break;
    case KILN_ALLOCATOR_CALLOC:
      result = calloc(1, byte_count);
      break;
    case KILN_ALLOCATOR_REALLOC:
      result = realloc(*inout_ptr, byte_count);
      break;
    case KILN_ALLOCATOR_FREE:
      free(*inout_ptr);
      *inout_ptr = NULL;
      return kiln_ok_status();
    default:
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "unknown allocator command %d", (int)command);
  }
  if (!result) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "out of memory allocating %zu bytes", byte_count);
  }
  *inout_ptr = result;
  return kiln_ok_status();
}

kiln_allocator_t kiln_allocator_system(void) {
  kiln_allocator_t allocator = {NULL, kiln_system_ctl};
  return allocator;
}

kiln_status_t kiln_allocator_malloc(kiln_allocator_t allocator,
                                    size_t byte_count, void** out_ptr) {
  *out_ptr = NULL;
  void* ptr = NULL;
  KILN_RETURN_IF_ERROR(allocator.ctl(allocator.self, KILN_ALLOCATOR_MALLOC,
                                     byte_count ? byte_count : 1, &ptr));
  *out_ptr = ptr;
  return kiln_ok_status();
}

kiln_status_t kiln_allocator_calloc(kiln_allocator_t allocator,
                                    size_t byte_count, void** out_ptr) {
  *out_ptr = NULL;
  void* ptr = NULL;
  KILN_RETURN_IF_ERROR(allocator.ctl(allocator.self, KILN_ALLOCATOR_CALLOC,
                                     byte_count ? byte_count : 1, &ptr));
  *out_ptr = ptr;
  return kiln_ok_status();
}

kiln_status_t kiln_allocator_calloc_array(kiln_allocator_t allocator,
                                          size_t count, size_t element_size,
                                          void** out_ptr) {
  size_t byte_count = 0;
  if (!kiln_size_mul(count, element_size, &byte_count)) {
    *out_ptr = NULL;
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "array of %zu elements of %zu bytes overflows",
                            count, element_size);
  }
  return kiln_allocator_calloc(allocator, byte_count, out_ptr);
}

kiln_status_t kiln_allocator_realloc(kiln_allocator_t allocator,
                                     size_t byte_count, void** inout_ptr) {
  void* ptr = *inout_ptr;
  KILN_RETURN_IF_ERROR(allocator.ctl(allocator.self, KILN_ALLOCATOR_REALLOC,
                                     byte_count ? byte_count : 1, &ptr));
  *inout_ptr = ptr;
  return kiln_ok_status();
}

kiln_status_t kiln_allocator_realloc_array(kiln_allocator_t allocator,
                                           size_t count, size_t element_size,
                                           void** inout_ptr) {
  size_t byte_count = 0;
  if (!kiln_size_mul(count, element_size, &byte_count)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "array of %zu elements of %zu bytes overflows",
                            count, element_size);
  }
  return kiln_allocator_realloc(allocator, byte_count, inout_ptr);
}

void kiln_allocator_free(kiln_allocator_t allocator, void* ptr) {
  if (!ptr) return;
  kiln_status_ignore(
      allocator.ctl(allocator.self, KILN_ALLOCATOR_FREE, 0, &ptr));
}

static kiln_status_t kiln_counting_ctl(void* self,
                                       kiln_allocator_command_t command,
                                       size_t byte_count, void** inout_ptr) {
  kiln_counting_allocator_t* counting = (kiln_counting_allocator_t*)self;
  if (command == KILN_ALLOCATOR_FREE) {
    if (*inout_ptr) counting->live_blocks--;
    return counting->base.ctl(counting->base.self, command, byte_count,
                              inout_ptr);
  }
  if (counting->allocations_left == 0) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "allocation budget exhausted (test allocator)");
  }
  bool is_new = command != KILN_ALLOCATOR_REALLOC || *inout_ptr == NULL;
  KILN_RETURN_IF_ERROR(
      counting->base.ctl(counting->base.self, command, byte_count, inout_ptr));
  if (counting->allocations_left != SIZE_MAX) counting->allocations_left--;
  counting->total_allocations++;
  if (is_new) counting->live_blocks++;
  return kiln_ok_status();
}

void kiln_counting_allocator_init(kiln_counting_allocator_t* counting,
                                  kiln_allocator_t base, size_t budget) {
  counting->base = base;
  counting->allocations_left = budget;
  counting->live_blocks = 0;
  counting->total_allocations = 0;
}

kiln_allocator_t kiln_counting_allocator(kiln_counting_allocator_t* counting) {
  kiln_allocator_t allocator = {counting, kiln_counting_ctl};
  return allocator;
}
