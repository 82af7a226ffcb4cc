#include "npy.h"

#include <errno.h>
#include <string.h>

#include "kiln/base/reader.h"
#include "kiln/base/size_math.h"

static const uint8_t kiln_npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

// Little-endian (or byte-sized) dtypes only; '=' is native, which is little
// endian on every machine kiln runs on.
static const struct {
  const char* descr;
  kiln_element_type_t type;
} kiln_npy_dtypes[] = {
    {"f2", KILN_ELEMENT_F16}, {"f4", KILN_ELEMENT_F32},
    {"f8", KILN_ELEMENT_F64}, {"i1", KILN_ELEMENT_I8},
    {"i2", KILN_ELEMENT_I16}, {"i4", KILN_ELEMENT_I32},
    {"i8", KILN_ELEMENT_I64}, {"u1", KILN_ELEMENT_U8},
    {"u2", KILN_ELEMENT_U16}, {"u4", KILN_ELEMENT_U32},
    {"u8", KILN_ELEMENT_U64}, {"b1", KILN_ELEMENT_BOOL},
};

// Finds `'key':` in the header dict and returns the text after the colon.
static bool kiln_npy_find_key(kiln_string_view_t header, const char* key,
                              kiln_string_view_t* out_value) {
  char quoted[32];
  snprintf(quoted, sizeof(quoted), "'%s'", key);
  size_t key_length = strlen(quoted);
  for (size_t i = 0; i + key_length <= header.size; ++i) {
    if (memcmp(header.data + i, quoted, key_length) == 0) {
      kiln_string_view_t rest = kiln_string_view_substring(
          header, i + key_length, header.size);
      rest = kiln_string_view_trim(rest);
      if (rest.size == 0 || rest.data[0] != ':') return false;
      *out_value = kiln_string_view_trim(
          kiln_string_view_substring(rest, 1, rest.size));
      return true;
    }
  }
  return false;
}

static kiln_status_t kiln_npy_parse_descr(kiln_string_view_t value,
                                          const char* what,
                                          kiln_element_type_t* out_type) {
  if (value.size < 2 || value.data[0] != '\'') {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: malformed 'descr' in .npy header", what);
  }
  size_t end = kiln_string_view_find_char(
      kiln_string_view_substring(value, 1, value.size), '\'');
  if (end == SIZE_MAX) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: unterminated 'descr' in .npy header", what);
  }
  kiln_string_view_t descr = kiln_make_string_view(value.data + 1, end);
  if (descr.size == 3 && (descr.data[0] == '<' || descr.data[0] == '|' ||
                          descr.data[0] == '=')) {
    kiln_string_view_t code = kiln_make_string_view(descr.data + 1, 2);
    for (size_t i = 0; i < sizeof(kiln_npy_dtypes) / sizeof(kiln_npy_dtypes[0]);
         ++i) {
      if (kiln_string_view_equal_cstring(code, kiln_npy_dtypes[i].descr)) {
        *out_type = kiln_npy_dtypes[i].type;
        return kiln_ok_status();
      }
    }
  }
  return kiln_make_status(
      KILN_STATUS_UNIMPLEMENTED,
      "%s: unsupported NumPy dtype '%.*s' (supported: little-endian f2 f4 f8 "
      "i1 i2 i4 i8 u1 u2 u4 u8 b1)",
      what, KILN_SV_ARG(descr));
}

