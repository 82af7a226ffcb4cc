// Integer graph inputs (token ids, masks): run-time Gather indices and Cast
// to float in int64 and int32 views, checked against plain C (Gather with
// the documented out-of-range rule: ONNX wrap of negatives, zeros beyond),
// and the module's element-type check on what it receives.
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/onnx.h"
#include "kiln/compiler/onnx_compile.h"
#include "kiln/session.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"

// data[10] float, indices[3] int64 graph input, axis 0.
#define KILN_GATHER_MODEL \
  "/usr/share/libonnx-testdata/data/node/test_gather_negative_indices/model.onnx"

static float kiln_reference_gather(const float* data, int64_t size, int64_t index) {
  if (index < 0) index += size;
  return index >= 0 && index < size ? data[index] : 0.0f;
}

// Compiles the model (indices retyped to `dtype`), runs `ids` through it and
// compares with the reference.
static void kiln_check_gather(kiln_graph_dtype_t dtype, const int64_t ids[3]) {
  kiln_graph_t graph;
  KILN_ASSERT_OK(kiln_onnx_import_file(KILN_GATHER_MODEL, NULL, kiln_allocator_system(), &graph));
  KILN_ASSERT_EQ(graph.input_count, 2u);
  graph.values[graph.inputs[1]].dtype = dtype;
  kiln_graph_tensor_t inputs[2], output;
  KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32,
                                            &graph.values[graph.inputs[0]].shape, &inputs[0]));
  KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), dtype,
                                            &graph.values[graph.inputs[1]].shape, &inputs[1]));
  float* data = (float*)inputs[0].data;
  for (int i = 0; i < 10; ++i) data[i] = 1.5f + (float)i;
  for (int j = 0; j < 3; ++j) {
    if (dtype == KILN_GRAPH_DTYPE_I64) {
      ((int64_t*)inputs[1].data)[j] = ids[j];
    } else {
      ((int32_t*)inputs[1].data)[j] = (int32_t)ids[j];
    }
  }
  kiln_gpu_run_stats_t stats;
  KILN_ASSERT_OK(kiln_gpu_compile_and_run(&graph, NULL, inputs, &output, &stats));
  KILN_ASSERT_EQ(output.byte_size, 3 * sizeof(float));
  for (int j = 0; j < 3; ++j) {
    int64_t id = dtype == KILN_GRAPH_DTYPE_I64 ? ids[j] : (int32_t)ids[j];
    KILN_EXPECT_EQ(((const float*)output.data)[j], kiln_reference_gather(data, 10, id));
  }
  kiln_graph_tensor_deinit(&output);
  kiln_graph_tensor_deinit(&inputs[0]);
  kiln_graph_tensor_deinit(&inputs[1]);
  kiln_graph_deinitialize(&graph);
}

KILN_TEST(OnnxIntInputTest, Int64IdsInRangeAndNegative) {
  const int64_t ids[3] = {3, -1, -10};
  kiln_check_gather(KILN_GRAPH_DTYPE_I64, ids);
}

// Beyond the axis, and int64 values whose low word alone would be in range:
// zeros, never a wrapped or out-of-bounds read.
KILN_TEST(OnnxIntInputTest, Int64IdsOutOfRangeGiveZeros) {
  const int64_t ids[3] = {10, INT64_MIN, (INT64_C(1) << 32) + 2};
  kiln_check_gather(KILN_GRAPH_DTYPE_I64, ids);
  const int64_t more[3] = {-11, -(INT64_C(1) << 32), INT32_MAX};
  kiln_check_gather(KILN_GRAPH_DTYPE_I64, more);
}

KILN_TEST(OnnxIntInputTest, Int32Ids) {
  const int64_t ids[3] = {9, -2, 12};
  kiln_check_gather(KILN_GRAPH_DTYPE_I32, ids);
}

