// The Vulkan driver's private structs. Device functions are called through a
// per-device volk table (never the process-wide pointers), so devices with
// and without the validation layer can coexist.
#ifndef KILN_DRIVERS_VULKAN_VULKAN_INTERNAL_H_
#define KILN_DRIVERS_VULKAN_VULKAN_INTERNAL_H_

#include <pthread.h>
#include <volk.h>

#include "kiln/base/size_math.h"
#include "kiln/base/time.h"
#include "kiln/hal/driver_api.h"
#include "vulkan_cooperative_matrix.h"

// ---- loader and instance (vulkan_instance.c) ----

// Loads the Vulkan loader once; UNAVAILABLE with the reason when missing.
kiln_status_t kiln_vk_loader_initialize(void);
kiln_status_t kiln_vk_result_status(VkResult result, const char* what);
const char* kiln_vk_result_name(VkResult result);

typedef struct kiln_vk_instance_t {
  VkInstance instance;
  VkDebugUtilsMessengerEXT messenger;
  // Per instance, not volk's globals (see vulkan_instance.c).
  PFN_vkCreateDebugUtilsMessengerEXT create_messenger;
  PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger;
  bool validation;
  uint32_t validation_layer_version;  // the layer's specVersion, 0 if off
} kiln_vk_instance_t;

// Creates an instance; with `validation` the Khronos layer and a messenger
// that reports into `device` (may be NULL while enumerating).
struct kiln_vk_device_t;
// `api_cap` (0: none) is the apiVersion the instance asks for.
kiln_status_t kiln_vk_instance_create(bool validation,
                                      struct kiln_vk_device_t* device,
                                      uint32_t api_cap,
                                      kiln_vk_instance_t* out_instance);
void kiln_vk_instance_destroy(kiln_vk_instance_t* instance);

// True when KILN_VULKAN_VALIDATION asks for the layer.
bool kiln_vk_validation_from_environment(void);

// ---- device URI options and the API-version cap (vulkan_uri_options.c) ----

// KILN_VULKAN_API_VERSION as a VK_MAKE_API_VERSION value (0: no cap).
kiln_status_t kiln_vk_api_cap_from_environment(uint32_t* out_cap);
// How fence and submit-timeline waits wait (vulkan_wait.c).
typedef enum kiln_vk_wait_mode_e {
  KILN_VK_WAIT_AUTO = 0,  // GPUs: spin up to KILN_VK_AUTO_SPIN_NS, then block; CPU devices: block
  KILN_VK_WAIT_BLOCK,     // the driver's blocking wait
  KILN_VK_WAIT_POLL,      // spin on the status until done or the timeout
} kiln_vk_wait_mode_t;
typedef struct kiln_vk_uri_options_t {
  uint32_t api_cap;  // the environment's, lowered by "api="
  bool pose;         // "triple=": select variants as this target
  kiln_target_triple_t pose_triple;
  kiln_vk_wait_mode_t wait;  // "wait=auto|block|poll"
} kiln_vk_uri_options_t;
// Parses and removes "?opt=value&..." from the device path.
kiln_status_t kiln_vk_uri_options_parse(kiln_string_view_t* inout_path,
                                        kiln_vk_uri_options_t* out_options);

// ---- physical device facts (vulkan_device_info.c) ----

