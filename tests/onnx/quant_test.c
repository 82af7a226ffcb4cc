// QuantizeLinear / DequantizeLinear edge cases on the reference executor
// (saturation, ties at .5, negative zero points, NaN and infinities, per-axis
// on axes 0, 1 and the last), malformed parameters refused naming the
// tensor, and the QDQ pass: the fused kiln.QuantizeDequantize gives the same
// bits as the pair it replaces. Expected values are worked out by hand from
// ONNX's definition (saturate(round_half_even(x / scale) + zero_point)).
#include <math.h>
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/graph_reference.h"
#include "kiln_test.h"

typedef struct kiln_quant_case_t {
  const char* op;        // QuantizeLinear or DequantizeLinear
  kiln_graph_dtype_t x_dtype;
  kiln_graph_shape_t x_shape;
  const void* x;
  kiln_graph_shape_t scale_shape;
  const float* scale;
  kiln_graph_dtype_t zp_dtype;  // INVALID: no zero point
  kiln_graph_shape_t zp_shape;
  const void* zp;
  int64_t axis;  // 1: the default
  bool qdq;      // QuantizeLinear then DequantizeLinear with the same params
} kiln_quant_case_t;

static size_t kiln_quant_count(const kiln_graph_shape_t* shape) {
  size_t count = 1;
  for (int32_t d = 0; d < shape->rank; ++d) count *= (size_t)shape->dims[d];
  return count;
}

// Builds the case's graph; the status of shape inference comes back.
static kiln_status_t kiln_quant_build(const kiln_quant_case_t* c, kiln_graph_t* g) {
  kiln_graph_initialize(kiln_allocator_system(), "quant_test", g);
  g->opset = 13;
  int32_t x = -1, scale = -1, zp = -1, y = -1, node = -1;
  KILN_RETURN_IF_ERROR(kiln_graph_add_value(g, "x", c->x_dtype, &x));
  g->values[x].has_shape = true;
  g->values[x].shape = c->x_shape;
  g->values[x].is_input = true;
  KILN_RETURN_IF_ERROR(kiln_graph_add_constant(g, "the_scale", KILN_GRAPH_DTYPE_F32,
                                               &c->scale_shape, c->scale, &scale));
  if (c->zp_dtype != KILN_GRAPH_DTYPE_INVALID) {
    KILN_RETURN_IF_ERROR(
        kiln_graph_add_constant(g, "the_zero_point", c->zp_dtype, &c->zp_shape, c->zp, &zp));
  }
  int32_t inputs[3] = {x, scale, zp};
  size_t input_count = zp >= 0 ? 3 : 2;
  kiln_graph_attr_t axis = {.name = "axis", .type = KILN_GRAPH_ATTR_INT, .i = c->axis};
  int steps = c->qdq ? 2 : 1;
  for (int s = 0; s < steps; ++s) {
    const char* op = c->qdq ? (s == 0 ? "QuantizeLinear" : "DequantizeLinear") : c->op;
    KILN_RETURN_IF_ERROR(kiln_graph_add_value(g, s == steps - 1 ? "y" : "q",
                                              KILN_GRAPH_DTYPE_INVALID, &y));
    KILN_RETURN_IF_ERROR(kiln_graph_add_node(g, op, op, inputs, input_count, &y, 1, &node));
    if (c->axis != 1) KILN_RETURN_IF_ERROR(kiln_graph_node_set_attr(g, node, &axis));
    inputs[0] = y;
  }
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc_array(g->allocator, 1, sizeof(int32_t),
                                                   (void**)&g->inputs));
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc_array(g->allocator, 1, sizeof(int32_t),
                                                   (void**)&g->outputs));
  g->inputs[0] = x;
  g->input_count = 1;
  g->outputs[0] = y;
  g->output_count = 1;
  g->values[y].is_output = true;
  return kiln_graph_infer_shapes(g);
}

