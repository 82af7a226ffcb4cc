// Flag table and parser.
#include "flags.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/file.h"
#include "kiln/base/views.h"

typedef enum flag_kind_e {
  FLAG_BOOL,
  FLAG_STRING,
  FLAG_STRING_LIST,  // repeatable; the count field follows the array
  FLAG_DOUBLE,
  FLAG_INT,
  FLAG_U64,  // 1 .. 2^62, into a uint64_t
  FLAG_FLAGFILE,
} flag_kind_t;

typedef struct flag_t {
  const char* name;
  flag_kind_t kind;
  size_t offset;
  size_t count_offset;  // FLAG_STRING_LIST only
  const char* help;
} flag_t;

#define FIELD(f) offsetof(kiln_run_flags_t, f)
#define LIST(f, n) FIELD(run.f), FIELD(run.n)

static const flag_t kFlags[] = {
    {"module", FLAG_STRING_LIST, LIST(modules, module_count),
     "a .kiln module to load (repeatable, dependencies first)"},
    {"device", FLAG_STRING, FIELD(run.device), 0,
     "device URI: vulkan (the first device), vulkan://N, vulkan://<uuid>"},
    {"function", FLAG_STRING, FIELD(run.function), 0,
     "the function to run (default: the module's only export)"},
    {"input", FLAG_STRING_LIST, LIST(inputs, input_count),
     "one argument, in order: 2x2xf32=1 2 3 4, 2x2xi32=[1 2][3 4], "
     "1x3xf32=0 (splat), 4xf32 (zeros), f32=1.5, 7, @x.npy / +x.npy (first / "
     "next array of a file), 2x2xf32=@x.bin (raw bytes) or 2x2xf32=@x.npy (must match), (null)"},
    {"output", FLAG_STRING_LIST, LIST(outputs, output_count),
     "where result i goes: - (stdout), @f.npy, +f.npy (append), @f.bin"},
    {"expected_output", FLAG_STRING_LIST, LIST(expected_outputs, expected_output_count),
     "the value result i must have (same syntax as --input); exit 1 if not"},
    {"expected_f32_threshold", FLAG_DOUBLE, FIELD(run.expected_f32_threshold),
     0, "largest |actual - expected| accepted for f32 (default 1e-4)"},
    {"expected_f16_threshold", FLAG_DOUBLE, FIELD(run.expected_f16_threshold),
     0, "the same for f16 and bf16 (default 1e-3)"},
    {"expected_f64_threshold", FLAG_DOUBLE, FIELD(run.expected_f64_threshold),
     0, "the same for f64 (default 1e-4)"},
    {"output_max_element_count", FLAG_INT,
     FIELD(run.output_max_element_count), 0,
     "print at most this many elements of each result (default 1024)"},
    {"call_count", FLAG_INT, FIELD(run.call_count), 0,
     "call the function this many times (statistics report the median)"},
    {"sessions", FLAG_INT, FIELD(run.sessions), 0,
     "then run the function on this many more sessions at once (one thread "
     "each, one device, one copy of the weights) and check every result "
     "equals the first session's"},
    {"print_statistics", FLAG_BOOL, FIELD(run.print_statistics), 0,
     "print load time, pipeline creation, first and median call time"},
    {"no_timestamps", FLAG_BOOL, FIELD(run.no_timestamps), 0,
     "with --print_statistics: no GPU timestamps around every dispatch (the "
     "wall time then carries none of their cost; no GPU times are printed)"},
    {"span_timestamps", FLAG_BOOL, FIELD(run.span_timestamps), 0,
     "with --print_statistics: GPU timestamps around each submission only, not "
     "every dispatch (a call's GPU time without the per-dispatch stamps' cost; "
     "no per-dispatch profile)"},
    {"slowest_dispatches", FLAG_INT, FIELD(run.slowest_dispatches), 0,
     "with --print_statistics: list this many of the slowest dispatches, with "
     "their grids (default 10)"},
    {"trace_execution", FLAG_BOOL, FIELD(run.trace_execution), 0,
     "print every call into the hal module as it happens"},
    {"pipeline_cache", FLAG_STRING, FIELD(run.pipeline_cache), 0,
     "load and save the Vulkan pipeline cache at this path"},
    {"fuel", FLAG_U64, FIELD(run.fuel), 0,
     "each call may take this many branches, calls and returns in bytecode; "
     "then it stops with 'fuel exhausted' (default: unlimited)"},
    {"deadline_ms", FLAG_U64, FIELD(run.deadline_ms), 0,
     "each call's bytecode stops with DEADLINE_EXCEEDED after this many "
     "milliseconds (default: none)"},
    {"memory_budget_mb", FLAG_U64, FIELD(run.memory_budget_mb), 0,
     "host + device memory the run may hold, in MiB (default 8192)"},
    {"validation", FLAG_BOOL, FIELD(run.validation), 0,
     "enable the Vulkan validation layer (also KILN_VULKAN_VALIDATION=1)"},
    {"list_drivers", FLAG_BOOL, FIELD(list_drivers), 0,
     "one line per HAL driver: name, description, available or why not"},
    {"list_devices", FLAG_BOOL, FIELD(list_devices), 0,
     "one driver://path line per device with its name and target triple"},
    {"dump_devices", FLAG_BOOL, FIELD(dump_devices), 0,
     "everything each device reports (or only --device's)"},
    {"flagfile", FLAG_FLAGFILE, 0, 0,
     "read more flags from a file, one per line ('#' starts a comment)"},
    {"help", FLAG_BOOL, FIELD(help), 0, "print this help"},
    {"version", FLAG_BOOL, FIELD(version), 0, "print kiln-run-module's version"},
};

