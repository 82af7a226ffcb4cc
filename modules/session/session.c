// The host-facing session: device + hal module + modules + context.
#include "kiln/session.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kiln/base/memory_budget.h"
#include "kiln/base/time.h"
#include "kiln/drivers/registration.h"
#include "kiln/format/module_reader.h"
#include "kiln/hal/buffer.h"
#include "kiln/hal/driver_registry.h"
#include "model_internal.h"

enum { KILN_SESSION_MAX_MODULES = 32 };

struct kiln_session_t {
  kiln_allocator_t base_allocator;  // the host's; holds this struct
  kiln_allocator_t allocator;       // counts against `budget`
  kiln_memory_budget_t* budget;
  uint64_t fuel;        // per invoke; 0: unlimited
  uint32_t deadline_ms;  // per invoke; 0: none
  // Every entry point below holds it: calls from several threads take
  // turns instead of sharing the context and command buffers.
  pthread_mutex_t mutex;
  kiln_vm_instance_t* instance;
  kiln_hal_device_t* device;
  // The modules, weights and pipelines: options.model, or a private model
  // this session loads into (the one-call path).
  kiln_model_t* model;
  bool shared_model;  // options.model: nothing may be added
  kiln_vm_module_t* hal_module;  // this session's, on the model's cache
  kiln_vm_module_t* cpu_module;  // host ops between GPU segments
  kiln_cpu_ops_stats_t cpu_stats;
  // [0] = hal, [1] = cpu, then the model's modules (borrowed), set with the context.
  kiln_vm_module_t* modules[KILN_SESSION_MAX_MODULES];
  size_t module_count;
  kiln_vm_context_t* context;  // made on first lookup
};

void kiln_session_options_init(kiln_session_options_t* options) {
  memset(options, 0, sizeof(*options));
  options->allocator = kiln_allocator_system();
  options->device_uri = "vulkan";
  options->memory_budget_bytes = KILN_SESSION_DEFAULT_MEMORY_BUDGET;
}

static kiln_status_t kiln_session_open_device(
    const kiln_session_options_t* options, kiln_memory_budget_t* budget,
    kiln_allocator_t allocator, kiln_hal_device_t** out_device) {
  *out_device = NULL;
  kiln_hal_driver_registry_t* registry = kiln_hal_driver_registry_default();
  KILN_RETURN_IF_ERROR(kiln_drivers_register_all(registry));
  kiln_hal_device_options_t device_options;
  kiln_hal_device_options_init(&device_options);
  device_options.enable_validation = options->enable_validation;
  device_options.pipeline_cache_path = options->pipeline_cache_path;
  device_options.memory_budget = budget;
  const char* uri = options->device_uri ? options->device_uri : "vulkan";
  return kiln_hal_create_device(registry, kiln_make_cstring_view(uri),
                                &device_options, allocator, out_device);
}

// No device-wide budget: each session and model given the device counts
// its own buffers (kiln_hal_buffer_params_t.memory_budget).
kiln_status_t kiln_session_device_create(const kiln_session_options_t* options,
                                         kiln_hal_device_t** out_device) {
  return kiln_session_open_device(options, NULL, options->allocator,
                                  out_device);
}

// The device and model: options.model's, or a device (shared_device or
// opened here) with a private model counted against the session's budget.
static kiln_status_t kiln_session_open_model(
    kiln_session_t* session, const kiln_session_options_t* options) {
  if (options->model) {
    kiln_model_retain(options->model);
    session->model = options->model;
    session->shared_model = true;
    kiln_vm_module_t* const* modules = NULL;
    size_t count = 0;
    kiln_model_freeze(options->model, &modules, &count);  // shared from now
    session->device = kiln_model_device(options->model);
    kiln_hal_device_retain(session->device);
    return kiln_ok_status();
  }
  if (options->shared_device) {
    kiln_hal_device_retain(options->shared_device);
    session->device = options->shared_device;
  } else {
    KILN_RETURN_IF_ERROR(kiln_session_open_device(
        options, session->budget, session->allocator, &session->device));
  }
  return kiln_model_create_with_budget(session->device, options->allocator,
                                       session->budget, &session->model);
}