static void kiln_quant_run(const kiln_quant_case_t* c, bool passes,
                           kiln_graph_tensor_t* out) {
  kiln_graph_t g;
  KILN_ASSERT_OK(kiln_quant_build(c, &g));
  if (passes) KILN_ASSERT_OK(kiln_graph_run_default_passes(&g));
  kiln_graph_tensor_t input;
  KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), c->x_dtype,
                                            &c->x_shape, &input));
  memcpy(input.data, c->x, input.byte_size);
  KILN_ASSERT_OK(kiln_graph_reference_run(&g, &input, 1, NULL, kiln_allocator_system(), out));
  kiln_graph_tensor_deinit(&input);
  kiln_graph_deinitialize(&g);
}

#define KILN_SHAPE1(n) {1, {(n)}}
static const kiln_graph_shape_t kScalar = {0, {0}};

KILN_TEST(QuantTest, Uint8TiesSaturationAndSpecials) {
  const float x[] = {0.5f, 1.5f, 2.5f, -0.5f, 254.5f, 255.5f, 300.0f, -3.0f,
                     NAN, INFINITY, -INFINITY, 0.4999999f};
  const float scale = 1.0f;
  const uint8_t zp = 0;
  kiln_quant_case_t c = {"QuantizeLinear", KILN_GRAPH_DTYPE_F32, KILN_SHAPE1(12), x,
                         kScalar, &scale, KILN_GRAPH_DTYPE_U8, kScalar, &zp, 1, false};
  kiln_graph_tensor_t y;
  kiln_quant_run(&c, false, &y);
  const uint8_t want[] = {0, 2, 2, 0, 254, 255, 255, 0, 0, 255, 0, 0};
  KILN_EXPECT_EQ(y.dtype, KILN_GRAPH_DTYPE_U8);
  KILN_EXPECT_BYTES_EQ(y.data, want, sizeof(want));
  kiln_graph_tensor_deinit(&y);
  // No zero point: uint8 with zero point 0.
  c.zp_dtype = KILN_GRAPH_DTYPE_INVALID;
  kiln_quant_run(&c, false, &y);
  KILN_EXPECT_BYTES_EQ(y.data, want, sizeof(want));
  kiln_graph_tensor_deinit(&y);
}

KILN_TEST(QuantTest, Int8NegativeZeroPointAndHalfScaleTies) {
  // scale 0.5: x / 0.5 = 2x exactly; ties at 0.25 (0.5), 0.75 (1.5), -1.25.
  const float x[] = {0.25f, 0.75f, -0.25f, -1.25f, 65.0f, -65.0f, 1.25f, 0.0f};
  const float scale = 0.5f;
  const int8_t zp = -3;
  kiln_quant_case_t c = {"QuantizeLinear", KILN_GRAPH_DTYPE_F32, KILN_SHAPE1(8), x,
                         kScalar, &scale, KILN_GRAPH_DTYPE_I8, kScalar, &zp, 1, false};
  kiln_graph_tensor_t y;
  kiln_quant_run(&c, false, &y);
  // round(2x) - 3: 0-3, 2-3, -0-3, -2-3, 130-3 -> 127, -130-3 -> -128, 2-3, -3.
  const int8_t want[] = {-3, -1, -3, -5, 127, -128, -1, -3};
  KILN_EXPECT_EQ(y.dtype, KILN_GRAPH_DTYPE_I8);
  KILN_EXPECT_BYTES_EQ(y.data, want, sizeof(want));
  kiln_graph_tensor_deinit(&y);
}

