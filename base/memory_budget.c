// The memory budget: an atomic counter with a limit, and an allocator that
// prefixes each block with its size so frees give the bytes back.
#include "kiln/base/memory_budget.h"

#include <stddef.h>
#include <string.h>

struct kiln_memory_budget_t {
  kiln_allocator_t base;
  uint64_t limit;      // 0: unlimited
  uint64_t used;       // atomic
  uint32_t references;  // atomic
};

// Keeps blocks aligned like malloc's (max_align_t).
enum { KILN_BUDGET_HEADER = 16 };

kiln_status_t kiln_memory_budget_create(uint64_t limit_bytes,
                                        kiln_allocator_t base,
                                        kiln_memory_budget_t** out_budget) {
  *out_budget = NULL;
  kiln_memory_budget_t* budget = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_calloc(base, sizeof(*budget), (void**)&budget));
  budget->base = base;
  budget->limit = limit_bytes;
  budget->references = 1;
  *out_budget = budget;
  return kiln_ok_status();
}

void kiln_memory_budget_retain(kiln_memory_budget_t* budget) {
  if (budget) __atomic_add_fetch(&budget->references, 1, __ATOMIC_RELAXED);
}

void kiln_memory_budget_release(kiln_memory_budget_t* budget) {
  if (budget &&
      __atomic_sub_fetch(&budget->references, 1, __ATOMIC_ACQ_REL) == 0) {
    kiln_allocator_free(budget->base, budget);
  }
}

kiln_status_t kiln_memory_budget_reserve(kiln_memory_budget_t* budget,
                                         uint64_t bytes, const char* what) {
  uint64_t used = __atomic_load_n(&budget->used, __ATOMIC_RELAXED);
  for (;;) {
    uint64_t next = used + bytes;
    if (next < used || (budget->limit && next > budget->limit)) {
      return kiln_make_status(
          KILN_STATUS_RESOURCE_EXHAUSTED,
          "memory budget exceeded: %s needs %llu bytes, %llu of the limit of "
          "%llu bytes are in use",
          what, (unsigned long long)bytes, (unsigned long long)used,
          (unsigned long long)budget->limit);
    }
    if (__atomic_compare_exchange_n(&budget->used, &used, next, true,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
      return kiln_ok_status();
    }
  }
}

void kiln_memory_budget_unreserve(kiln_memory_budget_t* budget,
                                  uint64_t bytes) {
  __atomic_sub_fetch(&budget->used, bytes, __ATOMIC_RELAXED);
}

uint64_t kiln_memory_budget_used(const kiln_memory_budget_t* budget) {
  return __atomic_load_n(&budget->used, __ATOMIC_RELAXED);
}

uint64_t kiln_memory_budget_limit(const kiln_memory_budget_t* budget) {
  return budget->limit;
}

static size_t kiln_budget_block_size(void* ptr) {
  size_t size;
  memcpy(&size, (uint8_t*)ptr - KILN_BUDGET_HEADER, sizeof(size));
  return size;
}

static kiln_status_t kiln_budget_ctl(void* self,
                                     kiln_allocator_command_t command,
                                     size_t byte_count, void** inout_ptr) {
  kiln_memory_budget_t* budget = self;
  void* old = *inout_ptr;
  if (command == KILN_ALLOCATOR_FREE) {
    if (!old) return kiln_ok_status();
    size_t size = kiln_budget_block_size(old);
    kiln_allocator_free(budget->base, (uint8_t*)old - KILN_BUDGET_HEADER);
    kiln_memory_budget_unreserve(budget, size + KILN_BUDGET_HEADER);
    return kiln_ok_status();
  }
  if (byte_count > SIZE_MAX - KILN_BUDGET_HEADER) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "allocation of %zu bytes is too large", byte_count);
  }
  size_t old_size = (command == KILN_ALLOCATOR_REALLOC && old)
                        ? kiln_budget_block_size(old) + KILN_BUDGET_HEADER
                        : 0;
  size_t new_size = byte_count + KILN_BUDGET_HEADER;
  if (new_size > old_size) {
    KILN_RETURN_IF_ERROR(kiln_memory_budget_reserve(
        budget, new_size - old_size, "a host allocation"));
  }
  void* block = old ? (uint8_t*)old - KILN_BUDGET_HEADER : NULL;
  kiln_status_t status;
  if (command == KILN_ALLOCATOR_REALLOC) {
    status = kiln_allocator_realloc(budget->base, new_size, &block);
  } else if (command == KILN_ALLOCATOR_CALLOC) {
    status = kiln_allocator_calloc(budget->base, new_size, &block);
  } else {
    status = kiln_allocator_malloc(budget->base, new_size, &block);
  }
  if (!kiln_status_is_ok(status)) {
    if (new_size > old_size) {
      kiln_memory_budget_unreserve(budget, new_size - old_size);
    }
    return status;
  }
  if (old_size > new_size) {
    kiln_memory_budget_unreserve(budget, old_size - new_size);
  }
  memcpy(block, &byte_count, sizeof(byte_count));
  *inout_ptr = (uint8_t*)block + KILN_BUDGET_HEADER;
  return kiln_ok_status();
}

kiln_allocator_t kiln_memory_budget_allocator(kiln_memory_budget_t* budget) {
  kiln_allocator_t allocator = {budget, kiln_budget_ctl};
  return allocator;
}
