// The hal module: its export table, per-context state, and argument helpers.
#include <string.h>

#include "hal_module_state.h"
#include "kiln/base/memory_budget.h"
#include "kiln/base/size_math.h"

kiln_status_t kiln_hal_arg(const kiln_vm_value_t* args, size_t index,
                           const kiln_vm_ref_type_t* type,
                           const char* export_name, void** out_object) {
  char what[160];
  snprintf(what, sizeof(what), "argument %zu of hal.%s", index, export_name);
  return kiln_hal_ref_unwrap(args[index].ref, type, what, out_object);
}

kiln_status_t kiln_hal_arg_bytes(const kiln_vm_value_t* args, size_t index,
                                 const char* export_name,
                                 kiln_vm_buffer_t** out_buffer) {
  char what[160];
  snprintf(what, sizeof(what), "argument %zu of hal.%s", index, export_name);
  *out_buffer = NULL;
  KILN_RETURN_IF_ERROR(kiln_vm_ref_check(args[index].ref, &kiln_vm_buffer_type,
                                         what));
  *out_buffer = (kiln_vm_buffer_t*)args[index].ref;
  return kiln_ok_status();
}

kiln_status_t kiln_hal_arg_list(const kiln_vm_value_t* args, size_t index,
                                uint32_t element_type, bool optional,
                                const char* export_name,
                                kiln_vm_list_t** out_list) {
  *out_list = NULL;
  if (optional && args[index].ref == NULL) return kiln_ok_status();
  char what[160];
  snprintf(what, sizeof(what), "argument %zu of hal.%s", index, export_name);
  KILN_RETURN_IF_ERROR(
      kiln_vm_ref_check(args[index].ref, &kiln_vm_list_type, what));
  kiln_vm_list_t* list = (kiln_vm_list_t*)args[index].ref;
  if (list->element_type != element_type) {
    static const char* names[] = {"i32", "i64", "ref"};
    return kiln_make_status(
        KILN_STATUS_INVALID_ARGUMENT, "%s: expected a list of %s, got %s",
        what, element_type < 3 ? names[element_type] : "?",
        list->element_type < 3 ? names[list->element_type] : "?");
  }
  *out_list = list;
  return kiln_ok_status();
}

kiln_status_t kiln_hal_check_bytes_range(const kiln_vm_buffer_t* buffer,
                                         int64_t offset, int64_t length,
                                         const char* export_name) {
  if (offset < 0 || length < 0 ||
      !kiln_range_fits((uint64_t)offset, (uint64_t)length, buffer->length)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "hal.%s: byte range [%lld, +%lld) is outside a "
                            "vm.buffer of %llu bytes",
                            export_name, (long long)offset, (long long)length,
                            (unsigned long long)buffer->length);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_hal_resolve_buffer_like(kiln_vm_ref_object_t* ref,
                                           const char* what,
                                           kiln_hal_buffer_t** out_buffer,
                                           uint64_t* out_offset,
                                           uint64_t* out_length) {
  *out_buffer = NULL;
  if (ref && ref->type == &kiln_hal_buffer_view_ref_type) {
    kiln_hal_buffer_view_t* view = ((kiln_hal_ref_t*)ref)->object;
    *out_buffer = kiln_hal_buffer_view_buffer(view);
    *out_offset = kiln_hal_buffer_view_offset(view);
    *out_length = kiln_hal_buffer_view_byte_length(view);
    return kiln_ok_status();
  }
  void* buffer = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_hal_ref_unwrap(ref, &kiln_hal_buffer_ref_type, what, &buffer));
  *out_buffer = buffer;
  *out_offset = 0;
  *out_length = kiln_hal_buffer_size(buffer);
  return kiln_ok_status();
}

typedef struct kiln_hal_module_user_data_t {
  kiln_allocator_t allocator;
  kiln_hal_device_t* device;
  kiln_vm_native_export_t* exports;
  kiln_hal_module_options_t options;
} kiln_hal_module_user_data_t;

static kiln_status_t kiln_hal_module_create_state(void* user_data,
                                                  kiln_vm_context_t* context,
                                                  void** out_state) {
  kiln_hal_module_user_data_t* data = user_data;
  kiln_hal_module_state_t* state = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_calloc(data->allocator, sizeof(*state), (void**)&state));
  state->allocator = data->allocator;
  state->device = data->device;
  state->options = data->options;  // the module outlives its contexts
  kiln_hal_device_retain(state->device);
  state->context = context;
  *out_state = state;
  return kiln_ok_status();
}

