// A module file's executable as a HAL executable description: used by
// hal.executable.lookup, and by the fuzzer that checks every variant of a
// module without a device (tests/fuzz/module_interface_fuzzer.c).
#ifndef KILN_MODULES_HAL_EXECUTABLE_SPEC_H_
#define KILN_MODULES_HAL_EXECUTABLE_SPEC_H_

#include "kiln/base/arena.h"
#include "kiln/format/executables.h"
#include "kiln/hal/executable.h"

// Everything a HAL spec points at, in one arena so one deinit frees it.
typedef struct kiln_hal_spec_storage_t {
  kiln_arena_t arena;
  kiln_hal_executable_spec_t spec;
} kiln_hal_spec_storage_t;

// Fills out->spec from `executable`; out->arena must be initialized, and is
// deinitialized by the caller either way.
kiln_status_t kiln_hal_convert_executable(
    const kiln_format_executable_t* executable, kiln_hal_spec_storage_t* out);

#endif  // KILN_MODULES_HAL_EXECUTABLE_SPEC_H_
