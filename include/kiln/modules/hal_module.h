// The "hal" native VM module: exposes a HAL device to bytecode. Bytecode
// imports its functions as "hal.<name>" (see docs/hal-module.md for every
// export and its signature). HAL objects cross into the VM as typed refs
// (hal.device, hal.buffer, hal.buffer_view, hal.executable,
// hal.command_buffer, hal.fence, hal.semaphore); every export checks the
// types of the refs it is handed, and misuse is a trap with a message.
#ifndef KILN_MODULES_HAL_MODULE_H_
#define KILN_MODULES_HAL_MODULE_H_

#include "kiln/hal/buffer_view.h"
#include "kiln/hal/command_buffer.h"
#include "kiln/hal/device.h"
#include "kiln/hal/executable.h"
#include "kiln/vm/module.h"
#include "kiln/vm/ref.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kiln_memory_budget_t;

// Device copies of module rodata (weights, from hal.buffer.constant) and
// built executables (pipelines), shared by every hal module given the cache:
// the sessions of one kiln_model_t upload each weight segment and build each
// pipeline once. Thread-safe; refcounted. Constants are immutable HAL
// buffers (kiln_hal_buffer_make_immutable), counted against `budget`.
typedef struct kiln_hal_shared_cache_t kiln_hal_shared_cache_t;
typedef struct kiln_hal_shared_cache_stats_t {
  uint64_t constant_uploads;  // rodata segments copied to the device
  uint64_t constant_bytes;    // their device bytes
  uint64_t executables_built;
} kiln_hal_shared_cache_stats_t;

// `device` and `budget` (may be NULL: the device's) are retained.
kiln_status_t kiln_hal_shared_cache_create(
    kiln_hal_device_t* device, kiln_allocator_t allocator,
    struct kiln_memory_budget_t* budget, kiln_hal_shared_cache_t** out_cache);
void kiln_hal_shared_cache_retain(kiln_hal_shared_cache_t* cache);
void kiln_hal_shared_cache_release(kiln_hal_shared_cache_t* cache);
kiln_hal_device_t* kiln_hal_shared_cache_device(
    const kiln_hal_shared_cache_t* cache);
kiln_hal_shared_cache_stats_t kiln_hal_shared_cache_stats(
    kiln_hal_shared_cache_t* cache);

// The immutable device copy of `data` (rodata of the module `owner`, which
// the entry retains), uploaded on first use. Returns a new reference.
kiln_status_t kiln_hal_shared_cache_constant(kiln_hal_shared_cache_t* cache,
                                             kiln_vm_ref_object_t* owner,
                                             const void* data, uint64_t length,
                                             kiln_hal_buffer_t** out_buffer);
// The executable for `key` (a format executable inside `owner`), built by
// `build` on first use. Returns a new reference.
typedef kiln_status_t (*kiln_hal_shared_build_fn_t)(
    void* build_data, kiln_hal_device_t* device,
    kiln_hal_executable_t** out_executable);
kiln_status_t kiln_hal_shared_cache_executable(
    kiln_hal_shared_cache_t* cache, kiln_vm_ref_object_t* owner,
    const void* key, kiln_hal_shared_build_fn_t build, void* build_data,
    kiln_hal_executable_t** out_executable);
// An immutable device-local copy of `length` bytes (uncached), counted
// against `budget` (NULL: the device's).
kiln_status_t kiln_hal_upload_constant(kiln_hal_device_t* device,
                                       struct kiln_memory_budget_t* budget,
                                       const void* data, uint64_t length,
                                       kiln_hal_buffer_t** out_buffer);

typedef struct kiln_hal_module_options_t {
  // Every command buffer the bytecode creates records GPU timestamps around
  // its dispatches (for --print_statistics), whatever flags it asked for.
  bool force_timestamps;
  // With force_timestamps: only around each whole recording
  // (KILN_HAL_COMMAND_BUFFER_SPAN_TIMESTAMPS), a call's GPU time without
  // the per-dispatch stamps' cost.
  bool span_timestamps;
  // Constants and executables come from (and go to) this cache (retained;
  // it must be for the module's device). NULL: the module makes its own.
  kiln_hal_shared_cache_t* shared_cache;
  // Buffers the bytecode allocates count against this budget (retained);
  // NULL: the device's.
  struct kiln_memory_budget_t* memory_budget;
} kiln_hal_module_options_t;

// Creates the module bound to `device` (retained). Registers the hal.* ref
// types with the instance on first use. `options` may be NULL.
kiln_status_t kiln_hal_module_create(kiln_vm_instance_t* instance,
                                     kiln_hal_device_t* device,
                                     kiln_vm_module_t** out_module);
kiln_status_t kiln_hal_module_create_with_options(
    kiln_vm_instance_t* instance, kiln_hal_device_t* device,
    const kiln_hal_module_options_t* options, kiln_vm_module_t** out_module);

// Ref types, for hosts that pass HAL objects in and out of functions.
extern const kiln_vm_ref_type_t kiln_hal_device_ref_type;
extern const kiln_vm_ref_type_t kiln_hal_buffer_ref_type;
extern const kiln_vm_ref_type_t kiln_hal_buffer_view_ref_type;
extern const kiln_vm_ref_type_t kiln_hal_executable_ref_type;
extern const kiln_vm_ref_type_t kiln_hal_command_buffer_ref_type;
extern const kiln_vm_ref_type_t kiln_hal_fence_ref_type;
extern const kiln_vm_ref_type_t kiln_hal_semaphore_ref_type;

// Wraps a buffer view as a VM ref (the view is retained; the caller keeps
// its own reference). Release the ref with kiln_vm_ref_release.
kiln_status_t kiln_hal_module_wrap_buffer_view(
    kiln_allocator_t allocator, kiln_hal_buffer_view_t* view,
    kiln_vm_ref_object_t** out_ref);
// The buffer view inside a ref, or an error naming `what` when the ref is
// NULL or of another type. The view is borrowed from the ref.
kiln_status_t kiln_hal_module_unwrap_buffer_view(
    kiln_vm_ref_object_t* ref, const char* what,
    kiln_hal_buffer_view_t** out_view);

// The buffer inside a hal.buffer ref (borrowed), or an error naming `what`.
kiln_status_t kiln_hal_module_unwrap_buffer(kiln_vm_ref_object_t* ref,
                                            const char* what,
                                            kiln_hal_buffer_t** out_buffer);

// The command buffer inside a hal.command_buffer ref (borrowed).
kiln_status_t kiln_hal_module_unwrap_command_buffer(
    kiln_vm_ref_object_t* ref, const char* what,
    kiln_hal_command_buffer_t** out_command_buffer);

#ifdef __cplusplus
}
#endif

#endif  // KILN_MODULES_HAL_MODULE_H_
