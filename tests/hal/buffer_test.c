// Buffers: allocation in every memory type, mapping, host reads/writes
// (direct and staged), fill patterns, copies with offsets, updates. The
// reference is plain C memory filled the same way.
#include <stdlib.h>
#include <string.h>

#include "../../drivers/vulkan/vulkan_internal.h"
#include "test_device.h"

enum { kBytes = 4096 };

KILN_TEST(BufferTest, AllocatesEveryMemoryTypeAndRoundTrips) {
  kiln_hal_device_t* device = kiln_test_device_create();
  kiln_hal_memory_type_t types[] = {KILN_HAL_MEMORY_DEVICE_LOCAL,
                                    KILN_HAL_MEMORY_HOST_VISIBLE,
                                    KILN_HAL_MEMORY_STAGING};
  uint8_t expected[kBytes], actual[kBytes];
  for (size_t i = 0; i < kBytes; ++i) expected[i] = (uint8_t)(i * 7 + 3);
  for (size_t t = 0; t < 3; ++t) {
    kiln_hal_buffer_t* buffer = kiln_test_buffer(
        device, types[t], KILN_HAL_BUFFER_USAGE_DEFAULT, kBytes);
    KILN_EXPECT_EQ_U64(kiln_hal_buffer_size(buffer), kBytes);
    KILN_EXPECT_EQ(kiln_hal_buffer_memory_type(buffer), types[t]);
    KILN_EXPECT_OK(kiln_hal_device_write_buffer(device, buffer, 0, expected, kBytes));
    memset(actual, 0, sizeof(actual));
    KILN_EXPECT_OK(kiln_hal_device_read_buffer(device, buffer, 0, actual, kBytes));
    KILN_EXPECT_BYTES_EQ(actual, expected, kBytes);
    // A partial read at an offset.
    KILN_EXPECT_OK(kiln_hal_device_read_buffer(device, buffer, 100, actual, 10));
    KILN_EXPECT_BYTES_EQ(actual, expected + 100, 10);
    kiln_hal_buffer_release(buffer);
  }
  kiln_test_device_release(device);
}

KILN_TEST(BufferTest, MapsHostVisibleRangesWithBoundsChecks) {
  kiln_hal_device_t* device = kiln_test_device_create();
  kiln_hal_buffer_t* buffer = kiln_test_buffer(
      device, KILN_HAL_MEMORY_HOST_VISIBLE,
      KILN_HAL_BUFFER_USAGE_DEFAULT | KILN_HAL_BUFFER_USAGE_MAPPING, kBytes);
  void* data = NULL;
  KILN_ASSERT_OK(kiln_hal_buffer_map_range(buffer, 256, 512, &data));
  memset(data, 0xab, 512);
  KILN_EXPECT_OK(kiln_hal_buffer_unmap_range(buffer, 256, 512));
  uint8_t actual[512];
  KILN_EXPECT_OK(kiln_hal_device_read_buffer(device, buffer, 256, actual, 512));
  for (int i = 0; i < 512; ++i) KILN_EXPECT_EQ(actual[i], 0xab);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE, "does not fit",
                             kiln_hal_buffer_map_range(buffer, 4000, 100, &data));
  KILN_EXPECT_TRUE(data == NULL);
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_hal_buffer_map_range(buffer, UINT64_MAX - 2, 8, &data));
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_hal_device_read_buffer(device, buffer, kBytes, actual, 1));
  KILN_ASSERT_OK(kiln_hal_buffer_map_range(buffer, 0, KILN_HAL_WHOLE_BUFFER, &data));
  kiln_hal_buffer_release(buffer);

  // No MAPPING usage: mapping is refused even where memory is mappable.
  kiln_hal_buffer_t* unmappable = kiln_test_buffer(
      device, KILN_HAL_MEMORY_HOST_VISIBLE, KILN_HAL_BUFFER_USAGE_DEFAULT, 64);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION, "MAPPING",
                             kiln_hal_buffer_map_range(unmappable, 0, 64, &data));
  kiln_hal_buffer_release(unmappable);
  kiln_test_device_release(device);
}

