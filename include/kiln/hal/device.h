// A HAL device: what it reports about itself, options at creation, queue
// submission and the validation-message counters tests assert on.
#ifndef KILN_HAL_DEVICE_H_
#define KILN_HAL_DEVICE_H_

#include "kiln/hal/target_triple.h"
#include "kiln/hal/types.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  KILN_HAL_MAX_MEMORY_HEAPS = 16,
  KILN_HAL_MAX_COOPERATIVE_MATRIX_SHAPES = 32,
};

typedef struct kiln_hal_memory_heap_t {
  uint64_t size;
  bool device_local;
} kiln_hal_memory_heap_t;

// One supported cooperative-matrix shape: MxNxK, A/B type -> C/result type.
typedef struct kiln_hal_cooperative_matrix_shape_t {
  uint32_t m, n, k;
  kiln_hal_element_type_t a_type;
  kiln_hal_element_type_t c_type;
  // Reported by VK_NV_cooperative_matrix (the route kiln's gemm_coopmat
  // takes: SPV_NV_cooperative_matrix) rather than VK_KHR_cooperative_matrix.
  bool nv;
} kiln_hal_cooperative_matrix_shape_t;

typedef struct kiln_hal_device_info_t {
  char driver[16];          // HAL driver name: "vulkan"
  char path[64];            // what follows "driver://": the ordinal
  char name[256];           // as the device reports it
  char driver_name[256];    // e.g. "llvmpipe", "NVIDIA"
  char driver_info[256];    // e.g. "Mesa 22.3.6 (LLVM 15.0.6)"
  uint32_t driver_version;  // vendor-encoded
  uint32_t driver_id;       // VkDriverId
  uint32_t vendor_id;
  uint32_t device_id;
  uint8_t uuid[16];
  char uuid_text[40];       // 8-4-4-4-12 hex
  uint32_t api_major, api_minor, api_patch;
  kiln_target_triple_t triple;
  char triple_reason[512];  // why the triple was derived as it was
  // How the driver does what it needs on this device (what it uses, and
  // the fallbacks where the device lacks something), for --dump_devices.
  char driver_mechanisms[256];
  kiln_target_features_t features;
  kiln_target_limits_t limits;  // limits.subgroup_size: the default size
  uint32_t min_subgroup_size, max_subgroup_size;
  uint32_t max_workgroup_count[3];
  uint32_t max_workgroup_size[3];
  uint64_t min_storage_buffer_offset_alignment;
  bool timestamps;          // per-dispatch GPU times are available
  double timestamp_period_ns;
  uint32_t cooperative_matrix_shape_count;
  kiln_hal_cooperative_matrix_shape_t
      cooperative_matrix_shapes[KILN_HAL_MAX_COOPERATIVE_MATRIX_SHAPES];
  uint32_t memory_heap_count;
  kiln_hal_memory_heap_t memory_heaps[KILN_HAL_MAX_MEMORY_HEAPS];
  bool validation_enabled;
  // robustBufferAccess is on: the device bounds storage/uniform buffer
  // accesses, so the HAL clamps only the other indices (docs/security.md).
  bool robust_buffer_access;
  // VK_NV_cooperative_matrix's cooperativeMatrixRobustBufferAccess is on:
  // cooperative-matrix loads/stores of buffers are bounded like the others.
  bool cooperative_matrix_robust_buffer_access;
} kiln_hal_device_info_t;

typedef struct kiln_hal_device_options_t {
  // Turns on VK_LAYER_KHRONOS_validation and a debug messenger. The
  // environment variable KILN_VULKAN_VALIDATION=1 turns it on as well.
  bool enable_validation;
  // Print each validation message to stderr as it arrives.
  bool print_validation_messages;
  // Where the pipeline cache is loaded from (a bad file is a miss).
  const char* pipeline_cache_path;
  // Every buffer's bytes are taken from this budget (retained by the
  // device); NULL: no limit beyond the per-allocation checks.
  struct kiln_memory_budget_t* memory_budget;
} kiln_hal_device_options_t;

void kiln_hal_device_options_init(kiln_hal_device_options_t* options);

void kiln_hal_device_retain(kiln_hal_device_t* device);
void kiln_hal_device_release(kiln_hal_device_t* device);

const kiln_hal_device_info_t* kiln_hal_device_info(
    const kiln_hal_device_t* device);
kiln_allocator_t kiln_hal_device_allocator(const kiln_hal_device_t* device);

