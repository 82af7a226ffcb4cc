// Chooses among an executable's variants: same arch and product, then same
// arch, then same vendor family, then the portable fallback; never a variant
// whose required features or limits the device lacks.
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kiln/hal/target_triple.h"
#include "target_internal.h"

// True when a variant built for `want` runs on an OS `have`: same family,
// and an Android API level no newer than the device's.
static bool os_compatible(const char* want, const char* have) {
  if (strcmp(want, "unknown") == 0) return true;
  char want_family[KILN_TARGET_TOKEN_CAPACITY];
  char have_family[KILN_TARGET_TOKEN_CAPACITY];
  int want_version = 0, have_version = 0;
  if (!kiln_target_os_split(want, want_family, sizeof(want_family),
                            &want_version) ||
      !kiln_target_os_split(have, have_family, sizeof(have_family),
                            &have_version)) {
    return false;
  }
  return strcmp(want_family, have_family) == 0 && want_version <= have_version;
}

static kiln_target_match_t refuse(char* reason, size_t reason_size,
                                  const char* format, ...)
    KILN_PRINTF_LIKE(3, 4);

static kiln_target_match_t refuse(char* reason, size_t reason_size,
                                  const char* format, ...) {
  if (reason && reason_size) {
    va_list args;
    va_start(args, format);
    vsnprintf(reason, reason_size, format, args);
    va_end(args);
  }
  return KILN_TARGET_MATCH_NONE;
}

static kiln_target_match_t check_needs(
    const kiln_target_variant_desc_t* variant,
    const kiln_target_device_caps_t* device, char* reason,
    size_t reason_size) {
  kiln_target_features_t missing =
      variant->required_features & ~device->features;
  if (missing) {
    char names[256];
    kiln_target_features_format(missing, names, sizeof(names));
    return refuse(reason, reason_size, "device lacks %s", names);
  }
  const kiln_target_limits_t* need = &variant->min_limits;
  const kiln_target_limits_t* have = &device->limits;
  if (need->subgroup_size) {
    bool fixed = need->subgroup_size == have->subgroup_size;
    bool controllable =
        (device->features & KILN_TARGET_FEATURE_SUBGROUP_SIZE_CONTROL) &&
        need->subgroup_size >= device->min_subgroup_size &&
        need->subgroup_size <= device->max_subgroup_size;
    if (!fixed && !controllable) {
      return refuse(reason, reason_size,
                    "needs subgroup size %u, device has %u (range %u..%u)",
                    need->subgroup_size, have->subgroup_size,
                    device->min_subgroup_size, device->max_subgroup_size);
    }
  }
#define KILN_CHECK_LIMIT(field, what)                                       \
  if (need->field > have->field) {                                          \
    return refuse(reason, reason_size, "needs %s %llu, device has %llu",    \
                  what, (unsigned long long)need->field,                    \
                  (unsigned long long)have->field);                         \
  }
  KILN_CHECK_LIMIT(max_workgroup_invocations, "workgroup invocations");
  KILN_CHECK_LIMIT(max_shared_memory_bytes, "shared memory bytes");
  KILN_CHECK_LIMIT(max_push_constant_bytes, "push constant bytes");
  KILN_CHECK_LIMIT(max_storage_buffer_range, "storage buffer range");
#undef KILN_CHECK_LIMIT
  return KILN_TARGET_MATCH_PORTABLE;  // any non-NONE value: needs are met
}