static void kiln_hal_module_destroy_state(void* user_data, void* opaque) {
  (void)user_data;
  kiln_hal_module_state_t* state = opaque;
  if (!state) return;
  for (size_t i = 0; i < state->executable_count; ++i) {
    kiln_allocator_free(state->allocator, state->executables[i].name);
    kiln_vm_ref_release(state->executables[i].ref);
  }
  kiln_allocator_free(state->allocator, state->executables);
  if (state->wait_fence) kiln_hal_fence_release(state->wait_fence);
  kiln_hal_device_release(state->device);
  kiln_allocator_free(state->allocator, state);
}

// The export table and device reference live as long as the module.
static void kiln_hal_module_destroy_user_data(void* opaque) {
  kiln_hal_module_user_data_t* data = opaque;
  kiln_hal_shared_cache_release(data->options.shared_cache);
  kiln_memory_budget_release(data->options.memory_budget);
  kiln_hal_device_release(data->device);
  kiln_allocator_free(data->allocator, data->exports);
  kiln_allocator_free(data->allocator, data);
}

kiln_status_t kiln_hal_module_create(kiln_vm_instance_t* instance,
                                     kiln_hal_device_t* device,
                                     kiln_vm_module_t** out_module) {
  return kiln_hal_module_create_with_options(instance, device, NULL,
                                             out_module);
}

kiln_status_t kiln_hal_module_create_with_options(
    kiln_vm_instance_t* instance, kiln_hal_device_t* device,
    const kiln_hal_module_options_t* options, kiln_vm_module_t** out_module) {
  *out_module = NULL;
  if (options && options->shared_cache &&
      kiln_hal_shared_cache_device(options->shared_cache) != device) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "hal module: the shared cache belongs to another "
                            "device");
  }
  KILN_RETURN_IF_ERROR(kiln_hal_refs_register(instance));
  kiln_allocator_t allocator = kiln_vm_instance_allocator(instance);
  const struct {
    const kiln_vm_native_export_t* exports;
    size_t count;
  } groups[] = {
      {kiln_hal_device_exports, kiln_hal_device_export_count},
      {kiln_hal_buffer_exports, kiln_hal_buffer_export_count},
      {kiln_hal_command_buffer_exports, kiln_hal_command_buffer_export_count},
      {kiln_hal_executable_exports, kiln_hal_executable_export_count},
  };
  size_t total = 0;
  for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); ++g) {
    total += groups[g].count;
  }
  kiln_hal_module_user_data_t* data = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_calloc(allocator, sizeof(*data), (void**)&data));
  kiln_status_t status = kiln_allocator_calloc_array(
      allocator, total, sizeof(kiln_vm_native_export_t), (void**)&data->exports);
  if (!kiln_status_is_ok(status)) {
    kiln_allocator_free(allocator, data);
    return status;
  }
  size_t at = 0;
  for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); ++g) {
    memcpy(data->exports + at, groups[g].exports,
           groups[g].count * sizeof(kiln_vm_native_export_t));
    at += groups[g].count;
  }
  data->allocator = allocator;
  data->device = device;
  if (options) data->options = *options;
  if (data->options.shared_cache) {
    kiln_hal_shared_cache_retain(data->options.shared_cache);
  } else {
    status = kiln_hal_shared_cache_create(device, allocator,
                                          data->options.memory_budget,
                                          &data->options.shared_cache);
    if (!kiln_status_is_ok(status)) {
      kiln_allocator_free(allocator, data->exports);
      kiln_allocator_free(allocator, data);
      return status;
    }
  }
  kiln_memory_budget_retain(data->options.memory_budget);
  kiln_vm_native_module_desc_t desc = {
      .name = "hal",
      .exports = data->exports,
      .export_count = total,
      .user_data = data,
      .create_state = kiln_hal_module_create_state,
      .destroy_state = kiln_hal_module_destroy_state,
      .destroy_user_data = kiln_hal_module_destroy_user_data,
  };
  kiln_hal_device_retain(device);  // released in destroy_user_data
  // On failure the VM has already called destroy_user_data (a failed
  // signature parse) or, when the module itself could not be allocated,
  // the user data leaks: freeing it here would free it twice.
  return kiln_vm_module_create_native(instance, &desc, out_module);
}
