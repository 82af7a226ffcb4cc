#include "tensor_text.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/file.h"
#include "npy.h"

void kiln_input_parser_init(kiln_input_parser_t* parser,
                            kiln_allocator_t allocator) {
  memset(parser, 0, sizeof(*parser));
  parser->allocator = allocator;
  parser->max_tensor_bytes = UINT64_C(4) << 30;
}

void kiln_input_parser_deinit(kiln_input_parser_t* parser) {
  for (size_t i = 0; i < parser->file_count; ++i) free(parser->file_paths[i]);
  memset(parser, 0, sizeof(*parser));
}

void kiln_input_value_deinit(kiln_input_value_t* value) {
  if (value->kind == KILN_INPUT_TENSOR) kiln_host_tensor_deinit(&value->tensor);
  memset(value, 0, sizeof(*value));
}

kiln_status_t kiln_tensor_type_parse(kiln_string_view_t text, size_t* out_rank,
                                     int64_t* dims,
                                     kiln_element_type_t* out_type) {
  size_t rank = 0;
  kiln_string_view_t rest = text;
  while (true) {
    kiln_string_view_t token;
    bool more = kiln_string_view_split(rest, 'x', &token, &rest);
    if (!more) {
      KILN_RETURN_IF_ERROR_ANNOTATE(kiln_element_type_parse(token, out_type),
                                    "in tensor type '%.*s'",
                                    KILN_SV_ARG(text));
      *out_rank = rank;
      return kiln_ok_status();
    }
    if (rank == KILN_HOST_TENSOR_MAX_RANK) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                              "tensor type '%.*s' has more than %d dimensions",
                              KILN_SV_ARG(text), KILN_HOST_TENSOR_MAX_RANK);
    }
    int64_t dim = -1;
    kiln_status_t status = kiln_string_view_parse_i64(token, &dim);
    if (!kiln_status_is_ok(status) || dim < 0 || token.data[0] == '-' ||
        token.data[0] == '+') {
      kiln_status_free(status);
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "bad dimension '%.*s' in tensor type '%.*s' "
                              "(expected e.g. 2x3xf32)",
                              KILN_SV_ARG(token), KILN_SV_ARG(text));
    }
    dims[rank++] = dim;
  }
}

static bool kiln_is_separator(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' ||
         c == '[' || c == ']';
}

// Parses one element token into the tensor at `index`.
static kiln_status_t kiln_parse_element(kiln_host_tensor_t* tensor,
                                        size_t index, kiln_string_view_t token) {
  kiln_element_type_t type = tensor->element_type;
  if (type == KILN_ELEMENT_BOOL) {
    if (kiln_string_view_equal_cstring(token, "true")) {
      kiln_host_tensor_set_i64(tensor, index, 1);
      return kiln_ok_status();
    }
    if (kiln_string_view_equal_cstring(token, "false")) {
      kiln_host_tensor_set_i64(tensor, index, 0);
      return kiln_ok_status();
    }
  }
  if (kiln_element_type_is_float(type)) {
    double value;
    KILN_RETURN_IF_ERROR(kiln_string_view_parse_f64(token, &value));
    kiln_host_tensor_set_f64(tensor, index, value);
    return kiln_ok_status();
  }
  if (type == KILN_ELEMENT_U64) {
    uint64_t value;
    KILN_RETURN_IF_ERROR(kiln_string_view_parse_u64(token, &value));
    kiln_host_tensor_set_i64(tensor, index, (int64_t)value);
    return kiln_ok_status();
  }
  int64_t value;
  KILN_RETURN_IF_ERROR(kiln_string_view_parse_i64(token, &value));
  static const struct {
    kiln_element_type_t type;
    int64_t lo, hi;
  } ranges[] = {
      {KILN_ELEMENT_I8, INT8_MIN, INT8_MAX},
      {KILN_ELEMENT_I16, INT16_MIN, INT16_MAX},
      {KILN_ELEMENT_I32, INT32_MIN, INT32_MAX},
      {KILN_ELEMENT_I64, INT64_MIN, INT64_MAX},
      {KILN_ELEMENT_U8, 0, UINT8_MAX},
      {KILN_ELEMENT_U16, 0, UINT16_MAX},
      {KILN_ELEMENT_U32, 0, UINT32_MAX},
      {KILN_ELEMENT_BOOL, 0, 1},
  };
  for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); ++i) {
    if (ranges[i].type == type &&
        (value < ranges[i].lo || value > ranges[i].hi)) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                              "value %" PRId64 " does not fit in %s", value,
                              kiln_element_type_name(type));
    }
  }
  kiln_host_tensor_set_i64(tensor, index, value);
  return kiln_ok_status();
}

