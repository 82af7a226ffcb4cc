// Takes the initializers' raw_data out of a ModelProto before protobuf-c
// unpacks it: unpack would copy every bytes field, so a mapped model would be
// in memory twice. Only the wire framing of ModelProto.graph,
// GraphProto.initializer and TensorProto.raw_data is walked (bounds-checked);
// protobuf-c still parses everything else from the slimmed copy.
#include <string.h>

#include "kiln/base/size_math.h"
#include "onnx_internal.h"

enum {
  KILN_PB_MODEL_GRAPH = 7,        // ModelProto.graph
  KILN_PB_GRAPH_INITIALIZER = 5,  // GraphProto.initializer
  KILN_PB_TENSOR_RAW_DATA = 9,    // TensorProto.raw_data
  KILN_PB_WIRE_VARINT = 0,
  KILN_PB_WIRE_FIXED64 = 1,
  KILN_PB_WIRE_BYTES = 2,
  KILN_PB_WIRE_FIXED32 = 5,
};

typedef struct kiln_pb_field_t {
  uint64_t number;
  uint32_t wire;
  size_t start;          // first byte of the tag
  size_t payload;        // first byte of a BYTES payload
  size_t payload_size;   // of a BYTES payload
  size_t end;            // one past the field
} kiln_pb_field_t;

static kiln_status_t kiln_pb_bad(const char* source) {
  return kiln_make_status(KILN_STATUS_DATA_LOSS,
                          "%s: not a valid ONNX model (protobuf framing is "
                          "broken)",
                          source);
}

static bool kiln_pb_varint(const uint8_t* data, size_t size, size_t* offset,
                           uint64_t* out) {
  uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*offset >= size) return false;
    uint8_t byte = data[(*offset)++];
    value |= (uint64_t)(byte & 0x7f) << shift;
    if (!(byte & 0x80)) {
      *out = value;
      return true;
    }
  }
  return false;
}

// Reads the field at *offset (inside [0, size)) and moves past it.
static bool kiln_pb_next(const uint8_t* data, size_t size, size_t* offset,
                         kiln_pb_field_t* field) {
  memset(field, 0, sizeof(*field));
  field->start = *offset;
  uint64_t tag = 0;
  if (!kiln_pb_varint(data, size, offset, &tag)) return false;
  field->number = tag >> 3;
  field->wire = (uint32_t)(tag & 7);
  uint64_t ignored = 0;
  switch (field->wire) {
    case KILN_PB_WIRE_VARINT:
      if (!kiln_pb_varint(data, size, offset, &ignored)) return false;
      break;
    case KILN_PB_WIRE_FIXED64:
    case KILN_PB_WIRE_FIXED32: {
      size_t width = field->wire == KILN_PB_WIRE_FIXED64 ? 8 : 4;
      if (size - *offset < width) return false;
      *offset += width;
      break;
    }
    case KILN_PB_WIRE_BYTES: {
      uint64_t length = 0;
      if (!kiln_pb_varint(data, size, offset, &length)) return false;
      if (length > size - *offset) return false;
      field->payload = *offset;
      field->payload_size = (size_t)length;
      *offset += (size_t)length;
      break;
    }
    default:
      return false;  // groups: ONNX has none
  }
  field->end = *offset;
  return true;
}

static kiln_status_t kiln_pb_put_varint(kiln_byte_buffer_t* out,
                                        uint64_t value) {
  uint8_t bytes[10];
  size_t count = 0;
  do {
    bytes[count] = (uint8_t)(value & 0x7f);
    value >>= 7;
    if (value) bytes[count] |= 0x80;
    ++count;
  } while (value);
  return kiln_byte_buffer_append(out, bytes, count);
}

static kiln_status_t kiln_pb_put_bytes_field(kiln_byte_buffer_t* out,
                                             uint64_t number,
                                             const kiln_byte_buffer_t* body) {
  KILN_RETURN_IF_ERROR(kiln_pb_put_varint(out, number << 3 | KILN_PB_WIRE_BYTES));
  KILN_RETURN_IF_ERROR(kiln_pb_put_varint(out, body->size));
  return kiln_byte_buffer_append(out, body->data, body->size);
}

