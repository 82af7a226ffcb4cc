// The shared cache: device copies of rodata (weights) and built executables
// that every hal module given the cache reuses, whatever context or thread
// asks. Entries hold their key's owner (the bytecode module) so a key
// pointer cannot be reused by another module while the entry lives.
#include <pthread.h>
#include <string.h>

#include "kiln/base/memory_budget.h"
#include "kiln/hal/buffer.h"
#include "kiln/modules/hal_module.h"

typedef struct kiln_hal_shared_entry_t {
  kiln_vm_ref_object_t* owner;  // retained
  const void* key;              // rodata bytes or a format executable
  uint64_t length;              // rodata bytes; 0 for executables
  kiln_hal_buffer_t* buffer;    // a constant, or
  kiln_hal_executable_t* executable;
} kiln_hal_shared_entry_t;

struct kiln_hal_shared_cache_t {
  uint32_t references;  // atomic
  kiln_allocator_t allocator;
  kiln_hal_device_t* device;            // retained
  kiln_memory_budget_t* budget;         // retained; may be NULL
  // Guards the entries and the statistics; held while an entry is built,
  // so two threads asking for one entry build it once.
  pthread_mutex_t mutex;
  kiln_hal_shared_entry_t* entries;
  size_t count;
  size_t capacity;
  kiln_hal_shared_cache_stats_t stats;
};

kiln_status_t kiln_hal_shared_cache_create(
    kiln_hal_device_t* device, kiln_allocator_t allocator,
    struct kiln_memory_budget_t* budget, kiln_hal_shared_cache_t** out_cache) {
  *out_cache = NULL;
  kiln_hal_shared_cache_t* cache = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_calloc(allocator, sizeof(*cache), (void**)&cache));
  cache->references = 1;
  cache->allocator = allocator;
  cache->device = device;
  kiln_hal_device_retain(device);
  cache->budget = budget;
  kiln_memory_budget_retain(budget);
  pthread_mutex_init(&cache->mutex, NULL);
  *out_cache = cache;
  return kiln_ok_status();
}

void kiln_hal_shared_cache_retain(kiln_hal_shared_cache_t* cache) {
  if (cache) __atomic_fetch_add(&cache->references, 1, __ATOMIC_RELAXED);
}

void kiln_hal_shared_cache_release(kiln_hal_shared_cache_t* cache) {
  if (!cache ||
      __atomic_sub_fetch(&cache->references, 1, __ATOMIC_ACQ_REL) != 0) {
    return;
  }
  for (size_t i = 0; i < cache->count; ++i) {
    kiln_hal_buffer_release(cache->entries[i].buffer);
    kiln_hal_executable_release(cache->entries[i].executable);
    kiln_vm_ref_release(cache->entries[i].owner);
  }
  kiln_allocator_free(cache->allocator, cache->entries);
  pthread_mutex_destroy(&cache->mutex);
  kiln_hal_device_release(cache->device);
  kiln_memory_budget_release(cache->budget);  // after the buffers
  kiln_allocator_free(cache->allocator, cache);
}

kiln_hal_device_t* kiln_hal_shared_cache_device(
    const kiln_hal_shared_cache_t* cache) {
  return cache->device;
}

kiln_hal_shared_cache_stats_t kiln_hal_shared_cache_stats(
    kiln_hal_shared_cache_t* cache) {
  pthread_mutex_lock(&cache->mutex);
  kiln_hal_shared_cache_stats_t stats = cache->stats;
  pthread_mutex_unlock(&cache->mutex);
  return stats;
}

static kiln_hal_shared_entry_t* kiln_hal_shared_find(
    kiln_hal_shared_cache_t* cache, const void* key, uint64_t length,
    bool executable) {
  for (size_t i = 0; i < cache->count; ++i) {
    if (cache->entries[i].key == key && cache->entries[i].length == length &&
        (cache->entries[i].executable != NULL) == executable) {
      return &cache->entries[i];
    }
  }
  return NULL;
}

// Room for one more entry (mutex held).
static kiln_status_t kiln_hal_shared_reserve(kiln_hal_shared_cache_t* cache) {
  if (cache->count < cache->capacity) return kiln_ok_status();
  size_t capacity = cache->capacity ? 2 * cache->capacity : 8;
  KILN_RETURN_IF_ERROR(kiln_allocator_realloc_array(
      cache->allocator, capacity, sizeof(*cache->entries),
      (void**)&cache->entries));
  cache->capacity = capacity;
  return kiln_ok_status();
}

