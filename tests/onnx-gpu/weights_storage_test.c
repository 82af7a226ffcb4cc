// Where an ONNX model keeps its weights must not change the module: raw_data
// read from the mapped model (kept out of the protobuf-c unpack,
// onnx_raw_spans.c), external data at an unaligned offset and typed
// float_data (decoded by protobuf-c alone, the reference) all give the same
// bytes, written whole or streamed piece by piece.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln/base/file.h"
#include "kiln/compiler/onnx_compile.h"
#include "kiln_test.h"
#include "onnx.pb-c.h"

enum { kRows = 4, kInner = 256, kCols = 520 };  // W is 520 KiB: whole pages

typedef enum { kRaw, kExternal, kFloatData } kiln_storage_t;

static void kiln_fill_tensor(Onnx__TensorProto* t, const char* name, const int64_t* dims,
                             size_t rank, float* values, size_t count, kiln_storage_t storage,
                             Onnx__StringStringEntryProto** entries) {
  t->name = (char*)name;
  t->n_dims = rank;
  t->dims = (int64_t*)dims;
  t->has_data_type = 1;
  t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  if (storage == kRaw) {
    t->has_raw_data = 1;
    t->raw_data.data = (uint8_t*)values;
    t->raw_data.len = count * sizeof(float);
  } else if (storage == kFloatData) {
    t->n_float_data = count;
    t->float_data = values;
  } else {
    t->n_external_data = 3;
    t->external_data = entries;
    t->has_data_location = 1;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  }
}

// y = MatMul(x[4x256], W[256x520]) + B[520], W and B stored as asked.
static void kiln_write_model(const char* path, float* w, float* b, kiln_storage_t w_storage,
                             kiln_storage_t b_storage) {
  static const int64_t x_dims[] = {kRows, kInner}, w_dims[] = {kInner, kCols},
                       b_dims[] = {kCols};
  Onnx__TensorShapeProto__Dimension d[2] = {ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT,
                                            ONNX__TENSOR_SHAPE_PROTO__DIMENSION__INIT};
  Onnx__TensorShapeProto__Dimension* dims[2] = {&d[0], &d[1]};
  for (int i = 0; i < 2; ++i) {
    d[i].value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d[i].dim_value = x_dims[i];
  }
  Onnx__TensorShapeProto shape = ONNX__TENSOR_SHAPE_PROTO__INIT;
  shape.n_dim = 2;
  shape.dim = dims;
  Onnx__TypeProto__Tensor tensor_type = ONNX__TYPE_PROTO__TENSOR__INIT;
  tensor_type.has_elem_type = 1;
  tensor_type.elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  tensor_type.shape = &shape;
  Onnx__TypeProto type = ONNX__TYPE_PROTO__INIT;
  type.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  type.tensor_type = &tensor_type;
  Onnx__ValueInfoProto x = ONNX__VALUE_INFO_PROTO__INIT, y = ONNX__VALUE_INFO_PROTO__INIT;
  x.name = "x";
  x.type = &type;
  y.name = "y";
  Onnx__ValueInfoProto* inputs[] = {&x};
  Onnx__ValueInfoProto* outputs[] = {&y};

  // External W lies at offset 12 of w.bin (not even 16-byte aligned).
  Onnx__StringStringEntryProto location = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
  Onnx__StringStringEntryProto offset = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
  Onnx__StringStringEntryProto length = ONNX__STRING_STRING_ENTRY_PROTO__INIT;
  Onnx__StringStringEntryProto* entries[] = {&location, &offset, &length};
  char length_text[32];
  snprintf(length_text, sizeof(length_text), "%zu", sizeof(float) * kInner * kCols);
  location.key = "location";
  location.value = "w.bin";
  offset.key = "offset";
  offset.value = "12";
  length.key = "length";
  length.value = length_text;

  Onnx__TensorProto wt = ONNX__TENSOR_PROTO__INIT, bt = ONNX__TENSOR_PROTO__INIT;
  kiln_fill_tensor(&wt, "W", w_dims, 2, w, (size_t)kInner * kCols, w_storage, entries);
  kiln_fill_tensor(&bt, "B", b_dims, 1, b, kCols, b_storage, entries);
  Onnx__TensorProto* initializers[] = {&wt, &bt};

  char* mm_in[] = {"x", "W"};
  char* mm_out[] = {"xw"};
  char* add_in[] = {"xw", "B"};
  char* add_out[] = {"y"};
  Onnx__NodeProto mm = ONNX__NODE_PROTO__INIT, add = ONNX__NODE_PROTO__INIT;
  mm.name = "mm";
  mm.op_type = "MatMul";
  mm.n_input = 2;
  mm.input = mm_in;
  mm.n_output = 1;
  mm.output = mm_out;
  add.name = "add";
  add.op_type = "Add";
  add.n_input = 2;
  add.input = add_in;
  add.n_output = 1;
  add.output = add_out;
  Onnx__NodeProto* nodes[] = {&mm, &add};
  Onnx__GraphProto graph = ONNX__GRAPH_PROTO__INIT;
  graph.name = "g";
  graph.n_node = 2;
  graph.node = nodes;
  graph.n_initializer = 2;
  graph.initializer = initializers;
  graph.n_input = 1;
  graph.input = inputs;
  graph.n_output = 1;
  graph.output = outputs;
  Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT;
  opset.domain = "";
  opset.has_version = 1;
  opset.version = 13;
  Onnx__OperatorSetIdProto* opsets[] = {&opset};
  Onnx__ModelProto model = ONNX__MODEL_PROTO__INIT;
  model.has_ir_version = 1;
  model.ir_version = 8;
  model.n_opset_import = 1;
  model.opset_import = opsets;
  model.graph = &graph;
  size_t size = onnx__model_proto__get_packed_size(&model);
  uint8_t* bytes = malloc(size);
  KILN_ASSERT_TRUE(bytes != NULL);
  onnx__model_proto__pack(&model, bytes);
  KILN_EXPECT_OK(kiln_file_write_all(path, kiln_make_const_byte_span(bytes, size)));
  free(bytes);
}

