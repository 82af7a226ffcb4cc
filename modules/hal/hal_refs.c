#include "hal_refs.h"

#include "kiln/vm/instance.h"

#define KILN_HAL_REF_TYPE(c_name, type_name, release_fn)                  \
  static void kiln_hal_ref_destroy_##c_name(kiln_vm_ref_object_t* ref) { \
    kiln_hal_ref_t* wrapper = (kiln_hal_ref_t*)ref;                      \
    release_fn(wrapper->object);                                         \
    kiln_allocator_free(wrapper->allocator, wrapper);                    \
  }                                                                      \
  const kiln_vm_ref_type_t kiln_hal_##c_name##_ref_type = {              \
      type_name, kiln_hal_ref_destroy_##c_name};

static void kiln_hal_release_device(void* o) { kiln_hal_device_release(o); }
static void kiln_hal_release_buffer(void* o) { kiln_hal_buffer_release(o); }
static void kiln_hal_release_view(void* o) { kiln_hal_buffer_view_release(o); }
static void kiln_hal_release_executable(void* o) {
  kiln_hal_executable_release(o);
}
static void kiln_hal_release_command_buffer(void* o) {
  kiln_hal_command_buffer_release(o);
}
static void kiln_hal_release_fence(void* o) { kiln_hal_fence_release(o); }
static void kiln_hal_release_semaphore(void* o) {
  kiln_hal_semaphore_release(o);
}

KILN_HAL_REF_TYPE(device, "hal.device", kiln_hal_release_device)
KILN_HAL_REF_TYPE(buffer, "hal.buffer", kiln_hal_release_buffer)
KILN_HAL_REF_TYPE(buffer_view, "hal.buffer_view", kiln_hal_release_view)
KILN_HAL_REF_TYPE(executable, "hal.executable", kiln_hal_release_executable)
KILN_HAL_REF_TYPE(command_buffer, "hal.command_buffer",
                  kiln_hal_release_command_buffer)
KILN_HAL_REF_TYPE(fence, "hal.fence", kiln_hal_release_fence)
KILN_HAL_REF_TYPE(semaphore, "hal.semaphore", kiln_hal_release_semaphore)

// Drops the HAL reference of an object that never got its wrapper.
static void kiln_hal_release_by_type(const kiln_vm_ref_type_t* type,
                                     void* object) {
  if (type == &kiln_hal_device_ref_type) kiln_hal_release_device(object);
  if (type == &kiln_hal_buffer_ref_type) kiln_hal_release_buffer(object);
  if (type == &kiln_hal_buffer_view_ref_type) kiln_hal_release_view(object);
  if (type == &kiln_hal_executable_ref_type) kiln_hal_release_executable(object);
  if (type == &kiln_hal_command_buffer_ref_type) {
    kiln_hal_release_command_buffer(object);
  }
  if (type == &kiln_hal_fence_ref_type) kiln_hal_release_fence(object);
  if (type == &kiln_hal_semaphore_ref_type) kiln_hal_release_semaphore(object);
}

kiln_status_t kiln_hal_ref_wrap(kiln_allocator_t allocator,
                                const kiln_vm_ref_type_t* type, void* object,
                                kiln_vm_ref_object_t** out_ref) {
  *out_ref = NULL;
  kiln_hal_ref_t* wrapper = NULL;
  kiln_status_t status =
      kiln_allocator_malloc(allocator, sizeof(*wrapper), (void**)&wrapper);
  if (!kiln_status_is_ok(status)) {
    kiln_hal_release_by_type(type, object);
    return status;
  }
  kiln_vm_ref_object_init(&wrapper->header, type);
  wrapper->allocator = allocator;
  wrapper->object = object;
  *out_ref = &wrapper->header;
  return kiln_ok_status();
}

kiln_status_t kiln_hal_ref_unwrap(kiln_vm_ref_object_t* ref,
                                  const kiln_vm_ref_type_t* type,
                                  const char* what, void** out_object) {
  *out_object = NULL;
  KILN_RETURN_IF_ERROR(kiln_vm_ref_check(ref, type, what));
  *out_object = ((kiln_hal_ref_t*)ref)->object;
  return kiln_ok_status();
}

kiln_status_t kiln_hal_refs_register(kiln_vm_instance_t* instance) {
  const kiln_vm_ref_type_t* types[] = {
      &kiln_hal_device_ref_type,     &kiln_hal_buffer_ref_type,
      &kiln_hal_buffer_view_ref_type, &kiln_hal_executable_ref_type,
      &kiln_hal_command_buffer_ref_type, &kiln_hal_fence_ref_type,
      &kiln_hal_semaphore_ref_type,
  };
  for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); ++i) {
    kiln_status_t status =
        kiln_vm_instance_register_ref_type(instance, types[i]);
    if (kiln_status_code(status) == KILN_STATUS_ALREADY_EXISTS) {
      kiln_status_free(status);  // a second hal module on this instance
      continue;
    }
    KILN_RETURN_IF_ERROR(status);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_hal_module_wrap_buffer_view(
    kiln_allocator_t allocator, kiln_hal_buffer_view_t* view,
    kiln_vm_ref_object_t** out_ref) {
  kiln_hal_buffer_view_retain(view);
  return kiln_hal_ref_wrap(allocator, &kiln_hal_buffer_view_ref_type, view,
                           out_ref);
}

kiln_status_t kiln_hal_module_unwrap_buffer_view(
    kiln_vm_ref_object_t* ref, const char* what,
    kiln_hal_buffer_view_t** out_view) {
  return kiln_hal_ref_unwrap(ref, &kiln_hal_buffer_view_ref_type, what,
                             (void**)out_view);
}

kiln_status_t kiln_hal_module_unwrap_command_buffer(
    kiln_vm_ref_object_t* ref, const char* what,
    kiln_hal_command_buffer_t** out_command_buffer) {
  return kiln_hal_ref_unwrap(ref, &kiln_hal_command_buffer_ref_type, what,
                             (void**)out_command_buffer);
}

kiln_status_t kiln_hal_module_unwrap_buffer(kiln_vm_ref_object_t* ref,
                                            const char* what,
                                            kiln_hal_buffer_t** out_buffer) {
  return kiln_hal_ref_unwrap(ref, &kiln_hal_buffer_ref_type, what,
                             (void**)out_buffer);
}
