// The Vulkan HAL driver. The loader is opened at run time (volk): without
// libvulkan the driver registers fine and reports itself unavailable.
#ifndef KILN_DRIVERS_VULKAN_H_
#define KILN_DRIVERS_VULKAN_H_

#include "kiln/hal/driver_registry.h"

#ifdef __cplusplus
extern "C" {
#endif

// The factory named "vulkan" (static; lives for the process).
const kiln_hal_driver_factory_t* kiln_hal_vulkan_driver_factory(void);

kiln_status_t kiln_hal_vulkan_driver_register(
    kiln_hal_driver_registry_t* registry);

#ifdef __cplusplus
}
#endif

#endif  // KILN_DRIVERS_VULKAN_H_