// Validation messages (warnings and errors) seen since creation.
uint64_t kiln_hal_device_validation_message_count(
    const kiln_hal_device_t* device);
// The most recent one; "" when none. Valid until the next message.
const char* kiln_hal_device_last_validation_message(
    const kiln_hal_device_t* device);

// Binding table: the buffers that a reusable command buffer's slot bindings
// (kiln_hal_binding_t.buffer == NULL) refer to, supplied at submit time.
typedef struct kiln_hal_binding_table_entry_t {
  kiln_hal_buffer_t* buffer;
  uint64_t offset;
  uint64_t length;  // or KILN_HAL_WHOLE_BUFFER
} kiln_hal_binding_table_entry_t;

typedef struct kiln_hal_binding_table_t {
  const kiln_hal_binding_table_entry_t* entries;
  uint32_t count;
} kiln_hal_binding_table_t;

typedef struct kiln_hal_semaphore_value_t {
  kiln_hal_semaphore_t* semaphore;
  uint64_t value;
} kiln_hal_semaphore_value_t;

typedef struct kiln_hal_submit_batch_t {
  const kiln_hal_semaphore_value_t* waits;
  uint32_t wait_count;
  kiln_hal_command_buffer_t* const* command_buffers;
  // NULL, or one table per command buffer (an empty table where none).
  const kiln_hal_binding_table_t* binding_tables;
  uint32_t command_buffer_count;
  const kiln_hal_semaphore_value_t* signals;
  uint32_t signal_count;
  kiln_hal_fence_t* fence;  // optional; signalled when the batch completes
} kiln_hal_submit_batch_t;

// Submits one batch to the device's queue. Command buffers must be ended;
// slot bindings are resolved against their binding table here.
kiln_status_t kiln_hal_device_queue_submit(kiln_hal_device_t* device,
                                           const kiln_hal_submit_batch_t* batch);

// Waits until all submitted work is done; DEADLINE_EXCEEDED on timeout.
kiln_status_t kiln_hal_device_wait_idle(kiln_hal_device_t* device,
                                        int64_t timeout_ns);

// Copies host data into a buffer / a buffer into host memory, through
// staging when the buffer is not mappable. Blocks until done.
kiln_status_t kiln_hal_device_write_buffer(kiln_hal_device_t* device,
                                           kiln_hal_buffer_t* buffer,
                                           uint64_t offset, const void* data,
                                           uint64_t length);
kiln_status_t kiln_hal_device_read_buffer(kiln_hal_device_t* device,
                                          kiln_hal_buffer_t* buffer,
                                          uint64_t offset, void* data,
                                          uint64_t length);

// Bytes held in buffers allocated through kiln_hal_buffer_allocate: now and
// at the most (for --print_statistics).
typedef struct kiln_hal_memory_stats_t {
  uint64_t live_bytes;
  uint64_t peak_bytes;
} kiln_hal_memory_stats_t;
kiln_hal_memory_stats_t kiln_hal_device_memory_stats(
    const kiln_hal_device_t* device);

// Where the host time of submissions goes, summed since the device was made
// (for --print_statistics: the difference across one call splits its
// submit_and_wait). Nanoseconds.
typedef struct kiln_hal_submit_stats_t {
  uint64_t submissions;
  uint64_t prepare_ns;  // bringing command buffers up to date (binding
                        // tables, slot copies) before the driver's submit
  uint64_t queue_ns;    // in the driver's submit call (vkQueueSubmit)
  uint64_t fence_wait_ns;  // blocked in kiln_hal_fence_wait
} kiln_hal_submit_stats_t;
kiln_hal_submit_stats_t kiln_hal_device_submit_stats(
    const kiln_hal_device_t* device);

typedef struct kiln_hal_pipeline_cache_stats_t {
  bool loaded;             // a cache file was accepted at creation
  char rejected_reason[256];  // why a file was not used ("" if accepted/none)
  uint64_t pipelines_created;
} kiln_hal_pipeline_cache_stats_t;

kiln_status_t kiln_hal_device_pipeline_cache_stats(
    kiln_hal_device_t* device, kiln_hal_pipeline_cache_stats_t* out_stats);
// Writes the device's pipeline cache (with a header checked on load).
kiln_status_t kiln_hal_device_pipeline_cache_save(kiln_hal_device_t* device,
                                                  const char* path);

#ifdef __cplusplus
}
#endif

#endif  // KILN_HAL_DEVICE_H_