// TensorProto with raw_data emptied (kept present so has_raw_data holds);
// the last raw_data wins, as in protobuf.
static kiln_status_t kiln_pb_slim_tensor(const uint8_t* data, size_t size,
                                         size_t base, const char* source,
                                         kiln_byte_buffer_t* out,
                                         kiln_onnx_raw_span_t* span) {
  span->present = false;
  size_t offset = 0;
  kiln_pb_field_t field;
  while (offset < size) {
    if (!kiln_pb_next(data, size, &offset, &field)) return kiln_pb_bad(source);
    if (field.number == KILN_PB_TENSOR_RAW_DATA &&
        field.wire == KILN_PB_WIRE_BYTES) {
      span->present = true;
      span->offset = base + field.payload;
      span->size = field.payload_size;
      continue;
    }
    KILN_RETURN_IF_ERROR(
        kiln_byte_buffer_append(out, data + field.start, field.end - field.start));
  }
  if (span->present) {
    KILN_RETURN_IF_ERROR(kiln_pb_put_varint(
        out, KILN_PB_TENSOR_RAW_DATA << 3 | KILN_PB_WIRE_BYTES));
    KILN_RETURN_IF_ERROR(kiln_pb_put_varint(out, 0));
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_pb_slim_graph(const uint8_t* data, size_t size,
                                        size_t base, const char* source,
                                        kiln_byte_buffer_t* out,
                                        kiln_onnx_raw_spans_t* spans) {
  size_t offset = 0;
  kiln_pb_field_t field;
  kiln_byte_buffer_t tensor;
  kiln_byte_buffer_init(&tensor, out->allocator);
  kiln_status_t status = kiln_ok_status();
  while (kiln_status_is_ok(status) && offset < size) {
    if (!kiln_pb_next(data, size, &offset, &field)) {
      status = kiln_pb_bad(source);
      break;
    }
    if (field.number != KILN_PB_GRAPH_INITIALIZER ||
        field.wire != KILN_PB_WIRE_BYTES) {
      status = kiln_byte_buffer_append(out, data + field.start,
                                       field.end - field.start);
      continue;
    }
    if (spans->count == spans->capacity) {
      size_t capacity = spans->capacity ? spans->capacity * 2 : 64;
      status = kiln_allocator_realloc_array(out->allocator, capacity,
                                            sizeof(*spans->spans),
                                            (void**)&spans->spans);
      if (!kiln_status_is_ok(status)) break;
      spans->capacity = capacity;
    }
    tensor.size = 0;
    status = kiln_pb_slim_tensor(data + field.payload, field.payload_size,
                                 base + field.payload, source, &tensor,
                                 &spans->spans[spans->count]);
    if (!kiln_status_is_ok(status)) break;
    ++spans->count;
    status = kiln_pb_put_bytes_field(out, KILN_PB_GRAPH_INITIALIZER, &tensor);
  }
  kiln_byte_buffer_deinit(&tensor);
  return status;
}

kiln_status_t kiln_onnx_slim_model(const uint8_t* data, size_t size,
                                   const char* source,
                                   kiln_allocator_t allocator,
                                   kiln_byte_buffer_t* out_model,
                                   kiln_onnx_raw_spans_t* out_spans) {
  kiln_byte_buffer_init(out_model, allocator);
  memset(out_spans, 0, sizeof(*out_spans));
  kiln_byte_buffer_t graph;
  kiln_byte_buffer_init(&graph, allocator);
  bool have_graph = false;
  size_t offset = 0;
  kiln_pb_field_t field;
  kiln_status_t status = kiln_ok_status();
  while (kiln_status_is_ok(status) && offset < size) {
    if (!kiln_pb_next(data, size, &offset, &field)) {
      status = kiln_pb_bad(source);
      break;
    }
    if (field.number != KILN_PB_MODEL_GRAPH || field.wire != KILN_PB_WIRE_BYTES) {
      status = kiln_byte_buffer_append(out_model, data + field.start,
                                       field.end - field.start);
      continue;
    }
    // protobuf would merge a repeated graph field; nobody writes one.
    if (have_graph) {
      status = kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "%s: model holds more than one graph", source);
      break;
    }
    have_graph = true;
    status = kiln_pb_slim_graph(data + field.payload, field.payload_size,
                                field.payload, source, &graph, out_spans);
    if (kiln_status_is_ok(status)) {
      status = kiln_pb_put_bytes_field(out_model, KILN_PB_MODEL_GRAPH, &graph);
    }
  }
  kiln_byte_buffer_deinit(&graph);
  if (!kiln_status_is_ok(status)) {
    kiln_byte_buffer_deinit(out_model);
    kiln_onnx_raw_spans_deinit(out_spans, allocator);
  }
  return status;
}

void kiln_onnx_raw_spans_deinit(kiln_onnx_raw_spans_t* spans,
                                kiln_allocator_t allocator) {
  kiln_allocator_free(allocator, spans->spans);
  memset(spans, 0, sizeof(*spans));
}
