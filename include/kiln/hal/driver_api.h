// What a driver implements: the base structs every HAL object starts with
// and their vtables. The public wrappers in hal/ check arguments (ranges,
// usage, states, layouts) before a vtable is called, so drivers may trust
// what they receive. Hosts do not need this header.
#ifndef KILN_HAL_DRIVER_API_H_
#define KILN_HAL_DRIVER_API_H_

#include "kiln/hal/buffer.h"
#include "kiln/hal/command_buffer.h"
#include "kiln/hal/device.h"
#include "kiln/hal/executable.h"
#include "kiln/hal/semaphore.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_hal_resource_t {
  uint32_t ref_count;  // atomic
  const void* vtable;
} kiln_hal_resource_t;

void kiln_hal_resource_init(kiln_hal_resource_t* resource, const void* vtable);
void kiln_hal_resource_retain(kiln_hal_resource_t* resource);
// True when this was the last reference (the caller destroys the object).
bool kiln_hal_resource_release(kiln_hal_resource_t* resource);

typedef struct kiln_hal_device_vtable_t {
  void (*destroy)(kiln_hal_device_t* device);
  kiln_status_t (*buffer_allocate)(kiln_hal_device_t* device,
                                   const kiln_hal_buffer_params_t* params,
                                   kiln_hal_buffer_t** out_buffer);
  kiln_status_t (*command_buffer_create)(kiln_hal_device_t* device,
                                         kiln_hal_command_buffer_flags_t flags,
                                         kiln_hal_command_buffer_t** out);
  // The variant has been selected and the spec verified.
  kiln_status_t (*executable_create)(kiln_hal_device_t* device,
                                     const kiln_hal_executable_spec_t* spec,
                                     uint32_t variant_index,
                                     kiln_target_match_t match,
                                     kiln_hal_executable_t** out);
  kiln_status_t (*semaphore_create)(kiln_hal_device_t* device,
                                    uint64_t initial_value,
                                    kiln_hal_semaphore_t** out);
  kiln_status_t (*fence_create)(kiln_hal_device_t* device,
                                kiln_hal_fence_t** out);
  kiln_status_t (*queue_submit)(kiln_hal_device_t* device,
                                const kiln_hal_submit_batch_t* batch);
  kiln_status_t (*wait_idle)(kiln_hal_device_t* device, int64_t timeout_ns);
  kiln_status_t (*write_buffer)(kiln_hal_device_t* device,
                                kiln_hal_buffer_t* buffer, uint64_t offset,
                                const void* data, uint64_t length);
  kiln_status_t (*read_buffer)(kiln_hal_device_t* device,
                               kiln_hal_buffer_t* buffer, uint64_t offset,
                               void* data, uint64_t length);
  kiln_status_t (*pipeline_cache_stats)(kiln_hal_device_t* device,
                                        kiln_hal_pipeline_cache_stats_t* out);
  kiln_status_t (*pipeline_cache_save)(kiln_hal_device_t* device,
                                       const char* path);
  // Optional: an existing buffer of exactly `params` (budget resolved) that
  // no one else holds any more, retained, or NULL; its bytes stay counted.
  kiln_hal_buffer_t* (*buffer_reuse)(kiln_hal_device_t* device,
                                     const kiln_hal_buffer_params_t* params);
} kiln_hal_device_vtable_t;

enum { KILN_HAL_VALIDATION_MESSAGE_CAPACITY = 2048 };
// Slot indices are bounded so binding tables stay small and checkable.
enum { KILN_HAL_MAX_BINDING_SLOTS = 4096 };

struct kiln_hal_device_t {
  kiln_hal_resource_t resource;
  kiln_allocator_t allocator;
  kiln_hal_device_info_t info;
  // Written by the driver's debug messenger.
  uint64_t validation_message_count;  // atomic
  char last_validation_message[KILN_HAL_VALIDATION_MESSAGE_CAPACITY];
  // Bytes in buffers made through kiln_hal_buffer_allocate (atomics).
  uint64_t live_buffer_bytes;
  uint64_t peak_buffer_bytes;
  // Host time of queue submissions (kiln_hal_submit_stats_t; atomics,
  // written by the driver and kiln_hal_fence_wait).
  kiln_hal_submit_stats_t submit_stats;
  // Set by kiln_hal_create_device from the options (retained); NULL: none.
  struct kiln_memory_budget_t* memory_budget;
};

typedef struct kiln_hal_buffer_vtable_t {
  void (*destroy)(kiln_hal_buffer_t* buffer);
} kiln_hal_buffer_vtable_t;

struct kiln_hal_buffer_t {
  kiln_hal_resource_t resource;
  kiln_hal_device_t* device;  // retained by every object made from it
  kiln_hal_buffer_params_t params;
  uint8_t* host_pointer;      // coherent mapping, NULL when not mappable
  // Set once after the initial upload (kiln_hal_buffer_make_immutable):
  // every later write path refuses it, so several sessions may share it.
  bool immutable;
};

