#include <stdint.h>

#include "kiln/base/allocator.h"
#include "kiln/base/size_math.h"
#include "kiln_test.h"

KILN_TEST(SizeMathTest, DetectsOverflow) {
  size_t out = 7;
  KILN_EXPECT_TRUE(kiln_size_add(1, 2, &out));
  KILN_EXPECT_EQ(out, 3);
  KILN_EXPECT_FALSE(kiln_size_add(SIZE_MAX, 1, &out));
  KILN_EXPECT_EQ(out, 3);  // untouched on overflow
  KILN_EXPECT_TRUE(kiln_size_mul(0, SIZE_MAX, &out));
  KILN_EXPECT_EQ(out, 0);
  KILN_EXPECT_FALSE(kiln_size_mul(SIZE_MAX / 2 + 1, 2, &out));
  uint64_t u;
  KILN_EXPECT_FALSE(kiln_u64_mul(UINT64_C(1) << 32, UINT64_C(1) << 32, &u));
  KILN_EXPECT_FALSE(kiln_u64_add(UINT64_MAX, 1, &u));
}

KILN_TEST(SizeMathTest, AlignUpAndRanges) {
  size_t out;
  KILN_EXPECT_TRUE(kiln_size_align_up(13, 8, &out));
  KILN_EXPECT_EQ(out, 16);
  KILN_EXPECT_TRUE(kiln_size_align_up(16, 8, &out));
  KILN_EXPECT_EQ(out, 16);
  KILN_EXPECT_FALSE(kiln_size_align_up(5, 6, &out));  // not a power of two
  KILN_EXPECT_FALSE(kiln_size_align_up(SIZE_MAX - 2, 8, &out));
  KILN_EXPECT_TRUE(kiln_range_fits(0, 0, 0));
  KILN_EXPECT_TRUE(kiln_range_fits(4, 4, 8));
  KILN_EXPECT_FALSE(kiln_range_fits(4, 5, 8));
  KILN_EXPECT_FALSE(kiln_range_fits(9, 0, 8));
  KILN_EXPECT_FALSE(kiln_range_fits(8, UINT64_MAX, 16));  // no wraparound
}

KILN_TEST(AllocatorTest, SystemAllocatesZeroedAndGrows) {
  kiln_allocator_t allocator = kiln_allocator_system();
  uint8_t* p = NULL;
  KILN_ASSERT_OK(kiln_allocator_calloc(allocator, 64, (void**)&p));
  for (int i = 0; i < 64; ++i) KILN_EXPECT_EQ(p[i], 0);
  p[63] = 42;
  KILN_ASSERT_OK(kiln_allocator_realloc(allocator, 4096, (void**)&p));
  KILN_EXPECT_EQ(p[63], 42);
  kiln_allocator_free(allocator, p);
  void* empty = NULL;
  KILN_ASSERT_OK(kiln_allocator_malloc(allocator, 0, &empty));
  KILN_EXPECT_TRUE(empty != NULL);
  kiln_allocator_free(allocator, empty);
}

KILN_TEST(AllocatorTest, ArrayOverflowIsAnError) {
  void* p = (void*)1;
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_allocator_calloc_array(kiln_allocator_system(),
                                                 SIZE_MAX / 4, 8, &p));
  KILN_EXPECT_TRUE(p == NULL);
  void* q = NULL;
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_allocator_realloc_array(kiln_allocator_system(),
                                                  SIZE_MAX, 2, &q));
}

KILN_TEST(AllocatorTest, HugeRequestFailsWithStatus) {
  void* p = NULL;
  KILN_EXPECT_STATUS(KILN_STATUS_RESOURCE_EXHAUSTED,
                     kiln_allocator_malloc(kiln_allocator_system(),
                                           SIZE_MAX - 4096, &p));
}

KILN_TEST(AllocatorTest, CountingAllocatorBudgetAndLeaks) {
  kiln_counting_allocator_t counting;
  kiln_counting_allocator_init(&counting, kiln_allocator_system(), 2);
  kiln_allocator_t allocator = kiln_counting_allocator(&counting);
  void *a = NULL, *b = NULL, *c = NULL;
  KILN_ASSERT_OK(kiln_allocator_malloc(allocator, 8, &a));
  KILN_ASSERT_OK(kiln_allocator_malloc(allocator, 8, &b));
  KILN_EXPECT_STATUS(KILN_STATUS_RESOURCE_EXHAUSTED,
                     kiln_allocator_malloc(allocator, 8, &c));
  KILN_EXPECT_EQ(counting.live_blocks, 2);
  kiln_allocator_free(allocator, a);
  kiln_allocator_free(allocator, b);
  KILN_EXPECT_EQ(counting.live_blocks, 0);
}
