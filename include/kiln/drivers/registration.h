// Registers every driver linked into this build (those enabled at configure
// time) with a registry; hosts call it once before creating devices.
#ifndef KILN_DRIVERS_REGISTRATION_H_
#define KILN_DRIVERS_REGISTRATION_H_

#include "kiln/hal/driver_registry.h"

#ifdef __cplusplus
extern "C" {
#endif

// Drivers already present in the registry are skipped, so calling it twice
// is harmless.
kiln_status_t kiln_drivers_register_all(kiln_hal_driver_registry_t* registry);

#ifdef __cplusplus
}
#endif

#endif  // KILN_DRIVERS_REGISTRATION_H_
