// Ops no ONNX node test in libonnx-testdata 1.12 exercises (Gelu is newer
// than its opsets; its Cast tests all use unsupported dtypes), checked
// against values computed by hand / by numpy, and allocation-failure
// robustness of the importer and executor.
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/graph_reference.h"
#include "kiln/compiler/onnx.h"
#include "kiln_test.h"

// Runs a single-node graph op(x) with optional string/int attribute.
static void kiln_run_unary(const char* op, const kiln_graph_attr_t* attr,
                           kiln_graph_dtype_t in_dtype, const void* in_data,
                           size_t count, kiln_graph_tensor_t* out) {
  kiln_graph_t g;
  kiln_graph_initialize(kiln_allocator_system(), "ops_test", &g);
  g.opset = 17;
  int32_t x = -1, y = -1, node = -1;
  KILN_ASSERT_OK(kiln_graph_add_value(&g, "x", in_dtype, &x));
  g.values[x].has_shape = true;
  g.values[x].shape.rank = 1;
  g.values[x].shape.dims[0] = (int64_t)count;
  g.values[x].is_input = true;
  KILN_ASSERT_OK(kiln_graph_add_value(&g, "y", KILN_GRAPH_DTYPE_INVALID, &y));
  KILN_ASSERT_OK(kiln_graph_add_node(&g, op, "n", &x, 1, &y, 1, &node));
  if (attr) KILN_ASSERT_OK(kiln_graph_node_set_attr(&g, node, attr));
  KILN_ASSERT_OK(kiln_allocator_calloc_array(g.allocator, 1, sizeof(int32_t),
                                             (void**)&g.inputs));
  KILN_ASSERT_OK(kiln_allocator_calloc_array(g.allocator, 1, sizeof(int32_t),
                                             (void**)&g.outputs));
  g.inputs[0] = x;
  g.input_count = 1;
  g.outputs[0] = y;
  g.output_count = 1;
  g.values[y].is_output = true;
  KILN_ASSERT_OK(kiln_graph_infer_shapes(&g));
  kiln_graph_tensor_t input;
  KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), in_dtype,
                                            &g.values[x].shape, &input));
  memcpy(input.data, in_data, input.byte_size);
  KILN_ASSERT_OK(kiln_graph_reference_run(&g, &input, 1, NULL,
                                          kiln_allocator_system(), out));
  kiln_graph_tensor_deinit(&input);
  kiln_graph_deinitialize(&g);
}

KILN_TEST(OnnxOpsTest, GeluExactAndTanh) {
  const float x[] = {-1.0f, 0.0f, 1.0f, 2.0f};
  // 0.5 x (1 + erf(x / sqrt 2)) and the tanh form, from numpy in float64.
  const double exact[] = {-0.15865525393145707, 0.0, 0.8413447460685429,
                          1.9544997361036416};
  const double approx[] = {-0.15880800939172324, 0.0, 0.8411919906082768,
                           1.9545976940877752};
  kiln_graph_tensor_t y;
  kiln_run_unary("Gelu", NULL, KILN_GRAPH_DTYPE_F32, x, 4, &y);
  for (int i = 0; i < 4; ++i) {
    KILN_EXPECT_NEAR(((float*)y.data)[i], exact[i], 1e-6);
  }
  kiln_graph_tensor_deinit(&y);
  kiln_graph_attr_t attr;
  memset(&attr, 0, sizeof(attr));
  attr.name = "approximate";
  attr.type = KILN_GRAPH_ATTR_STRING;
  attr.s = "tanh";
  kiln_run_unary("Gelu", &attr, KILN_GRAPH_DTYPE_F32, x, 4, &y);
  for (int i = 0; i < 4; ++i) {
    KILN_EXPECT_NEAR(((float*)y.data)[i], approx[i], 1e-6);
  }
  kiln_graph_tensor_deinit(&y);
}

static kiln_graph_attr_t kiln_cast_to(int64_t to) {
  kiln_graph_attr_t attr;
  memset(&attr, 0, sizeof(attr));
  attr.name = "to";
  attr.type = KILN_GRAPH_ATTR_INT;
  attr.i = to;
  return attr;
}

KILN_TEST(OnnxOpsTest, CastBetweenSupportedDtypes) {
  const float f[] = {1.7f, -1.7f, 0.0f, 3e9f};
  kiln_graph_attr_t to_i64 = kiln_cast_to(7), to_bool = kiln_cast_to(9);
  kiln_graph_attr_t to_f32 = kiln_cast_to(1), to_i32 = kiln_cast_to(6);
  kiln_graph_tensor_t y;
  kiln_run_unary("Cast", &to_i64, KILN_GRAPH_DTYPE_F32, f, 4, &y);
  KILN_EXPECT_EQ(y.dtype, KILN_GRAPH_DTYPE_I64);
  const int64_t want_i64[] = {1, -1, 0, 3000000000};
  KILN_EXPECT_BYTES_EQ(y.data, want_i64, sizeof(want_i64));  // truncation
  kiln_graph_tensor_deinit(&y);
  kiln_run_unary("Cast", &to_bool, KILN_GRAPH_DTYPE_F32, f, 4, &y);
  const uint8_t want_bool[] = {1, 1, 0, 1};
  KILN_EXPECT_BYTES_EQ(y.data, want_bool, 4);
  kiln_graph_tensor_deinit(&y);
  const int64_t big[] = {(int64_t)1 << 40, -5, 7, 0};
  kiln_run_unary("Cast", &to_f32, KILN_GRAPH_DTYPE_I64, big, 4, &y);
  KILN_EXPECT_NEAR(((float*)y.data)[0], 1099511627776.0, 0.0);
  KILN_EXPECT_NEAR(((float*)y.data)[1], -5.0, 0.0);
  kiln_graph_tensor_deinit(&y);
  kiln_run_unary("Cast", &to_i32, KILN_GRAPH_DTYPE_I64, big, 4, &y);
  const int32_t want_i32[] = {0, -5, 7, 0};  // wraps like numpy astype
  KILN_EXPECT_BYTES_EQ(y.data, want_i32, sizeof(want_i32));
  kiln_graph_tensor_deinit(&y);
}

// Every allocation failure during import/passes/run must surface as an
// error with nothing leaked (the counting allocator tracks live blocks).
KILN_TEST(OnnxOpsTest, AllocationFailuresAreErrorsWithoutLeaks) {
  const char* model =
      "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/"
      "model.onnx";
  size_t failures = 0;
  for (size_t budget = 0; budget < 400; ++budget) {
    kiln_counting_allocator_t counting;
    kiln_counting_allocator_init(&counting, kiln_allocator_system(), budget);
    kiln_allocator_t allocator = kiln_counting_allocator(&counting);
    kiln_graph_t graph;
    kiln_status_t status = kiln_onnx_import_file(model, NULL, allocator, &graph);
    if (kiln_status_is_ok(status)) {
      status = kiln_graph_run_default_passes(&graph);
      kiln_graph_deinitialize(&graph);
    }
    if (!kiln_status_is_ok(status)) {
      ++failures;
      KILN_EXPECT_EQ(kiln_status_code(status), KILN_STATUS_RESOURCE_EXHAUSTED);
      kiln_status_free(status);
    }
    KILN_EXPECT_EQ(counting.live_blocks, 0u);
    if (kiln_status_is_ok(status) && budget > 0 && failures == budget) break;
  }
  KILN_EXPECT_GT(failures, 5u);
}
