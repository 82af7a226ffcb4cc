// TensorProto -> kiln tensor: dtype and shape checks, inline typed fields,
// raw bytes and external data files (offset/length checked against the file).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/file.h"
#include "kiln/base/size_math.h"
#include "kiln/compiler/onnx.h"
#include "onnx_internal.h"

kiln_graph_dtype_t kiln_onnx_dtype_from_proto(int32_t data_type) {
  switch (data_type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return KILN_GRAPH_DTYPE_F32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return KILN_GRAPH_DTYPE_I64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return KILN_GRAPH_DTYPE_I32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return KILN_GRAPH_DTYPE_BOOL;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: return KILN_GRAPH_DTYPE_I8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: return KILN_GRAPH_DTYPE_U8;
    default: return KILN_GRAPH_DTYPE_INVALID;
  }
}

const char* kiln_onnx_proto_dtype_name(int32_t data_type) {
  static const char* const kNames[] = {
      "UNDEFINED", "FLOAT",   "UINT8",  "INT8",      "UINT16",     "INT16",
      "INT32",     "INT64",   "STRING", "BOOL",      "FLOAT16",    "DOUBLE",
      "UINT32",    "UINT64",  "COMPLEX64", "COMPLEX128", "BFLOAT16"};
  if (data_type >= 0 &&
      (size_t)data_type < sizeof(kNames) / sizeof(kNames[0])) {
    return kNames[data_type];
  }
  return "UNKNOWN";
}

// Reads [offset, offset+length) of `location` (relative to model_dir).
static kiln_status_t kiln_onnx_read_external(const Onnx__TensorProto* proto,
                                             const char* model_dir,
                                             const char* source,
                                             kiln_graph_tensor_t* tensor) {
  const char* name = proto->name ? proto->name : "";
  const char* location = NULL;
  uint64_t offset = 0;
  uint64_t length = UINT64_MAX;
  for (size_t i = 0; i < proto->n_external_data; ++i) {
    const Onnx__StringStringEntryProto* entry = proto->external_data[i];
    if (!entry->key || !entry->value) continue;
    if (strcmp(entry->key, "location") == 0) {
      location = entry->value;
    } else if (strcmp(entry->key, "offset") == 0 ||
               strcmp(entry->key, "length") == 0) {
      char* end = NULL;
      unsigned long long parsed = strtoull(entry->value, &end, 10);
      if (!entry->value[0] || *end || entry->value[0] == '-') {
        return kiln_make_status(
            KILN_STATUS_INVALID_ARGUMENT,
            "%s: tensor '%s': external data %s '%s' is not a number", source,
            name, entry->key, entry->value);
      }
      if (entry->key[0] == 'o') offset = parsed; else length = parsed;
    }
  }
  if (!location || !location[0]) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: tensor '%s': external data has no location",
                            source, name);
  }
  if (!model_dir) {
    return kiln_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "%s: tensor '%s': external data needs the model's path", source, name);
  }
  // Only files beside the model: no absolute paths, no climbing out.
  if (location[0] == '/' || strstr(location, "..")) {
    return kiln_make_status(
        KILN_STATUS_PERMISSION_DENIED,
        "%s: tensor '%s': external data location '%s' must be a relative path "
        "inside the model's folder",
        source, name, location);
  }
  char path[4096];
  int written = snprintf(path, sizeof(path), "%s/%s", model_dir, location);
  if (written < 0 || (size_t)written >= sizeof(path)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: tensor '%s': external data path too long",
                            source, name);
  }
  if (length == UINT64_MAX) length = tensor->byte_size;
  if (length != tensor->byte_size) {
    return kiln_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "%s: tensor '%s': external data length %llu but the shape needs %zu "
        "bytes",
        source, name, (unsigned long long)length, tensor->byte_size);
  }
  // Symlinks (of the file or of a folder on the way) must not lead out of
  // the model's folder either: the resolved path is checked, then opened.
  char resolved[4096];
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_file_resolve_inside(model_dir, path, resolved, sizeof(resolved)),
      "%s: external data of tensor '%s'", source, name);
  kiln_file_mapping_t mapping;
  KILN_RETURN_IF_ERROR_ANNOTATE(kiln_file_map(resolved, &mapping),
                                "%s: external data of tensor '%s'", source,
                                name);
  if (!kiln_range_fits(offset, length, mapping.size)) {
    size_t file_size = mapping.size;
    kiln_file_unmap(&mapping);
    return kiln_make_status(
        KILN_STATUS_OUT_OF_RANGE,
        "%s: tensor '%s': external data [%llu, +%llu) lies outside '%s' (%zu "
        "bytes)",
        source, name, (unsigned long long)offset, (unsigned long long)length,
        path, file_size);
  }
  if (length) memcpy(tensor->data, mapping.data + offset, (size_t)length);
  kiln_file_unmap(&mapping);
  return kiln_ok_status();
}

static kiln_status_t kiln_onnx_count_mismatch(const char* source,
                                              const char* name,
                                              const char* field, size_t have,
                                              size_t want) {
  return kiln_make_status(
      KILN_STATUS_INVALID_ARGUMENT,
      "%s: tensor '%s': %s holds %zu elements but the shape needs %zu", source,
      name, field, have, want);
}

