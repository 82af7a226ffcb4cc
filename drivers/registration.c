// Registers the drivers this build links in.
#include "kiln/drivers/registration.h"

#if defined(KILN_HAVE_VULKAN_DRIVER)
#include "kiln/drivers/vulkan.h"
#endif

kiln_status_t kiln_drivers_register_all(kiln_hal_driver_registry_t* registry) {
#if defined(KILN_HAVE_VULKAN_DRIVER)
  const kiln_hal_driver_factory_t* vulkan = kiln_hal_vulkan_driver_factory();
  if (!kiln_hal_driver_registry_lookup(registry,
                                       kiln_make_cstring_view(vulkan->name))) {
    KILN_RETURN_IF_ERROR(kiln_hal_driver_registry_register(registry, vulkan));
  }
#else
  (void)registry;
#endif
  return kiln_ok_status();
}
