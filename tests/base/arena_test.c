#include <stdint.h>

#include "kiln/base/arena.h"
#include "kiln_test.h"

KILN_TEST(ArenaTest, AlignedZeroedAndDistinct) {
  kiln_counting_allocator_t counting;
  kiln_counting_allocator_init(&counting, kiln_allocator_system(), SIZE_MAX);
  kiln_arena_t arena;
  kiln_arena_init(&arena, kiln_counting_allocator(&counting), 256);
  uint8_t* previous = NULL;
  for (int i = 0; i < 100; ++i) {
    uint8_t* p = NULL;
    KILN_ASSERT_OK(kiln_arena_allocate_aligned(&arena, 24, 64, (void**)&p));
    KILN_EXPECT_EQ((uintptr_t)p % 64, 0);
    for (int j = 0; j < 24; ++j) KILN_EXPECT_EQ(p[j], 0);
    memset(p, 0xab, 24);
    KILN_EXPECT_TRUE(p != previous);
    previous = p;
  }
  KILN_EXPECT_GT(counting.live_blocks, 1);
  kiln_arena_reset(&arena);
  KILN_EXPECT_EQ(counting.live_blocks, 1);
  uint8_t* again = NULL;
  KILN_ASSERT_OK(kiln_arena_allocate(&arena, 16, (void**)&again));
  KILN_EXPECT_EQ(again[0], 0);  // reused memory is zeroed again
  kiln_arena_deinit(&arena);
  KILN_EXPECT_EQ(counting.live_blocks, 0);
}

KILN_TEST(ArenaTest, LargerThanBlockAndEmpty) {
  kiln_arena_t arena;
  kiln_arena_init(&arena, kiln_allocator_system(), 128);
  void* big = NULL;
  KILN_ASSERT_OK(kiln_arena_allocate(&arena, 10000, &big));
  memset(big, 1, 10000);
  void* empty = NULL;
  KILN_ASSERT_OK(kiln_arena_allocate(&arena, 0, &empty));
  KILN_EXPECT_TRUE(empty != NULL);
  char* text = NULL;
  KILN_ASSERT_OK(kiln_arena_strndup(&arena, "predict!", 7, &text));
  KILN_EXPECT_STREQ(text, "predict");
  kiln_arena_deinit(&arena);
}

KILN_TEST(ArenaTest, RejectsOverflowAndBadAlignment) {
  kiln_arena_t arena;
  kiln_arena_init(&arena, kiln_allocator_system(), 0);
  void* p = NULL;
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_arena_allocate_array(&arena, SIZE_MAX / 2, 4, &p));
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_arena_allocate(&arena, SIZE_MAX - 8, &p));
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_arena_allocate_aligned(&arena, 8, 12, &p));
  kiln_arena_deinit(&arena);
}

KILN_TEST(ArenaTest, ParentFailurePropagates) {
  kiln_counting_allocator_t counting;
  kiln_counting_allocator_init(&counting, kiln_allocator_system(), 0);
  kiln_arena_t arena;
  kiln_arena_init(&arena, kiln_counting_allocator(&counting), 64);
  void* p = NULL;
  KILN_EXPECT_STATUS(KILN_STATUS_RESOURCE_EXHAUSTED,
                     kiln_arena_allocate(&arena, 8, &p));
  kiln_arena_deinit(&arena);
}
