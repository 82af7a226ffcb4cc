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
// Sharing one device and one copy of the weights. A host serving several
// threads opens one device, loads the module once into a model and makes
// one session per thread from it:
//
//   kiln_hal_device_t* device = NULL;
//   KILN_RETURN_IF_ERROR(kiln_session_device_create(&options, &device));
//   kiln_model_options_t model_options;
//   kiln_model_options_init(&model_options);
//   kiln_model_t* model = NULL;
//   KILN_RETURN_IF_ERROR(kiln_model_create(device, &model_options, &model));
//   KILN_RETURN_IF_ERROR(kiln_model_load_module_file(model, "m.kiln"));
//   options.model = model;                      // per thread:
//   KILN_RETURN_IF_ERROR(kiln_session_create(&options, &session));
//   ... lookup / invoke as above ...
//   kiln_model_release(model);        // any order: sessions hold references
//   kiln_hal_device_release(device);
//
// The model holds the verified modules, the pipelines (built on first use,
// once per model) and the weights: module rodata passed to
// hal.buffer.constant is uploaded once per model to an immutable device
// buffer that every session binds. Immutable buffers are refused by every
// write path (host writes, fill/update/copy targets, mapping) and may only
// be bound where the kernel's binding is declared read-only, which pipeline
// creation has checked against the SPIR-V (NonWritable), so no kernel can
// write the shared weights. Each session keeps its own VM context (globals,
// activations, outputs), command buffers and descriptor pools. Modules must
// be loaded into a model before its first session; the model is immutable
// from then on. kiln_session_create without options.model still works as
// before: it opens a device and loads into a private model of its own.
//
// Memory: a model's budget (kiln_model_options_t.memory_budget_bytes)
// counts its modules, unpacked rodata and the shared device weights, once
// however many sessions run it; each session's budget counts only its own
// host memory and device buffers (activations, outputs, inputs it
// uploads). kiln_model_statistics reports the uploads.
//
// Threads (the contract, as IREE and onnxruntime document theirs):
// - Thread-safe: kiln_session_device_create, kiln_session_create/destroy
//   (any number at once), the HAL device (its queue submissions and
//   transfers are serialised inside the driver), kiln_model_t after it is
//   loaded (sessions on any threads share it; retain/release from any
//   thread), and sessions on one device or one model used from different
//   threads at the same time: they run concurrently.
// - Serialised: one session called from several threads. Its functions
//   take a per-session lock, so calls take turns (use one session per
//   thread for parallel work). Pointers the accessors return (instance,
//   context) are not covered by that lock: do not use them while another
//   thread calls the session (the device and the model are thread-safe on
//   their own).
// - Ordered, not concurrent: loading modules into a model
//   (kiln_model_load_*, kiln_model_add_native_module) must finish before
//   its first session is created; a load racing that creation is refused
//   (FAILED_PRECONDITION), never half-applied.
// - Host code: a native module added to a model is called from every
//   session's thread, each context with its own state; whatever its
//   user_data shares must be thread-safe.
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
#include "kiln/modules/cpu_ops_module.h"
#include "kiln/vm/context.h"
#include "kiln/vm/instance.h"
#include "kiln/vm/module.h"
#include "kiln/vm/native_module.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_session_t kiln_session_t;
typedef struct kiln_model_t kiln_model_t;

