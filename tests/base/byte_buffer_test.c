#include "kiln/base/byte_buffer.h"
#include "kiln/base/reader.h"
#include "kiln_test.h"

KILN_TEST(ByteBufferTest, RoundTripsThroughReader) {
  kiln_byte_buffer_t buffer;
  kiln_byte_buffer_init(&buffer, kiln_allocator_system());
  KILN_ASSERT_OK(kiln_byte_buffer_append_u8(&buffer, 7));
  KILN_ASSERT_OK(kiln_byte_buffer_append_u16(&buffer, 0xbeef));
  KILN_ASSERT_OK(kiln_byte_buffer_align(&buffer, 8));
  KILN_EXPECT_EQ(buffer.size, 8);
  KILN_ASSERT_OK(kiln_byte_buffer_append_u32(&buffer, 0xdeadbeef));
  KILN_ASSERT_OK(kiln_byte_buffer_append_u64(&buffer, UINT64_C(1) << 40));
  KILN_ASSERT_OK(kiln_byte_buffer_append_f32(&buffer, -2.5f));
  KILN_ASSERT_OK(kiln_byte_buffer_append_f64(&buffer, 0.125));
  KILN_ASSERT_OK(kiln_byte_buffer_patch_u32(&buffer, 8, 0x01020304));
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_byte_buffer_patch_u32(&buffer, buffer.size - 2, 1));

  kiln_reader_t reader;
  kiln_reader_init(&reader, kiln_byte_buffer_span(&buffer), 0, NULL);
  uint8_t u8;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64;
  float f;
  double d;
  KILN_EXPECT_OK(kiln_reader_read_u8(&reader, &u8));
  KILN_EXPECT_EQ(u8, 7);
  KILN_EXPECT_OK(kiln_reader_read_u16(&reader, &u16));
  KILN_EXPECT_EQ(u16, 0xbeef);
  KILN_EXPECT_OK(kiln_reader_align(&reader, 8));
  KILN_EXPECT_OK(kiln_reader_read_u32(&reader, &u32));
  KILN_EXPECT_EQ(u32, 0x01020304);
  KILN_EXPECT_OK(kiln_reader_read_u64(&reader, &u64));
  KILN_EXPECT_EQ_U64(u64, UINT64_C(1) << 40);
  KILN_EXPECT_OK(kiln_reader_read_f32(&reader, &f));
  KILN_EXPECT_NEAR(f, -2.5, 0);
  KILN_EXPECT_OK(kiln_reader_read_f64(&reader, &d));
  KILN_EXPECT_NEAR(d, 0.125, 0);
  kiln_byte_buffer_deinit(&buffer);
}

KILN_TEST(ByteBufferTest, GrowthFailureKeepsContents) {
  kiln_counting_allocator_t counting;
  kiln_counting_allocator_init(&counting, kiln_allocator_system(), 1);
  kiln_byte_buffer_t buffer;
  kiln_byte_buffer_init(&buffer, kiln_counting_allocator(&counting));
  KILN_ASSERT_OK(kiln_byte_buffer_append(&buffer, "abc", 3));
  static uint8_t big[4096];
  KILN_EXPECT_STATUS(KILN_STATUS_RESOURCE_EXHAUSTED,
                     kiln_byte_buffer_append(&buffer, big, sizeof(big)));
  KILN_EXPECT_EQ(buffer.size, 3);
  KILN_EXPECT_BYTES_EQ(buffer.data, "abc", 3);
  kiln_byte_buffer_deinit(&buffer);
  KILN_EXPECT_EQ(counting.live_blocks, 0);
}

KILN_TEST(ByteBufferTest, OverflowingGrowthIsAnError) {
  kiln_byte_buffer_t buffer;
  kiln_byte_buffer_init(&buffer, kiln_allocator_system());
  KILN_ASSERT_OK(kiln_byte_buffer_append_u8(&buffer, 1));
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_byte_buffer_append_zeros(&buffer, SIZE_MAX));
  KILN_EXPECT_OK(kiln_byte_buffer_append(&buffer, NULL, 0));
  KILN_EXPECT_EQ(buffer.size, 1);
  kiln_byte_buffer_deinit(&buffer);
}
