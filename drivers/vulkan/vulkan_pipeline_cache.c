// The pipeline cache file: kiln's own header (magic, version, vendor and
// device ids, the driver's cache UUID, payload size and checksum) in front of
// vkGetPipelineCacheData's bytes. A missing, corrupt, truncated or foreign
// file is a cache miss with a recorded reason, never handed to the driver.
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "kiln/base/byte_buffer.h"
#include "kiln/base/file.h"
#include "kiln/base/reader.h"
#include "vulkan_internal.h"

static const char kMagic[8] = {'K', 'I', 'L', 'N', 'P', 'C', 'H', '1'};
enum {
  kHeaderVersion = 1,
  kHeaderBytes = 8 + 4 + 4 + 4 + VK_UUID_SIZE + 8 + 8,
  // Real caches are a few MB; the file's size is checked before reading.
  kMaxPayloadBytes = 256u << 20,
  kVulkanHeaderBytes = 16 + VK_UUID_SIZE,
};

static uint64_t fnv1a64(const uint8_t* data, size_t length) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < length; ++i) {
    hash ^= data[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

static uint32_t read_le32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
         ((uint32_t)p[3] << 24);
}

static uint64_t read_le64(const uint8_t* p) {
  return (uint64_t)read_le32(p) | ((uint64_t)read_le32(p + 4) << 32);
}

// Returns NULL when the bytes are a cache for this device, else the reason.
static const char* check_file(const kiln_vk_device_t* device,
                              const uint8_t* data, size_t size,
                              size_t* out_payload_offset,
                              size_t* out_payload_size) {
  const kiln_hal_device_info_t* info = &device->base.info;
  if (size < kHeaderBytes) return "file is shorter than the header";
  if (memcmp(data, kMagic, sizeof(kMagic)) != 0) return "bad magic";
  if (read_le32(data + 8) != kHeaderVersion) return "unknown header version";
  if (read_le32(data + 12) != info->vendor_id ||
      read_le32(data + 16) != info->device_id) {
    return "written for another device (vendor/device id)";
  }
  if (memcmp(data + 20, device->support.pipeline_cache_uuid, VK_UUID_SIZE)) {
    return "written by another driver version (cache UUID)";
  }
  uint64_t payload_size = read_le64(data + 20 + VK_UUID_SIZE);
  uint64_t checksum = read_le64(data + 28 + VK_UUID_SIZE);
  if (payload_size > kMaxPayloadBytes || payload_size != size - kHeaderBytes) {
    return "payload size does not match the file (truncated?)";
  }
  const uint8_t* payload = data + kHeaderBytes;
  if (fnv1a64(payload, (size_t)payload_size) != checksum) {
    return "checksum mismatch (corrupt)";
  }
  // The driver's own header, checked too before the driver sees it.
  // The header length is bounded both ways: drivers trust it (0xFFFFFFFF
  // would send them reading past the data).
  if (payload_size < kVulkanHeaderBytes ||
      read_le32(payload) < kVulkanHeaderBytes ||
      read_le32(payload) > payload_size ||
      read_le32(payload + 4) != VK_PIPELINE_CACHE_HEADER_VERSION_ONE ||
      read_le32(payload + 8) != info->vendor_id ||
      read_le32(payload + 12) != info->device_id ||
      memcmp(payload + 16, device->support.pipeline_cache_uuid, VK_UUID_SIZE)) {
    return "the Vulkan cache header does not match the device";
  }
  *out_payload_offset = kHeaderBytes;
  *out_payload_size = (size_t)payload_size;
  return NULL;
}

kiln_status_t kiln_vk_pipeline_cache_create(kiln_vk_device_t* device,
                                            const char* path) {
  kiln_hal_pipeline_cache_stats_t* stats = &device->cache_stats;
  kiln_file_contents_t contents = {0};
  const void* initial = NULL;
  size_t initial_size = 0;
  if (path && path[0]) {
    kiln_status_t status = kiln_file_read_all_limited(
        path, kHeaderBytes + kMaxPayloadBytes, device->base.allocator,
        &contents);
    if (status) {
      char reason[160];
      kiln_status_format(status, reason, sizeof(reason));
      snprintf(stats->rejected_reason, sizeof(stats->rejected_reason),
               "'%s': not readable (%s)", path, reason);
      kiln_status_free(status);
    } else {
      size_t offset = 0, size = 0;
      const char* reason =
          check_file(device, contents.data, contents.size, &offset, &size);
      if (reason) {
        snprintf(stats->rejected_reason, sizeof(stats->rejected_reason),
                 "'%s': %s", path, reason);
      } else {
        initial = contents.data + offset;
        initial_size = size;
      }
    }
  }
  VkPipelineCacheCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
      .initialDataSize = initial_size,
      .pInitialData = initial,
  };
  VkResult result = device->vk.vkCreatePipelineCache(
      device->device, &info, NULL, &device->pipeline_cache);
  if (result != VK_SUCCESS && initial) {
    // The driver refused data that passed our checks: still only a miss.
    snprintf(stats->rejected_reason, sizeof(stats->rejected_reason),
             "'%s': the driver refused the data (%s)", path,
             kiln_vk_result_name(result));
    info.initialDataSize = 0;
    info.pInitialData = NULL;
    initial = NULL;
    result = device->vk.vkCreatePipelineCache(device->device, &info, NULL,
                                              &device->pipeline_cache);
  }
  stats->loaded = initial != NULL && result == VK_SUCCESS;
  kiln_file_contents_deinit(&contents);
  return kiln_vk_result_status(result, "vkCreatePipelineCache");
}