static kiln_status_t kiln_parse_values(kiln_host_tensor_t* tensor,
                                       kiln_string_view_t text) {
  size_t count = 0;
  size_t i = 0;
  kiln_string_view_t first = {0};
  while (i < text.size) {
    while (i < text.size && kiln_is_separator(text.data[i])) ++i;
    if (i == text.size) break;
    size_t start = i;
    while (i < text.size && !kiln_is_separator(text.data[i])) ++i;
    kiln_string_view_t token = kiln_make_string_view(text.data + start, i - start);
    if (count == 0) first = token;
    if (count < tensor->element_count) {
      KILN_RETURN_IF_ERROR_ANNOTATE(kiln_parse_element(tensor, count, token),
                                    "element %zu", count);
    }
    ++count;
  }
  if (count == 1 && tensor->element_count > 1) {
    // One value splats: parse it once, then copy its bytes.
    KILN_RETURN_IF_ERROR(kiln_parse_element(tensor, 0, first));
    size_t element_size = kiln_element_type_size(tensor->element_type);
    for (size_t j = 1; j < tensor->element_count; ++j) {
      memcpy(tensor->data + j * element_size, tensor->data, element_size);
    }
    return kiln_ok_status();
  }
  if (count != tensor->element_count) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "got %zu values for a tensor of %zu elements "
                            "(give one value to splat, or all of them)",
                            count, tensor->element_count);
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_parse_npy_reference(kiln_input_parser_t* parser,
                                              const char* path, bool next,
                                              kiln_input_value_t* out_value) {
  size_t slot = SIZE_MAX;
  for (size_t i = 0; i < parser->file_count; ++i) {
    if (strcmp(parser->file_paths[i], path) == 0) slot = i;
  }
  if (slot == SIZE_MAX) {
    if (parser->file_count == KILN_INPUT_PARSER_MAX_FILES) {
      return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                              "more than %d distinct .npy files",
                              KILN_INPUT_PARSER_MAX_FILES);
    }
    slot = parser->file_count++;
    parser->file_paths[slot] = strdup(path);
    parser->file_offsets[slot] = 0;
    if (!parser->file_paths[slot]) {
      parser->file_count--;
      return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory");
    }
  }
  size_t offset = next ? parser->file_offsets[slot] : 0;
  kiln_file_contents_t contents;
  KILN_RETURN_IF_ERROR(kiln_file_read_all_limited(
      path, kiln_host_tensor_limit() + KILN_HOST_TENSOR_FILE_SLACK,
      parser->allocator, &contents));
  kiln_status_t status = kiln_npy_parse(
      kiln_make_const_byte_span(contents.data, contents.size), path, &offset,
      parser->allocator, &out_value->tensor);
  kiln_file_contents_deinit(&contents);
  KILN_RETURN_IF_ERROR(status);
  parser->file_offsets[slot] = offset;
  out_value->kind = KILN_INPUT_TENSOR;
  return kiln_ok_status();
}

// `SHAPExTYPE=@x.npy`: the file's first array must have exactly that shape
// and type (the form users write after iree-run-module's `@file.bin`).
static kiln_status_t kiln_copy_npy_checked(const kiln_file_contents_t* contents,
                                           const char* path,
                                           kiln_host_tensor_t* tensor) {
  size_t offset = 0;
  kiln_host_tensor_t loaded;
  KILN_RETURN_IF_ERROR(kiln_npy_parse(
      kiln_make_const_byte_span(contents->data, contents->size), path, &offset,
      tensor->allocator, &loaded));
  bool same = loaded.element_type == tensor->element_type &&
              loaded.rank == tensor->rank &&
              loaded.byte_size == tensor->byte_size;
  for (size_t i = 0; same && i < tensor->rank; ++i) {
    same = loaded.dims[i] == tensor->dims[i];
  }
  kiln_status_t status = kiln_ok_status();
  if (!same) {
    char have[256], want[256];
    kiln_host_tensor_format_shape(&loaded, have, sizeof(have));
    kiln_host_tensor_format_shape(tensor, want, sizeof(want));
    status = kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              ".npy file '%s' holds %s but the input says %s "
                              "(or write --input=@%s to take the file's own shape)",
                              path, have, want, path);
  } else if (tensor->byte_size) {
    memcpy(tensor->data, loaded.data, tensor->byte_size);
  }
  kiln_host_tensor_deinit(&loaded);
  return status;
}

