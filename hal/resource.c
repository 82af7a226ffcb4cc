// Reference counting shared by every HAL object.
#include "kiln/hal/driver_api.h"

void kiln_hal_resource_init(kiln_hal_resource_t* resource, const void* vtable) {
  resource->ref_count = 1;
  resource->vtable = vtable;
}

void kiln_hal_resource_retain(kiln_hal_resource_t* resource) {
  __atomic_fetch_add(&resource->ref_count, 1, __ATOMIC_RELAXED);
}

bool kiln_hal_resource_release(kiln_hal_resource_t* resource) {
  return __atomic_sub_fetch(&resource->ref_count, 1, __ATOMIC_ACQ_REL) == 0;
}