typedef struct kiln_vk_device_support_t {
  uint32_t api_version;  // the device's, lowered to the cap
  uint32_t api_cap;      // 0: none; else only this version's core is used
  bool cpu_device;       // VK_PHYSICAL_DEVICE_TYPE_CPU (lavapipe, SwiftShader)
  bool push_descriptors;
  bool timeline_semaphore;
  bool timeline_is_khr;  // 1.1 device: use the KHR entry points
  bool subgroup_size_control;
  bool cooperative_matrix;  // VK_KHR_cooperative_matrix (reported, enabled)
  // VK_NV_cooperative_matrix with what gemm_coopmat needs (16x16x16 f16 ->
  // f32 subgroup shape, shaderFloat16, vulkanMemoryModel): enabled, and
  // what KILN_TARGET_FEATURE_COOPERATIVE_MATRIX means.
  bool cooperative_matrix_nv;
  bool cooperative_matrix_nv_robust;  // cooperativeMatrixRobustBufferAccess
  bool portability_subset;
  bool driver_properties;
  // VK_EXT_robustness2 (untrusted kernels): bounds-checked to the exact
  // descriptor range rather than the whole buffer.
  bool robustness2;
  bool robust_buffer_access2;
  bool robust_image_access2;
  // VK_KHR_pipeline_executable_properties with pipelineExecutableInfo:
  // enabled only when KILN_VULKAN_PIPELINE_STATS asks (vulkan_pipeline_stats.c).
  bool pipeline_statistics;
  uint32_t queue_family;
  uint32_t timestamp_valid_bits;
  // Uniform texel buffer views (texel bindings).
  uint64_t min_texel_buffer_offset_alignment;
  uint32_t max_texel_buffer_elements;
  uint8_t pipeline_cache_uuid[VK_UUID_SIZE];
  VkPhysicalDeviceFeatures core_features;
  VkPhysicalDeviceVulkan11Features v11;  // filled for any API version
  VkPhysicalDeviceVulkan12Features v12;
  VkPhysicalDeviceVulkan13Features v13;
  VkPhysicalDeviceMemoryProperties memory;
} kiln_vk_device_support_t;

kiln_status_t kiln_vk_query_device(VkInstance instance,
                                   VkPhysicalDevice physical_device,
                                   uint32_t ordinal, uint32_t api_cap,
                                   kiln_hal_device_info_t* out_info,
                                   kiln_vk_device_support_t* out_support);

// ---- memory (vulkan_memory.c) ----

typedef struct kiln_vk_block_t kiln_vk_block_t;

typedef struct kiln_vk_allocation_t {
  kiln_vk_block_t* block;
  VkDeviceMemory memory;
  VkDeviceSize offset;
  VkDeviceSize size;
  uint8_t* host_pointer;  // NULL when the memory is not mapped
} kiln_vk_allocation_t;

typedef struct kiln_vk_memory_t {
  struct kiln_vk_device_t* device;
  pthread_mutex_t mutex;
  kiln_vk_block_t* blocks;
  VkDeviceSize block_size;
  uint64_t block_count;  // live VkDeviceMemory objects (for tests)
} kiln_vk_memory_t;

void kiln_vk_memory_init(kiln_vk_memory_t* memory,
                         struct kiln_vk_device_t* device);
void kiln_vk_memory_deinit(kiln_vk_memory_t* memory);
kiln_status_t kiln_vk_memory_allocate(kiln_vk_memory_t* memory,
                                      const VkMemoryRequirements* requirements,
                                      kiln_hal_memory_type_t type,
                                      kiln_vk_allocation_t* out_allocation);
void kiln_vk_memory_free(kiln_vk_memory_t* memory,
                         kiln_vk_allocation_t* allocation);

// ---- device (vulkan_device.c) ----

// Buffers held only by command buffers' slot copies, for reuse by the next
// allocation of their kind (vulkan_buffer_reuse.c).
enum { KILN_VK_REUSE_CAPACITY = 64 };
typedef struct kiln_vk_reuse_entry_t {
  kiln_hal_buffer_t* buffer;  // one reference held by a staging table
  const uint64_t* last_use;   // that table's last submit value (atomic)
} kiln_vk_reuse_entry_t;
typedef struct kiln_vk_buffer_reuse_t {
  pthread_mutex_t mutex;
  kiln_vk_reuse_entry_t entries[KILN_VK_REUSE_CAPACITY];
  uint32_t count;
} kiln_vk_buffer_reuse_t;

