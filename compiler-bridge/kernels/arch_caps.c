// The kernels' view of an arch, read from the HAL's target table
// (hal/target/arch_table.c) so there is one table of per-arch capabilities.
#include <stdio.h>
#include <string.h>

#include "kiln/compiler/kernels_target.h"
#include "kiln/hal/target_triple.h"

kiln_kernel_arch_caps_t kiln_kernel_arch_caps_from_info(
    const kiln_target_arch_info_t* info) {
  kiln_kernel_arch_caps_t caps = {
      .arch = info->name,
      .subgroup_size = info->subgroup_size,
      .max_workgroup_invocations = info->max_workgroup_invocations,
      .max_shared_memory_bytes = info->max_shared_memory_bytes,
      .fp16_storage = (info->features & KILN_TARGET_FEATURE_STORAGE_16BIT) != 0,
      .fp16_arithmetic = (info->features & KILN_TARGET_FEATURE_FP16) != 0,
      .subgroup_arithmetic = (info->features & KILN_TARGET_FEATURE_SUBGROUP_OPS) != 0,
      .cooperative_matrix =
          (info->features & KILN_TARGET_FEATURE_COOPERATIVE_MATRIX) != 0,
      .max_storage_buffer_range = info->max_storage_buffer_range,
  };
  return caps;
}

kiln_status_t kiln_kernel_arch_caps_for_arch(const char* arch,
                                             kiln_kernel_arch_caps_t* out_caps) {
  if (out_caps) memset(out_caps, 0, sizeof(*out_caps));
  if (!arch || !out_caps) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_kernel_arch_caps_for_arch: NULL argument");
  }
  const kiln_target_arch_info_t* info = kiln_target_arch_lookup(arch);
  if (info) {
    *out_caps = kiln_kernel_arch_caps_from_info(info);
    return kiln_ok_status();
  }
  char known[512];
  size_t used = 0;
  known[0] = '\0';
  for (size_t i = 0; i < kiln_target_arch_count() && used < sizeof(known); ++i) {
    int n = snprintf(known + used, sizeof(known) - used, "%s%s", i ? ", " : "",
                     kiln_target_arch_at(i)->name);
    if (n < 0) break;
    used += (size_t)n;
  }
  return kiln_make_status(KILN_STATUS_NOT_FOUND,
                          "unknown arch '%s' (known: %s)", arch, known);
}