static kiln_status_t kiln_parse_raw_file(const char* path,
                                         kiln_host_tensor_t* tensor) {
  kiln_file_contents_t contents;
  KILN_RETURN_IF_ERROR(kiln_file_read_all_limited(
      path, tensor->byte_size + KILN_HOST_TENSOR_FILE_SLACK, tensor->allocator,
      &contents));
  kiln_status_t status = kiln_ok_status();
  static const char kNpyMagic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};
  if (contents.size >= sizeof(kNpyMagic) &&
      memcmp(contents.data, kNpyMagic, sizeof(kNpyMagic)) == 0) {
    status = kiln_copy_npy_checked(&contents, path, tensor);
  } else if (contents.size != tensor->byte_size) {
    status = kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "raw file '%s' holds %zu bytes but the tensor "
                              "needs %zu",
                              path, contents.size, tensor->byte_size);
  } else if (contents.size) {
    memcpy(tensor->data, contents.data, contents.size);
  }
  kiln_file_contents_deinit(&contents);
  return status;
}

static kiln_status_t kiln_input_parse_inner(kiln_input_parser_t* parser,
                                            const char* text,
                                            kiln_input_value_t* out_value) {
  kiln_string_view_t all = kiln_string_view_trim(kiln_make_cstring_view(text));
  if (kiln_string_view_equal_cstring(all, "(null)")) {
    out_value->kind = KILN_INPUT_NULL;
    return kiln_ok_status();
  }
  if (all.size > 1 && (all.data[0] == '@' || all.data[0] == '+')) {
    return kiln_parse_npy_reference(parser, text + (all.data + 1 - text),
                                    all.data[0] == '+', out_value);
  }
  kiln_string_view_t type_text, values_text;
  bool has_values = kiln_string_view_split(all, '=', &type_text, &values_text);
  if (!has_values) {
    // A plain scalar ("7", "-1.5") or a zero tensor ("4xf32", "f32").
    int64_t i64;
    double f64;
    kiln_status_t as_int = kiln_string_view_parse_i64(all, &i64);
    if (kiln_status_is_ok(as_int)) {
      out_value->kind = KILN_INPUT_SCALAR;
      out_value->scalar_is_integer = true;
      out_value->scalar_i64 = i64;
      out_value->scalar_f64 = (double)i64;
      return kiln_ok_status();
    }
    kiln_status_free(as_int);
    kiln_status_t as_float = kiln_string_view_parse_f64(all, &f64);
    if (kiln_status_is_ok(as_float)) {
      out_value->kind = KILN_INPUT_SCALAR;
      out_value->scalar_f64 = f64;
      return kiln_ok_status();
    }
    kiln_status_free(as_float);
  }
  size_t rank = 0;
  int64_t dims[KILN_HOST_TENSOR_MAX_RANK];
  kiln_element_type_t type;
  KILN_RETURN_IF_ERROR(
      kiln_tensor_type_parse(kiln_string_view_trim(type_text), &rank, dims, &type));
  uint64_t bytes = kiln_element_type_size(type);
  for (size_t i = 0; i < rank; ++i) {
    if (dims[i] != 0 && bytes > parser->max_tensor_bytes / (uint64_t)dims[i]) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                              "tensor '%.*s' would exceed %llu bytes",
                              KILN_SV_ARG(type_text),
                              (unsigned long long)parser->max_tensor_bytes);
    }
    bytes *= (uint64_t)dims[i];
  }
  KILN_RETURN_IF_ERROR(kiln_host_tensor_allocate(parser->allocator, type, rank,
                                                 dims, &out_value->tensor));
  out_value->kind = KILN_INPUT_TENSOR;
  if (!has_values) return kiln_ok_status();  // zeros
  values_text = kiln_string_view_trim(values_text);
  if (values_text.size > 1 && values_text.data[0] == '@') {
    return kiln_parse_raw_file(values_text.data + 1, &out_value->tensor);
  }
  return kiln_parse_values(&out_value->tensor, values_text);
}