typedef struct kiln_hal_command_buffer_vtable_t {
  void (*destroy)(kiln_hal_command_buffer_t* command_buffer);
  kiln_status_t (*begin)(kiln_hal_command_buffer_t* command_buffer);
  kiln_status_t (*end)(kiln_hal_command_buffer_t* command_buffer);
  // 4-byte pattern (already widened), aligned ranges.
  kiln_status_t (*fill)(kiln_hal_command_buffer_t* command_buffer,
                        kiln_hal_buffer_t* target, uint64_t offset,
                        uint64_t length, uint32_t pattern);
  kiln_status_t (*update)(kiln_hal_command_buffer_t* command_buffer,
                          const void* data, kiln_hal_buffer_t* target,
                          uint64_t offset, uint64_t length);
  kiln_status_t (*copy)(kiln_hal_command_buffer_t* command_buffer,
                        kiln_hal_buffer_t* source, uint64_t source_offset,
                        kiln_hal_buffer_t* target, uint64_t target_offset,
                        uint64_t length);
  kiln_status_t (*barrier)(kiln_hal_command_buffer_t* command_buffer,
                           kiln_hal_stages_t source, kiln_hal_stages_t target);
  // Bindings are complete and checked; buffer-bound lengths are resolved.
  kiln_status_t (*dispatch)(kiln_hal_command_buffer_t* command_buffer,
                            const kiln_hal_dispatch_t* dispatch);
  // dispatch_index == dispatch_count: the whole recording.
  kiln_status_t (*dispatch_time_ns)(kiln_hal_command_buffer_t* command_buffer,
                                    uint32_t dispatch_index, double* out_ns);
} kiln_hal_command_buffer_vtable_t;

typedef enum kiln_hal_command_buffer_state_e {
  KILN_HAL_COMMAND_BUFFER_STATE_INITIAL = 0,
  KILN_HAL_COMMAND_BUFFER_STATE_RECORDING,
  KILN_HAL_COMMAND_BUFFER_STATE_EXECUTABLE,
} kiln_hal_command_buffer_state_t;

struct kiln_hal_command_buffer_t {
  kiln_hal_resource_t resource;
  kiln_hal_device_t* device;
  kiln_hal_command_buffer_flags_t flags;
  kiln_hal_command_buffer_state_t state;
  uint32_t dispatch_count;
  uint32_t slot_count;
  // Slots some dispatch binds writable: submit refuses an immutable buffer
  // there.
  uint64_t written_slots[KILN_HAL_MAX_BINDING_SLOTS / 64];
};

typedef struct kiln_hal_executable_vtable_t {
  void (*destroy)(kiln_hal_executable_t* executable);
} kiln_hal_executable_vtable_t;

struct kiln_hal_executable_t {
  kiln_hal_resource_t resource;
  kiln_hal_device_t* device;
  uint32_t variant_index;
  kiln_target_match_t match;
  uint32_t entry_point_count;
  kiln_hal_entry_point_spec_t* entry_points;  // deep copy, one allocation
};

// Deep-copies the chosen variant's entry points into the base.
kiln_status_t kiln_hal_executable_base_init(
    kiln_hal_executable_t* base, const void* vtable, kiln_hal_device_t* device,
    const kiln_hal_executable_spec_t* spec, uint32_t variant_index,
    kiln_target_match_t match);
void kiln_hal_executable_base_deinit(kiln_hal_executable_t* base);

typedef struct kiln_hal_semaphore_vtable_t {
  void (*destroy)(kiln_hal_semaphore_t* semaphore);
  kiln_status_t (*query)(kiln_hal_semaphore_t* semaphore, uint64_t* out_value);
  kiln_status_t (*signal)(kiln_hal_semaphore_t* semaphore, uint64_t value);
  kiln_status_t (*wait)(kiln_hal_semaphore_t* semaphore, uint64_t value,
                        int64_t timeout_ns);
} kiln_hal_semaphore_vtable_t;

struct kiln_hal_semaphore_t {
  kiln_hal_resource_t resource;
  kiln_hal_device_t* device;
};

typedef struct kiln_hal_fence_vtable_t {
  void (*destroy)(kiln_hal_fence_t* fence);
  kiln_status_t (*wait)(kiln_hal_fence_t* fence, int64_t timeout_ns);
  kiln_status_t (*reset)(kiln_hal_fence_t* fence);
} kiln_hal_fence_vtable_t;

struct kiln_hal_fence_t {
  kiln_hal_resource_t resource;
  kiln_hal_device_t* device;
};

// Records a validation message on the device (thread-safe counter).
void kiln_hal_device_record_validation_message(kiln_hal_device_t* device,
                                               const char* message);

#ifdef __cplusplus
}
#endif

#endif  // KILN_HAL_DRIVER_API_H_