kiln_status_t kiln_vk_pipeline_cache_save(kiln_hal_device_t* base,
                                          const char* path) {
  kiln_vk_device_t* device = kiln_vk_device_cast(base);
  size_t size = 0;
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(
      device->vk.vkGetPipelineCacheData(device->device, device->pipeline_cache,
                                        &size, NULL),
      "vkGetPipelineCacheData"));
  kiln_byte_buffer_t file;
  kiln_byte_buffer_init(&file, base->allocator);
  kiln_status_t status = kiln_byte_buffer_reserve(&file, kHeaderBytes + size);
  if (!status) status = kiln_byte_buffer_append_zeros(&file, kHeaderBytes + size);
  if (!status) {
    uint8_t* payload = file.data + kHeaderBytes;
    VkResult result = device->vk.vkGetPipelineCacheData(
        device->device, device->pipeline_cache, &size, payload);
    status = kiln_vk_result_status(result, "vkGetPipelineCacheData");
    file.size = kHeaderBytes + size;
  }
  if (!status) {
    uint8_t* header = file.data;
    const kiln_hal_device_info_t* info = &base->info;
    uint64_t checksum = fnv1a64(file.data + kHeaderBytes, size);
    memcpy(header, kMagic, 8);
    uint32_t words[3] = {kHeaderVersion, info->vendor_id, info->device_id};
    for (int i = 0; i < 3; ++i) {
      for (int b = 0; b < 4; ++b) header[8 + 4 * i + b] = (uint8_t)(words[i] >> (8 * b));
    }
    memcpy(header + 20, device->support.pipeline_cache_uuid, VK_UUID_SIZE);
    for (int b = 0; b < 8; ++b) {
      header[20 + VK_UUID_SIZE + b] = (uint8_t)((uint64_t)size >> (8 * b));
      header[28 + VK_UUID_SIZE + b] = (uint8_t)(checksum >> (8 * b));
    }
    // Write beside the target, then rename: readers never see half a file.
    char temp_path[4096];
    int n = snprintf(temp_path, sizeof(temp_path), "%s.tmp", path);
    if (n < 0 || (size_t)n >= sizeof(temp_path)) {
      status = kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "pipeline cache path is too long");
    } else {
      // Created exclusively: a symlink planted at FILE.tmp is never
      // followed. A stale FILE.tmp (a crash mid-save) is removed once;
      // unlink removes a symlink itself, not its target.
      status = kiln_file_write_new(temp_path, kiln_byte_buffer_span(&file));
      if (kiln_status_code(status) == KILN_STATUS_ALREADY_EXISTS &&
          unlink(temp_path) == 0) {
        kiln_status_free(status);
        status = kiln_file_write_new(temp_path, kiln_byte_buffer_span(&file));
      }
      if (!status && rename(temp_path, path) != 0) {
        status = kiln_make_status(KILN_STATUS_UNAVAILABLE,
                                  "cannot rename '%s' to '%s'", temp_path,
                                  path);
      }
    }
  }
  kiln_byte_buffer_deinit(&file);
  return status;
}