kiln_status_t kiln_input_parser_parse(kiln_input_parser_t* parser,
                                      const char* text,
                                      kiln_input_value_t* out_value) {
  memset(out_value, 0, sizeof(*out_value));
  kiln_status_t status = kiln_input_parse_inner(parser, text, out_value);
  if (!kiln_status_is_ok(status)) {
    kiln_input_value_deinit(out_value);
    return kiln_status_annotate(status, "in input '%s'", text);
  }
  return kiln_ok_status();
}

static void kiln_print_element(FILE* stream, const kiln_host_tensor_t* tensor,
                               size_t index) {
  double value = kiln_host_tensor_get_f64(tensor, index);
  if (kiln_element_type_is_float(tensor->element_type)) {
    fprintf(stream, "%.7g", value);
  } else if (tensor->element_type == KILN_ELEMENT_I64) {
    int64_t v;
    memcpy(&v, tensor->data + index * 8, 8);
    fprintf(stream, "%" PRId64, v);
  } else if (tensor->element_type == KILN_ELEMENT_U64) {
    uint64_t v;
    memcpy(&v, tensor->data + index * 8, 8);
    fprintf(stream, "%" PRIu64, v);
  } else {
    fprintf(stream, "%.0f", value);
  }
}

void kiln_tensor_print(FILE* stream, const kiln_host_tensor_t* tensor,
                       size_t max_elements) {
  char shape[256];
  kiln_host_tensor_format_shape(tensor, shape, sizeof(shape));
  fprintf(stream, "%s=", shape);
  if (tensor->rank == 0) {
    kiln_print_element(stream, tensor, 0);
    fputc('\n', stream);
    return;
  }
  // Brackets open for every dimension but the innermost, as IREE prints.
  size_t index[KILN_HOST_TENSOR_MAX_RANK] = {0};
  size_t printed = 0;
  for (size_t e = 0; e < tensor->element_count; ++e) {
    if (printed == max_elements) {
      fputs("...", stream);
      break;
    }
    for (size_t d = 0; d + 1 < tensor->rank; ++d) {
      bool opens = true;
      for (size_t k = d + 1; k < tensor->rank; ++k) opens &= index[k] == 0;
      if (opens) fputc('[', stream);
    }
    if (index[tensor->rank - 1] != 0) fputc(' ', stream);
    kiln_print_element(stream, tensor, e);
    ++printed;
    // Advance the multi-index and close finished dimensions.
    for (size_t d = tensor->rank; d-- > 0;) {
      if (++index[d] < (size_t)tensor->dims[d]) break;
      index[d] = 0;
      if (d > 0) fputc(']', stream);
    }
  }
  fputc('\n', stream);
}

kiln_status_t kiln_tensor_compare(const kiln_host_tensor_t* actual,
                                  const kiln_host_tensor_t* expected,
                                  double threshold) {
  char actual_shape[256], expected_shape[256];
  kiln_host_tensor_format_shape(actual, actual_shape, sizeof(actual_shape));
  kiln_host_tensor_format_shape(expected, expected_shape,
                                sizeof(expected_shape));
  if (strcmp(actual_shape, expected_shape) != 0) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                            "expected a %s result, got %s", expected_shape,
                            actual_shape);
  }
  bool is_float = kiln_element_type_is_float(actual->element_type);
  size_t element_size = kiln_element_type_size(actual->element_type);
  for (size_t i = 0; i < actual->element_count; ++i) {
    bool equal;
    if (is_float) {
      double a = kiln_host_tensor_get_f64(actual, i);
      double b = kiln_host_tensor_get_f64(expected, i);
      equal = (isnan(a) && isnan(b)) || fabs(a - b) <= threshold ||
              (isinf(a) && a == b);
    } else {
      equal = memcmp(actual->data + i * element_size,
                     expected->data + i * element_size, element_size) == 0;
    }
    if (!equal) {
      return kiln_make_status(
          KILN_STATUS_FAILED_PRECONDITION,
          "element %zu differs: got %.9g, expected %.9g (threshold %g)", i,
          kiln_host_tensor_get_f64(actual, i),
          kiln_host_tensor_get_f64(expected, i), is_float ? threshold : 0.0);
    }
  }
  return kiln_ok_status();
}