// Parses "(1, 3, 224, 224)", "(5,)" or "()".
static kiln_status_t kiln_npy_parse_shape(kiln_string_view_t value,
                                          const char* what, size_t* out_rank,
                                          int64_t* dims) {
  if (value.size == 0 || value.data[0] != '(') {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: malformed 'shape' in .npy header", what);
  }
  size_t close = kiln_string_view_find_char(value, ')');
  if (close == SIZE_MAX) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: unterminated 'shape' in .npy header", what);
  }
  kiln_string_view_t list = kiln_make_string_view(value.data + 1, close - 1);
  size_t rank = 0;
  while (true) {
    list = kiln_string_view_trim(list);
    if (list.size == 0) break;
    kiln_string_view_t item, rest;
    kiln_string_view_split(list, ',', &item, &rest);
    item = kiln_string_view_trim(item);
    if (item.size > 0) {
      if (rank == KILN_HOST_TENSOR_MAX_RANK) {
        return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                                "%s: .npy array rank exceeds %d", what,
                                KILN_HOST_TENSOR_MAX_RANK);
      }
      int64_t dim = 0;
      kiln_status_t status = kiln_string_view_parse_i64(item, &dim);
      if (!kiln_status_is_ok(status) || dim < 0) {
        kiln_status_free(status);
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "%s: bad dimension '%.*s' in .npy shape", what,
                                KILN_SV_ARG(item));
      }
      dims[rank++] = dim;
    }
    list = rest;
  }
  *out_rank = rank;
  return kiln_ok_status();
}

kiln_status_t kiln_npy_parse(kiln_const_byte_span_t bytes, const char* what,
                             size_t* inout_offset, kiln_allocator_t allocator,
                             kiln_host_tensor_t* out_tensor) {
  memset(out_tensor, 0, sizeof(*out_tensor));
  kiln_reader_t reader;
  kiln_reader_init(&reader, bytes, 0, what);
  KILN_RETURN_IF_ERROR(kiln_reader_seek(&reader, *inout_offset));
  kiln_const_byte_span_t magic;
  if (kiln_reader_remaining(&reader) < 10) {
    return kiln_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "%s: no .npy array at offset %zu (%zu bytes left; need a 10-byte "
        "header)",
        what, *inout_offset, kiln_reader_remaining(&reader));
  }
  KILN_RETURN_IF_ERROR(kiln_reader_read_span(&reader, 6, &magic));
  if (memcmp(magic.data, kiln_npy_magic, 6) != 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: not a NumPy .npy file (bad magic at offset "
                            "%zu)",
                            what, *inout_offset);
  }
  uint8_t major, minor;
  KILN_RETURN_IF_ERROR(kiln_reader_read_u8(&reader, &major));
  KILN_RETURN_IF_ERROR(kiln_reader_read_u8(&reader, &minor));
  uint32_t header_length;
  if (major == 1) {
    uint16_t length16;
    KILN_RETURN_IF_ERROR(kiln_reader_read_u16(&reader, &length16));
    header_length = length16;
  } else if (major == 2 || major == 3) {
    KILN_RETURN_IF_ERROR(kiln_reader_read_u32(&reader, &header_length));
  } else {
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                            "%s: .npy format version %u.%u is not supported "
                            "(1.x-3.x are)",
                            what, major, minor);
  }
  kiln_const_byte_span_t header_bytes;
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_reader_read_span(&reader, header_length, &header_bytes),
      "reading the .npy header");
  kiln_string_view_t header =
      kiln_make_string_view((const char*)header_bytes.data, header_bytes.size);

  kiln_string_view_t value;
  if (!kiln_npy_find_key(header, "descr", &value)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: .npy header has no 'descr'", what);
  }
  kiln_element_type_t type;
  KILN_RETURN_IF_ERROR(kiln_npy_parse_descr(value, what, &type));
  if (!kiln_npy_find_key(header, "fortran_order", &value)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: .npy header has no 'fortran_order'", what);
  }
  if (kiln_string_view_starts_with(value, kiln_make_cstring_view("True"))) {
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                            "%s: fortran-order .npy arrays are not supported; "
                            "save a C-order array (numpy.ascontiguousarray)",
                            what);
  }
  if (!kiln_npy_find_key(header, "shape", &value)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: .npy header has no 'shape'", what);
  }
  size_t rank = 0;
  int64_t dims[KILN_HOST_TENSOR_MAX_RANK];
  KILN_RETURN_IF_ERROR(kiln_npy_parse_shape(value, what, &rank, dims));

  // The data must be in the file before anything is allocated for it: a
  // 128-byte file must not ask for gigabytes.
  size_t element_count = 0, byte_size = 0;
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_host_tensor_byte_size(type, rank, dims, &element_count, &byte_size),
      "%s", what);
  if (byte_size > kiln_reader_remaining(&reader)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "%s: .npy header promises %zu bytes of data but "
                            "only %zu follow",
                            what, byte_size, kiln_reader_remaining(&reader));
  }
  kiln_host_tensor_t tensor;
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_host_tensor_allocate(allocator, type, rank, dims, &tensor), "%s",
      what);
  kiln_const_byte_span_t payload;
  kiln_status_t status =
      kiln_reader_read_span(&reader, tensor.byte_size, &payload);
  if (!kiln_status_is_ok(status)) {
    kiln_host_tensor_deinit(&tensor);
    return kiln_status_annotate(status, "reading .npy array data");
  }
  if (payload.size) memcpy(tensor.data, payload.data, payload.size);
  *inout_offset = reader.offset;
  *out_tensor = tensor;
  return kiln_ok_status();
}