// x = 0..11 in a [2, 3, 2] tensor, per-axis scales; expected by hand.
KILN_TEST(QuantTest, PerAxisOnFirstMiddleAndLastAxis) {
  float x[12];
  for (int i = 0; i < 12; ++i) x[i] = (float)i;
  kiln_graph_shape_t shape = {3, {2, 3, 2}};
  struct {
    int64_t axis;
    int64_t channels;
    float scale[3];
    uint8_t zp[3];
    uint8_t want[12];
  } cases[] = {
      // axis 0: elements 0-5 scale 1 zp 0, 6-11 scale 2 zp 10:
      // 6/2=3 7/2=3.5->4 4 4.5->4 5 5.5->6, + 10.
      {0, 2, {1, 2}, {0, 10}, {0, 1, 2, 3, 4, 5, 13, 14, 14, 14, 15, 16}},
      // axis 1 (the default): channel (i / 2) % 3, scales 1, 4, 0.5.
      // 2/4=.5->0 3/4=.75->1; 4/.5=8 5/.5=10; 6 7; 8/4=2 9/4=2.25->2;
      // 20 22 -> saturate at 255? no: 10/.5=20, 11/.5=22.
      {1, 3, {1, 4, 0.5f}, {0, 0, 0}, {0, 1, 0, 1, 8, 10, 6, 7, 2, 2, 20, 22}},
      // axis -1 (last): channel i % 2, scales 2 and 1, zp 1 and 250:
      // even i: i/2 + 1 (ties 1->0.5->0... i=2:1, i=6:3, i=10:5);
      // odd i: i + 250 saturating at 255.
      {-1, 2, {2, 1}, {1, 250}, {1, 251, 2, 253, 3, 255, 4, 255, 5, 255, 6, 255}},
  };
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); ++k) {
    kiln_graph_shape_t ps = KILN_SHAPE1(cases[k].channels);
    kiln_quant_case_t c = {"QuantizeLinear", KILN_GRAPH_DTYPE_F32, shape, x, ps,
                           cases[k].scale, KILN_GRAPH_DTYPE_U8, ps, cases[k].zp,
                           cases[k].axis, false};
    kiln_graph_tensor_t y;
    kiln_quant_run(&c, false, &y);
    KILN_EXPECT_BYTES_EQ(y.data, cases[k].want, 12);
    kiln_graph_tensor_deinit(&y);
  }
}

KILN_TEST(QuantTest, DequantizePerAxisWithNegativeZeroPoints) {
  const int8_t x[] = {-128, -1, 0, 1, 127, 5};
  const float scale[] = {0.5f, 0.25f, 2.0f};
  const int8_t zp[] = {-2, 3, -128};
  kiln_graph_shape_t shape = {2, {2, 3}};
  kiln_quant_case_t c = {"DequantizeLinear", KILN_GRAPH_DTYPE_I8, shape, x,
                         KILN_SHAPE1(3), scale, KILN_GRAPH_DTYPE_I8, KILN_SHAPE1(3), zp,
                         1, false};
  kiln_graph_tensor_t y;
  kiln_quant_run(&c, false, &y);
  const float want[] = {(-128 + 2) * 0.5f, (-1 - 3) * 0.25f, (0 + 128) * 2.0f,
                        (1 + 2) * 0.5f,    (127 - 3) * 0.25f, (5 + 128) * 2.0f};
  KILN_EXPECT_EQ(y.dtype, KILN_GRAPH_DTYPE_F32);
  KILN_EXPECT_BYTES_EQ(y.data, want, sizeof(want));
  kiln_graph_tensor_deinit(&y);
}

// The QDQ pass's fused node gives the same bits as the two ops (per tensor
// and per axis, int8 and uint8), and the pair is gone after the passes.
KILN_TEST(QuantTest, FusedPairMatchesTheTwoOpsBitForBit) {
  float x[64];
  for (int i = 0; i < 64; ++i) x[i] = (float)(i - 32) * 0.37f + (i % 3 ? 0.125f : 0.0f);
  x[5] = NAN;
  x[6] = INFINITY;
  x[7] = -1e30f;
  const float scales[] = {0.1f, 0.25f, 0.3f, 1.0f};
  const int8_t zp_s8[] = {-5, 0, 7, -128};
  const uint8_t zp_u8[] = {128, 0, 3, 255};
  kiln_graph_shape_t shape = {3, {4, 4, 4}};
  for (int variant = 0; variant < 4; ++variant) {
    bool per_axis = variant & 1, s8 = variant & 2;
    kiln_graph_shape_t ps = per_axis ? (kiln_graph_shape_t)KILN_SHAPE1(4) : kScalar;
    kiln_quant_case_t c = {NULL, KILN_GRAPH_DTYPE_F32, shape, x, ps, scales,
                           s8 ? KILN_GRAPH_DTYPE_I8 : KILN_GRAPH_DTYPE_U8, ps,
                           s8 ? (const void*)zp_s8 : (const void*)zp_u8,
                           per_axis ? 2 : 1, true};
    kiln_graph_t g;
    KILN_ASSERT_OK(kiln_quant_build(&c, &g));
    KILN_ASSERT_OK(kiln_graph_run_default_passes(&g));
    size_t live = 0, fused = 0;
    for (size_t n = 0; n < g.node_count; ++n) {
      if (g.nodes[n].removed) continue;
      ++live;
      fused += strcmp(g.nodes[n].op_type, "kiln.QuantizeDequantize") == 0;
    }
    KILN_EXPECT_EQ(live, 1u);
    KILN_EXPECT_EQ(fused, 1u);
    kiln_graph_deinitialize(&g);
    kiln_graph_tensor_t pair, one;
    kiln_quant_run(&c, false, &pair);
    kiln_quant_run(&c, true, &one);
    KILN_EXPECT_EQ(kiln_quant_count(&shape) * sizeof(float), one.byte_size);
    KILN_EXPECT_BYTES_EQ(pair.data, one.data, one.byte_size);
    kiln_graph_tensor_deinit(&pair);
    kiln_graph_tensor_deinit(&one);
  }
}

