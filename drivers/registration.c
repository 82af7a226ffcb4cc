// Registers the drivers this build links in.
#include "kiln/drivers/registration.h"

#if defined(KILN_HAVE_VULKAN_DRIVER)
#include "kiln/drivers/vulkan.h"
#endif

kiln_status_t kiln_drivers_register_all(kiln_hal_driver_registry_t* registry) {
#if defined(KILN_HAVE_VULKAN_DRIVER)
  // Registering is idempotent: another thread may have won the race between
  // a lookup and a register, so ALREADY_EXISTS is success here.
  kiln_status_t status = kiln_hal_driver_registry_register(
      registry, kiln_hal_vulkan_driver_factory());
  if (kiln_status_code(status) == KILN_STATUS_ALREADY_EXISTS) {
    kiln_status_free(status);
    status = kiln_ok_status();
  }
  KILN_RETURN_IF_ERROR(status);
#else
  (void)registry;
#endif
  return kiln_ok_status();
}
