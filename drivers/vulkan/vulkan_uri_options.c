// Device URI options and the API-version cap. `KILN_VULKAN_API_VERSION=1.1`
// or `vulkan://0?api=1.1` makes the driver treat the device as a plain
// device of that version (no later core features, no optional extensions),
// so tests under the validation layer prove kiln runs on an Android-floor
// Vulkan 1.1 device. `?triple=valhall-g78-android30` (tests) makes the
// device pick variants as if it were that target; each variant's needs are
// still checked against the device's own features and limits.
// `?wait=` picks how fence and submit-timeline waits wait (vulkan_wait.c):
// `auto` (the default: on GPUs spin up to 5 ms, then block; CPU devices
// block), `block` or `poll` (spin until done).
#include <stdlib.h>
#include <string.h>

#include "vulkan_internal.h"

static kiln_status_t parse_version(kiln_string_view_t text, const char* where,
                                   uint32_t* out_cap) {
  kiln_string_view_t major_text, minor_text;
  uint64_t major = 0, minor = 0;
  bool ok = kiln_string_view_split(text, '.', &major_text, &minor_text);
  if (ok) {
    kiln_status_t status = kiln_string_view_parse_u64(major_text, &major);
    if (!status) status = kiln_string_view_parse_u64(minor_text, &minor);
    ok = !status;
    kiln_status_free(status);
  }
  if (!ok || major != 1 || minor < 1 || minor > 3) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: Vulkan API version '%.*s' is not one of "
                            "1.1, 1.2, 1.3",
                            where, KILN_SV_ARG(text));
  }
  *out_cap = VK_MAKE_API_VERSION(0, (uint32_t)major, (uint32_t)minor, 0);
  return kiln_ok_status();
}

kiln_status_t kiln_vk_api_cap_from_environment(uint32_t* out_cap) {
  *out_cap = 0;
  const char* value = getenv("KILN_VULKAN_API_VERSION");
  if (!value || !value[0]) return kiln_ok_status();
  return parse_version(kiln_make_cstring_view(value),
                       "KILN_VULKAN_API_VERSION", out_cap);
}

static kiln_status_t parse_option(kiln_string_view_t option,
                                  kiln_vk_uri_options_t* options) {
  kiln_string_view_t key, value;
  if (kiln_string_view_split(option, '=', &key, &value)) {
    if (kiln_string_view_equal_cstring(key, "api")) {
      uint32_t uri_cap = 0;
      KILN_RETURN_IF_ERROR(
          parse_version(value, "vulkan device URI", &uri_cap));
      // The lower cap wins: either one asks for "no newer than".
      if (!options->api_cap || uri_cap < options->api_cap) {
        options->api_cap = uri_cap;
      }
      return kiln_ok_status();
    }
    if (kiln_string_view_equal_cstring(key, "wait")) {
      static const char* const kModes[] = {"auto", "block", "poll"};
      for (size_t m = 0; m < sizeof(kModes) / sizeof(kModes[0]); ++m) {
        if (kiln_string_view_equal_cstring(value, kModes[m])) {
          options->wait = (kiln_vk_wait_mode_t)m;
          return kiln_ok_status();
        }
      }
    }
    if (kiln_string_view_equal_cstring(key, "triple")) {
      kiln_target_triple_t triple;
      KILN_RETURN_IF_ERROR_ANNOTATE(kiln_target_triple_parse(value, &triple),
                                    "vulkan device URI option 'triple'");
      options->pose_triple = triple;
      options->pose = true;
      return kiln_ok_status();
    }
  }
  return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                          "vulkan device URI option '%.*s' is unknown "
                          "(known: api=1.1|1.2|1.3, triple=ARCH-PRODUCT-OS, "
                          "wait=auto|block|poll)",
                          KILN_SV_ARG(option));
}

kiln_status_t kiln_vk_uri_options_parse(kiln_string_view_t* inout_path,
                                        kiln_vk_uri_options_t* out_options) {
  memset(out_options, 0, sizeof(*out_options));
  KILN_RETURN_IF_ERROR(
      kiln_vk_api_cap_from_environment(&out_options->api_cap));
  kiln_string_view_t device_part, rest;
  if (!kiln_string_view_split(*inout_path, '?', &device_part, &rest)) {
    return kiln_ok_status();
  }
  kiln_string_view_t option;
  bool more = true;
  while (more) {
    more = kiln_string_view_split(rest, '&', &option, &rest);
    KILN_RETURN_IF_ERROR(parse_option(option, out_options));
  }
  *inout_path = device_part;
  return kiln_ok_status();
}
