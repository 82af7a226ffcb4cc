// kiln-run-module: runs a function of a compiled module on a HAL device, or
// lists drivers and devices. Exit status: 0 success, 1 failure (including
// expected outputs that did not match), 2 bad command line.
#include <stdio.h>
#include <stdlib.h>

#include "device_listing.h"
#include "flags.h"
#include "kiln/drivers/registration.h"
#include "run.h"
#include "tool_cli.h"

static int fail(kiln_status_t status, int code) {
  char* text = kiln_status_to_string(status);
  fprintf(stderr, "kiln-run-module: %s\n", text);
  free(text);
  kiln_status_free(status);
  return code;
}

static int kiln_run_main(kiln_run_flags_t* flags, char** argv, int argc) {
  if (flags->help || argc == 1) {
    kiln_run_flags_print_help(argv[0]);
    return 0;
  }
  if (flags->version) {
    kiln_tool_print_version("kiln-run-module", stdout);
    return 0;
  }
  bool listing = flags->list_drivers || flags->list_devices ||
                 flags->dump_devices;
  if (listing) {
    kiln_hal_driver_registry_t* registry = kiln_hal_driver_registry_default();
    kiln_status_t status = kiln_drivers_register_all(registry);
    if (status) return fail(status, 1);
    if (flags->list_drivers) kiln_run_list_drivers(registry, stdout);
    if (flags->list_devices) {
      status = kiln_run_list_devices(registry, stdout);
      if (status) return fail(status, 1);
    }
    if (flags->dump_devices) {
      status = kiln_run_dump_devices(registry, flags->run.device,
                                     flags->run.validation, stdout);
      if (status) return fail(status, 1);
    }
    if (flags->run.module_count == 0) return 0;
  }
  int exit_code = 0;
  kiln_status_t status = kiln_run(&flags->run, stdout, &exit_code);
  if (status) return fail(status, 1);
  return exit_code;
}

int main(int argc, char** argv) {
  kiln_run_flags_t flags;
  kiln_status_t status = kiln_run_flags_parse(argc, argv, &flags);
  if (status) {
    kiln_run_flags_deinit(&flags);
    return fail(status, 2);
  }
  int code = kiln_run_main(&flags, argv, argc);
  fflush(stdout);
  kiln_run_flags_deinit(&flags);
  return code;
}
