// Barriers only between dependent dispatches (compiler-bridge/onnx-emit/
// schedule.c) and the per-call path (slot staging in the Vulkan driver):
// an Inception-like block and attention-like parallel heads compile to the
// barrier count of their longest dependency chain (counted in the module's
// disassembly) and match the plain C reference executor; calls with new
// inputs in one session give bit-identical results to fresh sessions.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/graph_reference.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"
#include "tensor_compare.h"

static uint32_t g_state = 2024u;

static float kiln_sched_random(void) {
  g_state = g_state * 1664525u + 1013904223u;
  return (float)((g_state >> 8) * (1.0 / 8388608.0) - 1.0);
}

static int32_t kiln_sched_weight(kiln_graph_t* g, int32_t rank, const int64_t* dims) {
  kiln_graph_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  shape.rank = rank;
  size_t count = 1;
  for (int32_t d = 0; d < rank; ++d) {
    shape.dims[d] = dims[d];
    count *= (size_t)dims[d];
  }
  float* data = malloc(count * sizeof(float));
  KILN_EXPECT_TRUE(data != NULL);
  for (size_t i = 0; i < count; ++i) data[i] = kiln_sched_random() * 0.5f;
  int32_t id = -1;
  char name[32];
  snprintf(name, sizeof(name), "w%zu", g->value_count);
  KILN_EXPECT_OK(kiln_graph_add_constant(g, name, KILN_GRAPH_DTYPE_F32, &shape, data, &id));
  free(data);
  return id;
}

static int32_t kiln_sched_node(kiln_graph_t* g, const char* op, int32_t a, int32_t b,
                               int32_t* out_node) {
  int32_t y = -1, node = -1, in[2] = {a, b};
  KILN_EXPECT_OK(kiln_gpu_graph_add_node(g, op, in, b >= 0 ? 2 : 1, &node, &y));
  if (out_node) *out_node = node;
  return y;
}

static void kiln_sched_ints(kiln_graph_t* g, int32_t node, const char* name, const int64_t* v,
                            size_t count) {
  kiln_graph_attr_t a;
  memset(&a, 0, sizeof(a));
  a.name = name;
  a.type = count == 1 ? KILN_GRAPH_ATTR_INT : KILN_GRAPH_ATTR_INTS;
  if (count == 1) a.i = v[0];
  a.ints = v;
  a.count = count == 1 ? 0 : count;
  KILN_EXPECT_OK(kiln_graph_node_set_attr(g, node, &a));
}

// Conv with a k x k kernel (same padding), 4 -> 4 channels.
static int32_t kiln_sched_conv(kiln_graph_t* g, int32_t x, int64_t k) {
  const int64_t dims[4] = {4, 4, k, k};
  int32_t node = -1;
  int32_t y = kiln_sched_node(g, "Conv", x, kiln_sched_weight(g, 4, dims), &node);
  const int64_t pads[4] = {k / 2, k / 2, k / 2, k / 2};
  kiln_sched_ints(g, node, "pads", pads, 4);
  return y;
}

// The four `parts` concatenated along axis 1: the graph's output.
static void kiln_sched_concat_output(kiln_graph_t* g, int32_t parts[4]) {
  int32_t concat = -1, y = -1;
  KILN_EXPECT_OK(kiln_graph_add_value(g, NULL, KILN_GRAPH_DTYPE_INVALID, &y));
  KILN_EXPECT_OK(kiln_graph_add_node(g, "Concat", NULL, parts, 4, &y, 1, &concat));
  const int64_t axis = 1;
  kiln_sched_ints(g, concat, "axis", &axis, 1);
  KILN_EXPECT_OK(kiln_gpu_graph_add_output(g, y));
}

