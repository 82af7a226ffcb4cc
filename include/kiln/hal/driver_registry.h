// The driver registry: drivers linked into the runtime register a factory
// (a host may add its own); devices are created from URIs such as `vulkan`,
// `vulkan://0` or `vulkan://<device-uuid>`.
#ifndef KILN_HAL_DRIVER_REGISTRY_H_
#define KILN_HAL_DRIVER_REGISTRY_H_

#include "kiln/hal/device.h"
#include "kiln/hal/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_hal_device_entry_t {
  char path[64];  // "0", "1", ...
  char name[256];
  char uuid_text[40];
  char triple[KILN_TARGET_TRIPLE_TEXT_CAPACITY];
} kiln_hal_device_entry_t;

typedef struct kiln_hal_driver_factory_t {
  const char* name;
  const char* description;
  void* self;
  // OK when the driver can be used; otherwise UNAVAILABLE saying why.
  kiln_status_t (*query_available)(void* self);
  // The caller frees *out_entries with `allocator`.
  kiln_status_t (*enumerate_devices)(void* self, kiln_allocator_t allocator,
                                     kiln_hal_device_entry_t** out_entries,
                                     size_t* out_count);
  // `path` is what follows "name://" (empty: the first device).
  kiln_status_t (*create_device)(void* self, kiln_string_view_t path,
                                 const kiln_hal_device_options_t* options,
                                 kiln_allocator_t allocator,
                                 kiln_hal_device_t** out_device);
} kiln_hal_driver_factory_t;

enum { KILN_HAL_MAX_DRIVERS = 16 };

typedef struct kiln_hal_driver_registry_t {
  const kiln_hal_driver_factory_t* factories[KILN_HAL_MAX_DRIVERS];
  size_t count;
} kiln_hal_driver_registry_t;

// The process-wide registry (the one global the design allows).
kiln_hal_driver_registry_t* kiln_hal_driver_registry_default(void);
void kiln_hal_driver_registry_init(kiln_hal_driver_registry_t* registry);

// ALREADY_EXISTS for a second factory of the same name. The factory must
// outlive the registry.
kiln_status_t kiln_hal_driver_registry_register(
    kiln_hal_driver_registry_t* registry,
    const kiln_hal_driver_factory_t* factory);
const kiln_hal_driver_factory_t* kiln_hal_driver_registry_lookup(
    const kiln_hal_driver_registry_t* registry, kiln_string_view_t name);

// Splits "driver://path" (or "driver") into its parts.
kiln_status_t kiln_hal_device_uri_split(kiln_string_view_t uri,
                                        kiln_string_view_t* out_driver,
                                        kiln_string_view_t* out_path);

// Creates the device a URI names. NOT_FOUND for an unknown driver lists the
// registered ones; UNAVAILABLE says why the driver cannot run.
kiln_status_t kiln_hal_create_device(
    const kiln_hal_driver_registry_t* registry, kiln_string_view_t uri,
    const kiln_hal_device_options_t* options, kiln_allocator_t allocator,
    kiln_hal_device_t** out_device);

#ifdef __cplusplus
}
#endif

#endif  // KILN_HAL_DRIVER_REGISTRY_H_
