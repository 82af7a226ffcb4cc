#include "kiln/base/arena.h"

#include <stdint.h>
#include <string.h>

#include "kiln/base/size_math.h"

struct kiln_arena_block_t {
  kiln_arena_block_t* next;
  size_t capacity;  // usable bytes after the header
  size_t used;
};

// Blocks start with their header; usable bytes follow, 64-byte aligned from
// the block start so the header size does not disturb alignment.
#define KILN_ARENA_HEADER_SIZE 64

static uint8_t* kiln_arena_block_data(kiln_arena_block_t* block) {
  return (uint8_t*)block + KILN_ARENA_HEADER_SIZE;
}

void kiln_arena_init(kiln_arena_t* arena, kiln_allocator_t parent,
                     size_t block_size) {
  arena->parent = parent;
  arena->block_size = block_size ? block_size : 64 * 1024;
  arena->blocks = NULL;
  arena->total_allocated = 0;
}

void kiln_arena_deinit(kiln_arena_t* arena) {
  kiln_arena_block_t* block = arena->blocks;
  while (block) {
    kiln_arena_block_t* next = block->next;
    kiln_allocator_free(arena->parent, block);
    block = next;
  }
  arena->blocks = NULL;
  arena->total_allocated = 0;
}

void kiln_arena_reset(kiln_arena_t* arena) {
  if (!arena->blocks) return;
  kiln_arena_block_t* keep = arena->blocks;
  kiln_arena_block_t* block = keep->next;
  while (block) {
    kiln_arena_block_t* next = block->next;
    kiln_allocator_free(arena->parent, block);
    block = next;
  }
  keep->next = NULL;
  keep->used = 0;
  arena->total_allocated = 0;
}

kiln_status_t kiln_arena_allocate_aligned(kiln_arena_t* arena, size_t size,
                                          size_t alignment, void** out_ptr) {
  *out_ptr = NULL;
  if (!kiln_is_power_of_two(alignment) || alignment > 4096) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "arena alignment %zu is not a power of two <= 4096",
                            alignment);
  }
  if (size == 0) size = 1;
  kiln_arena_block_t* block = arena->blocks;
  if (block) {
    // Align the absolute address: the parent may return any 16-byte block.
    uintptr_t base = (uintptr_t)kiln_arena_block_data(block);
    size_t start;
    if (kiln_size_align_up(base + block->used, alignment, &start)) {
      start -= base;
      size_t end;
      if (kiln_size_add(start, size, &end) && end <= block->capacity) {
        block->used = end;
        arena->total_allocated += size;
        *out_ptr = kiln_arena_block_data(block) + start;
        memset(*out_ptr, 0, size);
        return kiln_ok_status();
      }
    }
  }
  // New block: big enough for this request at worst-case alignment.
  size_t needed, capacity, total;
  if (!kiln_size_add(size, alignment, &needed) ||
      !kiln_size_add(needed > arena->block_size ? needed : arena->block_size,
                     0, &capacity) ||
      !kiln_size_add(capacity, KILN_ARENA_HEADER_SIZE, &total)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "arena allocation of %zu bytes overflows", size);
  }
  void* memory = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_malloc(arena->parent, total, &memory));
  kiln_arena_block_t* fresh = (kiln_arena_block_t*)memory;
  fresh->next = arena->blocks;
  fresh->capacity = capacity;
  fresh->used = 0;
  arena->blocks = fresh;
  return kiln_arena_allocate_aligned(arena, size, alignment, out_ptr);
}

kiln_status_t kiln_arena_allocate_array(kiln_arena_t* arena, size_t count,
                                        size_t element_size, void** out_ptr) {
  size_t size;
  if (!kiln_size_mul(count, element_size, &size)) {
    *out_ptr = NULL;
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "arena array of %zu x %zu bytes overflows", count,
                            element_size);
  }
  return kiln_arena_allocate(arena, size, out_ptr);
}

kiln_status_t kiln_arena_strndup(kiln_arena_t* arena, const char* text,
                                 size_t length, char** out_text) {
  size_t size;
  if (!kiln_size_add(length, 1, &size)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "string too long");
  }
  void* memory;
  KILN_RETURN_IF_ERROR(kiln_arena_allocate_aligned(arena, size, 1, &memory));
  if (length) memcpy(memory, text, length);
  ((char*)memory)[length] = 0;
  *out_text = (char*)memory;
  return kiln_ok_status();
}