kiln_target_match_t kiln_target_variant_rank(
    const kiln_target_variant_desc_t* variant,
    const kiln_target_device_caps_t* device, char* reason,
    size_t reason_size) {
  kiln_target_triple_t want;
  kiln_status_t status = kiln_target_triple_parse(
      kiln_make_cstring_view(variant->selector), &want);
  if (status) {
    char text[256];
    kiln_status_format(status, text, sizeof(text));
    kiln_status_free(status);
    return refuse(reason, reason_size, "bad selector: %s", text);
  }
  const kiln_target_triple_t* have = &device->triple;
  if (!os_compatible(want.os, have->os)) {
    return refuse(reason, reason_size, "OS %s does not run on %s", want.os,
                  have->os);
  }
  kiln_target_match_t match;
  if (strcmp(want.arch, "unknown") == 0) {
    match = KILN_TARGET_MATCH_PORTABLE;
  } else if (strcmp(want.arch, have->arch) == 0) {
    if (strcmp(want.product, "unknown") == 0) {
      match = KILN_TARGET_MATCH_ARCH;
    } else if (strcmp(want.product, have->product) == 0) {
      match = KILN_TARGET_MATCH_EXACT;
    } else {
      return refuse(reason, reason_size, "product %s is not the device's %s",
                    want.product, have->product);
    }
  } else {
    const kiln_target_arch_info_t* want_arch =
        kiln_target_arch_lookup(want.arch);
    const kiln_target_arch_info_t* have_arch =
        kiln_target_arch_lookup(have->arch);
    if (!want_arch || !have_arch ||
        strcmp(want_arch->vendor, have_arch->vendor) != 0) {
      return refuse(reason, reason_size,
                    "arch %s (%s) is not the device's %s (%s)", want.arch,
                    want_arch ? want_arch->vendor : "?", have->arch,
                    have_arch ? have_arch->vendor : "?");
    }
    if (strcmp(want.product, "unknown") != 0) {
      return refuse(reason, reason_size,
                    "product %s of arch %s is not the device's %s-%s",
                    want.product, want.arch, have->arch, have->product);
    }
    match = KILN_TARGET_MATCH_VENDOR;
  }
  if (check_needs(variant, device, reason, reason_size) ==
      KILN_TARGET_MATCH_NONE) {
    return KILN_TARGET_MATCH_NONE;
  }
  return match;
}

static const char* match_name(kiln_target_match_t match) {
  switch (match) {
    case KILN_TARGET_MATCH_EXACT: return "same arch and product";
    case KILN_TARGET_MATCH_ARCH: return "same arch";
    case KILN_TARGET_MATCH_VENDOR: return "same vendor family";
    case KILN_TARGET_MATCH_PORTABLE: return "portable fallback";
    default: return "refused";
  }
}

kiln_status_t kiln_target_variant_select(
    const kiln_target_variant_desc_t* variants, size_t variant_count,
    const kiln_target_device_caps_t* device, size_t* out_index,
    kiln_target_match_t* out_match) {
  *out_index = 0;
  if (out_match) *out_match = KILN_TARGET_MATCH_NONE;
  kiln_target_match_t best = KILN_TARGET_MATCH_NONE;
  size_t best_index = 0;
  for (size_t i = 0; i < variant_count; ++i) {
    kiln_target_match_t match =
        kiln_target_variant_rank(&variants[i], device, NULL, 0);
    if (match > best) {
      best = match;
      best_index = i;
    }
  }
  if (best != KILN_TARGET_MATCH_NONE) {
    *out_index = best_index;
    if (out_match) *out_match = best;
    return kiln_ok_status();
  }
  // Nothing fits: list every variant and why it was refused.
  char device_text[KILN_TARGET_TRIPLE_TEXT_CAPACITY];
  kiln_target_triple_format(&device->triple, device_text, sizeof(device_text));
  char list[2048];
  size_t used = 0;
  list[0] = '\0';
  for (size_t i = 0; i < variant_count && used < sizeof(list); ++i) {
    char reason[320];
    kiln_target_variant_rank(&variants[i], device, reason, sizeof(reason));
    int n = snprintf(list + used, sizeof(list) - used, "%s[%zu] '%s': %s",
                     i ? "; " : "", i, variants[i].selector, reason);
    if (n < 0) break;
    used += (size_t)n;
  }
  return kiln_make_status(KILN_STATUS_NOT_FOUND,
                          "no variant runs on device %s (%zu seen%s%s)",
                          device_text, variant_count,
                          variant_count ? ": " : "", list);
}

const char* kiln_target_match_name(kiln_target_match_t match) {
  return match_name(match);
}