kiln_status_t kiln_session_create(const kiln_session_options_t* options,
                                  kiln_session_t** out_session) {
  *out_session = NULL;
  kiln_session_t* session = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc(options->allocator,
                                             sizeof(*session),
                                             (void**)&session));
  session->base_allocator = options->allocator;
  session->fuel = options->fuel;
  session->deadline_ms = options->deadline_ms;
  pthread_mutex_init(&session->mutex, NULL);
  kiln_status_t status = kiln_memory_budget_create(
      options->memory_budget_bytes, options->allocator, &session->budget);
  if (kiln_status_is_ok(status)) {
    session->allocator = kiln_memory_budget_allocator(session->budget);
    status = kiln_vm_instance_create(session->allocator, &session->instance);
  }
  if (kiln_status_is_ok(status)) {
    status = kiln_session_open_model(session, options);
  }
  if (kiln_status_is_ok(status)) {
    // Buffers the bytecode allocates (activations, outputs) are this
    // session's; constants and pipelines come from the model's cache.
    kiln_hal_module_options_t module_options = {
        .force_timestamps = options->gpu_timestamps,
        .span_timestamps = options->gpu_timestamps_span,
        .shared_cache = kiln_model_shared_cache(session->model),
        .memory_budget = session->budget,
    };
    status = kiln_hal_module_create_with_options(
        session->instance, session->device, &module_options,
        &session->hal_module);
  }
  if (kiln_status_is_ok(status)) {
    status = kiln_cpu_ops_module_create(session->instance, &session->cpu_stats,
                                        &session->cpu_module);
  }
  if (!kiln_status_is_ok(status)) {
    kiln_session_destroy(session);
    return status;
  }
  *out_session = session;
  return kiln_ok_status();
}

void kiln_session_destroy(kiln_session_t* session) {
  if (!session) return;
  kiln_vm_context_destroy(session->context);
  kiln_vm_module_release(session->hal_module);
  kiln_vm_module_release(session->cpu_module);
  kiln_model_release(session->model);  // safe while other sessions use it
  kiln_hal_device_release(session->device);
  kiln_vm_instance_destroy(session->instance);
  kiln_memory_budget_release(session->budget);  // the device may hold it on
  pthread_mutex_destroy(&session->mutex);
  kiln_allocator_free(session->base_allocator, session);
}

uint64_t kiln_session_memory_in_use(const kiln_session_t* session) {
  return kiln_memory_budget_used(session->budget);
}

kiln_vm_instance_t* kiln_session_instance(const kiln_session_t* session) {
  return session->instance;
}
kiln_hal_device_t* kiln_session_device(const kiln_session_t* session) {
  return session->device;
}
kiln_model_t* kiln_session_model(const kiln_session_t* session) {
  return session->model;
}
kiln_cpu_ops_stats_t kiln_session_cpu_ops_stats(const kiln_session_t* session) {
  return session->cpu_stats;
}
kiln_allocator_t kiln_session_allocator(const kiln_session_t* session) {
  return session->allocator;
}
kiln_vm_context_t* kiln_session_context(kiln_session_t* session) {
  return session->context;
}

static kiln_status_t kiln_session_check_can_add(kiln_session_t* session) {
  if (session->shared_model) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                            "the session runs a shared model: add modules to "
                            "the model before its first session");
  }
  if (session->context) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                            "modules must be added before the first lookup");
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_session_add_native_module_locked(
    kiln_session_t* session, const kiln_vm_native_module_desc_t* desc) {
  KILN_RETURN_IF_ERROR(kiln_session_check_can_add(session));
  return kiln_model_add_native_module(session->model, desc);
}

static kiln_status_t kiln_session_load_module_file_locked(
    kiln_session_t* session, const char* path) {
  KILN_RETURN_IF_ERROR(kiln_session_check_can_add(session));
  return kiln_model_load_module_file(session->model, path);
}

static kiln_status_t kiln_session_load_module_memory_locked(
    kiln_session_t* session, kiln_const_byte_span_t bytes, const char* what) {
  KILN_RETURN_IF_ERROR(kiln_session_check_can_add(session));
  return kiln_model_load_module_memory(session->model, bytes, what);
}