typedef struct kiln_vk_device_t {
  kiln_hal_device_t base;
  kiln_vk_instance_t instance;
  bool print_validation_messages;
  VkPhysicalDevice physical_device;
  VkDevice device;
  struct VolkDeviceTable vk;
  PFN_vkWaitSemaphores wait_semaphores;
  PFN_vkSignalSemaphore signal_semaphore;
  PFN_vkGetSemaphoreCounterValue get_semaphore_counter_value;
  kiln_vk_device_support_t support;
  VkQueue queue;
  pthread_mutex_t queue_mutex;
  // Every submission signals this timeline with the next value, so command
  // buffers know when their last use has finished. Without timeline
  // semaphores (a Vulkan 1.1 device) the value is tracked on the host
  // instead: see vulkan_host_timeline.c.
  VkSemaphore submit_timeline;
  uint64_t submit_value;  // guarded by queue_mutex
  // The highest submit value known complete (atomic, only grows): a wait
  // on a finished value, such as each call's check that the previous
  // submission of a command buffer is done, returns without a driver call.
  uint64_t completed_value;
  // How long fence and submit-timeline waits spin on the status before
  // they block in the driver (0: block at once; KILN_INFINITE_TIMEOUT_NS:
  // never block), from the URI's wait= and the device type
  // (kiln_vk_wait_spin_ns): a busy core for less wake-up latency.
  int64_t spin_ns;
  // The length of the last wait that outlasted spin_ns (atomic): where a
  // long wait wakes to spin again (kiln_vk_wait_sleep_ns).
  int64_t last_long_wait_ns;
  struct kiln_vk_host_timeline_t* host_timeline;  // NULL with timelines
  kiln_vk_memory_t memory;
  kiln_vk_buffer_reuse_t reuse;
  VkPipelineCache pipeline_cache;
  kiln_hal_pipeline_cache_stats_t cache_stats;
  // Host<->device transfers through staging (vulkan_transfer.c).
  pthread_mutex_t transfer_mutex;
  VkCommandPool transfer_pool;
  VkCommandBuffer transfer_command_buffer;
  kiln_hal_buffer_t* staging;
} kiln_vk_device_t;

static inline kiln_vk_device_t* kiln_vk_device_cast(kiln_hal_device_t* base) {
  return (kiln_vk_device_t*)base;
}

kiln_status_t kiln_vk_device_create(kiln_string_view_t path,
                                    const kiln_hal_device_options_t* options,
                                    kiln_allocator_t allocator,
                                    kiln_hal_device_t** out_device);
// Waits until the device's submit timeline reaches `value`.
kiln_status_t kiln_vk_device_wait_value(kiln_vk_device_t* device,
                                        uint64_t value, int64_t timeout_ns);
// Records that the submission of `value` (and so every earlier one, queue
// order) has finished, e.g. once a fence given to it was waited for.
void kiln_vk_device_note_completed(kiln_vk_device_t* device, uint64_t value);
// Timeline waits on the submit semaphore.
uint64_t kiln_vk_timeout_to_vulkan(int64_t timeout_ns);

// ---- waits (vulkan_wait.c) ----
// Spin budget of a wait mode on this device (see kiln_vk_device_t.spin_ns).
int64_t kiln_vk_wait_spin_ns(kiln_vk_wait_mode_t mode, bool cpu_device);
// How long a wait that outlasted its spin sleeps before it spins again,
// `elapsed_ns` into it, given the last such wait's length (0: none yet, or
// already past the wake point): that length less a margin.
int64_t kiln_vk_wait_sleep_ns(int64_t last_long_ns, int64_t elapsed_ns);
// Waits for `fence` or the submit timeline to reach `value` (fence
// VK_NULL_HANDLE): spins device->spin_ns, then sleeps until shortly before
// the last long wait's length and spins again (device->spin_ns at most),
// then blocks for the rest of `timeout_ns`. VK_TIMEOUT when it passes, as
// the driver's waits.
VkResult kiln_vk_wait(kiln_vk_device_t* device, VkFence fence, uint64_t value,
                      int64_t timeout_ns);