typedef struct kiln_session_options_t {
  kiln_allocator_t allocator;
  const char* device_uri;  // "vulkan" (the first device), "vulkan://1", ...
  bool enable_validation;  // Khronos validation layer (also KILN_VULKAN_VALIDATION=1)
  const char* pipeline_cache_path;  // NULL: no persistent cache
  bool gpu_timestamps;  // time every dispatch on the GPU (statistics)
  // With gpu_timestamps: time each submission as a whole, not every dispatch.
  bool gpu_timestamps_span;
  // Per invoke: taken branches, calls and returns (0: unlimited).
  uint64_t fuel;
  // Per invoke: wall-clock milliseconds of bytecode (0: none). A dispatch or
  // GPU wait already started is not interrupted.
  uint32_t deadline_ms;
  // Host + device bytes the session may hold (0: unlimited). Default
  // KILN_SESSION_DEFAULT_MEMORY_BUDGET. Without a model it also counts the
  // modules and weights the session loads; with one, only its own.
  uint64_t memory_budget_bytes;
  // Use this device (retained) instead of opening one from device_uri; the
  // session still loads its own modules and weights.
  kiln_hal_device_t* shared_device;
  // Run this model (retained): its device, modules, pipelines and weights.
  // device_uri, shared_device, enable_validation and pipeline_cache_path
  // are then ignored, and the session cannot add modules.
  kiln_model_t* model;
} kiln_session_options_t;

#define KILN_SESSION_DEFAULT_MEMORY_BUDGET ((uint64_t)8 << 30)

void kiln_session_options_init(kiln_session_options_t* options);

kiln_status_t kiln_session_create(const kiln_session_options_t* options,
                                  kiln_session_t** out_session);
void kiln_session_destroy(kiln_session_t* session);

// Opens the device options->device_uri names (validation and pipeline
// cache as the options say) for several sessions or models; release it with
// kiln_hal_device_release. Buffers count against the budget of the session
// or model that makes them, not against the device.
kiln_status_t kiln_session_device_create(const kiln_session_options_t* options,
                                         kiln_hal_device_t** out_device);

typedef struct kiln_model_options_t {
  kiln_allocator_t allocator;
  // Modules, unpacked rodata and the shared device weights (0: unlimited).
  uint64_t memory_budget_bytes;  // default KILN_SESSION_DEFAULT_MEMORY_BUDGET
} kiln_model_options_t;
void kiln_model_options_init(kiln_model_options_t* options);

// A model on `device` (retained). Refcounted: sessions made from it hold a
// reference, so it may be released before them.
kiln_status_t kiln_model_create(kiln_hal_device_t* device,
                                const kiln_model_options_t* options,
                                kiln_model_t** out_model);
void kiln_model_retain(kiln_model_t* model);
void kiln_model_release(kiln_model_t* model);
// Modules join in order (dependencies first), before the first session
// made with options.model (FAILED_PRECONDITION after).
kiln_status_t kiln_model_add_native_module(
    kiln_model_t* model, const kiln_vm_native_module_desc_t* desc);
kiln_status_t kiln_model_load_module_file(kiln_model_t* model,
                                          const char* path);
kiln_status_t kiln_model_load_module_memory(kiln_model_t* model,
                                            kiln_const_byte_span_t bytes,
                                            const char* what);
kiln_vm_module_t* kiln_model_main_module(kiln_model_t* model);
kiln_hal_device_t* kiln_model_device(const kiln_model_t* model);
// Bytes the model's budget counts now (host and shared device memory).
uint64_t kiln_model_memory_in_use(const kiln_model_t* model);
// Constants uploaded (each once, whatever the number of sessions) and
// executables built so far.
kiln_hal_shared_cache_stats_t kiln_model_statistics(kiln_model_t* model);

kiln_vm_instance_t* kiln_session_instance(const kiln_session_t* session);
// The model the session runs (options.model or its private one).
kiln_model_t* kiln_session_model(const kiln_session_t* session);
kiln_hal_device_t* kiln_session_device(const kiln_session_t* session);
// Allocations from it count against the session's memory budget.
kiln_allocator_t kiln_session_allocator(const kiln_session_t* session);
// Host and device bytes the session holds now (what the budget counts).
uint64_t kiln_session_memory_in_use(const kiln_session_t* session);
// What the session's "cpu" module (host ops between GPU segments) did.
kiln_cpu_ops_stats_t kiln_session_cpu_ops_stats(const kiln_session_t* session);

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
