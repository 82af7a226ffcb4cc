#include <stdlib.h>

#include "internal.h"

kiln_status_t kiln_vm_instance_create(kiln_allocator_t allocator,
                                      kiln_vm_instance_t** out_instance) {
  *out_instance = NULL;
  kiln_vm_instance_t* instance = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_calloc(allocator, sizeof(*instance), (void**)&instance));
  instance->allocator = allocator;
  pthread_mutex_init(&instance->mutex, NULL);
  kiln_status_t status =
      kiln_vm_instance_register_ref_type(instance, &kiln_vm_list_type);
  if (!status) {
    status = kiln_vm_instance_register_ref_type(instance, &kiln_vm_buffer_type);
  }
  if (status) {
    kiln_vm_instance_destroy(instance);
    return status;
  }
  *out_instance = instance;
  return kiln_ok_status();
}

void kiln_vm_instance_destroy(kiln_vm_instance_t* instance) {
  if (!instance) return;
  pthread_mutex_destroy(&instance->mutex);
  kiln_allocator_free(instance->allocator, (void*)instance->types);
  kiln_allocator_free(instance->allocator, instance);
}

kiln_allocator_t kiln_vm_instance_allocator(const kiln_vm_instance_t* instance) {
  return instance->allocator;
}

static const kiln_vm_ref_type_t* kiln_vm_instance_find_locked(
    kiln_vm_instance_t* instance, kiln_string_view_t name) {
  for (size_t i = 0; i < instance->type_count; ++i) {
    if (kiln_string_view_equal_cstring(name, instance->types[i]->name)) {
      return instance->types[i];
    }
  }
  return NULL;
}

kiln_status_t kiln_vm_instance_register_ref_type(
    kiln_vm_instance_t* instance, const kiln_vm_ref_type_t* type) {
  if (!type || !type->name || !type->destroy) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "ref type needs a name and a destroy function");
  }
  kiln_status_t status = kiln_ok_status();
  pthread_mutex_lock(&instance->mutex);
  if (kiln_vm_instance_find_locked(instance, kiln_make_cstring_view(type->name))) {
    status = kiln_make_status(KILN_STATUS_ALREADY_EXISTS,
                              "ref type '%s' is already registered",
                              type->name);
  } else {
    if (instance->type_count == instance->type_capacity) {
      size_t capacity = instance->type_capacity ? instance->type_capacity * 2 : 8;
      void* types = (void*)instance->types;
      status = kiln_allocator_realloc_array(instance->allocator, capacity,
                                            sizeof(*instance->types), &types);
      if (!status) {
        instance->types = (const kiln_vm_ref_type_t**)types;
        instance->type_capacity = capacity;
      }
    }
    if (!status) instance->types[instance->type_count++] = type;
  }
  pthread_mutex_unlock(&instance->mutex);
  return status;
}

const kiln_vm_ref_type_t* kiln_vm_instance_lookup_ref_type(
    kiln_vm_instance_t* instance, kiln_string_view_t name) {
  pthread_mutex_lock(&instance->mutex);
  const kiln_vm_ref_type_t* type = kiln_vm_instance_find_locked(instance, name);
  pthread_mutex_unlock(&instance->mutex);
  return type;
}
