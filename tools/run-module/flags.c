// Flag table and parser: `--name` for booleans, `--name=value` for values.
#include "flags.h"

#include <stdio.h>
#include <stddef.h>
#include <string.h>

typedef enum flag_kind_e { FLAG_BOOL, FLAG_STRING } flag_kind_t;

typedef struct flag_t {
  const char* name;
  flag_kind_t kind;
  size_t offset;
  const char* help;
} flag_t;

#define FIELD(f) offsetof(kiln_run_flags_t, f)

static const flag_t kFlags[] = {
    {"help", FLAG_BOOL, FIELD(help), "print this help"},
    {"list_drivers", FLAG_BOOL, FIELD(list_drivers),
     "one line per HAL driver: name, description, available or why not"},
    {"list_devices", FLAG_BOOL, FIELD(list_devices),
     "one driver://path line per device with its name and target triple"},
    {"dump_devices", FLAG_BOOL, FIELD(dump_devices),
     "everything each device reports (or only --device's)"},
    {"device", FLAG_STRING, FIELD(device),
     "device URI: vulkan, vulkan://N, vulkan://<uuid>"},
    {"validation", FLAG_BOOL, FIELD(validation),
     "enable the Vulkan validation layer (also KILN_VULKAN_VALIDATION=1)"},
};

void kiln_run_flags_print_help(const char* program) {
  printf("usage: %s [flags]\n\nRuns compiled kiln modules on a HAL device.\n\n",
         program);
  for (size_t i = 0; i < sizeof(kFlags) / sizeof(kFlags[0]); ++i) {
    printf("  --%s%s\n      %s\n", kFlags[i].name,
           kFlags[i].kind == FLAG_STRING ? "=VALUE" : "", kFlags[i].help);
  }
}

kiln_status_t kiln_run_flags_parse(int argc, char** argv,
                                   kiln_run_flags_t* out_flags) {
  memset(out_flags, 0, sizeof(*out_flags));
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (strncmp(arg, "--", 2) != 0) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "unexpected argument '%s' (flags start with --; "
                              "see --help)",
                              arg);
    }
    const char* name = arg + 2;
    const char* equals = strchr(name, '=');
    size_t name_length = equals ? (size_t)(equals - name) : strlen(name);
    const flag_t* flag = NULL;
    for (size_t f = 0; f < sizeof(kFlags) / sizeof(kFlags[0]); ++f) {
      if (strlen(kFlags[f].name) == name_length &&
          strncmp(kFlags[f].name, name, name_length) == 0) {
        flag = &kFlags[f];
      }
    }
    if (!flag) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "unknown flag '%s' (see --help)", arg);
    }
    char* field = (char*)out_flags + flag->offset;
    if (flag->kind == FLAG_BOOL) {
      if (equals && strcmp(equals + 1, "true") != 0 &&
          strcmp(equals + 1, "false") != 0) {
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "flag '--%s' takes true or false, not '%s'",
                                flag->name, equals + 1);
      }
      *(bool*)field = !equals || strcmp(equals + 1, "true") == 0;
    } else {
      if (!equals || !equals[1]) {
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "flag '--%s' needs a value: --%s=VALUE",
                                flag->name, flag->name);
      }
      *(const char**)field = equals + 1;
    }
  }
  return kiln_ok_status();
}