// Cast of an integer graph input to float (attention masks), after a
// Flatten that emits nothing, against C's conversion: exact up to
// 2^24, within 1e-6 relative beyond (the GPU rounds hi and lo words apart).
// y = Cast(Flatten^flattens(x), to=FLOAT) with x a 3x4 integer graph input.
static void kiln_build_cast_graph(kiln_graph_dtype_t dtype, int flattens, kiln_graph_t* graph) {
  kiln_graph_initialize(kiln_allocator_system(), "cast-test", graph);
  graph->opset = 13;
  int32_t x = -1, flat = -1, y = -1, node = -1;
  KILN_ASSERT_OK(kiln_graph_add_value(graph, "x", dtype, &x));
  graph->values[x].has_shape = true;
  graph->values[x].shape.rank = 2;
  graph->values[x].shape.dims[0] = 3;
  graph->values[x].shape.dims[1] = 4;
  graph->values[x].is_input = true;
  KILN_ASSERT_OK(kiln_allocator_realloc_array(graph->allocator, 1, sizeof(int32_t),
                                              (void**)&graph->inputs));
  graph->inputs[graph->input_count++] = x;
  flat = x;
  for (int i = 0; i < flattens; ++i) {
    int32_t in = flat;
    KILN_ASSERT_OK(kiln_graph_add_value(graph, NULL, KILN_GRAPH_DTYPE_INVALID, &flat));
    KILN_ASSERT_OK(kiln_graph_add_node(graph, "Flatten", NULL, &in, 1, &flat, 1, &node));
  }
  KILN_ASSERT_OK(kiln_graph_add_value(graph, "y", KILN_GRAPH_DTYPE_INVALID, &y));
  KILN_ASSERT_OK(kiln_graph_add_node(graph, "Cast", "cast", &flat, 1, &y, 1, &node));
  kiln_graph_attr_t to;
  memset(&to, 0, sizeof(to));
  to.name = "to";
  to.type = KILN_GRAPH_ATTR_INT;
  to.i = 1;  // FLOAT
  KILN_ASSERT_OK(kiln_graph_node_set_attr(graph, node, &to));
  KILN_ASSERT_OK(kiln_allocator_realloc_array(graph->allocator, 1, sizeof(int32_t),
                                              (void**)&graph->outputs));
  graph->outputs[graph->output_count++] = y;
  graph->values[y].is_output = true;
  KILN_ASSERT_OK(kiln_graph_infer_shapes(graph));
}

static void kiln_check_cast(kiln_graph_dtype_t dtype, const int64_t values[12]) {
  kiln_graph_t graph;
  kiln_build_cast_graph(dtype, 1, &graph);
  KILN_ASSERT_EQ(graph.values[graph.outputs[0]].dtype, KILN_GRAPH_DTYPE_F32);
  kiln_graph_tensor_t input, output;
  KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), dtype,
                                            &graph.values[graph.inputs[0]].shape, &input));
  KILN_ASSERT_EQ(input.byte_size, 12 * (dtype == KILN_GRAPH_DTYPE_I64 ? 8u : 4u));
  for (int i = 0; i < 12; ++i) {
    if (dtype == KILN_GRAPH_DTYPE_I64) {
      ((int64_t*)input.data)[i] = values[i];
    } else {
      ((int32_t*)input.data)[i] = (int32_t)values[i];
    }
  }
  kiln_gpu_run_stats_t stats;
  KILN_ASSERT_OK(kiln_gpu_compile_and_run(&graph, NULL, &input, &output, &stats));
  KILN_ASSERT_EQ(output.byte_size, 12 * sizeof(float));
  for (int i = 0; i < 12; ++i) {
    int64_t v = dtype == KILN_GRAPH_DTYPE_I64 ? values[i] : (int32_t)values[i];
    double expected = (double)(float)v;
    double actual = ((const float*)output.data)[i];
    if (v >= -(INT64_C(1) << 24) && v <= (INT64_C(1) << 24)) {
      KILN_EXPECT_EQ(actual, expected);
    } else {
      KILN_EXPECT_NEAR(actual, expected, 1e-6 * fabs(expected));
    }
  }
  kiln_graph_tensor_deinit(&output);
  kiln_graph_tensor_deinit(&input);
  kiln_graph_deinitialize(&graph);
}

KILN_TEST(OnnxIntInputTest, CastInt64AndInt32ToFloat) {
  const int64_t values[12] = {0, 1, -1, 7, INT64_C(1) << 24, -(INT64_C(1) << 24) + 3,
                              -(INT64_C(1) << 30), (INT64_C(1) << 32) + 5,
                              -(INT64_C(1) << 40) - 3, 123456789, INT64_MIN, INT64_MAX};
  kiln_check_cast(KILN_GRAPH_DTYPE_I64, values);
  const int64_t small[12] = {0, 1, -1, 2, -2, 1000, -1000, 16777216, -16777215,
                             INT32_MAX, INT32_MIN, 99};
  kiln_check_cast(KILN_GRAPH_DTYPE_I32, small);
}

