#include "kiln/format/signature.h"

#include <string.h>

static bool kiln_signature_char_valid(char c) {
  return c == 'i' || c == 'I' || c == 'f' || c == 'F' || c == 'r';
}

kiln_status_t kiln_format_signature_parse(kiln_string_view_t text,
                                          kiln_format_signature_t* out) {
  memset(out, 0, sizeof(*out));
  size_t underscore = kiln_string_view_find_char(text, '_');
  if (underscore == SIZE_MAX) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "signature '%.*s' has no '_' between arguments "
                            "and results",
                            KILN_SV_ARG(text));
  }
  kiln_string_view_t sides[2] = {
      kiln_string_view_substring(text, 0, underscore),
      kiln_string_view_substring(text, underscore + 1, SIZE_MAX)};
  uint8_t counts[2] = {0, 0};
  size_t type_index = 0;
  for (int side = 0; side < 2; ++side) {
    kiln_string_view_t part = sides[side];
    if (part.size == 1 && part.data[0] == 'v') continue;
    if (part.size == 0) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "signature '%.*s' has an empty %s list (write "
                              "'v' for none)",
                              KILN_SV_ARG(text),
                              side == 0 ? "argument" : "result");
    }
    if (part.size > KILN_FORMAT_MAX_SIGNATURE_VALUES) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "signature '%.*s' has %zu %s, more than %u",
                              KILN_SV_ARG(text), part.size,
                              side == 0 ? "arguments" : "results",
                              KILN_FORMAT_MAX_SIGNATURE_VALUES);
    }
    for (size_t i = 0; i < part.size; ++i) {
      if (!kiln_signature_char_valid(part.data[i])) {
        return kiln_make_status(
            KILN_STATUS_INVALID_ARGUMENT,
            "signature '%.*s' has unknown type '%c' at position %zu (known: "
            "i I f F r, v for none)",
            KILN_SV_ARG(text), part.data[i],
            (size_t)(part.data + i - text.data));
      }
      out->types[type_index++] = part.data[i];
    }
    counts[side] = (uint8_t)part.size;
  }
  out->text = text;
  out->arg_count = counts[0];
  out->result_count = counts[1];
  return kiln_ok_status();
}
