#include <stdint.h>

#include "kiln/base/views.h"
#include "kiln_test.h"

static kiln_string_view_t sv(const char* text) {
  return kiln_make_cstring_view(text);
}

KILN_TEST(ViewsTest, EqualityAndAffixes) {
  KILN_EXPECT_TRUE(kiln_string_view_equal(sv(""), kiln_make_cstring_view(NULL)));
  KILN_EXPECT_TRUE(kiln_string_view_equal_cstring(sv("abc"), "abc"));
  KILN_EXPECT_FALSE(kiln_string_view_equal_cstring(sv("abc"), "abcd"));
  KILN_EXPECT_TRUE(kiln_string_view_starts_with(sv("vulkan://0"), sv("vulkan")));
  KILN_EXPECT_FALSE(kiln_string_view_starts_with(sv("vk"), sv("vulkan")));
  KILN_EXPECT_TRUE(kiln_string_view_ends_with(sv("m.kiln"), sv(".kiln")));
  KILN_EXPECT_TRUE(kiln_string_view_ends_with(sv("x"), sv("")));
  KILN_EXPECT_FALSE(kiln_string_view_ends_with(sv("n"), sv(".kiln")));
}

KILN_TEST(ViewsTest, FindSplitTrimSubstring) {
  KILN_EXPECT_EQ(kiln_string_view_find_char(sv("a=b=c"), '='), 1);
  KILN_EXPECT_EQ(kiln_string_view_find_last_char(sv("a=b=c"), '='), 3);
  KILN_EXPECT_EQ_U64(kiln_string_view_find_char(sv(""), '='), SIZE_MAX);
  kiln_string_view_t head, tail;
  KILN_EXPECT_TRUE(kiln_string_view_split(sv("2x2xf32=1 2"), '=', &head, &tail));
  KILN_EXPECT_TRUE(kiln_string_view_equal_cstring(head, "2x2xf32"));
  KILN_EXPECT_TRUE(kiln_string_view_equal_cstring(tail, "1 2"));
  KILN_EXPECT_FALSE(kiln_string_view_split(sv("4xf32"), '=', &head, &tail));
  KILN_EXPECT_TRUE(kiln_string_view_equal_cstring(head, "4xf32"));
  KILN_EXPECT_EQ(tail.size, 0);
  KILN_EXPECT_TRUE(kiln_string_view_equal_cstring(
      kiln_string_view_trim(sv(" \t x y \n")), "x y"));
  KILN_EXPECT_EQ(kiln_string_view_trim(sv("   ")).size, 0);
  KILN_EXPECT_TRUE(kiln_string_view_equal_cstring(
      kiln_string_view_substring(sv("abcdef"), 2, 100), "cdef"));
  KILN_EXPECT_EQ(kiln_string_view_substring(sv("abc"), 10, 1).size, 0);
}

KILN_TEST(ViewsTest, ParseIntegers) {
  int64_t value = 0;
  KILN_EXPECT_OK(kiln_string_view_parse_i64(sv("-42"), &value));
  KILN_EXPECT_EQ(value, -42);
  KILN_EXPECT_OK(kiln_string_view_parse_i64(sv("0x10"), &value));
  KILN_EXPECT_EQ(value, 16);
  // Not NUL-terminated: the view stops before "99".
  KILN_EXPECT_OK(kiln_string_view_parse_i64(kiln_make_string_view("1299", 2),
                                            &value));
  KILN_EXPECT_EQ(value, 12);
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_string_view_parse_i64(sv(""), &value));
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_string_view_parse_i64(sv("12a"), &value));
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_string_view_parse_i64(sv(" 1"), &value));
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_string_view_parse_i64(sv("99999999999999999999"),
                                                &value));
  uint64_t u = 0;
  KILN_EXPECT_OK(kiln_string_view_parse_u64(sv("18446744073709551615"), &u));
  KILN_EXPECT_EQ_U64(u, UINT64_MAX);
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_string_view_parse_u64(sv("-1"), &u));
}

KILN_TEST(ViewsTest, ParseFloats) {
  double value = 0;
  KILN_EXPECT_OK(kiln_string_view_parse_f64(sv("1.5e-3"), &value));
  KILN_EXPECT_NEAR(value, 1.5e-3, 1e-15);
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_string_view_parse_f64(sv("1.5x"), &value));
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_string_view_parse_f64(sv("1e999"), &value));
}
