// kiln-run-module: lists HAL drivers and devices; the module run path
// (--module, --function, --input) is added by the HAL-module issue.
#include <stdio.h>
#include <stdlib.h>

#include "device_listing.h"
#include "flags.h"
#include "kiln/drivers/registration.h"

static int fail(kiln_status_t status) {
  char* text = kiln_status_to_string(status);
  fprintf(stderr, "kiln-run-module: %s\n", text);
  free(text);
  kiln_status_free(status);
  return 1;
}

int main(int argc, char** argv) {
  kiln_run_flags_t flags;
  kiln_status_t status = kiln_run_flags_parse(argc, argv, &flags);
  if (status) {
    fail(status);
    return 2;
  }
  if (flags.help || argc == 1) {
    kiln_run_flags_print_help(argv[0]);
    return 0;
  }
  kiln_hal_driver_registry_t* registry = kiln_hal_driver_registry_default();
  status = kiln_drivers_register_all(registry);
  if (status) return fail(status);
  if (flags.list_drivers) kiln_run_list_drivers(registry, stdout);
  if (flags.list_devices) {
    status = kiln_run_list_devices(registry, stdout);
    if (status) return fail(status);
  }
  if (flags.dump_devices) {
    status = kiln_run_dump_devices(registry, flags.device, flags.validation,
                                   stdout);
    if (status) return fail(status);
  }
  return 0;
}
