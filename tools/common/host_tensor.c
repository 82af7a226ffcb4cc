#include "host_tensor.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kiln/base/size_math.h"

static const struct {
  const char* name;
  size_t size;
} kiln_element_types[KILN_ELEMENT_TYPE_COUNT] = {
    [KILN_ELEMENT_NONE] = {NULL, 0},     [KILN_ELEMENT_F16] = {"f16", 2},
    [KILN_ELEMENT_BF16] = {"bf16", 2},   [KILN_ELEMENT_F32] = {"f32", 4},
    [KILN_ELEMENT_F64] = {"f64", 8},     [KILN_ELEMENT_I8] = {"i8", 1},
    [KILN_ELEMENT_I16] = {"i16", 2},     [KILN_ELEMENT_I32] = {"i32", 4},
    [KILN_ELEMENT_I64] = {"i64", 8},     [KILN_ELEMENT_U8] = {"u8", 1},
    [KILN_ELEMENT_U16] = {"u16", 2},     [KILN_ELEMENT_U32] = {"u32", 4},
    [KILN_ELEMENT_U64] = {"u64", 8},     [KILN_ELEMENT_BOOL] = {"bool", 1},
};

const char* kiln_element_type_name(kiln_element_type_t type) {
  if ((unsigned)type >= KILN_ELEMENT_TYPE_COUNT) return NULL;
  return kiln_element_types[type].name;
}

size_t kiln_element_type_size(kiln_element_type_t type) {
  if ((unsigned)type >= KILN_ELEMENT_TYPE_COUNT) return 0;
  return kiln_element_types[type].size;
}

bool kiln_element_type_is_float(kiln_element_type_t type) {
  return type == KILN_ELEMENT_F16 || type == KILN_ELEMENT_BF16 ||
         type == KILN_ELEMENT_F32 || type == KILN_ELEMENT_F64;
}

kiln_status_t kiln_element_type_parse(kiln_string_view_t text,
                                      kiln_element_type_t* out_type) {
  *out_type = KILN_ELEMENT_NONE;
  for (int i = 1; i < KILN_ELEMENT_TYPE_COUNT; ++i) {
    if (kiln_string_view_equal_cstring(text, kiln_element_types[i].name)) {
      *out_type = (kiln_element_type_t)i;
      return kiln_ok_status();
    }
  }
  // i1 is how MLIR-based tools spell bool.
  if (kiln_string_view_equal_cstring(text, "i1")) {
    *out_type = KILN_ELEMENT_BOOL;
    return kiln_ok_status();
  }
  return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                          "unknown element type '%.*s' (known: f16 bf16 f32 "
                          "f64 i8 i16 i32 i64 u8 u16 u32 u64 bool)",
                          KILN_SV_ARG(text));
}

static size_t g_host_tensor_limit = KILN_HOST_TENSOR_DEFAULT_LIMIT;

void kiln_host_tensor_set_limit(size_t max_bytes) {
  g_host_tensor_limit = max_bytes;
}
size_t kiln_host_tensor_limit(void) { return g_host_tensor_limit; }

kiln_status_t kiln_host_tensor_byte_size(kiln_element_type_t element_type,
                                         size_t rank, const int64_t* dims,
                                         size_t* out_count,
                                         size_t* out_byte_size) {
  *out_count = 0;
  *out_byte_size = 0;
  if (rank > KILN_HOST_TENSOR_MAX_RANK) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "rank %zu exceeds the maximum of %d", rank,
                            KILN_HOST_TENSOR_MAX_RANK);
  }
  size_t element_size = kiln_element_type_size(element_type);
  if (element_size == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "invalid element type %d", (int)element_type);
  }
  size_t count = 1;
  for (size_t i = 0; i < rank; ++i) {
    if (dims[i] < 0) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "dimension %zu is negative (%lld)", i,
                              (long long)dims[i]);
    }
    if (!kiln_size_mul(count, (size_t)dims[i], &count)) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                              "tensor element count overflows");
    }
  }
  size_t byte_size;
  if (!kiln_size_mul(count, element_size, &byte_size)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "tensor byte size overflows");
  }
  if (byte_size > g_host_tensor_limit) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "tensor needs %zu bytes, more than the host "
                            "tensor limit of %zu bytes (the memory budget)",
                            byte_size, g_host_tensor_limit);
  }
  *out_count = count;
  *out_byte_size = byte_size;
  return kiln_ok_status();
}

kiln_status_t kiln_host_tensor_allocate(kiln_allocator_t allocator,
                                        kiln_element_type_t element_type,
                                        size_t rank, const int64_t* dims,
                                        kiln_host_tensor_t* out_tensor) {
  memset(out_tensor, 0, sizeof(*out_tensor));
  size_t count = 0, byte_size = 0;
  KILN_RETURN_IF_ERROR(kiln_host_tensor_byte_size(element_type, rank, dims,
                                                  &count, &byte_size));
  void* data = NULL;
  if (byte_size > 0) {
    KILN_RETURN_IF_ERROR(kiln_allocator_calloc(allocator, byte_size, &data));
  }
  out_tensor->allocator = allocator;
  out_tensor->element_type = element_type;
  out_tensor->rank = rank;
  for (size_t i = 0; i < rank; ++i) out_tensor->dims[i] = dims[i];
  out_tensor->element_count = count;
  out_tensor->byte_size = byte_size;
  out_tensor->data = (uint8_t*)data;
  return kiln_ok_status();
}

void kiln_host_tensor_deinit(kiln_host_tensor_t* tensor) {
  if (tensor->data) kiln_allocator_free(tensor->allocator, tensor->data);
  memset(tensor, 0, sizeof(*tensor));
}