// Malformed parameters: refused at shape inference, naming the tensor.
KILN_TEST(QuantTest, MalformedParametersAreRefusedNamingTheTensor) {
  const float x[6] = {0};
  kiln_graph_shape_t shape = {2, {2, 3}};
  const float zero = 0.0f, nan_scale = NAN, three[] = {1, 1, 1};
  const uint8_t zp_u8[3] = {0, 0, 0};
  const int8_t zp_s8[3] = {0, 0, 0};
  const uint8_t xq[6] = {0};
  struct {
    kiln_quant_case_t c;
    const char* message;
  } cases[] = {
      {{"QuantizeLinear", KILN_GRAPH_DTYPE_F32, shape, x, kScalar, &zero,
        KILN_GRAPH_DTYPE_U8, kScalar, zp_u8, 1, false},
       "scale 'the_scale' element 0 is 0"},
      {{"QuantizeLinear", KILN_GRAPH_DTYPE_F32, shape, x, kScalar, &nan_scale,
        KILN_GRAPH_DTYPE_U8, kScalar, zp_u8, 1, false},
       "scale 'the_scale' element 0 is nan"},
      {{"QuantizeLinear", KILN_GRAPH_DTYPE_F32, shape, x, KILN_SHAPE1(3), three,
        KILN_GRAPH_DTYPE_U8, KILN_SHAPE1(3), zp_u8, 2, false},
       "axis 2 is out of range for rank 2"},
      {{"QuantizeLinear", KILN_GRAPH_DTYPE_F32, shape, x, KILN_SHAPE1(3), three,
        KILN_GRAPH_DTYPE_U8, KILN_SHAPE1(3), zp_u8, 0, false},
       "scale 'the_scale' has 3 values but axis 0 of 'x' has 2"},
      {{"QuantizeLinear", KILN_GRAPH_DTYPE_F32, shape, x, KILN_SHAPE1(3), three,
        KILN_GRAPH_DTYPE_U8, KILN_SHAPE1(2), zp_u8, 1, false},
       "zero point 'the_zero_point' has shape 2 but scale 'the_scale' has shape 3"},
      {{"DequantizeLinear", KILN_GRAPH_DTYPE_U8, shape, xq, KILN_SHAPE1(3), three,
        KILN_GRAPH_DTYPE_I8, KILN_SHAPE1(3), zp_s8, 1, false},
       "zero point 'the_zero_point' is int8 but the quantized tensor is uint8"},
  };
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); ++k) {
    kiln_graph_t g;
    kiln_status_t status = kiln_quant_build(&cases[k].c, &g);
    KILN_EXPECT_FALSE(kiln_status_is_ok(status));
    const char* message = kiln_status_message(status);
    KILN_EXPECT_CONTAINS(message ? message : "", cases[k].message);
    KILN_EXPECT_CONTAINS(message ? message : "", "node '");
    kiln_status_free(status);
    kiln_graph_deinitialize(&g);
  }
}