// Inception: 1x1 | 1x1 -> 3x3 | 1x1 -> 5x5 | maxpool 3x3 -> 1x1, concat.
static void kiln_sched_inception(kiln_graph_t* g) {
  kiln_graph_initialize(kiln_allocator_system(), "inception-block", g);
  g->opset = 13;
  const kiln_graph_shape_t shape = {.rank = 4, .dims = {1, 4, 8, 8}};
  int32_t x = -1;
  KILN_EXPECT_OK(kiln_gpu_graph_add_input(g, "x", &shape, &x));
  int32_t branches[4];
  branches[0] = kiln_sched_conv(g, x, 1);
  branches[1] = kiln_sched_conv(g, kiln_sched_conv(g, x, 1), 3);
  branches[2] = kiln_sched_conv(g, kiln_sched_conv(g, x, 1), 5);
  int32_t pool_node = -1;
  int32_t pooled = kiln_sched_node(g, "MaxPool", x, -1, &pool_node);
  const int64_t kernel[2] = {3, 3}, pads[4] = {1, 1, 1, 1};
  kiln_sched_ints(g, pool_node, "kernel_shape", kernel, 2);
  kiln_sched_ints(g, pool_node, "pads", pads, 4);
  branches[3] = kiln_sched_conv(g, pooled, 1);
  kiln_sched_concat_output(g, branches);
}

// Four heads over x [8, 16]: Softmax(x Wa_h) Wv_h, concatenated.
static void kiln_sched_heads(kiln_graph_t* g) {
  kiln_graph_initialize(kiln_allocator_system(), "parallel-heads", g);
  g->opset = 13;
  const kiln_graph_shape_t shape = {.rank = 2, .dims = {8, 16}};
  int32_t x = -1;
  KILN_EXPECT_OK(kiln_gpu_graph_add_input(g, "x", &shape, &x));
  int32_t heads[4];
  for (int h = 0; h < 4; ++h) {
    const int64_t wa[2] = {16, 8}, wv[2] = {8, 4};
    int32_t scores = kiln_sched_node(g, "MatMul", x, kiln_sched_weight(g, 2, wa), NULL);
    int32_t softmax_node = -1;
    int32_t p = kiln_sched_node(g, "Softmax", scores, -1, &softmax_node);
    const int64_t axis = -1;
    kiln_sched_ints(g, softmax_node, "axis", &axis, 1);
    heads[h] = kiln_sched_node(g, "MatMul", p, kiln_sched_weight(g, 2, wv), NULL);
  }
  kiln_sched_concat_output(g, heads);
}

typedef struct kiln_sched_module_t {
  kiln_byte_buffer_t bytes;
  size_t dispatches, barriers;
} kiln_sched_module_t;

// Compiles (passes run inside) and counts dispatches and barriers.
static void kiln_sched_compile(kiln_graph_t* g, kiln_sched_module_t* out) {
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  kiln_gpu_capture_t assembly;
  KILN_ASSERT_OK(kiln_gpu_capture_begin(&options, &assembly));
  kiln_byte_buffer_init(&out->bytes, kiln_allocator_system());
  KILN_EXPECT_OK(kiln_onnx_compile_graph(g, &options, kiln_allocator_system(), &out->bytes));
  kiln_gpu_capture_end(&assembly);
  out->dispatches = kiln_gpu_text_dispatches(assembly.text);
  out->barriers = kiln_gpu_text_count(assembly.text, "call.import hal.command_buffer.barrier ");
  fprintf(stderr, "  %s: %zu dispatches, %zu barriers\n", g->source, out->dispatches,
          out->barriers);
  kiln_gpu_capture_release(&assembly);
}

static void kiln_sched_input(const kiln_graph_t* g, uint32_t seed, kiln_graph_tensor_t* out) {
  KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32,
                                            &g->values[g->inputs[0]].shape, out));
  g_state = seed;
  float* data = out->data;
  for (size_t i = 0; i < out->byte_size / sizeof(float); ++i) data[i] = kiln_sched_random();
}

// Opens a session on the module and finds `predict`.
static kiln_session_t* kiln_sched_session(const kiln_sched_module_t* module,
                                         kiln_vm_function_t* out_function) {
  kiln_session_t* session = NULL;
  KILN_EXPECT_OK(kiln_gpu_open(&session));
  if (!session) return NULL;
  KILN_EXPECT_OK(kiln_session_load_module_memory(session, kiln_byte_buffer_span(&module->bytes),
                                                 "schedule-test"));
  KILN_EXPECT_OK(kiln_session_lookup(session, "predict", out_function));
  return session;
}

static void kiln_sched_close(kiln_session_t* session) {
  kiln_hal_device_t* device = kiln_session_device(session);
  KILN_EXPECT_EQ(kiln_hal_device_validation_message_count(device), 0);
  kiln_session_destroy(session);
}

