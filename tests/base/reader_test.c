#include <stdint.h>

#include "kiln/base/reader.h"
#include "kiln_test.h"

static const uint8_t kBytes[] = {0x01, 0x34, 0x12, 0x78, 0x56, 0x34, 0x12,
                                 0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23,
                                 0x01, 0x00, 0x00, 0xc0, 0x3f};

KILN_TEST(ReaderTest, ReadsLittleEndian) {
  kiln_reader_t reader;
  kiln_reader_init(&reader, kiln_make_const_byte_span(kBytes, sizeof(kBytes)),
                   0, "test data");
  uint8_t u8;
  uint16_t u16;
  uint32_t u32;
  uint64_t u64;
  KILN_ASSERT_OK(kiln_reader_read_u8(&reader, &u8));
  KILN_EXPECT_EQ(u8, 0x01);
  KILN_ASSERT_OK(kiln_reader_read_u16(&reader, &u16));
  KILN_EXPECT_EQ(u16, 0x1234);
  KILN_ASSERT_OK(kiln_reader_read_u32(&reader, &u32));
  KILN_EXPECT_EQ(u32, 0x12345678);
  KILN_ASSERT_OK(kiln_reader_read_u64(&reader, &u64));
  KILN_EXPECT_EQ_U64(u64, UINT64_C(0x0123456789abcdef));
  KILN_ASSERT_OK(kiln_reader_seek(&reader, 15));
  float f;
  KILN_ASSERT_OK(kiln_reader_read_f32(&reader, &f));
  KILN_EXPECT_NEAR(f, 1.5, 0);
  KILN_EXPECT_EQ(kiln_reader_remaining(&reader), 0);
}

KILN_TEST(ReaderTest, ReadPastEndReportsOffsetAndLeavesPosition) {
  kiln_reader_t reader;
  kiln_reader_init(&reader, kiln_make_const_byte_span(kBytes, 3), 100,
                   "section 'strings'");
  uint16_t u16;
  KILN_ASSERT_OK(kiln_reader_read_u16(&reader, &u16));
  uint32_t u32 = 77;
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_OUT_OF_RANGE,
      "section 'strings' truncated at offset 102: needed 4 bytes, 1 remain",
      kiln_reader_read_u32(&reader, &u32));
  KILN_EXPECT_EQ(u32, 77);                // output untouched
  KILN_EXPECT_EQ(reader.offset, 2);      // position untouched
  uint8_t u8;
  KILN_EXPECT_OK(kiln_reader_read_u8(&reader, &u8));  // last byte still readable
}

KILN_TEST(ReaderTest, EmptyInput) {
  kiln_reader_t reader;
  kiln_reader_init(&reader, kiln_make_const_byte_span(NULL, 0), 0, NULL);
  uint8_t u8;
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE, kiln_reader_read_u8(&reader, &u8));
  kiln_const_byte_span_t span;
  KILN_EXPECT_OK(kiln_reader_read_span(&reader, 0, &span));
  KILN_EXPECT_EQ(span.size, 0);
  KILN_EXPECT_OK(kiln_reader_seek(&reader, 0));
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE, kiln_reader_seek(&reader, 1));
}

KILN_TEST(ReaderTest, HugeLengthsDoNotWrap) {
  kiln_reader_t reader;
  kiln_reader_init(&reader, kiln_make_const_byte_span(kBytes, sizeof(kBytes)),
                   0, NULL);
  KILN_ASSERT_OK(kiln_reader_skip(&reader, 4));
  kiln_const_byte_span_t span;
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_reader_read_span(&reader, SIZE_MAX, &span));
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_reader_skip(&reader, SIZE_MAX - 2));
  kiln_reader_t sub;
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_reader_subreader(&reader, 8, SIZE_MAX - 4, "x", &sub));
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_reader_subreader(&reader, 20, 0, "x", &sub));
}

KILN_TEST(ReaderTest, SubreaderReportsFileOffsets) {
  kiln_reader_t reader;
  kiln_reader_init(&reader, kiln_make_const_byte_span(kBytes, sizeof(kBytes)),
                   0, "module");
  kiln_reader_t sub;
  KILN_ASSERT_OK(kiln_reader_subreader(&reader, 3, 4, "header", &sub));
  uint32_t u32;
  KILN_ASSERT_OK(kiln_reader_read_u32(&sub, &u32));
  KILN_EXPECT_EQ(u32, 0x12345678);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE, "offset 7",
                             kiln_reader_read_u8(&sub, (uint8_t*)&u32));
}

KILN_TEST(ReaderTest, AlignSkipsPadding) {
  kiln_reader_t reader;
  kiln_reader_init(&reader, kiln_make_const_byte_span(kBytes, sizeof(kBytes)),
                   0, NULL);
  KILN_ASSERT_OK(kiln_reader_skip(&reader, 1));
  KILN_ASSERT_OK(kiln_reader_align(&reader, 8));
  KILN_EXPECT_EQ(reader.offset, 8);
  KILN_ASSERT_OK(kiln_reader_align(&reader, 8));
  KILN_EXPECT_EQ(reader.offset, 8);
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT, kiln_reader_align(&reader, 3));
  KILN_ASSERT_OK(kiln_reader_seek(&reader, 17));
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE, kiln_reader_align(&reader, 16));
}

KILN_TEST(ReaderTest, UncheckedLoadsMatch) {
  KILN_EXPECT_EQ(kiln_load_le_u16(kBytes + 1), 0x1234);
  KILN_EXPECT_EQ(kiln_load_le_u32(kBytes + 3), 0x12345678);
}