// Shape inference's `status`: OK when `message` is NULL, else an error
// containing `message` and `node` (consumed).
static void kiln_expect_infer_status(kiln_status_t status, const char* message,
                                     const char* node) {
  if (!message) {
    KILN_EXPECT_OK(status);
    return;
  }
  KILN_EXPECT_FALSE(kiln_status_is_ok(status));
  const char* text = kiln_status_message(status);
  KILN_EXPECT_CONTAINS(text ? text : "", message);
  KILN_EXPECT_CONTAINS(text ? text : "", node);
  kiln_status_free(status);
}

// QLinearMatMul a[2, 4] (uint8) x b[4, 3] (int8) with the given b_scale
// length, y_scale and b_zero_point dtype; the status of shape inference.
static kiln_status_t kiln_qlinear_build(size_t b_scales, float y_scale,
                                        kiln_graph_dtype_t b_zp_dtype, kiln_graph_t* g) {
  kiln_graph_initialize(kiln_allocator_system(), "qlinear_test", g);
  g->opset = 13;
  kiln_graph_shape_t a_shape = {2, {2, 4}}, b_shape = {2, {4, 3}}, scalar = {0, {0}};
  kiln_graph_shape_t bs_shape = {1, {(int64_t)b_scales}};
  const float scales[4] = {0.5f, 0.5f, 0.5f, 0.5f};
  const uint8_t zeros[12] = {0};
  int32_t ids[8], y = -1, node = -1;
  KILN_RETURN_IF_ERROR(kiln_graph_add_value(g, "a", KILN_GRAPH_DTYPE_U8, &ids[0]));
  g->values[ids[0]].has_shape = true;
  g->values[ids[0]].shape = a_shape;
  g->values[ids[0]].is_input = true;
  KILN_RETURN_IF_ERROR(kiln_graph_add_constant(g, "a_scale", KILN_GRAPH_DTYPE_F32, &scalar, scales, &ids[1]));
  KILN_RETURN_IF_ERROR(kiln_graph_add_constant(g, "a_zp", KILN_GRAPH_DTYPE_U8, &scalar, zeros, &ids[2]));
  KILN_RETURN_IF_ERROR(kiln_graph_add_constant(g, "b", KILN_GRAPH_DTYPE_I8, &b_shape, zeros, &ids[3]));
  KILN_RETURN_IF_ERROR(kiln_graph_add_constant(g, "the_b_scale", KILN_GRAPH_DTYPE_F32, &bs_shape, scales, &ids[4]));
  KILN_RETURN_IF_ERROR(kiln_graph_add_constant(g, "the_b_zp", b_zp_dtype, &scalar, zeros, &ids[5]));
  KILN_RETURN_IF_ERROR(kiln_graph_add_constant(g, "the_y_scale", KILN_GRAPH_DTYPE_F32, &scalar, &y_scale, &ids[6]));
  KILN_RETURN_IF_ERROR(kiln_graph_add_constant(g, "y_zp", KILN_GRAPH_DTYPE_U8, &scalar, zeros, &ids[7]));
  KILN_RETURN_IF_ERROR(kiln_graph_add_value(g, "y", KILN_GRAPH_DTYPE_INVALID, &y));
  KILN_RETURN_IF_ERROR(kiln_graph_add_node(g, "QLinearMatMul", "qmm", ids, 8, &y, 1, &node));
  return kiln_graph_infer_shapes(g);
}

