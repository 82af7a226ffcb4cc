// Command-line flags of kiln-run-module. Parsing lives here so the run path
// (--module, --function, --input, ...) can be added as more table rows.
#ifndef KILN_TOOLS_RUN_MODULE_FLAGS_H_
#define KILN_TOOLS_RUN_MODULE_FLAGS_H_

#include <stdbool.h>

#include "kiln/base/status.h"

typedef struct kiln_run_flags_t {
  bool help;
  bool list_drivers;
  bool list_devices;
  bool dump_devices;
  bool validation;
  const char* device;  // URI; NULL = every device (listing) or "vulkan"
} kiln_run_flags_t;

// Parses argv; an unknown or malformed flag is INVALID_ARGUMENT naming it.
kiln_status_t kiln_run_flags_parse(int argc, char** argv,
                                   kiln_run_flags_t* out_flags);
void kiln_run_flags_print_help(const char* program);

#endif  // KILN_TOOLS_RUN_MODULE_FLAGS_H_