// ---- objects ----

typedef struct kiln_vk_buffer_t {
  kiln_hal_buffer_t base;
  VkBuffer handle;
  // The VkBuffer's size: params.size rounded up to 16 for dispatch buffers,
  // so a texel view of a binding that ends mid-texel still covers it.
  uint64_t vk_size;
  kiln_vk_allocation_t allocation;
} kiln_vk_buffer_t;

kiln_status_t kiln_vk_buffer_allocate(kiln_hal_device_t* device,
                                      const kiln_hal_buffer_params_t* params,
                                      kiln_hal_buffer_t** out_buffer);
static inline VkBuffer kiln_vk_buffer_handle(const kiln_hal_buffer_t* buffer) {
  return ((const kiln_vk_buffer_t*)buffer)->handle;
}
static inline uint64_t kiln_vk_buffer_vk_size(const kiln_hal_buffer_t* buffer) {
  return ((const kiln_vk_buffer_t*)buffer)->vk_size;
}

kiln_status_t kiln_vk_device_write_buffer(kiln_hal_device_t* device,
                                          kiln_hal_buffer_t* buffer,
                                          uint64_t offset, const void* data,
                                          uint64_t length);
kiln_status_t kiln_vk_device_read_buffer(kiln_hal_device_t* device,
                                         kiln_hal_buffer_t* buffer,
                                         uint64_t offset, void* data,
                                         uint64_t length);
void kiln_vk_transfer_deinit(kiln_vk_device_t* device);

typedef struct kiln_vk_entry_point_t {
  VkPipeline pipeline;
  VkPipelineLayout layout;
  uint32_t set_count;  // highest used set + 1
  VkDescriptorSetLayout set_layouts[KILN_HAL_MAX_DESCRIPTOR_SETS];
  uint32_t set_binding_counts[KILN_HAL_MAX_DESCRIPTOR_SETS];
  bool use_push_descriptors;  // all bindings in one set and the ext exists
  uint32_t texel_binding_count;  // bindings viewed as uniform texel buffers
} kiln_vk_entry_point_t;

typedef struct kiln_vk_executable_t {
  kiln_hal_executable_t base;
  VkShaderModule shader_module;
  kiln_vk_entry_point_t* entry_points;
} kiln_vk_executable_t;

kiln_status_t kiln_vk_executable_create(kiln_hal_device_t* device,
                                        const kiln_hal_executable_spec_t* spec,
                                        uint32_t variant_index,
                                        kiln_target_match_t match,
                                        kiln_hal_executable_t** out);

// ---- slot staging (vulkan_slot_staging.c) ----

// The part of one binding-table slot the dispatches bind (entry-relative),
// and whether any of them writes it.
typedef struct kiln_vk_slot_range_t {
  uint64_t begin, end;
  bool written;
} kiln_vk_slot_range_t;

typedef struct kiln_vk_slot_staging_t {
  uint32_t slot_count;
  kiln_hal_binding_table_entry_t* table;  // own buffers {buffer, 0, length}
  kiln_vk_slot_range_t* ranges;           // per slot
  VkCommandBuffer copy_in, copy_out;      // from the command buffer's pool
  kiln_hal_binding_table_entry_t* io_table;  // the caller's, buffers retained
  uint32_t io_count;
  bool io_recorded;
  uint64_t io_last_use;  // submit value of the last submission (atomic)
} kiln_vk_slot_staging_t;

// The reuse list (vulkan_buffer_reuse.c): a staging table adds each buffer
// it retains and removes it before releasing it; an allocation takes a
// listed buffer of the same params once its only holder is that table and
// the table's last submission finished (returned retained, else NULL).
void kiln_vk_buffer_reuse_add(kiln_vk_device_t* device, kiln_hal_buffer_t* buffer,
                              const uint64_t* last_use);