kiln_vm_module_t* kiln_session_main_module(const kiln_session_t* session) {
  return kiln_model_main_module(session->model);
}

// "a, b, c" of the main module's exports, for not-found messages.
static void kiln_session_list_exports(const kiln_session_t* session,
                                      char* text, size_t size) {
  text[0] = 0;
  const kiln_vm_module_t* module = kiln_session_main_module(session);
  const kiln_format_module_t* format =
      module ? kiln_vm_module_format(module) : NULL;
  if (!format) return;
  size_t used = 0;
  for (uint32_t i = 0; i < format->export_count && used < size; ++i) {
    used += (size_t)snprintf(text + used, size - used, "%s%.*s",
                             i ? ", " : "",
                             KILN_SV_ARG(format->exports[i].name));
  }
}

static kiln_status_t kiln_session_lookup_locked(
    kiln_session_t* session, const char* name,
    kiln_vm_function_t* out_function) {
  memset(out_function, 0, sizeof(*out_function));
  if (!session->context) {
    // The model is frozen from here on: its module list never changes again.
    kiln_vm_module_t* const* modules = NULL;
    size_t count = 0;
    kiln_model_freeze(session->model, &modules, &count);
    session->modules[0] = session->hal_module;
    session->modules[1] = session->cpu_module;
    for (size_t i = 0; i < count; ++i) session->modules[i + 2] = modules[i];
    session->module_count = count + 2;
    KILN_RETURN_IF_ERROR(kiln_vm_context_create(
        session->instance, session->modules, session->module_count, NULL,
        &session->context));
  }
  kiln_status_t status =
      kiln_vm_context_find_function(session->context, name, out_function);
  if (kiln_status_code(status) == KILN_STATUS_NOT_FOUND) {
    kiln_status_free(status);
    char exports[1024];
    kiln_session_list_exports(session, exports, sizeof(exports));
    return kiln_make_status(KILN_STATUS_NOT_FOUND,
                            "no function '%s'; the module exports: %s", name,
                            exports[0] ? exports : "(nothing)");
  }
  return status;
}

static kiln_status_t kiln_session_invoke_locked(
    kiln_session_t* session, kiln_vm_function_t function,
    const kiln_vm_value_t* args, size_t arg_count, kiln_vm_value_t* results,
    size_t result_count) {
  if (!session->context) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                            "look the function up before invoking it");
  }
  // Fuel and the deadline are per call, so one runaway call cannot starve
  // the next one. Unset, the context's own settings (a host may set them
  // through kiln_session_context) are left alone.
  if (session->fuel) kiln_vm_context_set_fuel(session->context, session->fuel);
  if (session->deadline_ms) {
    kiln_vm_context_set_deadline(
        session->context,
        kiln_time_now_ns() + (int64_t)session->deadline_ms * 1000000);
  }
  kiln_status_t status = kiln_vm_context_invoke(
      session->context, function, args, arg_count, results, result_count);
  if (kiln_status_code(status) == KILN_STATUS_RESOURCE_EXHAUSTED &&
      session->fuel && kiln_vm_context_fuel(session->context) == 0) {
    status = kiln_status_annotate(status, "the session's fuel limit is %llu",
                                  (unsigned long long)session->fuel);
  } else if (kiln_status_code(status) == KILN_STATUS_DEADLINE_EXCEEDED &&
             session->deadline_ms) {
    status = kiln_status_annotate(status, "the session's deadline is %u ms",
                                  session->deadline_ms);
  }
  return status;
}