// Compiling `graph` fails UNIMPLEMENTED with `message` and writes nothing;
// the graph is released.
static void kiln_expect_compile_refused(kiln_graph_t* graph, const char* message) {
  kiln_byte_buffer_t module;
  kiln_byte_buffer_init(&module, kiln_allocator_system());
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_UNIMPLEMENTED, message,
                             kiln_onnx_compile_graph(graph, NULL, kiln_allocator_system(),
                                                     &module));
  KILN_EXPECT_EQ(module.size, 0u);
  kiln_byte_buffer_deinit(&module);
  kiln_graph_deinitialize(graph);
}

// A crafted chain of reshapes on an integer input is refused, not walked
// without bound.
KILN_TEST(OnnxIntInputTest, LongReshapeChainIsRefused) {
  kiln_graph_t graph;
  kiln_build_cast_graph(KILN_GRAPH_DTYPE_I64, 40, &graph);
  kiln_expect_compile_refused(&graph, "more than 32 reshapes of integer input 'x'");
}

// The module checks the element type it receives and names the input.
KILN_TEST(OnnxIntInputTest, WrongElementTypeIsRefusedAtCall) {
  kiln_byte_buffer_t module;
  kiln_byte_buffer_init(&module, kiln_allocator_system());
  KILN_ASSERT_OK(kiln_onnx_compile_file(KILN_GATHER_MODEL, NULL, kiln_allocator_system(),
                                        &module));
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  const char* device = getenv("KILN_TEST_DEVICE");
  if (device && device[0]) options.device_uri = device;
  options.enable_validation = true;
  kiln_session_t* session = NULL;
  KILN_ASSERT_OK(kiln_session_create(&options, &session));
  KILN_ASSERT_OK(kiln_session_load_module_memory(session, kiln_byte_buffer_span(&module),
                                                 "gather"));
  kiln_vm_function_t predict;
  KILN_ASSERT_OK(kiln_session_lookup(session, "predict", &predict));
  float data[10] = {0};
  int32_t ids[3] = {0, 1, 2};
  int64_t data_shape[1] = {10}, ids_shape[1] = {3};
  kiln_hal_buffer_view_t* views[2] = {NULL, NULL};
  KILN_ASSERT_OK(kiln_session_buffer_view_from_host(session, KILN_HAL_ELEMENT_F32, 1,
                                                    data_shape, data, sizeof(data), &views[0]));
  KILN_ASSERT_OK(kiln_session_buffer_view_from_host(session, KILN_HAL_ELEMENT_I32, 1, ids_shape,
                                                    ids, sizeof(ids), &views[1]));
  kiln_vm_value_t args[2], results[1];
  memset(args, 0, sizeof(args));
  memset(results, 0, sizeof(results));
  for (int i = 0; i < 2; ++i) {
    KILN_ASSERT_OK(kiln_hal_module_wrap_buffer_view(kiln_session_allocator(session), views[i],
                                                    &args[i].ref));
  }
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "input 1: expected 3xi64",
                             kiln_session_invoke(session, predict, args, 2, results, 1));
  for (int i = 0; i < 2; ++i) {
    kiln_vm_ref_release(args[i].ref);
    kiln_hal_buffer_view_release(views[i]);
  }
  kiln_session_destroy(session);
  kiln_byte_buffer_deinit(&module);
}

// GatherElements lowers only with constant indices (a table of offsets
// built at compile time); libonnx's test feeds them as an int64 graph
// input, which is refused naming the input, the node and its op.
KILN_TEST(OnnxIntInputTest, GatherElementsRuntimeIndicesAreRefused) {
  kiln_graph_t graph;
  KILN_ASSERT_OK(kiln_onnx_import_file(
      "/usr/share/libonnx-testdata/data/node/test_gather_elements_0/model.onnx", NULL,
      kiln_allocator_system(), &graph));
  kiln_expect_compile_refused(&graph, "(op GatherElements)");
}