void kiln_vk_buffer_reuse_remove(kiln_vk_device_t* device, kiln_hal_buffer_t* buffer,
                                 const uint64_t* last_use);
kiln_hal_buffer_t* kiln_vk_buffer_reuse_take(kiln_hal_device_t* device,
                                             const kiln_hal_buffer_params_t* params);

// True when every entry's buffer allows transfers (else bind directly).
bool kiln_vk_slot_staging_usable(const kiln_hal_binding_table_t* table, uint32_t slots);
// True when the own buffers have exactly `lengths`.
bool kiln_vk_slot_staging_fits(const kiln_vk_slot_staging_t* staging,
                               const uint64_t* lengths, uint32_t slots);
// (Re)allocates one device-local buffer per slot; callers waited for the GPU.
kiln_status_t kiln_vk_slot_staging_allocate(kiln_vk_slot_staging_t* staging,
                                            kiln_hal_device_t* device,
                                            const uint64_t* lengths, uint32_t slots);
// True when the copies were recorded for exactly this table.
bool kiln_vk_slot_staging_io_matches(const kiln_vk_slot_staging_t* staging,
                                     const kiln_hal_binding_table_t* table);
// Records the copy-in and copy-out command buffers for `table` (ranges
// filled first); callers waited for the GPU.
kiln_status_t kiln_vk_slot_staging_record_io(kiln_vk_slot_staging_t* staging,
                                             kiln_vk_device_t* device, VkCommandPool pool,
                                             const kiln_hal_binding_table_t* table);
// True when every entry is a whole device-local buffer, each in one slot
// only: bound directly, it reads at full speed, nothing past the entry lies
// inside the 16-byte rounding of a storage range (vulkan_command_buffer.c),
// and no slot aliases another.
bool kiln_vk_slot_staging_bindable(const kiln_hal_binding_table_t* table, uint32_t slots);
// Records the copy-in and copy-out command buffers with their barriers but
// no copies, for the recorded table bound directly; callers waited for the
// GPU.
kiln_status_t kiln_vk_slot_staging_record_barriers(kiln_vk_slot_staging_t* staging,
                                                   kiln_vk_device_t* device,
                                                   VkCommandPool pool);
void kiln_vk_slot_staging_release_table(kiln_vk_slot_staging_t* staging);
void kiln_vk_slot_staging_reset(kiln_vk_slot_staging_t* staging);
void kiln_vk_slot_staging_deinit(kiln_vk_slot_staging_t* staging, kiln_allocator_t allocator);

// Whether the recording binds the caller's binding table directly (no slot
// copies): buffers without transfer usage, or the same whole device-local
// buffers twice in a row.
bool kiln_vk_command_buffer_binds_table(const kiln_hal_command_buffer_t* command_buffer);

kiln_status_t kiln_vk_command_buffer_create(
    kiln_hal_device_t* device, kiln_hal_command_buffer_flags_t flags,
    kiln_hal_command_buffer_t** out);
// Brings the Vulkan command buffer up to date with `table` and returns the
// handles to submit in order (1, or 3 with slot staging: copy-in, the
// recording, copy-out).
#define KILN_VK_MAX_HANDLES_PER_COMMAND_BUFFER 3
kiln_status_t kiln_vk_command_buffer_prepare_submit(
    kiln_hal_command_buffer_t* command_buffer,
    const kiln_hal_binding_table_t* table,
    VkCommandBuffer out_handles[KILN_VK_MAX_HANDLES_PER_COMMAND_BUFFER],
    uint32_t* out_handle_count);
void kiln_vk_command_buffer_mark_submitted(
    kiln_hal_command_buffer_t* command_buffer, uint64_t submit_value);