#define KILN_LOAD(type, p) \
  ({                       \
    type v_;               \
    memcpy(&v_, (p), sizeof(v_)); \
    v_;                    \
  })

double kiln_host_tensor_get_f64(const kiln_host_tensor_t* tensor,
                                size_t index) {
  const uint8_t* p =
      tensor->data + index * kiln_element_type_size(tensor->element_type);
  switch (tensor->element_type) {
    case KILN_ELEMENT_F16: return kiln_f16_to_f32(KILN_LOAD(uint16_t, p));
    case KILN_ELEMENT_BF16: return kiln_bf16_to_f32(KILN_LOAD(uint16_t, p));
    case KILN_ELEMENT_F32: return KILN_LOAD(float, p);
    case KILN_ELEMENT_F64: return KILN_LOAD(double, p);
    case KILN_ELEMENT_I8: return KILN_LOAD(int8_t, p);
    case KILN_ELEMENT_I16: return KILN_LOAD(int16_t, p);
    case KILN_ELEMENT_I32: return KILN_LOAD(int32_t, p);
    case KILN_ELEMENT_I64: return (double)KILN_LOAD(int64_t, p);
    case KILN_ELEMENT_U8: return KILN_LOAD(uint8_t, p);
    case KILN_ELEMENT_U16: return KILN_LOAD(uint16_t, p);
    case KILN_ELEMENT_U32: return KILN_LOAD(uint32_t, p);
    case KILN_ELEMENT_U64: return (double)KILN_LOAD(uint64_t, p);
    case KILN_ELEMENT_BOOL: return KILN_LOAD(uint8_t, p) ? 1.0 : 0.0;
    default: return NAN;
  }
}

#define KILN_STORE(type, p, v) \
  do {                         \
    type v_ = (type)(v);       \
    memcpy((p), &v_, sizeof(v_)); \
  } while (0)

// Float -> integer conversion saturates instead of invoking undefined
// behaviour on out-of-range values.
static int64_t kiln_saturate_i64(double value, double lo, double hi) {
  if (isnan(value)) return 0;
  if (value <= lo) return (int64_t)lo;
  if (value >= hi) return (int64_t)hi;
  return (int64_t)value;
}

void kiln_host_tensor_set_f64(kiln_host_tensor_t* tensor, size_t index,
                              double value) {
  uint8_t* p =
      tensor->data + index * kiln_element_type_size(tensor->element_type);
  switch (tensor->element_type) {
    case KILN_ELEMENT_F16: KILN_STORE(uint16_t, p, kiln_f32_to_f16((float)value)); break;
    case KILN_ELEMENT_BF16: KILN_STORE(uint16_t, p, kiln_f32_to_bf16((float)value)); break;
    case KILN_ELEMENT_F32: KILN_STORE(float, p, value); break;
    case KILN_ELEMENT_F64: KILN_STORE(double, p, value); break;
    case KILN_ELEMENT_I8: KILN_STORE(int8_t, p, kiln_saturate_i64(value, -128, 127)); break;
    case KILN_ELEMENT_I16: KILN_STORE(int16_t, p, kiln_saturate_i64(value, -32768, 32767)); break;
    case KILN_ELEMENT_I32: KILN_STORE(int32_t, p, kiln_saturate_i64(value, -2147483648.0, 2147483647.0)); break;
    case KILN_ELEMENT_I64: KILN_STORE(int64_t, p, kiln_saturate_i64(value, -9223372036854775808.0, 9223372036854774784.0)); break;
    case KILN_ELEMENT_U8: KILN_STORE(uint8_t, p, kiln_saturate_i64(value, 0, 255)); break;
    case KILN_ELEMENT_U16: KILN_STORE(uint16_t, p, kiln_saturate_i64(value, 0, 65535)); break;
    case KILN_ELEMENT_U32: KILN_STORE(uint32_t, p, kiln_saturate_i64(value, 0, 4294967295.0)); break;
    case KILN_ELEMENT_U64:
      if (isnan(value) || value <= 0) KILN_STORE(uint64_t, p, 0);
      else if (value >= 18446744073709549568.0) KILN_STORE(uint64_t, p, UINT64_MAX);
      else KILN_STORE(uint64_t, p, (uint64_t)value);
      break;
    case KILN_ELEMENT_BOOL: KILN_STORE(uint8_t, p, value != 0); break;
    default: break;
  }
}

void kiln_host_tensor_set_i64(kiln_host_tensor_t* tensor, size_t index,
                              int64_t value) {
  uint8_t* p =
      tensor->data + index * kiln_element_type_size(tensor->element_type);
  switch (tensor->element_type) {
    case KILN_ELEMENT_I64: KILN_STORE(int64_t, p, value); break;
    case KILN_ELEMENT_U64: KILN_STORE(uint64_t, p, (uint64_t)value); break;
    default: kiln_host_tensor_set_f64(tensor, index, (double)value); break;
  }
}

void kiln_host_tensor_format_shape(const kiln_host_tensor_t* tensor,
                                   char* buffer, size_t buffer_size) {
  size_t used = 0;
  if (buffer_size == 0) return;
  buffer[0] = 0;
  for (size_t i = 0; i < tensor->rank && used < buffer_size; ++i) {
    int n = snprintf(buffer + used, buffer_size - used, "%lldx",
                     (long long)tensor->dims[i]);
    if (n < 0) return;
    used += (size_t)n;
  }
  if (used < buffer_size) {
    const char* name = kiln_element_type_name(tensor->element_type);
    snprintf(buffer + used, buffer_size - used, "%s", name ? name : "?");
  }
}
