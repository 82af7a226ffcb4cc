#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kiln/base/file.h"
#include "kiln_test.h"

static void kiln_temp_path(char* path, size_t size, const char* name) {
  snprintf(path, size, "/tmp/kiln_file_test_%d_%s", (int)getpid(), name);
}

KILN_TEST(FileTest, WriteReadAndMapRoundTrip) {
  char path[256];
  kiln_temp_path(path, sizeof(path), "roundtrip");
  const char text[] = "kiln module bytes";
  KILN_ASSERT_OK(kiln_file_write_all(
      path, kiln_make_const_byte_span(text, sizeof(text) - 1)));
  kiln_file_contents_t contents;
  KILN_ASSERT_OK(kiln_file_read_all(path, kiln_allocator_system(), &contents));
  KILN_EXPECT_EQ(contents.size, sizeof(text) - 1);
  KILN_EXPECT_BYTES_EQ(contents.data, text, sizeof(text) - 1);
  KILN_EXPECT_EQ(contents.data[contents.size], 0);  // terminated
  kiln_file_contents_deinit(&contents);
  kiln_file_mapping_t mapping;
  KILN_ASSERT_OK(kiln_file_map(path, &mapping));
  KILN_EXPECT_EQ(mapping.size, sizeof(text) - 1);
  KILN_EXPECT_BYTES_EQ(mapping.data, text, sizeof(text) - 1);
  kiln_file_unmap(&mapping);
  unlink(path);
}

KILN_TEST(FileTest, EmptyFile) {
  char path[256];
  kiln_temp_path(path, sizeof(path), "empty");
  KILN_ASSERT_OK(kiln_file_write_all(path, kiln_make_const_byte_span(NULL, 0)));
  kiln_file_mapping_t mapping;
  KILN_ASSERT_OK(kiln_file_map(path, &mapping));
  KILN_EXPECT_EQ(mapping.size, 0);
  kiln_file_unmap(&mapping);
  kiln_file_contents_t contents;
  KILN_ASSERT_OK(kiln_file_read_all(path, kiln_allocator_system(), &contents));
  KILN_EXPECT_EQ(contents.size, 0);
  kiln_file_contents_deinit(&contents);
  unlink(path);
}

KILN_TEST(FileTest, MissingFileNamesThePath) {
  kiln_file_mapping_t mapping;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_NOT_FOUND, "'/nonexistent/x.kiln'",
                             kiln_file_map("/nonexistent/x.kiln", &mapping));
  kiln_file_contents_t contents;
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_NOT_FOUND, "No such file",
      kiln_file_read_all("/nonexistent/y", kiln_allocator_system(), &contents));
  KILN_EXPECT_TRUE(contents.data == NULL);
}

KILN_TEST(FileTest, DirectoryIsRefused) {
  kiln_file_mapping_t mapping;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "not a regular file", kiln_file_map("/tmp", &mapping));
}