kiln_status_t kiln_onnx_tensor_decode(const Onnx__TensorProto* proto,
                                      const char* model_dir,
                                      const char* source,
                                      kiln_allocator_t allocator,
                                      kiln_graph_tensor_t* out_tensor) {
  memset(out_tensor, 0, sizeof(*out_tensor));
  const char* name = proto->name ? proto->name : "";
  kiln_graph_dtype_t dtype = kiln_onnx_dtype_from_proto(proto->data_type);
  if (dtype == KILN_GRAPH_DTYPE_INVALID) {
    return kiln_make_status(
        KILN_STATUS_UNIMPLEMENTED,
        "%s: tensor '%s' has dtype %s; supported: FLOAT, INT64, INT32, BOOL, "
        "INT8, UINT8",
        source, name, kiln_onnx_proto_dtype_name(proto->data_type));
  }
  if (proto->segment) {
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                            "%s: tensor '%s' is segmented", source, name);
  }
  kiln_graph_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  if (proto->n_dims > KILN_GRAPH_MAX_RANK) {
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                            "%s: tensor '%s' has rank %zu; at most %d", source,
                            name, proto->n_dims, KILN_GRAPH_MAX_RANK);
  }
  shape.rank = (int32_t)proto->n_dims;
  for (size_t i = 0; i < proto->n_dims; ++i) {
    if (proto->dims[i] < 0) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "%s: tensor '%s' has negative dim %lld", source,
                              name, (long long)proto->dims[i]);
    }
    shape.dims[i] = proto->dims[i];
  }
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_graph_tensor_allocate(allocator, dtype, &shape, out_tensor),
      "%s: tensor '%s'", source, name);
  size_t count = out_tensor->byte_size / kiln_graph_dtype_size(dtype);
  kiln_status_t status = kiln_ok_status();
  if (proto->has_data_location &&
      proto->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    status = kiln_onnx_read_external(proto, model_dir, source, out_tensor);
  } else if (proto->has_raw_data) {
    if (proto->raw_data.len != out_tensor->byte_size) {
      status = kiln_make_status(
          KILN_STATUS_INVALID_ARGUMENT,
          "%s: tensor '%s': raw_data has %zu bytes but the shape needs %zu",
          source, name, proto->raw_data.len, out_tensor->byte_size);
    } else if (proto->raw_data.len) {
      memcpy(out_tensor->data, proto->raw_data.data, proto->raw_data.len);
    }
  } else if (dtype == KILN_GRAPH_DTYPE_F32) {
    if (proto->n_float_data != count) {
      status = kiln_onnx_count_mismatch(source, name, "float_data",
                                        proto->n_float_data, count);
    } else if (count) {
      memcpy(out_tensor->data, proto->float_data, count * sizeof(float));
    }
  } else if (dtype == KILN_GRAPH_DTYPE_I64) {
    if (proto->n_int64_data != count) {
      status = kiln_onnx_count_mismatch(source, name, "int64_data",
                                        proto->n_int64_data, count);
    } else if (count) {
      memcpy(out_tensor->data, proto->int64_data, count * sizeof(int64_t));
    }
  } else {  // INT32, BOOL, INT8 and UINT8 all live in int32_data.
    if (proto->n_int32_data != count) {
      status = kiln_onnx_count_mismatch(source, name, "int32_data",
                                        proto->n_int32_data, count);
    } else if (dtype == KILN_GRAPH_DTYPE_I32) {
      if (count) {
        memcpy(out_tensor->data, proto->int32_data, count * sizeof(int32_t));
      }
    } else if (dtype == KILN_GRAPH_DTYPE_I8 || dtype == KILN_GRAPH_DTYPE_U8) {
      for (size_t i = 0; i < count; ++i) {  // the low byte, as protobuf stores it
        ((uint8_t*)out_tensor->data)[i] = (uint8_t)proto->int32_data[i];
      }
    } else {
      uint8_t* bytes = (uint8_t*)out_tensor->data;
      for (size_t i = 0; i < count; ++i) bytes[i] = proto->int32_data[i] != 0;
    }
  }
  if (dtype == KILN_GRAPH_DTYPE_BOOL && kiln_status_is_ok(status)) {
    uint8_t* bytes = (uint8_t*)out_tensor->data;  // normalize to 0/1
    for (size_t i = 0; i < count; ++i) bytes[i] = bytes[i] != 0;
  }
  if (!kiln_status_is_ok(status)) kiln_graph_tensor_deinit(out_tensor);
  return status;
}

kiln_status_t kiln_onnx_read_tensor_file(const char* path,
                                         kiln_allocator_t allocator,
                                         kiln_graph_tensor_t* out_tensor) {
  memset(out_tensor, 0, sizeof(*out_tensor));
  kiln_file_contents_t contents;
  KILN_RETURN_IF_ERROR(kiln_file_read_all(path, allocator, &contents));
  Onnx__TensorProto* proto =
      onnx__tensor_proto__unpack(NULL, contents.size, contents.data);
  kiln_file_contents_deinit(&contents);
  if (!proto) {
    return kiln_make_status(KILN_STATUS_DATA_LOSS,
                            "%s: not a valid TensorProto (protobuf parse "
                            "failed)",
                            path);
  }
  kiln_status_t status =
      kiln_onnx_tensor_decode(proto, NULL, path, allocator, out_tensor);
  onnx__tensor_proto__free_unpacked(proto, NULL);
  return status;
}
