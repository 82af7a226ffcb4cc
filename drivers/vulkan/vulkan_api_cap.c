// The API-version cap: `KILN_VULKAN_API_VERSION=1.1` or `vulkan://0?api=1.1`
// makes the driver treat the device as a plain device of that version (no
// later core features, no optional extensions), so tests under the
// validation layer prove kiln runs on an Android-floor Vulkan 1.1 device.
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

kiln_status_t kiln_vk_api_cap_from_path(kiln_string_view_t* inout_path,
                                        uint32_t* out_cap) {
  KILN_RETURN_IF_ERROR(kiln_vk_api_cap_from_environment(out_cap));
  kiln_string_view_t device_part, query;
  if (!kiln_string_view_split(*inout_path, '?', &device_part, &query)) {
    return kiln_ok_status();
  }
  const kiln_string_view_t key = kiln_make_cstring_view("api=");
  if (!kiln_string_view_starts_with(query, key)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "vulkan device URI option '%.*s' is unknown "
                            "(known: api=1.1|1.2|1.3)",
                            KILN_SV_ARG(query));
  }
  uint32_t uri_cap = 0;
  KILN_RETURN_IF_ERROR(parse_version(
      kiln_string_view_substring(query, key.size, SIZE_MAX),
      "vulkan device URI", &uri_cap));
  // The lower of the two caps wins: either one asks for "no newer than".
  if (!*out_cap || uri_cap < *out_cap) *out_cap = uri_cap;
  *inout_path = device_part;
  return kiln_ok_status();
}
