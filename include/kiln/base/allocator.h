// The allocator interface passed explicitly to everything that allocates, so
// hosts can route kiln's memory through their own heap and tests can inject
// failures.
#ifndef KILN_BASE_ALLOCATOR_H_
#define KILN_BASE_ALLOCATOR_H_

#include <stddef.h>

#include "kiln/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_allocator_command_e {
  KILN_ALLOCATOR_MALLOC = 0,
  KILN_ALLOCATOR_CALLOC = 1,   // zero-filled
  KILN_ALLOCATOR_REALLOC = 2,  // *inout_ptr holds the old block (may be NULL)
  KILN_ALLOCATOR_FREE = 3,
} kiln_allocator_command_t;

// One entry point keeps custom allocators small: a host implements `ctl`.
// For FREE, byte_count is 0 and the result is ignored.
typedef kiln_status_t (*kiln_allocator_ctl_fn_t)(void* self,
                                                 kiln_allocator_command_t command,
                                                 size_t byte_count,
                                                 void** inout_ptr);

typedef struct kiln_allocator_t {
  void* self;
  kiln_allocator_ctl_fn_t ctl;
} kiln_allocator_t;

// malloc/calloc/realloc/free from the C library.
kiln_allocator_t kiln_allocator_system(void);

// A zero byte_count allocates one byte so the result is always freeable.
kiln_status_t kiln_allocator_malloc(kiln_allocator_t allocator,
                                    size_t byte_count, void** out_ptr);
kiln_status_t kiln_allocator_calloc(kiln_allocator_t allocator,
                                    size_t byte_count, void** out_ptr);
// count * element_size with overflow checks; zero-filled.
kiln_status_t kiln_allocator_calloc_array(kiln_allocator_t allocator,
                                          size_t count, size_t element_size,
                                          void** out_ptr);
// On failure *inout_ptr still holds the old (unchanged) block.
kiln_status_t kiln_allocator_realloc(kiln_allocator_t allocator,
                                     size_t byte_count, void** inout_ptr);
kiln_status_t kiln_allocator_realloc_array(kiln_allocator_t allocator,
                                           size_t count, size_t element_size,
                                           void** inout_ptr);
void kiln_allocator_free(kiln_allocator_t allocator, void* ptr);

// Test helper: an allocator that fails once `budget` allocations have
// succeeded; counts live blocks so tests can assert nothing leaked.
typedef struct kiln_counting_allocator_t {
  kiln_allocator_t base;
  size_t allocations_left;  // SIZE_MAX for unlimited
  size_t live_blocks;
  size_t total_allocations;
} kiln_counting_allocator_t;
void kiln_counting_allocator_init(kiln_counting_allocator_t* counting,
                                  kiln_allocator_t base, size_t budget);
kiln_allocator_t kiln_counting_allocator(kiln_counting_allocator_t* counting);

#ifdef __cplusplus
}
#endif

#endif  // KILN_BASE_ALLOCATOR_H_
