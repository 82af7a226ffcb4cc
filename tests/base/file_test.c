#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
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

// Untrusted paths (issue 12): none of these may block, read a huge file or
// write through a symlink.
KILN_TEST(FileTest, FifoIsRefusedWithoutBlocking) {
  char path[256];
  kiln_temp_path(path, sizeof(path), "fifo");
  unlink(path);
  KILN_ASSERT_EQ(mkfifo(path, 0600), 0);
  alarm(60);  // a regression blocks in open(): SIGALRM fails the test
  kiln_file_contents_t contents;
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "is not a regular file (a FIFO)",
      kiln_file_read_all(path, kiln_allocator_system(), &contents));
  kiln_file_mapping_t mapping;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "FIFO",
                             kiln_file_map(path, &mapping));
  int fd = -1;
  uint64_t size = 0;
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_file_open_regular(path, &fd, &size));
  KILN_EXPECT_EQ(fd, -1);
  alarm(0);
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "(a device)",
      kiln_file_read_all("/dev/null", kiln_allocator_system(), &contents));
  unlink(path);
}

KILN_TEST(FileTest, SizeLimitIsCheckedBeforeReading) {
  char path[256];
  kiln_temp_path(path, sizeof(path), "sparse");
  FILE* file = fopen(path, "wb");
  KILN_ASSERT_TRUE(file != NULL);
  KILN_ASSERT_EQ(ftruncate(fileno(file), (off_t)2 << 30), 0);  // sparse 2 GiB
  fclose(file);
  kiln_counting_allocator_t counting;
  kiln_counting_allocator_init(&counting, kiln_allocator_system(), SIZE_MAX);
  kiln_file_contents_t contents;
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_OUT_OF_RANGE, "holds 2147483648 bytes, more than the limit of 4096",
      kiln_file_read_all_limited(path, 4096, kiln_counting_allocator(&counting),
                                 &contents));
  KILN_EXPECT_EQ(counting.total_allocations, 0);  // refused before allocating
  unlink(path);
  const char text[] = "small";
  KILN_ASSERT_OK(kiln_file_write_all(path, kiln_make_const_byte_span(text, 5)));
  KILN_ASSERT_OK(kiln_file_read_all_limited(path, 5, kiln_allocator_system(),
                                            &contents));
  KILN_EXPECT_EQ(contents.size, 5);
  kiln_file_contents_deinit(&contents);
  unlink(path);
}

KILN_TEST(FileTest, WriteNewNeverFollowsSymlinks) {
  char path[256], victim[256];
  kiln_temp_path(path, sizeof(path), "new");
  kiln_temp_path(victim, sizeof(victim), "victim");
  unlink(path);
  const char text[] = "precious";
  KILN_ASSERT_OK(kiln_file_write_all(victim, kiln_make_const_byte_span(text, 8)));
  KILN_ASSERT_EQ(symlink(victim, path), 0);
  KILN_EXPECT_STATUS(KILN_STATUS_ALREADY_EXISTS,
                     kiln_file_write_new(path, kiln_make_const_byte_span("x", 1)));
  kiln_file_contents_t contents;
  KILN_ASSERT_OK(kiln_file_read_all(victim, kiln_allocator_system(), &contents));
  KILN_EXPECT_EQ(contents.size, 8);  // untouched
  kiln_file_contents_deinit(&contents);
  unlink(path);
  KILN_ASSERT_OK(kiln_file_write_new(path, kiln_make_const_byte_span("x", 1)));
  KILN_EXPECT_STATUS(KILN_STATUS_ALREADY_EXISTS,
                     kiln_file_write_new(path, kiln_make_const_byte_span("y", 1)));
  unlink(path);
  unlink(victim);
}

KILN_TEST(FileTest, ResolveInsideFollowsLinksThenChecks) {
  char root[256], outside[256], path[512], resolved[4096], command[1024];
  kiln_temp_path(root, sizeof(root), "root");
  kiln_temp_path(outside, sizeof(outside), "outside");
  snprintf(command, sizeof(command),
           "rm -rf %s %s && mkdir -p %s/d %s && echo a > %s/d/f && echo b > %s/f && "
           "ln -s %s/f %s/escape && ln -s %s %s/linked && ln -s d/f %s/ok",
           root, outside, root, outside, root, outside, outside, root, outside,
           root, root);
  KILN_ASSERT_EQ(system(command), 0);
  snprintf(path, sizeof(path), "%s/ok", root);
  KILN_ASSERT_OK(kiln_file_resolve_inside(root, path, resolved, sizeof(resolved)));
  KILN_EXPECT_CONTAINS(resolved, "/d/f");
  snprintf(path, sizeof(path), "%s/escape", root);
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_PERMISSION_DENIED, "outside",
      kiln_file_resolve_inside(root, path, resolved, sizeof(resolved)));
  snprintf(path, sizeof(path), "%s/linked/f", root);
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_PERMISSION_DENIED, "outside",
      kiln_file_resolve_inside(root, path, resolved, sizeof(resolved)));
  // A sibling whose name starts with the root's is still outside.
  snprintf(path, sizeof(path), "%s_x", root);
  snprintf(command, sizeof(command), "touch %s", path);
  KILN_ASSERT_EQ(system(command), 0);
  KILN_EXPECT_STATUS(KILN_STATUS_PERMISSION_DENIED,
                     kiln_file_resolve_inside(root, path, resolved, sizeof(resolved)));
  unlink(path);
  snprintf(command, sizeof(command), "rm -rf %s %s", root, outside);
  KILN_EXPECT_EQ(system(command), 0);
}
