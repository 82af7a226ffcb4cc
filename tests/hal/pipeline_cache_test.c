// Pipeline cache files: a round trip is accepted; corrupt, truncated,
// foreign and missing files are misses with a reason, never crashes, and
// pipelines still build.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln/base/file.h"
#include "test_device.h"

static void temp_path(char* out, size_t size, const char* name) {
  const char* dir = getenv("TMPDIR");
  snprintf(out, size, "%s/kiln_cache_%d_%s", dir && dir[0] ? dir : "/tmp",
           (int)getpid(), name);
}

static kiln_hal_pipeline_cache_stats_t open_with_cache(const char* path) {
  kiln_hal_device_options_t options;
  kiln_hal_device_options_init(&options);
  options.pipeline_cache_path = path;
  kiln_hal_device_t* device = kiln_test_device_create_with(&options);
  kiln_hal_executable_t* executable = kiln_test_scale_add_executable(device, 2);
  kiln_hal_pipeline_cache_stats_t stats;
  KILN_EXPECT_OK(kiln_hal_device_pipeline_cache_stats(device, &stats));
  KILN_EXPECT_EQ_U64(stats.pipelines_created, 1);
  kiln_hal_executable_release(executable);
  kiln_test_device_release(device);
  return stats;
}

KILN_TEST(PipelineCacheTest, RoundTripAndBadFiles) {
  char path[512];
  temp_path(path, sizeof(path), "cache.bin");
  unlink(path);
  kiln_hal_pipeline_cache_stats_t stats = open_with_cache(path);
  KILN_EXPECT_FALSE(stats.loaded);
  KILN_EXPECT_CONTAINS(stats.rejected_reason, "not readable");

  // Save, then reopen: accepted.
  kiln_hal_device_options_t options;
  kiln_hal_device_options_init(&options);
  kiln_hal_device_t* device = kiln_test_device_create_with(&options);
  kiln_hal_executable_t* executable = kiln_test_scale_add_executable(device, 2);
  KILN_ASSERT_OK(kiln_hal_device_pipeline_cache_save(device, path));
  kiln_hal_executable_release(executable);
  kiln_test_device_release(device);
  stats = open_with_cache(path);
  KILN_EXPECT_TRUE(stats.loaded);
  KILN_EXPECT_STREQ(stats.rejected_reason, "");

  kiln_file_contents_t good;
  KILN_ASSERT_OK(kiln_file_read_all(path, kiln_allocator_system(), &good));
  KILN_ASSERT_GT(good.size, 64);
  char bad_path[512];
  temp_path(bad_path, sizeof(bad_path), "bad.bin");

  // One flipped payload byte: the checksum catches it.
  good.data[good.size - 1] ^= 0x40;
  KILN_ASSERT_OK(kiln_file_write_all(bad_path, kiln_make_const_byte_span(good.data, good.size)));
  stats = open_with_cache(bad_path);
  KILN_EXPECT_FALSE(stats.loaded);
  KILN_EXPECT_CONTAINS(stats.rejected_reason, "checksum");
  good.data[good.size - 1] ^= 0x40;

  // Truncated.
  KILN_ASSERT_OK(kiln_file_write_all(bad_path, kiln_make_const_byte_span(good.data, good.size - 9)));
  stats = open_with_cache(bad_path);
  KILN_EXPECT_FALSE(stats.loaded);
  KILN_EXPECT_CONTAINS(stats.rejected_reason, "truncated");

  // Another device: the vendor id in the header differs.
  good.data[12] ^= 0xff;
  KILN_ASSERT_OK(kiln_file_write_all(bad_path, kiln_make_const_byte_span(good.data, good.size)));
  stats = open_with_cache(bad_path);
  KILN_EXPECT_FALSE(stats.loaded);
  KILN_EXPECT_CONTAINS(stats.rejected_reason, "another device");
  good.data[12] ^= 0xff;

  // Garbage and an empty file.
  uint8_t garbage[300];
  for (size_t i = 0; i < sizeof(garbage); ++i) garbage[i] = (uint8_t)(i * 37);
  KILN_ASSERT_OK(kiln_file_write_all(bad_path, kiln_make_const_byte_span(garbage, sizeof(garbage))));
  stats = open_with_cache(bad_path);
  KILN_EXPECT_FALSE(stats.loaded);
  KILN_EXPECT_CONTAINS(stats.rejected_reason, "bad magic");
  KILN_ASSERT_OK(kiln_file_write_all(bad_path, kiln_make_const_byte_span(garbage, 0)));
  stats = open_with_cache(bad_path);
  KILN_EXPECT_FALSE(stats.loaded);
  KILN_EXPECT_CONTAINS(stats.rejected_reason, "shorter than the header");

  kiln_file_contents_deinit(&good);
  unlink(path);
  unlink(bad_path);
}