KILN_TEST(QuantTest, MalformedQLinearParametersAreRefusedNamingTheTensor) {
  struct {
    size_t b_scales;
    float y_scale;
    kiln_graph_dtype_t b_zp;
    const char* message;
  } cases[] = {
      {3, 0.25f, KILN_GRAPH_DTYPE_I8, NULL},  // well formed: per column
      {1, 0.25f, KILN_GRAPH_DTYPE_I8, NULL},  // well formed: per tensor
      {2, 0.25f, KILN_GRAPH_DTYPE_I8, "b_scale 'the_b_scale' has shape 2; expected a scalar or [3]"},
      {3, 0.0f, KILN_GRAPH_DTYPE_I8, "scale 'the_y_scale' element 0 is 0"},
      {3, INFINITY, KILN_GRAPH_DTYPE_I8, "scale 'the_y_scale' element 0 is inf"},
      {3, 0.25f, KILN_GRAPH_DTYPE_U8, "zero point 'the_b_zp' is uint8 but b is int8"},
  };
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); ++k) {
    kiln_graph_t g;
    kiln_expect_infer_status(kiln_qlinear_build(cases[k].b_scales, cases[k].y_scale,
                                                cases[k].b_zp, &g),
                             cases[k].message, "node 'qmm'");
    kiln_graph_deinitialize(&g);
  }
}

// ConvInteger x [1, 2, 4, 4] (uint8) * w [3, 2, 3, 3] (int8) with a
// w_zero_point of `w_zps` values of `w_zp_dtype`; the status of shape
// inference.
static kiln_status_t kiln_conv_integer_build(size_t w_zps, kiln_graph_dtype_t w_zp_dtype,
                                             int64_t group, kiln_graph_t* g) {
  kiln_graph_initialize(kiln_allocator_system(), "conv_integer_test", g);
  g->opset = 13;
  kiln_graph_shape_t x_shape = {4, {1, 2, 4, 4}}, w_shape = {4, {3, 2, 3, 3}};
  kiln_graph_shape_t zp_shape = {1, {(int64_t)w_zps}}, scalar = {0, {0}};
  const int8_t zeros[64] = {0};
  int32_t ids[4], y = -1, node = -1;
  KILN_RETURN_IF_ERROR(kiln_graph_add_value(g, "x", KILN_GRAPH_DTYPE_U8, &ids[0]));
  g->values[ids[0]].has_shape = true;
  g->values[ids[0]].shape = x_shape;
  g->values[ids[0]].is_input = true;
  KILN_RETURN_IF_ERROR(kiln_graph_add_constant(g, "w", KILN_GRAPH_DTYPE_I8, &w_shape, zeros, &ids[1]));
  KILN_RETURN_IF_ERROR(kiln_graph_add_constant(g, "x_zp", KILN_GRAPH_DTYPE_U8, &scalar, zeros, &ids[2]));
  KILN_RETURN_IF_ERROR(kiln_graph_add_constant(g, "the_w_zp", w_zp_dtype, &zp_shape, zeros, &ids[3]));
  KILN_RETURN_IF_ERROR(kiln_graph_add_value(g, "y", KILN_GRAPH_DTYPE_INVALID, &y));
  KILN_RETURN_IF_ERROR(kiln_graph_add_node(g, "ConvInteger", "convi", ids, 4, &y, 1, &node));
  kiln_graph_attr_t attr = {.name = "group", .type = KILN_GRAPH_ATTR_INT, .i = group};
  KILN_RETURN_IF_ERROR(kiln_graph_node_set_attr(g, node, &attr));
  return kiln_graph_infer_shapes(g);
}

KILN_TEST(QuantTest, MalformedConvIntegerParametersAreRefusedNamingTheTensor) {
  struct {
    size_t w_zps;
    kiln_graph_dtype_t dtype;
    int64_t group;
    const char* message;
  } cases[] = {
      {3, KILN_GRAPH_DTYPE_I8, 1, NULL},  // well formed: per output channel
      {1, KILN_GRAPH_DTYPE_I8, 1, NULL},  // well formed: per tensor
      {2, KILN_GRAPH_DTYPE_I8, 1, "'the_w_zp'"},
      {3, KILN_GRAPH_DTYPE_U8, 1, "zero point 'the_w_zp' is uint8 but w is int8"},
      {3, KILN_GRAPH_DTYPE_I8, 2, "w shape does not match 2 channels in 2 groups"},
  };
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); ++k) {
    kiln_graph_t g;
    kiln_expect_infer_status(
        kiln_conv_integer_build(cases[k].w_zps, cases[k].dtype, cases[k].group, &g),
        cases[k].message, "node 'convi'");
    kiln_graph_deinitialize(&g);
  }
}
