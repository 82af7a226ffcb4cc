// A bump allocator over blocks taken from a parent allocator: many small
// allocations with one lifetime (a loaded module's tables, a compiler pass)
// are freed together by kiln_arena_deinit or reused after kiln_arena_reset.
#ifndef KILN_BASE_ARENA_H_
#define KILN_BASE_ARENA_H_

#include <stddef.h>

#include "kiln/base/allocator.h"
#include "kiln/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_arena_block_t kiln_arena_block_t;

typedef struct kiln_arena_t {
  kiln_allocator_t parent;
  size_t block_size;  // default size of new blocks
  kiln_arena_block_t* blocks;  // newest first
  size_t total_allocated;  // bytes handed out since the last reset
} kiln_arena_t;

void kiln_arena_init(kiln_arena_t* arena, kiln_allocator_t parent,
                     size_t block_size);
void kiln_arena_deinit(kiln_arena_t* arena);
// Frees every block but the newest and rewinds it, keeping memory warm.
void kiln_arena_reset(kiln_arena_t* arena);
// Zero-filled, aligned to `alignment` (a power of two, at most 4096).
kiln_status_t kiln_arena_allocate_aligned(kiln_arena_t* arena, size_t size,
                                          size_t alignment, void** out_ptr);
static inline kiln_status_t kiln_arena_allocate(kiln_arena_t* arena,
                                                size_t size, void** out_ptr) {
  return kiln_arena_allocate_aligned(arena, size, 16, out_ptr);
}
// count * element_size with overflow checks.
kiln_status_t kiln_arena_allocate_array(kiln_arena_t* arena, size_t count,
                                        size_t element_size, void** out_ptr);
// Copies `length` bytes and appends a NUL.
kiln_status_t kiln_arena_strndup(kiln_arena_t* arena, const char* text,
                                 size_t length, char** out_text);

#ifdef __cplusplus
}
#endif

#endif  // KILN_BASE_ARENA_H_