KILN_TEST(BufferTest, RefusesBadParameters) {
  kiln_hal_device_t* device = kiln_test_device_create();
  kiln_hal_buffer_t* buffer = (kiln_hal_buffer_t*)1;
  kiln_hal_buffer_params_t params = {KILN_HAL_MEMORY_DEVICE_LOCAL,
                                     KILN_HAL_BUFFER_USAGE_DEFAULT, 0};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "size is 0",
                             kiln_hal_buffer_allocate(device, &params, &buffer));
  KILN_EXPECT_TRUE(buffer == NULL);
  params.size = 16;
  params.usage = KILN_HAL_BUFFER_USAGE_MAPPING;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "not device-local",
                             kiln_hal_buffer_allocate(device, &params, &buffer));
  params.usage = 0x100;
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_hal_buffer_allocate(device, &params, &buffer));
  params.usage = KILN_HAL_BUFFER_USAGE_DEFAULT;
  params.size = 1ull << 62;  // far beyond any heap
  KILN_EXPECT_STATUS(KILN_STATUS_RESOURCE_EXHAUSTED,
                     kiln_hal_buffer_allocate(device, &params, &buffer));
  kiln_test_device_release(device);
}

KILN_TEST(BufferTest, ManySmallBuffersShareMemoryBlocks) {
  kiln_hal_device_t* device = kiln_test_device_create();
  enum { kCount = 300 };
  kiln_hal_buffer_t* buffers[kCount];
  for (int i = 0; i < kCount; ++i) {
    buffers[i] = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                  KILN_HAL_BUFFER_USAGE_DEFAULT, 1000 + 16 * i);
    uint32_t tag = 0x1000u + (uint32_t)i;
    KILN_ASSERT_OK(kiln_hal_device_write_buffer(device, buffers[i], 0, &tag, 4));
  }
  // 300 buffers, a few VkDeviceMemory blocks: device-local plus the staging
  // buffer's (never one vkAllocateMemory per buffer).
  if (strcmp(kiln_hal_device_info(device)->driver, "vulkan") == 0) {
    KILN_EXPECT_LE(kiln_vk_device_cast(device)->memory.block_count, 2);
  }
  // Every buffer kept its own bytes: no two suballocations overlap.
  for (int i = 0; i < kCount; i += 2) kiln_hal_buffer_release(buffers[i]);
  for (int i = 1; i < kCount; i += 2) {
    uint32_t tag = 0;
    KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, buffers[i], 0, &tag, 4));
    KILN_EXPECT_EQ(tag, 0x1000u + (uint32_t)i);
    kiln_hal_buffer_release(buffers[i]);
  }
  kiln_test_device_release(device);
}

// A per-call large buffer (a model's big output) reuses the emptied block
// of the previous call instead of a vkAllocateMemory each time; a second
// emptied large block goes back to the driver, and a much smaller request
// does not take the kept one.
KILN_TEST(BufferTest, KeepsOneEmptiedLargeBlockForTheNextCall) {
  kiln_hal_device_t* device = kiln_test_device_create();
  if (strcmp(kiln_hal_device_info(device)->driver, "vulkan") != 0) {
    kiln_test_device_release(device);
    return;
  }
  kiln_vk_memory_t* memory = &kiln_vk_device_cast(device)->memory;
  const size_t large = memory->block_size * 3 / 4;
  kiln_hal_buffer_t* a = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                          KILN_HAL_BUFFER_USAGE_DEFAULT, large);
  // A first write: on a discrete GPU its staging buffer takes a block of
  // its own (host-visible memory), counted before the per-call blocks.
  uint32_t first = 0xabbu;
  KILN_ASSERT_OK(kiln_hal_device_write_buffer(device, a, 0, &first, 4));
  const uint64_t with_one = memory->block_count;
  kiln_hal_buffer_release(a);
  KILN_EXPECT_EQ(memory->block_count, with_one);  // kept
  for (int call = 0; call < 3; ++call) {
    a = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT,
                         large - 4096 * (size_t)call);
    KILN_EXPECT_EQ(memory->block_count, with_one);  // reused, no new block
    uint32_t tag = 0xabc0u + (uint32_t)call, back = 0;
    KILN_ASSERT_OK(kiln_hal_device_write_buffer(device, a, 0, &tag, 4));
    KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, a, 0, &back, 4));
    KILN_EXPECT_EQ(back, tag);
    kiln_hal_buffer_release(a);
  }
  // Two live large buffers, then both emptied: one block is kept.
  a = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT, large);
  kiln_hal_buffer_t* b = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                          KILN_HAL_BUFFER_USAGE_DEFAULT, large);
  KILN_EXPECT_EQ(memory->block_count, with_one + 1);
  kiln_hal_buffer_release(a);
  kiln_hal_buffer_release(b);
  KILN_EXPECT_EQ(memory->block_count, with_one);
  kiln_test_device_release(device);
}