// Two inputs and the reference executor's outputs for them (before the
// compile's passes change the graph).
static void kiln_sched_references(kiln_graph_t* g, kiln_graph_tensor_t inputs[2],
                                  kiln_graph_tensor_t expected[2]) {
  for (int i = 0; i < 2; ++i) {
    kiln_sched_input(g, 77u + (uint32_t)i, &inputs[i]);
    KILN_ASSERT_OK(kiln_graph_reference_run(g, &inputs[i], 1, NULL, kiln_allocator_system(),
                                            &expected[i]));
  }
}

// Three calls with alternating inputs in one session (new input and output
// buffers each call, one recording) against one call each in fresh
// sessions, bit for bit, and against the reference executor.
static void kiln_sched_check_calls(kiln_graph_t* g, const kiln_sched_module_t* module,
                                   kiln_graph_tensor_t inputs[2],
                                   kiln_graph_tensor_t expected[2]) {
  kiln_graph_tensor_t warm[3], fresh[2];
  memset(warm, 0, sizeof(warm));
  memset(fresh, 0, sizeof(fresh));
  kiln_vm_function_t function;
  kiln_session_t* session = kiln_sched_session(module, &function);
  KILN_ASSERT_TRUE(session != NULL);
  for (int c = 0; c < 3; ++c) {
    KILN_EXPECT_OK(kiln_gpu_call(session, function, g, &inputs[c % 2], &warm[c]));
  }
  kiln_sched_close(session);
  for (int i = 0; i < 2; ++i) {
    session = kiln_sched_session(module, &function);
    KILN_ASSERT_TRUE(session != NULL);
    KILN_EXPECT_OK(kiln_gpu_call(session, function, g, &inputs[i], &fresh[i]));
    kiln_sched_close(session);
  }
  for (int c = 0; c < 3; ++c) {
    KILN_ASSERT_EQ(warm[c].byte_size, fresh[c % 2].byte_size);
    KILN_EXPECT_EQ(memcmp(warm[c].data, fresh[c % 2].data, warm[c].byte_size), 0);
    // fp32, a few dozen terms per sum.
    kiln_tensor_expect_relative_error(&warm[c], &expected[c % 2], 1e-5, g->source);
  }
  for (int i = 0; i < 2; ++i) {
    kiln_graph_tensor_deinit(&inputs[i]);
    kiln_graph_tensor_deinit(&expected[i]);
    kiln_graph_tensor_deinit(&fresh[i]);
  }
  for (int c = 0; c < 3; ++c) kiln_graph_tensor_deinit(&warm[c]);
}

// Builds the graph with `build`, checks the module's dispatch and barrier
// counts, then the calls (kiln_sched_check_calls).
static void kiln_sched_check(void (*build)(kiln_graph_t*), size_t min_dispatches,
                             size_t barriers) {
  kiln_graph_t g;
  build(&g);
  KILN_ASSERT_OK(kiln_graph_infer_shapes(&g));
  kiln_graph_tensor_t inputs[2], expected[2];
  kiln_sched_references(&g, inputs, expected);
  kiln_sched_module_t module;
  kiln_sched_compile(&g, &module);
  KILN_EXPECT_GE(module.dispatches, min_dispatches);
  KILN_EXPECT_EQ(module.barriers, barriers);
  kiln_sched_check_calls(&g, &module, inputs, expected);
  kiln_byte_buffer_deinit(&module.bytes);
  kiln_graph_deinitialize(&g);
}

// Levels: the three 1x1 convs on x and the pool; the 3x3, 5x5 and the
// pool's 1x1 (and the first tower's concat copy); the other concat copies.
// Two barriers; barriers at each hazard in the lowering's order, with the
// memory plan reusing ranges in node order, took 6.
KILN_TEST(OnnxScheduleTest, InceptionBranchesShareBarriers) {
  kiln_sched_check(kiln_sched_inception, 8, 2);
}

// Heads: every head's first MatMul, its Softmax, its second MatMul, the
// concat: each stage of all four heads at one level, three barriers (12
// before levels, the level-based memory plan and disjoint concat pieces).
KILN_TEST(OnnxScheduleTest, AttentionHeadsRunSideBySide) {
  kiln_sched_check(kiln_sched_heads, 12, 3);
}
