// Conservative per-arch capabilities (DESIGN.md section 6; where a row gives
// a range, the smaller value) so the bridge can build a variant for a
// triple without a device in hand.
#include <stdio.h>
#include <string.h>

#include "kiln/compiler/kernels_target.h"

typedef struct kiln_arch_caps_row_t {
  const char* arch;
  kiln_kernel_arch_caps_t caps;
} kiln_arch_caps_row_t;

// subgroup, max invocations, shared bytes, fp16 storage, fp16 math,
// subgroup arithmetic, cooperative matrix.
static const kiln_arch_caps_row_t kArchCaps[] = {
    {"unknown", {64, 128, 16 * 1024, false, false, false, false}},
    {"cpu", {8, 1024, 32 * 1024, true, true, true, false}},
    {"valhall", {16, 512, 32 * 1024, true, true, true, false}},
    {"adreno", {64, 1024, 32 * 1024, true, true, true, false}},
    {"rdna1", {64, 1024, 64 * 1024, true, true, true, false}},
    {"rdna2", {64, 1024, 64 * 1024, true, true, true, false}},
    {"rdna3", {64, 1024, 64 * 1024, true, true, true, true}},
    {"pascal", {32, 1024, 48 * 1024, true, true, true, false}},
    {"turing", {32, 1024, 64 * 1024, true, true, true, true}},
    {"ampere", {32, 1024, 64 * 1024, true, true, true, true}},
    {"ada", {32, 1024, 64 * 1024, true, true, true, true}},
    {"hopper", {32, 1024, 64 * 1024, true, true, true, true}},
    {"arc", {8, 1024, 32 * 1024, true, true, true, false}},
    {"m1", {32, 1024, 32 * 1024, true, true, true, false}},
};

kiln_status_t kiln_kernel_arch_caps_for_arch(const char* arch,
                                             kiln_kernel_arch_caps_t* out_caps) {
  if (out_caps) memset(out_caps, 0, sizeof(*out_caps));
  if (!arch || !out_caps) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_kernel_arch_caps_for_arch: NULL argument");
  }
  const size_t count = sizeof(kArchCaps) / sizeof(kArchCaps[0]);
  for (size_t i = 0; i < count; ++i) {
    if (strcmp(kArchCaps[i].arch, arch) == 0) {
      *out_caps = kArchCaps[i].caps;
      return kiln_ok_status();
    }
  }
  char known[256];
  size_t used = 0;
  known[0] = '\0';
  for (size_t i = 0; i < count && used < sizeof(known); ++i) {
    int n = snprintf(known + used, sizeof(known) - used, "%s%s", i ? ", " : "",
                     kArchCaps[i].arch);
    if (n < 0) break;
    used += (size_t)n;
  }
  return kiln_make_status(KILN_STATUS_NOT_FOUND,
                          "unknown arch '%s' (known: %s)", arch, known);
}