KILN_TEST(BufferTest, FillsUpdatesAndCopiesWithOffsets) {
  kiln_hal_device_t* device = kiln_test_device_create();
  kiln_hal_buffer_t* a = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                          KILN_HAL_BUFFER_USAGE_DEFAULT, kBytes);
  kiln_hal_buffer_t* b = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                          KILN_HAL_BUFFER_USAGE_DEFAULT, kBytes);
  uint8_t reference_a[kBytes], reference_b[kBytes];
  memset(reference_a, 0, sizeof(reference_a));
  memset(reference_b, 0x55, sizeof(reference_b));
  uint8_t update[100 * 4];
  for (size_t i = 0; i < sizeof(update); ++i) update[i] = (uint8_t)(i ^ 0x5a);

  kiln_hal_command_buffer_t* cb = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  uint8_t zero = 0, byte = 0xc3;
  uint16_t half = 0xbeef;
  uint32_t word = 0x01234567;
  uint8_t b_pattern = 0x55;
  KILN_EXPECT_OK(kiln_hal_command_buffer_fill(cb, a, 0, kBytes, &zero, 1));
  KILN_EXPECT_OK(kiln_hal_command_buffer_fill(cb, b, 0, kBytes, &b_pattern, 1));
  KILN_EXPECT_OK(kiln_hal_command_buffer_barrier(cb, KILN_HAL_STAGE_TRANSFER,
                                                 KILN_HAL_STAGE_TRANSFER));
  KILN_EXPECT_OK(kiln_hal_command_buffer_fill(cb, a, 16, 64, &byte, 1));
  KILN_EXPECT_OK(kiln_hal_command_buffer_fill(cb, a, 128, 32, &half, 2));
  KILN_EXPECT_OK(kiln_hal_command_buffer_fill(cb, a, 256, 48, &word, 4));
  KILN_EXPECT_OK(kiln_hal_command_buffer_update(cb, update, a, 1024,
                                                sizeof(update)));
  KILN_EXPECT_OK(kiln_hal_command_buffer_barrier(cb, KILN_HAL_STAGE_TRANSFER,
                                                 KILN_HAL_STAGE_TRANSFER));
  KILN_EXPECT_OK(kiln_hal_command_buffer_copy(cb, a, 1000, b, 2004, 512));
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, NULL));

  memset(reference_a + 16, 0xc3, 64);
  for (int i = 0; i < 32; i += 2) memcpy(reference_a + 128 + i, &half, 2);
  for (int i = 0; i < 48; i += 4) memcpy(reference_a + 256 + i, &word, 4);
  memcpy(reference_a + 1024, update, sizeof(update));
  memcpy(reference_b + 2004, reference_a + 1000, 512);
  uint8_t actual[kBytes];
  KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, a, 0, actual, kBytes));
  KILN_EXPECT_BYTES_EQ(actual, reference_a, kBytes);
  KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, b, 0, actual, kBytes));
  KILN_EXPECT_BYTES_EQ(actual, reference_b, kBytes);
  kiln_hal_command_buffer_release(cb);
  kiln_hal_buffer_release(a);
  kiln_hal_buffer_release(b);
  kiln_test_device_release(device);
}

