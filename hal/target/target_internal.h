// Helpers shared by the target-triple files; not public.
#ifndef KILN_HAL_TARGET_TARGET_INTERNAL_H_
#define KILN_HAL_TARGET_TARGET_INTERNAL_H_

#include <stdbool.h>
#include <stddef.h>

// "android30" -> ("android", 30); "linux" -> ("linux", 0).
bool kiln_target_os_split(const char* os, char* family, size_t family_size,
                          int* version);
bool kiln_target_os_known(const char* os);
// Comma-separated known OS tokens; returns the length needed.
size_t kiln_target_os_list(char* buffer, size_t buffer_size);

#endif  // KILN_HAL_TARGET_TARGET_INTERNAL_H_