typedef struct kiln_vk_semaphore_t {
  kiln_hal_semaphore_t base;
  VkSemaphore handle;   // VK_NULL_HANDLE when emulated on the host
  uint64_t host_value;  // emulated: guarded by the device's queue_mutex
} kiln_vk_semaphore_t;

typedef struct kiln_vk_fence_t {
  kiln_hal_fence_t base;
  VkFence handle;
  uint64_t submit_value;  // of the submission it was last given to, or 0
} kiln_vk_fence_t;

kiln_status_t kiln_vk_semaphore_create(kiln_hal_device_t* device,
                                       uint64_t initial_value,
                                       kiln_hal_semaphore_t** out);
kiln_status_t kiln_vk_fence_create(kiln_hal_device_t* device,
                                   kiln_hal_fence_t** out);

// ---- pipeline cache (vulkan_pipeline_cache.c) ----

// Loads `path` if it is a valid cache for this device; otherwise starts
// empty and records why in the device's cache stats.
// ---- pipeline statistics (vulkan_pipeline_stats.c) ----

// KILN_VULKAN_PIPELINE_STATS set (and not "0").
bool kiln_vk_pipeline_stats_requested(void);
// Prints the driver's statistics of `pipeline` to stderr, where enabled.
void kiln_vk_pipeline_stats_print(kiln_vk_device_t* device, VkPipeline pipeline,
                                  const char* executable_name, const char* entry_name);

kiln_status_t kiln_vk_pipeline_cache_create(kiln_vk_device_t* device,
                                            const char* path);
kiln_status_t kiln_vk_pipeline_cache_save(kiln_hal_device_t* device,
                                          const char* path);

// ---- submission (vulkan_submit.c) ----

kiln_status_t kiln_vk_queue_submit(kiln_hal_device_t* device,
                                   const kiln_hal_submit_batch_t* batch);
// Submits command buffers after `waits`, signalling `signals`, the device's
// submit value (returned) and `fence` (may be VK_NULL_HANDLE).
kiln_status_t kiln_vk_submit(kiln_vk_device_t* device,
                             const kiln_hal_semaphore_value_t* waits,
                             uint32_t wait_count,
                             const VkCommandBuffer* command_buffers,
                             uint32_t command_buffer_count,
                             const kiln_hal_semaphore_value_t* signals,
                             uint32_t signal_count, VkFence fence,
                             uint64_t* out_value);

// ---- host-emulated timelines (vulkan_host_timeline.c) ----

// Timeline semantics from fences for devices without timeline semaphores: a
// submission whose waits are not yet met is held on the host and submitted
// (in order) once they are; a semaphore's value advances when the fence of
// the submission that signals it completes.
kiln_status_t kiln_vk_host_timeline_create(kiln_vk_device_t* device);
void kiln_vk_host_timeline_destroy(kiln_vk_device_t* device);
kiln_status_t kiln_vk_host_submit(kiln_vk_device_t* device,
                                  const kiln_hal_semaphore_value_t* waits,
                                  uint32_t wait_count,
                                  const VkCommandBuffer* command_buffers,
                                  uint32_t command_buffer_count,
                                  const kiln_hal_semaphore_value_t* signals,
                                  uint32_t signal_count, VkFence fence,
                                  uint64_t* out_value);
kiln_status_t kiln_vk_host_wait_value(kiln_vk_device_t* device, uint64_t value,
                                      int64_t timeout_ns);
kiln_status_t kiln_vk_host_semaphore_query(kiln_vk_semaphore_t* semaphore,
                                           uint64_t* out_value);
kiln_status_t kiln_vk_host_semaphore_signal(kiln_vk_semaphore_t* semaphore,
                                            uint64_t value);
kiln_status_t kiln_vk_host_semaphore_wait(kiln_vk_semaphore_t* semaphore,
                                          uint64_t value, int64_t timeout_ns);

#endif  // KILN_DRIVERS_VULKAN_VULKAN_INTERNAL_H_