KILN_TEST(BufferTest, LargeUploadGoesThroughStagingInChunks) {
  kiln_hal_device_t* device = kiln_test_device_create();
  const size_t bytes = (20u << 20) + 12;  // more than one staging chunk
  kiln_hal_buffer_t* buffer = kiln_test_buffer(
      device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT, bytes);
  uint8_t* expected = malloc(bytes);
  uint8_t* actual = malloc(bytes);
  KILN_ASSERT_TRUE(expected && actual);
  for (size_t i = 0; i < bytes; ++i) expected[i] = (uint8_t)(i * 131 >> 3);
  KILN_EXPECT_OK(kiln_hal_device_write_buffer(device, buffer, 0, expected, bytes));
  KILN_EXPECT_OK(kiln_hal_device_read_buffer(device, buffer, 0, actual, bytes));
  KILN_EXPECT_TRUE(memcmp(actual, expected, bytes) == 0);
  free(expected);
  free(actual);
  kiln_hal_buffer_release(buffer);
  kiln_test_device_release(device);
}

KILN_TEST(BufferTest, BufferViewsDescribeDenseTensors) {
  kiln_hal_device_t* device = kiln_test_device_create();
  kiln_hal_buffer_t* buffer = kiln_test_buffer(
      device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT, 1024);
  int64_t shape[] = {2, 3, 4};
  kiln_hal_buffer_view_t* view = NULL;
  KILN_ASSERT_OK(kiln_hal_buffer_view_create(buffer, 64, KILN_HAL_ELEMENT_F32,
                                             3, shape, kiln_allocator_system(),
                                             &view));
  KILN_EXPECT_EQ(kiln_hal_buffer_view_element_count(view), 24);
  KILN_EXPECT_EQ(kiln_hal_buffer_view_byte_length(view), 96);
  KILN_EXPECT_EQ(kiln_hal_buffer_view_dim(view, 2), 4);
  KILN_EXPECT_EQ(kiln_hal_buffer_view_rank(view), 3);
  KILN_EXPECT_TRUE(kiln_hal_buffer_view_buffer(view) == buffer);
  // The view retains the buffer.
  kiln_hal_buffer_release(buffer);
  KILN_EXPECT_EQ_U64(kiln_hal_buffer_size(kiln_hal_buffer_view_buffer(view)), 1024);
  kiln_hal_buffer_view_release(view);

  buffer = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                            KILN_HAL_BUFFER_USAGE_DEFAULT, 1024);
  int64_t too_big[] = {1024};
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_OUT_OF_RANGE, "a f64 tensor of 1024 elements",
      kiln_hal_buffer_view_create(buffer, 0, KILN_HAL_ELEMENT_F64, 1, too_big,
                                  kiln_allocator_system(), &view));
  int64_t negative[] = {2, -1};
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "dimension 1 is negative",
      kiln_hal_buffer_view_create(buffer, 0, KILN_HAL_ELEMENT_I8, 2, negative,
                                  kiln_allocator_system(), &view));
  int64_t overflow[] = {INT64_MAX, INT64_MAX};
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_OUT_OF_RANGE, "overflows",
      kiln_hal_buffer_view_create(buffer, 0, KILN_HAL_ELEMENT_U8, 2, overflow,
                                  kiln_allocator_system(), &view));
  KILN_EXPECT_TRUE(view == NULL);
  kiln_hal_buffer_release(buffer);

  size_t sizes[] = {2, 2, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8, 1};
  for (int t = 0; t < KILN_HAL_ELEMENT_TYPE_COUNT; ++t) {
    KILN_EXPECT_EQ(kiln_hal_element_type_size((kiln_hal_element_type_t)t), sizes[t]);
    kiln_hal_element_type_t parsed;
    KILN_EXPECT_OK(kiln_hal_element_type_parse(
        kiln_make_cstring_view(kiln_hal_element_type_name((kiln_hal_element_type_t)t)),
        &parsed));
    KILN_EXPECT_EQ(parsed, t);
  }
  kiln_hal_element_type_t parsed;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "'f8'",
                             kiln_hal_element_type_parse(kiln_make_cstring_view("f8"),
                                                         &parsed));
  kiln_test_device_release(device);
}
