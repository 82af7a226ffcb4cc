// Attention test graphs and inputs (attention_graph.h).
#include "attention_graph.h"

#include <math.h>
#include <stdlib.h>

#include "kiln/compiler/graph_passes.h"
#include "graph_build.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"

static int32_t kiln_attn_const(kiln_graph_t* g, kiln_graph_dtype_t dtype, int32_t rank,
                               const int64_t* dims, const void* data) {
  kiln_graph_shape_t shape = kiln_test_shape(rank, dims);
  int32_t id = -1;
  KILN_EXPECT_OK(kiln_graph_add_constant(g, NULL, dtype, &shape, data, &id));
  return id;
}

int32_t kiln_attn_node(kiln_graph_t* g, const char* op, const int32_t* in, size_t n,
                       int32_t* out_node) {
  int32_t node = -1, value = -1;
  KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, op, in, n, &node, &value));
  if (out_node) *out_node = node;
  return value;
}

void kiln_attn_build(const kiln_attn_case_t* c, kiln_graph_t* g) {
  kiln_graph_initialize(kiln_allocator_system(), "attention-test", g);
  g->opset = 17;
  const int64_t qd[4] = {c->batch, c->heads, c->sq, c->d};
  const int64_t kd[4] = {c->batch, c->heads, c->sk, c->d};
  int32_t q = kiln_test_graph_input(g, "q", 4, qd);
  int32_t k = kiln_test_graph_input(g, "k", 4, kd);
  int32_t v = kiln_test_graph_input(g, "v", 4, kd);
  int32_t node = -1;
  int32_t kt = kiln_attn_node(g, "Transpose", &k, 1, &node);
  const int64_t swap[4] = {0, 1, 3, 2};
  kiln_test_attr_ints(g, node, "perm", swap, 4);
  int32_t in[3] = {q, kt, -1};
  int32_t s = kiln_attn_node(g, "MatMul", in, 2, NULL);
  const float scale = 1.0f / sqrtf((float)c->d);
  in[0] = s;
  in[1] = kiln_attn_const(g, KILN_GRAPH_DTYPE_F32, 0, NULL, &scale);
  s = kiln_attn_node(g, "Mul", in, 2, NULL);
  if (c->mask == kMaskAdd || c->mask == kMaskPadding) {
    // A graph input: [sq, sk], or a key padding mask [B, 1, 1, sk].
    const int64_t full[2] = {c->sq, c->sk}, padding[4] = {c->batch, 1, 1, c->sk};
    in[0] = s;
    in[1] = c->mask == kMaskAdd ? kiln_test_graph_input(g, "mask", 2, full)
                                : kiln_test_graph_input(g, "mask", 4, padding);
    s = kiln_attn_node(g, "Add", in, 2, NULL);
  } else if (c->mask == kMaskCausal) {
    // masked_fill(tril == 0, -inf): Where(constant condition, -inf, s).
    const int64_t dims[4] = {1, 1, c->sq, c->sk};
    uint8_t* cond = calloc((size_t)(c->sq * c->sk), 1);
    for (int64_t i = 0; i < c->sq; ++i) {
      for (int64_t j = 0; j < c->sk; ++j) cond[i * c->sk + j] = j > i;
    }
    const float fill = -INFINITY;
    in[0] = kiln_attn_const(g, KILN_GRAPH_DTYPE_BOOL, 4, dims, cond);
    in[1] = kiln_attn_const(g, KILN_GRAPH_DTYPE_F32, 0, NULL, &fill);
    in[2] = s;
    s = kiln_attn_node(g, "Where", in, 3, NULL);
    free(cond);
  }
  s = kiln_attn_node(g, "Softmax", &s, 1, &node);
  in[0] = s;
  in[1] = v;
  int32_t o = kiln_attn_node(g, "MatMul", in, 2, NULL);
  o = kiln_attn_node(g, "Transpose", &o, 1, &node);
  const int64_t merge[4] = {0, 2, 1, 3};
  kiln_test_attr_ints(g, node, "perm", merge, 4);
  const int64_t shape[3] = {c->batch, c->sq, c->heads * c->d};
  in[0] = o;
  in[1] = kiln_attn_const(g, KILN_GRAPH_DTYPE_I64, 1, (const int64_t[]){3}, shape);
  o = kiln_attn_node(g, "Reshape", in, 2, NULL);
  KILN_EXPECT_OK(kiln_gpu_graph_add_output(g, o));
  KILN_EXPECT_OK(kiln_graph_infer_shapes(g));
}

void kiln_attn_fill(kiln_graph_t* g, kiln_graph_tensor_t* inputs, const kiln_attn_case_t* c) {
  uint32_t state = 2024u;
  for (size_t i = 0; i < g->input_count; ++i) {
    KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32,
                                              &g->values[g->inputs[i]].shape, &inputs[i]));
    float* data = inputs[i].data;
    size_t count = inputs[i].byte_size / sizeof(float);
    for (size_t e = 0; e < count; ++e) {
      state = state * 1664525u + 1013904223u;
      float r = (float)((state >> 8) * (1.0 / 8388608.0) - 1.0);
      data[e] = r * 2.0f;  // scores spread enough for a peaked softmax
    }
    if (i == 3) {
      // Masks: 0 or -inf (every row keeps its first key), or a small bias.
      for (size_t e = 0; e < count; ++e) {
        size_t key = e % (size_t)c->sk;
        data[e] = key != 0 && data[e] > 1.2f ? -INFINITY : data[e] * 0.25f;
      }
    }
  }
}