static kiln_status_t kiln_collect(void* user, kiln_const_byte_span_t piece) {
  return kiln_byte_buffer_append((kiln_byte_buffer_t*)user, piece.data, piece.size);
}

static void kiln_compile(const char* path, bool streamed, kiln_byte_buffer_t* out) {
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  kiln_byte_buffer_init(out, kiln_allocator_system());
  kiln_byte_buffer_t unused;
  kiln_byte_buffer_init(&unused, kiln_allocator_system());
  if (streamed) {
    options.module_sink = kiln_collect;
    options.module_sink_user = out;
  }
  KILN_EXPECT_OK(kiln_onnx_compile_file(path, &options, kiln_allocator_system(),
                                        streamed ? &unused : out));
  kiln_byte_buffer_deinit(&unused);
}

// `noisy`: W does not compress, so the weights go out as pieces referencing
// the graph; otherwise they are joined and zstd-compressed.
static void kiln_check_storages(bool noisy) {
  float* w = malloc(sizeof(float) * kInner * kCols);
  float b[kCols];
  KILN_ASSERT_TRUE(w != NULL);
  uint32_t state = 2463534242u;
  for (size_t i = 0; i < (size_t)kInner * kCols; ++i) {
    state ^= state << 13;
    state ^= state >> 17;
    state ^= state << 5;
    w[i] = noisy ? (float)state / 4294967296.0f - 0.5f : (float)((i * 7919) % 1000) / 997.0f;
  }
  for (size_t i = 0; i < kCols; ++i) b[i] = (float)i * 0.25f - 3.0f;
  char dir[128], path[256];
  snprintf(dir, sizeof(dir), "/tmp/kiln_weights_storage_%d", (int)getpid());
  char command[300];
  snprintf(command, sizeof(command), "mkdir -p %s", dir);
  KILN_ASSERT_EQ(system(command), 0);
  uint8_t* external = calloc(1, 12 + sizeof(float) * kInner * kCols);
  KILN_ASSERT_TRUE(external != NULL);
  memcpy(external + 12, w, sizeof(float) * kInner * kCols);
  snprintf(path, sizeof(path), "%s/w.bin", dir);
  KILN_EXPECT_OK(kiln_file_write_all(
      path, kiln_make_const_byte_span(external, 12 + sizeof(float) * kInner * kCols)));
  free(external);

  // The reference: both tensors in float_data.
  kiln_byte_buffer_t reference, module;
  snprintf(path, sizeof(path), "%s/typed.onnx", dir);
  kiln_write_model(path, w, b, kFloatData, kFloatData);
  kiln_compile(path, false, &reference);
  if (noisy) {
    KILN_EXPECT_GT(reference.size, sizeof(float) * kInner * kCols);
  } else {
    KILN_EXPECT_LT(reference.size, sizeof(float) * kInner * kCols / 2);
  }
  static const struct {
    const char* name;
    kiln_storage_t w, b;
  } kCases[] = {{"raw.onnx", kRaw, kRaw},
                {"raw_typed.onnx", kRaw, kFloatData},
                {"typed_raw.onnx", kFloatData, kRaw},
                {"external.onnx", kExternal, kRaw}};
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
    snprintf(path, sizeof(path), "%s/%s", dir, kCases[i].name);
    kiln_write_model(path, w, b, kCases[i].w, kCases[i].b);
    for (int streamed = 0; streamed < 2; ++streamed) {
      kiln_compile(path, streamed, &module);
      KILN_EXPECT_EQ(module.size, reference.size);
      if (module.size == reference.size) {
        KILN_EXPECT_EQ(memcmp(module.data, reference.data, module.size), 0);
      }
      kiln_byte_buffer_deinit(&module);
    }
  }
  kiln_byte_buffer_deinit(&reference);
  free(w);
  snprintf(command, sizeof(command), "rm -rf %s", dir);
  KILN_EXPECT_EQ(system(command), 0);
}

KILN_TEST(OnnxWeightsStorageTest, EveryStorageGivesTheSameModule) {
  kiln_check_storages(true);
}

KILN_TEST(OnnxWeightsStorageTest, EveryStorageGivesTheSameCompressedModule) {
  kiln_check_storages(false);
}