static kiln_status_t kiln_session_buffer_view_from_host_locked(
    kiln_session_t* session, kiln_hal_element_type_t element_type,
    size_t rank, const int64_t* shape, const void* data, uint64_t byte_length,
    kiln_hal_buffer_view_t** out_view) {
  *out_view = NULL;
  uint64_t element_count = 0, needed = 0;
  KILN_RETURN_IF_ERROR(kiln_hal_shape_byte_length(element_type, rank, shape,
                                                  &element_count, &needed));
  if (needed != byte_length) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "host data holds %llu bytes but the shape needs "
                            "%llu",
                            (unsigned long long)byte_length,
                            (unsigned long long)needed);
  }
  // Zero-sized tensors still get a (minimal) buffer so views stay valid.
  kiln_hal_buffer_params_t params = {
      .memory_type = KILN_HAL_MEMORY_DEVICE_LOCAL,
      .usage = KILN_HAL_BUFFER_USAGE_DEFAULT,
      .size = needed ? (needed + 3) & ~(uint64_t)3 : 4,
      .memory_budget = session->budget,  // not the (maybe shared) device's
  };
  kiln_hal_buffer_t* buffer = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_hal_buffer_allocate(session->device, &params, &buffer));
  kiln_status_t status = kiln_ok_status();
  if (needed) {
    status = kiln_hal_device_write_buffer(session->device, buffer, 0, data,
                                          needed);
  }
  if (kiln_status_is_ok(status)) {
    status = kiln_hal_buffer_view_create(buffer, 0, element_type, rank, shape,
                                         session->allocator, out_view);
  }
  kiln_hal_buffer_release(buffer);  // the view holds its own reference
  return status;
}

static kiln_status_t kiln_session_buffer_view_to_host_locked(
    kiln_session_t* session, kiln_hal_buffer_view_t* view, void* data,
    uint64_t byte_length) {
  uint64_t length = kiln_hal_buffer_view_byte_length(view);
  if (length != byte_length) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "the view holds %llu bytes, the host buffer %llu",
                            (unsigned long long)length,
                            (unsigned long long)byte_length);
  }
  if (length == 0) return kiln_ok_status();
  return kiln_hal_device_read_buffer(session->device,
                                     kiln_hal_buffer_view_buffer(view),
                                     kiln_hal_buffer_view_offset(view), data,
                                     length);
}

// The public entry points: each holds the session's lock (see session.h).
#define KILN_SESSION_LOCKED(call)                 \
  do {                                            \
    pthread_mutex_lock(&session->mutex);          \
    kiln_status_t locked_status = (call);         \
    pthread_mutex_unlock(&session->mutex);        \
    return locked_status;                         \
  } while (0)

kiln_status_t kiln_session_add_native_module(
    kiln_session_t* session, const kiln_vm_native_module_desc_t* desc) {
  KILN_SESSION_LOCKED(kiln_session_add_native_module_locked(session, desc));
}

kiln_status_t kiln_session_load_module_file(kiln_session_t* session,
                                            const char* path) {
  KILN_SESSION_LOCKED(kiln_session_load_module_file_locked(session, path));
}

kiln_status_t kiln_session_load_module_memory(kiln_session_t* session,
                                              kiln_const_byte_span_t bytes,
                                              const char* what) {
  KILN_SESSION_LOCKED(
      kiln_session_load_module_memory_locked(session, bytes, what));
}

kiln_status_t kiln_session_lookup(kiln_session_t* session, const char* name,
                                  kiln_vm_function_t* out_function) {
  KILN_SESSION_LOCKED(kiln_session_lookup_locked(session, name, out_function));
}

kiln_status_t kiln_session_invoke(kiln_session_t* session,
                                  kiln_vm_function_t function,
                                  const kiln_vm_value_t* args,
                                  size_t arg_count, kiln_vm_value_t* results,
                                  size_t result_count) {
  KILN_SESSION_LOCKED(kiln_session_invoke_locked(
      session, function, args, arg_count, results, result_count));
}

kiln_status_t kiln_session_buffer_view_from_host(
    kiln_session_t* session, kiln_hal_element_type_t element_type,
    size_t rank, const int64_t* shape, const void* data, uint64_t byte_length,
    kiln_hal_buffer_view_t** out_view) {
  KILN_SESSION_LOCKED(kiln_session_buffer_view_from_host_locked(
      session, element_type, rank, shape, data, byte_length, out_view));
}

kiln_status_t kiln_session_buffer_view_to_host(kiln_session_t* session,
                                               kiln_hal_buffer_view_t* view,
                                               void* data,
                                               uint64_t byte_length) {
  KILN_SESSION_LOCKED(kiln_session_buffer_view_to_host_locked(
      session, view, data, byte_length));
}