void kiln_run_flags_print_help(const char* program) {
  printf(
      "usage: %s --module=m.kiln [--function=predict] [--input=...]... "
      "[flags]\n\n"
      "Runs a function of a compiled kiln module on a HAL device and prints "
      "or checks its results.\n\nflags:\n",
      program);
  for (size_t i = 0; i < sizeof(kFlags) / sizeof(kFlags[0]); ++i) {
    const char* value = kFlags[i].kind == FLAG_BOOL ? "" : "=VALUE";
    printf("  --%s%s%s\n      %s\n", kFlags[i].name, value,
           kFlags[i].kind == FLAG_STRING_LIST ? " (repeatable)" : "",
           kFlags[i].help);
  }
}

static kiln_status_t kiln_parse_one(const char* arg, kiln_run_flags_t* flags,
                                    int depth);

// Reads a flag file and parses each non-empty, non-comment line.
static kiln_status_t kiln_parse_flagfile(const char* path,
                                         kiln_run_flags_t* flags, int depth) {
  if (depth > 4) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "--flagfile nesting deeper than 4 at '%s'", path);
  }
  if (flags->flagfile_count == KILN_RUN_MAX_FLAGFILES) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "more than %d --flagfile files",
                            KILN_RUN_MAX_FLAGFILES);
  }
  kiln_file_contents_t contents;
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_file_read_all(path, kiln_allocator_system(), &contents),
      "reading --flagfile");
  char* text = (char*)contents.data;  // NUL-terminated; owned by flags now
  flags->flagfile_texts[flags->flagfile_count++] = text;
  int line_number = 0;
  for (char* line = text; line && *line;) {
    char* next = strchr(line, '\n');
    if (next) *next++ = 0;
    ++line_number;
    kiln_string_view_t trimmed =
        kiln_string_view_trim(kiln_make_cstring_view(line));
    if (trimmed.size > 0 && trimmed.data[0] != '#') {
      ((char*)trimmed.data)[trimmed.size] = 0;
      KILN_RETURN_IF_ERROR_ANNOTATE(
          kiln_parse_one(trimmed.data, flags, depth + 1), "%s:%d", path,
          line_number);
    }
    line = next;
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_parse_one(const char* arg, kiln_run_flags_t* flags,
                                    int depth) {
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
  char* field = (char*)flags + flag->offset;
  const char* value = equals ? equals + 1 : NULL;
  if (flag->kind == FLAG_BOOL) {
    if (value && strcmp(value, "true") != 0 && strcmp(value, "false") != 0) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "flag '--%s' takes true or false, not '%s'",
                              flag->name, value);
    }
    *(bool*)field = !value || strcmp(value, "true") == 0;
    return kiln_ok_status();
  }
  if (!value || !value[0]) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "flag '--%s' needs a value: --%s=VALUE",
                            flag->name, flag->name);
  }
  switch (flag->kind) {
    case FLAG_STRING:
      *(const char**)field = value;
      return kiln_ok_status();
    case FLAG_STRING_LIST: {
      size_t* count = (size_t*)((char*)flags + flag->count_offset);
      if (*count == KILN_RUN_MAX_VALUES) {
        return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                                "more than %d --%s flags", KILN_RUN_MAX_VALUES,
                                flag->name);
      }
      ((const char**)field)[(*count)++] = value;
      return kiln_ok_status();
    }
    case FLAG_DOUBLE: {
      double number = 0;
      KILN_RETURN_IF_ERROR_ANNOTATE(
          kiln_string_view_parse_f64(kiln_make_cstring_view(value), &number),
          "in flag '--%s'", flag->name);
      if (number < 0) {
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "flag '--%s' must not be negative", flag->name);
      }
      *(double*)field = number;
      return kiln_ok_status();
    }
    case FLAG_INT: {
      int64_t number = 0;
      KILN_RETURN_IF_ERROR_ANNOTATE(
          kiln_string_view_parse_i64(kiln_make_cstring_view(value), &number),
          "in flag '--%s'", flag->name);
      if (number < 1 || number > 1000000000) {
        return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                                "flag '--%s' must be between 1 and 1e9",
                                flag->name);
      }
      if (flag->offset == FIELD(run.call_count) ||
          flag->offset == FIELD(run.sessions)) {
        *(int*)field = (int)number;
      } else {
        *(size_t*)field = (size_t)number;
      }
      return kiln_ok_status();
    }
    case FLAG_U64: {
      int64_t number = 0;
      KILN_RETURN_IF_ERROR_ANNOTATE(
          kiln_string_view_parse_i64(kiln_make_cstring_view(value), &number),
          "in flag '--%s'", flag->name);
      if (number < 1 || number > ((int64_t)1 << 62)) {
        return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                                "flag '--%s' must be between 1 and 2^62",
                                flag->name);
      }
      *(uint64_t*)field = (uint64_t)number;
      return kiln_ok_status();
    }
    case FLAG_FLAGFILE:
      return kiln_parse_flagfile(value, flags, depth);
    default:
      return kiln_make_status(KILN_STATUS_INTERNAL, "bad flag kind");
  }
}

kiln_status_t kiln_run_flags_parse(int argc, char** argv,
                                   kiln_run_flags_t* out_flags) {
  memset(out_flags, 0, sizeof(*out_flags));
  kiln_run_options_init(&out_flags->run);
  for (int i = 1; i < argc; ++i) {
    KILN_RETURN_IF_ERROR(kiln_parse_one(argv[i], out_flags, 0));
  }
  return kiln_ok_status();
}

void kiln_run_flags_deinit(kiln_run_flags_t* flags) {
  for (int i = 0; i < flags->flagfile_count; ++i) free(flags->flagfile_texts[i]);
  flags->flagfile_count = 0;
}
