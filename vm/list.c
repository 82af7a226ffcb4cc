#include "kiln/vm/list.h"

#include <string.h>

static size_t kiln_vm_list_element_size(uint32_t element_type) {
  return element_type == KILN_VM_LIST_I32 ? 4 : 8;
}

static void kiln_vm_list_destroy(kiln_vm_ref_object_t* object) {
  kiln_vm_list_t* list = (kiln_vm_list_t*)object;
  if (list->element_type == KILN_VM_LIST_REF) {
    kiln_vm_ref_object_t** refs = (kiln_vm_ref_object_t**)list->data;
    for (uint32_t i = 0; i < list->size; ++i) kiln_vm_ref_release(refs[i]);
  }
  kiln_allocator_free(list->allocator, list->data);
  kiln_allocator_free(list->allocator, list);
}

const kiln_vm_ref_type_t kiln_vm_list_type = {"vm.list",
                                              kiln_vm_list_destroy};

static kiln_status_t kiln_vm_list_reserve(kiln_vm_list_t* list,
                                          uint32_t capacity) {
  if (capacity <= list->capacity) return kiln_ok_status();
  KILN_RETURN_IF_ERROR(kiln_allocator_realloc_array(
      list->allocator, capacity,
      kiln_vm_list_element_size(list->element_type), &list->data));
  list->capacity = capacity;
  return kiln_ok_status();
}

kiln_status_t kiln_vm_list_create(kiln_allocator_t allocator,
                                  uint32_t element_type, uint32_t capacity,
                                  kiln_vm_list_t** out_list) {
  *out_list = NULL;
  if (element_type >= KILN_VM_LIST_TYPE_COUNT) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "list element type %u is unknown", element_type);
  }
  if (capacity > KILN_VM_LIST_MAX_SIZE) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "list capacity %u exceeds the limit %u", capacity,
                            KILN_VM_LIST_MAX_SIZE);
  }
  kiln_vm_list_t* list = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_calloc(allocator, sizeof(*list), (void**)&list));
  kiln_vm_ref_object_init(&list->header, &kiln_vm_list_type);
  list->allocator = allocator;
  list->element_type = element_type;
  kiln_status_t status = kiln_vm_list_reserve(list, capacity);
  if (status) {
    kiln_allocator_free(allocator, list);
    return status;
  }
  *out_list = list;
  return kiln_ok_status();
}

kiln_status_t kiln_vm_list_resize(kiln_vm_list_t* list, uint32_t size) {
  if (size > KILN_VM_LIST_MAX_SIZE) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "list size %u exceeds the limit %u", size,
                            KILN_VM_LIST_MAX_SIZE);
  }
  size_t element_size = kiln_vm_list_element_size(list->element_type);
  if (size > list->capacity) {
    uint32_t grown = list->capacity * 2 > size ? list->capacity * 2 : size;
    if (grown > KILN_VM_LIST_MAX_SIZE) grown = KILN_VM_LIST_MAX_SIZE;
    KILN_RETURN_IF_ERROR(kiln_vm_list_reserve(list, grown));
  }
  if (size > list->size) {
    memset((uint8_t*)list->data + (size_t)list->size * element_size, 0,
           (size_t)(size - list->size) * element_size);
  } else if (list->element_type == KILN_VM_LIST_REF) {
    kiln_vm_ref_object_t** refs = (kiln_vm_ref_object_t**)list->data;
    for (uint32_t i = size; i < list->size; ++i) {
      kiln_vm_ref_release(refs[i]);
      refs[i] = NULL;
    }
  }
  list->size = size;
  return kiln_ok_status();
}