kiln_status_t kiln_npy_serialize(const kiln_host_tensor_t* tensor,
                                 kiln_byte_buffer_t* out) {
  const char* descr = NULL;
  for (size_t i = 0; i < sizeof(kiln_npy_dtypes) / sizeof(kiln_npy_dtypes[0]);
       ++i) {
    if (kiln_npy_dtypes[i].type == tensor->element_type) {
      descr = kiln_npy_dtypes[i].descr;
    }
  }
  if (!descr) {
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                            "element type %s has no NumPy dtype",
                            kiln_element_type_name(tensor->element_type));
  }
  char header[512];
  int length = snprintf(header, sizeof(header),
                        "{'descr': '%c%s', 'fortran_order': False, 'shape': (",
                        descr[1] == '1' ? '|' : '<', descr);
  for (size_t i = 0; i < tensor->rank; ++i) {
    length += snprintf(header + length, sizeof(header) - (size_t)length,
                       "%lld,%s", (long long)tensor->dims[i],
                       i + 1 < tensor->rank ? " " : "");
  }
  if (tensor->rank > 1) length--;  // "(2, 3)" not "(2, 3,)"
  length += snprintf(header + length, sizeof(header) - (size_t)length, "), }");
  // Pad with spaces so data starts 64-byte aligned, newline last.
  size_t prefix = 10;
  size_t total = prefix + (size_t)length + 1;
  size_t padded = (total + 63) & ~(size_t)63;
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append(out, kiln_npy_magic, 6));
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u8(out, 1));
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u8(out, 0));
  KILN_RETURN_IF_ERROR(
      kiln_byte_buffer_append_u16(out, (uint16_t)(padded - prefix)));
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append(out, header, (size_t)length));
  for (size_t i = total; i < padded; ++i) {
    KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u8(out, ' '));
  }
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_append_u8(out, '\n'));
  return kiln_byte_buffer_append(out, tensor->data, tensor->byte_size);
}

kiln_status_t kiln_npy_write_file(const char* path,
                                  const kiln_host_tensor_t* tensor,
                                  bool append) {
  kiln_byte_buffer_t buffer;
  kiln_byte_buffer_init(&buffer, kiln_allocator_system());
  kiln_status_t status = kiln_npy_serialize(tensor, &buffer);
  if (kiln_status_is_ok(status)) {
    FILE* file = fopen(path, append ? "ab" : "wb");
    if (!file) {
      status = kiln_make_status(KILN_STATUS_UNAVAILABLE,
                                "cannot open '%s' for writing: %s", path,
                                strerror(errno));
    } else {
      size_t written = fwrite(buffer.data, 1, buffer.size, file);
      if (fclose(file) != 0 || written != buffer.size) {
        status = kiln_make_status(KILN_STATUS_UNAVAILABLE,
                                  "cannot write '%s'", path);
      }
    }
  }
  kiln_byte_buffer_deinit(&buffer);
  return status;
}
