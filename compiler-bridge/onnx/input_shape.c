// Parses --input-shape=NAME:1x3x224x224 overrides.
#include <string.h>

#include "kiln/base/views.h"
#include "kiln/compiler/onnx.h"

kiln_status_t kiln_onnx_parse_input_shape(const char* text,
                                          kiln_onnx_input_shape_t* out_shape) {
  memset(out_shape, 0, sizeof(*out_shape));
  kiln_string_view_t view = kiln_make_cstring_view(text);
  size_t colon = kiln_string_view_find_last_char(view, ':');
  if (colon == SIZE_MAX || colon == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "input shape '%s' must look like NAME:1x3x224x224",
                            text);
  }
  if (colon >= sizeof(out_shape->name)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "input shape '%s': name too long", text);
  }
  memcpy(out_shape->name, text, colon);
  out_shape->name[colon] = 0;
  kiln_string_view_t dims = kiln_string_view_substring(view, colon + 1,
                                                       view.size);
  if (kiln_string_view_equal_cstring(dims, "scalar")) return kiln_ok_status();
  if (dims.size == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "input shape '%s' has no dimensions", text);
  }
  while (true) {
    kiln_string_view_t head, tail;
    bool more = kiln_string_view_split(dims, 'x', &head, &tail);
    if (out_shape->shape.rank >= KILN_GRAPH_MAX_RANK) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "input shape '%s' has more than %d dims", text,
                              KILN_GRAPH_MAX_RANK);
    }
    int64_t dim = 0;
    kiln_status_t status = kiln_string_view_parse_i64(head, &dim);
    if (!kiln_status_is_ok(status) || dim < 0) {
      kiln_status_ignore(status);
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "input shape '%s': dimension '%.*s' is not a "
                              "non-negative integer",
                              text, KILN_SV_ARG(head));
    }
    out_shape->shape.dims[out_shape->shape.rank++] = dim;
    if (!more) break;
    dims = tail;
  }
  return kiln_ok_status();
}
