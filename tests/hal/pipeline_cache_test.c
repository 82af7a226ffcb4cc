// Pipeline cache files: a round trip is accepted; corrupt, truncated,
// foreign and missing files are misses with a reason, never crashes, and
// pipelines still build.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
