// --list_drivers, --list_devices and --dump_devices.
#ifndef KILN_TOOLS_RUN_MODULE_DEVICE_LISTING_H_
#define KILN_TOOLS_RUN_MODULE_DEVICE_LISTING_H_

#include <stdbool.h>
#include <stdio.h>

#include "kiln/hal/driver_registry.h"

void kiln_run_list_drivers(const kiln_hal_driver_registry_t* registry,
                           FILE* out);
kiln_status_t kiln_run_list_devices(const kiln_hal_driver_registry_t* registry,
                                    FILE* out);
// All devices, or only `uri`'s when it is not NULL.
kiln_status_t kiln_run_dump_devices(const kiln_hal_driver_registry_t* registry,
                                    const char* uri, bool validation,
                                    FILE* out);
void kiln_run_dump_device_info(const kiln_hal_device_info_t* info, FILE* out);

#endif  // KILN_TOOLS_RUN_MODULE_DEVICE_LISTING_H_
