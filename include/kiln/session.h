// kiln_session_t: the short path for a host program. It owns a VM
// instance, a HAL device (from a URI such as "vulkan" or "vulkan://0"), the
// hal module bound to that device, the host's own native modules and the
// bytecode modules it loads, and makes the VM context on first use.
//
//   kiln_session_options_t options;
//   kiln_session_options_init(&options);              // device "vulkan"
//   kiln_session_t* session = NULL;
//   KILN_RETURN_IF_ERROR(kiln_session_create(&options, &session));
//   KILN_RETURN_IF_ERROR(kiln_session_load_module_file(session, "m.kiln"));
//   kiln_vm_function_t predict;
//   KILN_RETURN_IF_ERROR(kiln_session_lookup(session, "predict", &predict));
//   ... kiln_session_buffer_view_from_host(...) for each input ...
//   KILN_RETURN_IF_ERROR(kiln_session_invoke(session, predict, args, 1, results, 1));
//   ... kiln_session_buffer_view_to_host(...) for each result ...
//   kiln_session_destroy(session);
//
// Threads. Creating and destroying sessions is thread-safe (any number at
// once, on any threads). One session may be called from several threads:
// its functions below take a per-session lock, so calls take turns (they
// do not run in parallel; use one session per thread for that). Pointers
// the accessors return (instance, context, device) are not covered by that
// lock: do not use them while another thread calls the session. Sessions
// can share one device (options.shared_device); the HAL device is
// thread-safe, each session keeps its own context, command buffers and
// copy of the module's weights (uploaded by its own hal module).
//
// Limits for untrusted modules: fuel and deadline_ms stop runaway bytecode
// in every invoke (the status names the function and bytecode offset);
// memory_budget_bytes bounds the host memory (modules, unpacked rodata,
// VM buffers and lists) and device buffers the session holds together.
#ifndef KILN_SESSION_H_
#define KILN_SESSION_H_

#include "kiln/hal/buffer_view.h"
#include "kiln/hal/device.h"
#include "kiln/modules/hal_module.h"
#include "kiln/vm/context.h"
#include "kiln/vm/instance.h"
#include "kiln/vm/module.h"
#include "kiln/vm/native_module.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_session_t kiln_session_t;

typedef struct kiln_session_options_t {
  kiln_allocator_t allocator;
  const char* device_uri;  // "vulkan" (the first device), "vulkan://1", ...
  bool enable_validation;  // Khronos validation layer (also KILN_VULKAN_VALIDATION=1)
  const char* pipeline_cache_path;  // NULL: no persistent cache
  bool gpu_timestamps;  // time every dispatch on the GPU (statistics)
  // Per invoke: taken branches, calls and returns (0: unlimited).
  uint64_t fuel;
  // Per invoke: wall-clock milliseconds of bytecode (0: none). A dispatch or
  // GPU wait already started is not interrupted.
  uint32_t deadline_ms;
  // Host + device bytes the session may hold (0: unlimited). Default
  // KILN_SESSION_DEFAULT_MEMORY_BUDGET. With shared_device, device buffers
  // count against the budget of the session that created the device.
  uint64_t memory_budget_bytes;
  // Use this device (retained) instead of opening one from device_uri.
  kiln_hal_device_t* shared_device;
} kiln_session_options_t;

#define KILN_SESSION_DEFAULT_MEMORY_BUDGET ((uint64_t)8 << 30)

void kiln_session_options_init(kiln_session_options_t* options);

kiln_status_t kiln_session_create(const kiln_session_options_t* options,
                                  kiln_session_t** out_session);
void kiln_session_destroy(kiln_session_t* session);

kiln_vm_instance_t* kiln_session_instance(const kiln_session_t* session);
kiln_hal_device_t* kiln_session_device(const kiln_session_t* session);
// Allocations from it count against the session's memory budget.
kiln_allocator_t kiln_session_allocator(const kiln_session_t* session);
// Host and device bytes the session holds now (what the budget counts).
uint64_t kiln_session_memory_in_use(const kiln_session_t* session);

// Modules join in order (dependencies first), before the first lookup.
kiln_status_t kiln_session_add_native_module(
    kiln_session_t* session, const kiln_vm_native_module_desc_t* desc);
kiln_status_t kiln_session_load_module_file(kiln_session_t* session,
                                            const char* path);
kiln_status_t kiln_session_load_module_memory(kiln_session_t* session,
                                              kiln_const_byte_span_t bytes,
                                              const char* what);
// The module loaded last (NULL before any): where an unqualified function
// name is looked up first.
kiln_vm_module_t* kiln_session_main_module(const kiln_session_t* session);

// Creates the context if needed, then finds `name` ("predict" or
// "module.predict"). NOT_FOUND lists the main module's exports.
kiln_status_t kiln_session_lookup(kiln_session_t* session, const char* name,
                                  kiln_vm_function_t* out_function);
kiln_vm_context_t* kiln_session_context(kiln_session_t* session);
kiln_status_t kiln_session_invoke(kiln_session_t* session,
                                  kiln_vm_function_t function,
                                  const kiln_vm_value_t* args,
                                  size_t arg_count, kiln_vm_value_t* results,
                                  size_t result_count);

// Uploads host data into a new device-local buffer view; `byte_length`
// must equal the shape's size.
kiln_status_t kiln_session_buffer_view_from_host(
    kiln_session_t* session, kiln_hal_element_type_t element_type,
    size_t rank, const int64_t* shape, const void* data, uint64_t byte_length,
    kiln_hal_buffer_view_t** out_view);
// Reads a buffer view back; `byte_length` must equal the view's.
kiln_status_t kiln_session_buffer_view_to_host(kiln_session_t* session,
                                               kiln_hal_buffer_view_t* view,
                                               void* data,
                                               uint64_t byte_length);

#ifdef __cplusplus
}
#endif

#endif  // KILN_SESSION_H_
