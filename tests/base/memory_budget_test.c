// The memory budget: host blocks through its allocator and raw reservations
// share one limit; refusals name the limit; frees give bytes back.
#include <stdint.h>

#include "kiln/base/memory_budget.h"
#include "kiln_test.h"

KILN_TEST(MemoryBudgetTest, AllocatorCountsAndRefuses) {
  kiln_memory_budget_t* budget = NULL;
  KILN_ASSERT_OK(kiln_memory_budget_create(1 << 20, kiln_allocator_system(),
                                           &budget));
  kiln_allocator_t allocator = kiln_memory_budget_allocator(budget);
  void* a = NULL;
  KILN_ASSERT_OK(kiln_allocator_malloc(allocator, 600 << 10, &a));
  KILN_EXPECT_GE(kiln_memory_budget_used(budget), 600u << 10);
  void* b = NULL;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_RESOURCE_EXHAUSTED,
                             "of the limit of 1048576 bytes",
                             kiln_allocator_malloc(allocator, 600 << 10, &b));
  KILN_EXPECT_TRUE(b == NULL);
  // Device bytes share the limit.
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_RESOURCE_EXHAUSTED,
                             "a device buffer needs 524288 bytes",
                             kiln_memory_budget_reserve(budget, 512 << 10,
                                                        "a device buffer"));
  KILN_ASSERT_OK(kiln_memory_budget_reserve(budget, 100 << 10, "x"));
  // Growing past the limit fails and keeps the old block; shrinking gives
  // bytes back.
  KILN_EXPECT_STATUS(KILN_STATUS_RESOURCE_EXHAUSTED,
                     kiln_allocator_realloc(allocator, 1000 << 10, &a));
  KILN_ASSERT_TRUE(a != NULL);
  ((uint8_t*)a)[0] = 7;
  KILN_ASSERT_OK(kiln_allocator_realloc(allocator, 10, &a));
  KILN_EXPECT_EQ(((uint8_t*)a)[0], 7);
  KILN_EXPECT_LT(kiln_memory_budget_used(budget), 120u << 10);
  kiln_allocator_free(allocator, a);
  kiln_memory_budget_unreserve(budget, 100 << 10);
  KILN_EXPECT_EQ_U64(kiln_memory_budget_used(budget), 0);
  kiln_memory_budget_release(budget);
}

KILN_TEST(MemoryBudgetTest, ZeroLimitOnlyCounts) {
  kiln_memory_budget_t* budget = NULL;
  KILN_ASSERT_OK(kiln_memory_budget_create(0, kiln_allocator_system(), &budget));
  KILN_ASSERT_OK(kiln_memory_budget_reserve(budget, UINT64_MAX / 2, "big"));
  KILN_EXPECT_STATUS(KILN_STATUS_RESOURCE_EXHAUSTED,
                     kiln_memory_budget_reserve(budget, UINT64_MAX, "overflow"));
  kiln_memory_budget_unreserve(budget, UINT64_MAX / 2);
  kiln_memory_budget_release(budget);
}