kiln_status_t kiln_hal_upload_constant(kiln_hal_device_t* device,
                                       struct kiln_memory_budget_t* budget,
                                       const void* data, uint64_t length,
                                       kiln_hal_buffer_t** out_buffer) {
  *out_buffer = NULL;
  // Rounded to 4 bytes (bindings and transfers work in words); the tail is
  // zero-filled by the allocation's own zero upload below.
  uint64_t size = length ? (length + 3) & ~(uint64_t)3 : 4;
  kiln_hal_buffer_params_t params = {
      .memory_type = KILN_HAL_MEMORY_DEVICE_LOCAL,
      .usage = KILN_HAL_BUFFER_USAGE_DEFAULT,
      .size = size,
      .memory_budget = budget,
  };
  kiln_hal_buffer_t* buffer = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_buffer_allocate(device, &params, &buffer));
  kiln_status_t status = kiln_ok_status();
  if (length) {
    status = kiln_hal_device_write_buffer(device, buffer, 0, data, length);
  }
  if (!status && size > length) {
    static const uint8_t kZeros[4] = {0, 0, 0, 0};
    status = kiln_hal_device_write_buffer(device, buffer, length, kZeros,
                                          size - length);
  }
  if (status) {
    kiln_hal_buffer_release(buffer);
    return status;
  }
  kiln_hal_buffer_make_immutable(buffer);
  *out_buffer = buffer;
  return kiln_ok_status();
}

kiln_status_t kiln_hal_shared_cache_constant(kiln_hal_shared_cache_t* cache,
                                             kiln_vm_ref_object_t* owner,
                                             const void* data, uint64_t length,
                                             kiln_hal_buffer_t** out_buffer) {
  *out_buffer = NULL;
  pthread_mutex_lock(&cache->mutex);
  kiln_hal_shared_entry_t* entry = kiln_hal_shared_find(cache, data, length, false);
  kiln_status_t status = kiln_ok_status();
  if (!entry) {
    kiln_hal_buffer_t* buffer = NULL;
    status = kiln_hal_shared_reserve(cache);
    if (!status) {
      status = kiln_hal_upload_constant(cache->device, cache->budget, data,
                                        length, &buffer);
    }
    if (!status) {
      entry = &cache->entries[cache->count++];
      memset(entry, 0, sizeof(*entry));
      entry->owner = owner;
      kiln_vm_ref_retain(owner);
      entry->key = data;
      entry->length = length;
      entry->buffer = buffer;
      cache->stats.constant_uploads++;
      cache->stats.constant_bytes += kiln_hal_buffer_size(buffer);
    }
  }
  if (entry) {
    kiln_hal_buffer_retain(entry->buffer);
    *out_buffer = entry->buffer;
  }
  pthread_mutex_unlock(&cache->mutex);
  return status;
}

kiln_status_t kiln_hal_shared_cache_executable(
    kiln_hal_shared_cache_t* cache, kiln_vm_ref_object_t* owner,
    const void* key, kiln_hal_shared_build_fn_t build, void* build_data,
    kiln_hal_executable_t** out_executable) {
  *out_executable = NULL;
  pthread_mutex_lock(&cache->mutex);
  kiln_hal_shared_entry_t* entry = kiln_hal_shared_find(cache, key, 0, true);
  kiln_status_t status = kiln_ok_status();
  if (!entry) {
    kiln_hal_executable_t* executable = NULL;
    status = kiln_hal_shared_reserve(cache);
    if (!status) status = build(build_data, cache->device, &executable);
    if (!status) {
      entry = &cache->entries[cache->count++];
      memset(entry, 0, sizeof(*entry));
      entry->owner = owner;
      kiln_vm_ref_retain(owner);
      entry->key = key;
      entry->executable = executable;
      cache->stats.executables_built++;
    }
  }
  if (entry) {
    kiln_hal_executable_retain(entry->executable);
    *out_executable = entry->executable;
  }
  pthread_mutex_unlock(&cache->mutex);
  return status;
}
