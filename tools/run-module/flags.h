// Command-line flags of kiln-run-module, compatible with iree-run-module
// where the meaning is the same. `--name` for booleans, `--name=value` for
// values; repeatable flags (--module, --input, --output, --expected_output)
// keep their order; --flagfile=FILE reads one flag per line ('#' comments).
#ifndef KILN_TOOLS_RUN_MODULE_FLAGS_H_
#define KILN_TOOLS_RUN_MODULE_FLAGS_H_

#include <stdbool.h>

#include "kiln/base/status.h"
#include "run.h"

enum { KILN_RUN_MAX_FLAGFILES = 8 };

typedef struct kiln_run_flags_t {
  bool help;
  bool version;
  bool list_drivers;
  bool list_devices;
  bool dump_devices;
  kiln_run_options_t run;  // also holds --device and --validation
  // Contents of --flagfile files; the parsed strings point into them.
  char* flagfile_texts[KILN_RUN_MAX_FLAGFILES];
  int flagfile_count;
} kiln_run_flags_t;

// Parses argv; an unknown or malformed flag is INVALID_ARGUMENT naming it.
kiln_status_t kiln_run_flags_parse(int argc, char** argv,
                                   kiln_run_flags_t* out_flags);
void kiln_run_flags_deinit(kiln_run_flags_t* flags);
void kiln_run_flags_print_help(const char* program);

#endif  // KILN_TOOLS_RUN_MODULE_FLAGS_H_