// The cache file is untrusted too (issue 12).
enum { kKilnHeaderBytes = 52, kChecksumOffset = 44 };

static uint64_t test_fnv1a64(const uint8_t* data, size_t length) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < length; ++i) {
    hash ^= data[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

static void save_good_cache(const char* path) {
  kiln_hal_device_options_t options;
  kiln_hal_device_options_init(&options);
  kiln_hal_device_t* device = kiln_test_device_create_with(&options);
  kiln_hal_executable_t* executable = kiln_test_scale_add_executable(device, 2);
  KILN_EXPECT_OK(kiln_hal_device_pipeline_cache_save(device, path));
  kiln_hal_executable_release(executable);
  kiln_test_device_release(device);
}

KILN_TEST(PipelineCacheTest, VulkanHeaderLengthIsBoundedByKiln) {
  char path[512];
  temp_path(path, sizeof(path), "hdr.bin");
  unlink(path);
  save_good_cache(path);
  kiln_file_contents_t file;
  KILN_ASSERT_OK(kiln_file_read_all(path, kiln_allocator_system(), &file));
  KILN_ASSERT_GE(file.size, kKilnHeaderBytes + 32);  // lavapipe: no more
  // headerSize = 0xFFFFFFFF with a correct kiln checksum: only the bound
  // on the Vulkan header stops it before the driver.
  memset(file.data + kKilnHeaderBytes, 0xff, 4);
  uint64_t checksum = test_fnv1a64(file.data + kKilnHeaderBytes,
                                   file.size - kKilnHeaderBytes);
  for (int b = 0; b < 8; ++b) {
    file.data[kChecksumOffset + b] = (uint8_t)(checksum >> (8 * b));
  }
  KILN_ASSERT_OK(kiln_file_write_all(
      path, kiln_make_const_byte_span(file.data, file.size)));
  kiln_file_contents_deinit(&file);
  kiln_hal_pipeline_cache_stats_t stats = open_with_cache(path);
  KILN_EXPECT_FALSE(stats.loaded);
  KILN_EXPECT_CONTAINS(stats.rejected_reason, "Vulkan cache header");
  unlink(path);
}

KILN_TEST(PipelineCacheTest, SparseHugeFileIsRefusedBeforeReading) {
  char path[512];
  temp_path(path, sizeof(path), "sparse.bin");
  unlink(path);
  FILE* file = fopen(path, "wb");
  KILN_ASSERT_TRUE(file != NULL);
  KILN_ASSERT_EQ(ftruncate(fileno(file), (off_t)2 << 30), 0);  // 2 GiB, no disk
  fclose(file);
  kiln_hal_pipeline_cache_stats_t stats = open_with_cache(path);
  KILN_EXPECT_FALSE(stats.loaded);
  KILN_EXPECT_CONTAINS(stats.rejected_reason, "more than the limit");
  unlink(path);
}

KILN_TEST(PipelineCacheTest, FifoIsRefusedWithoutBlocking) {
  char path[512];
  temp_path(path, sizeof(path), "fifo.bin");
  unlink(path);
  KILN_ASSERT_EQ(mkfifo(path, 0600), 0);
  alarm(60);  // a regression hangs in open(): SIGALRM fails the test instead
  kiln_hal_pipeline_cache_stats_t stats = open_with_cache(path);
  alarm(0);
  KILN_EXPECT_FALSE(stats.loaded);
  KILN_EXPECT_CONTAINS(stats.rejected_reason, "FIFO");
  unlink(path);
}

KILN_TEST(PipelineCacheTest, SaveNeverFollowsASymlinkedTempFile) {
  char path[512], temp[600], victim[512];
  temp_path(path, sizeof(path), "link.bin");
  temp_path(victim, sizeof(victim), "victim.txt");
  snprintf(temp, sizeof(temp), "%s.tmp", path);
  unlink(path);
  unlink(temp);
  static const char kVictim[] = "precious";
  KILN_ASSERT_OK(kiln_file_write_all(
      victim, kiln_make_const_byte_span(kVictim, sizeof(kVictim) - 1)));
  KILN_ASSERT_EQ(symlink(victim, temp), 0);
  save_good_cache(path);
  kiln_file_contents_t contents;
  KILN_ASSERT_OK(kiln_file_read_all(victim, kiln_allocator_system(), &contents));
  KILN_EXPECT_EQ(contents.size, sizeof(kVictim) - 1);
  KILN_EXPECT_BYTES_EQ(contents.data, kVictim, sizeof(kVictim) - 1);
  kiln_file_contents_deinit(&contents);
  // The cache was still written (the stale link was removed, not followed).
  kiln_hal_pipeline_cache_stats_t stats = open_with_cache(path);
  KILN_EXPECT_TRUE(stats.loaded);
  unlink(path);
  unlink(temp);
  unlink(victim);
}
