// A memory budget: one limit on the bytes a session holds, host and device
// together. Host memory is counted by wrapping the session's allocator;
// device buffers are counted by the HAL device the budget is given to. Both
// hold a reference, so the budget lives as long as its last user.
#ifndef KILN_BASE_MEMORY_BUDGET_H_
#define KILN_BASE_MEMORY_BUDGET_H_

#include <stdint.h>

#include "kiln/base/allocator.h"
#include "kiln/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_memory_budget_t kiln_memory_budget_t;

// `limit_bytes` == 0 means unlimited (counted only). `base` allocates the
// budget itself and every block of its allocator.
kiln_status_t kiln_memory_budget_create(uint64_t limit_bytes,
                                        kiln_allocator_t base,
                                        kiln_memory_budget_t** out_budget);
void kiln_memory_budget_retain(kiln_memory_budget_t* budget);
void kiln_memory_budget_release(kiln_memory_budget_t* budget);

// Takes `bytes` from the budget or refuses (RESOURCE_EXHAUSTED naming
// `what`, the request, the limit and what is in use). Thread-safe.
kiln_status_t kiln_memory_budget_reserve(kiln_memory_budget_t* budget,
                                         uint64_t bytes, const char* what);
void kiln_memory_budget_unreserve(kiln_memory_budget_t* budget,
                                  uint64_t bytes);
uint64_t kiln_memory_budget_used(const kiln_memory_budget_t* budget);
uint64_t kiln_memory_budget_limit(const kiln_memory_budget_t* budget);

// An allocator that counts every block (plus a small header) against the
// budget. Blocks must be freed before the budget's last release.
kiln_allocator_t kiln_memory_budget_allocator(kiln_memory_budget_t* budget);

#ifdef __cplusplus
}
#endif

#endif  // KILN_BASE_MEMORY_BUDGET_H_
