#include <stdlib.h>

#include "kiln/base/status.h"
#include "kiln_test.h"

KILN_TEST(StatusTest, OkIsNullAndCheap) {
  kiln_status_t status = kiln_ok_status();
  KILN_EXPECT_TRUE(kiln_status_is_ok(status));
  KILN_EXPECT_EQ(kiln_status_code(status), KILN_STATUS_OK);
  KILN_EXPECT_STREQ(kiln_status_message(status), "");
  char* text = kiln_status_to_string(status);
  KILN_EXPECT_STREQ(text, "OK");
  free(text);
}

KILN_TEST(StatusTest, CarriesCodeMessageAndLocation) {
  kiln_status_t status =
      kiln_make_status(KILN_STATUS_NOT_FOUND, "no function '%s'", "predict");
  int line = __LINE__ - 1;
  KILN_EXPECT_EQ(kiln_status_code(status), KILN_STATUS_NOT_FOUND);
  KILN_EXPECT_STREQ(kiln_status_message(status), "no function 'predict'");
  KILN_EXPECT_CONTAINS(kiln_status_source_file(status), "status_test.c");
  KILN_EXPECT_EQ(kiln_status_source_line(status), line);
  kiln_status_free(status);
}

KILN_TEST(StatusTest, OkCodeBecomesInternal) {
  // Making an "error" with code OK must not produce a NULL (OK) status.
  kiln_status_t status = kiln_make_status(KILN_STATUS_OK, "oops");
  KILN_EXPECT_FALSE(kiln_status_is_ok(status));
  KILN_EXPECT_EQ(kiln_status_consume_code(status), KILN_STATUS_INTERNAL);
}

static kiln_status_t kiln_inner(int fail) {
  if (fail) return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "index 9 >= 4");
  return kiln_ok_status();
}

static kiln_status_t kiln_middle(int fail) {
  KILN_RETURN_IF_ERROR_ANNOTATE(kiln_inner(fail), "in list_get");
  return kiln_ok_status();
}

static kiln_status_t kiln_outer(int fail) {
  KILN_RETURN_IF_ERROR_ANNOTATE(kiln_middle(fail), "calling '%s'", "main");
  return kiln_ok_status();
}

KILN_TEST(StatusTest, AnnotationsAccumulateInnermostFirst) {
  KILN_EXPECT_OK(kiln_outer(0));
  kiln_status_t status = kiln_outer(1);
  KILN_ASSERT_EQ(kiln_status_annotation_count(status), 2);
  KILN_EXPECT_STREQ(kiln_status_annotation(status, 0), "in list_get");
  KILN_EXPECT_STREQ(kiln_status_annotation(status, 1), "calling 'main'");
  KILN_EXPECT_TRUE(kiln_status_annotation(status, 2) == NULL);
  char* text = kiln_status_to_string(status);
  KILN_EXPECT_STREQ(text,
                    "OUT_OF_RANGE: index 9 >= 4; in list_get; calling 'main'");
  free(text);
  kiln_status_free(status);
}

KILN_TEST(StatusTest, AnnotatingOkStaysOk) {
  KILN_EXPECT_TRUE(kiln_status_annotate(kiln_ok_status(), "ctx") == NULL);
}

KILN_TEST(StatusTest, FormatTruncatesLikeSnprintf) {
  kiln_status_t status = kiln_make_status(KILN_STATUS_DATA_LOSS, "abcdef");
  char small[8];
  size_t needed = kiln_status_format(status, small, sizeof(small));
  KILN_EXPECT_EQ(needed, strlen("DATA_LOSS: abcdef"));
  KILN_EXPECT_STREQ(small, "DATA_LO");
  KILN_EXPECT_EQ(kiln_status_format(status, NULL, 0), needed);
  kiln_status_free(status);
}

KILN_TEST(StatusTest, CodeNamesAreDistinct) {
  for (int a = 0; a < KILN_STATUS_CODE_COUNT; ++a) {
    for (int b = a + 1; b < KILN_STATUS_CODE_COUNT; ++b) {
      KILN_EXPECT_STRNE(kiln_status_code_name((kiln_status_code_t)a),
                        kiln_status_code_name((kiln_status_code_t)b));
    }
  }
  KILN_EXPECT_STREQ(kiln_status_code_name((kiln_status_code_t)999),
                    "UNKNOWN_CODE");
}

KILN_TEST(StatusTest, ShimMatchesMessageSubstring) {
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INCOMPATIBLE, "version 9",
                             kiln_make_status(KILN_STATUS_INCOMPATIBLE,
                                              "module version 9 > reader 1"));
}
