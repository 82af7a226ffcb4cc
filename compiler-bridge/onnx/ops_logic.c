// Comparisons, logic, selection and variadic math that exporters emit
// around masks and shape arithmetic: Equal, Less, Greater, LessOrEqual,
// GreaterOrEqual, Not, And, Or, Xor, Where, Max, Min, Sum, Mean,
// ConstantOfShape, Range. All broadcast like numpy.
#include <math.h>
#include <string.h>

#include "ops.h"

// Walks out's shape with up to three broadcast operands, calling `step`
// with each operand's element offset.
typedef void (*kiln_step_fn_t)(void* context, size_t i, const int64_t* offsets);

static void kiln_broadcast_walk(const kiln_graph_shape_t* out_shape,
                                size_t count, const kiln_ref_tensor_t* const* in,
                                size_t in_count, kiln_step_fn_t step,
                                void* context) {
  int64_t strides[3][KILN_GRAPH_MAX_RANK];
  int64_t offsets[3] = {0, 0, 0};
  int64_t coords[KILN_GRAPH_MAX_RANK] = {0};
  for (size_t k = 0; k < in_count; ++k) {
    kiln_ref_broadcast_strides(&in[k]->shape, out_shape, strides[k]);
  }
  for (size_t i = 0; i < count; ++i) {
    step(context, i, offsets);
    for (int32_t d = out_shape->rank; d-- > 0;) {
      for (size_t k = 0; k < in_count; ++k) offsets[k] += strides[k][d];
      if (++coords[d] < out_shape->dims[d]) break;
      for (size_t k = 0; k < in_count; ++k) {
        offsets[k] -= strides[k][d] * out_shape->dims[d];
      }
      coords[d] = 0;
    }
  }
}

static double kiln_load(const kiln_ref_tensor_t* t, int64_t i) {
  switch (t->dtype) {
    case KILN_GRAPH_DTYPE_F32: return ((const float*)t->data)[i];
    case KILN_GRAPH_DTYPE_I32: return ((const int32_t*)t->data)[i];
    case KILN_GRAPH_DTYPE_BOOL: return ((const uint8_t*)t->data)[i];
    default: return 0.0;
  }
}

// int64 compares exactly (doubles lose precision past 2^53).
static int kiln_compare(const kiln_ref_tensor_t* a, int64_t ia,
                        const kiln_ref_tensor_t* b, int64_t ib) {
  if (a->dtype == KILN_GRAPH_DTYPE_I64) {
    int64_t x = ((const int64_t*)a->data)[ia], y = ((const int64_t*)b->data)[ib];
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  double x = kiln_load(a, ia), y = kiln_load(b, ib);
  if (isnan(x) || isnan(y)) return 2;  // unordered: every comparison false
  return x < y ? -1 : (x > y ? 1 : 0);
}

// ---- comparisons and logic -------------------------------------------------

static bool kiln_is_logic(const char* op) {
  return strcmp(op, "And") == 0 || strcmp(op, "Or") == 0 ||
         strcmp(op, "Xor") == 0;
}

static kiln_status_t kiln_infer_compare(const kiln_op_infer_args_t* args) {
  unsigned mask = kiln_is_logic(args->node->op_type) ? KILN_OP_BOOL
                  : strcmp(args->node->op_type, "Equal") == 0 ? KILN_OP_ANY
                                                              : KILN_OP_NUMERIC;
  const kiln_graph_value_t* a = NULL;
  const kiln_graph_value_t* b = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, mask, &a));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 1, 1u << a->dtype, &b));
  kiln_graph_shape_t shape;
  KILN_RETURN_IF_ERROR(kiln_op_broadcast(args, &a->shape, &b->shape, &shape));
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_BOOL, &shape);
}

typedef struct kiln_compare_ctx_t {
  const kiln_ref_tensor_t* a;
  const kiln_ref_tensor_t* b;
  uint8_t* out;
  char kind;  // E(qual) L(ess) G(reater) l(<=) g(>=) A(nd) O(r) X(or)
} kiln_compare_ctx_t;

static void kiln_compare_step(void* context, size_t i, const int64_t* o) {
  kiln_compare_ctx_t* c = (kiln_compare_ctx_t*)context;
  if (c->kind == 'A' || c->kind == 'O' || c->kind == 'X') {
    uint8_t x = ((const uint8_t*)c->a->data)[o[0]];
    uint8_t y = ((const uint8_t*)c->b->data)[o[1]];
    c->out[i] = c->kind == 'A' ? (x && y) : c->kind == 'O' ? (x || y) : (x != y);
    return;
  }
  int r = kiln_compare(c->a, o[0], c->b, o[1]);
  switch (c->kind) {
    case 'E': c->out[i] = r == 0; break;
    case 'L': c->out[i] = r == -1; break;
    case 'G': c->out[i] = r == 1; break;
    case 'l': c->out[i] = r == -1 || r == 0; break;
    default: c->out[i] = r == 1 || r == 0; break;
  }
}

static kiln_status_t kiln_run_compare(const kiln_op_run_args_t* args) {
  const char* op = args->node->op_type;
  kiln_compare_ctx_t c = {&args->inputs[0], &args->inputs[1],
                          (uint8_t*)args->outputs[0].data, 'E'};
  if (strcmp(op, "Less") == 0) c.kind = 'L';
  else if (strcmp(op, "Greater") == 0) c.kind = 'G';
  else if (strcmp(op, "LessOrEqual") == 0) c.kind = 'l';
  else if (strcmp(op, "GreaterOrEqual") == 0) c.kind = 'g';
  else if (strcmp(op, "And") == 0) c.kind = 'A';
  else if (strcmp(op, "Or") == 0) c.kind = 'O';
  else if (strcmp(op, "Xor") == 0) c.kind = 'X';
  const kiln_ref_tensor_t* in[] = {c.a, c.b};
  kiln_broadcast_walk(&args->outputs[0].shape, args->outputs[0].count, in, 2,
                      kiln_compare_step, &c);
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_not(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_BOOL, &x));
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_BOOL, &x->shape);
}

static kiln_status_t kiln_run_not(const kiln_op_run_args_t* args) {
  const uint8_t* x = (const uint8_t*)args->inputs[0].data;
  uint8_t* y = (uint8_t*)args->outputs[0].data;
  for (size_t i = 0; i < args->outputs[0].count; ++i) y[i] = !x[i];
  return kiln_ok_status();
}

// ---- Where -----------------------------------------------------------------

static kiln_status_t kiln_infer_where(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* cond = NULL;
  const kiln_graph_value_t* x = NULL;
  const kiln_graph_value_t* y = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_BOOL, &cond));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 1, KILN_OP_ANY, &x));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 2, 1u << x->dtype, &y));
  kiln_graph_shape_t s1, s2;
  KILN_RETURN_IF_ERROR(kiln_op_broadcast(args, &cond->shape, &x->shape, &s1));
  KILN_RETURN_IF_ERROR(kiln_op_broadcast(args, &s1, &y->shape, &s2));
  return kiln_op_set_output(args, 0, x->dtype, &s2);
}

typedef struct kiln_where_ctx_t {
  const kiln_ref_tensor_t* in[3];
  uint8_t* out;
  size_t elem;
} kiln_where_ctx_t;

static void kiln_where_step(void* context, size_t i, const int64_t* o) {
  kiln_where_ctx_t* c = (kiln_where_ctx_t*)context;
  bool take_x = ((const uint8_t*)c->in[0]->data)[o[0]] != 0;
  const kiln_ref_tensor_t* src = take_x ? c->in[1] : c->in[2];
  memcpy(c->out + i * c->elem,
         (const uint8_t*)src->data + (size_t)o[take_x ? 1 : 2] * c->elem,
         c->elem);
}

static kiln_status_t kiln_run_where(const kiln_op_run_args_t* args) {
  kiln_where_ctx_t c = {{&args->inputs[0], &args->inputs[1], &args->inputs[2]},
                        (uint8_t*)args->outputs[0].data,
                        kiln_graph_dtype_size(args->outputs[0].dtype)};
  kiln_broadcast_walk(&args->outputs[0].shape, args->outputs[0].count, c.in, 3,
                      kiln_where_step, &c);
  return kiln_ok_status();
}

// ---- Max, Min, Sum, Mean (variadic; float32, and integers but Mean) ---------
// Integer Max/Min/Sum fold on constants (T5's relative position buckets
// clamp int64 positions with Min); the GPU lowering takes floats only.

static kiln_status_t kiln_infer_variadic(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* first = NULL;
  const uint32_t types =
      strcmp(args->node->op_type, "Mean") == 0 ? KILN_OP_F32 : KILN_OP_F32 | KILN_OP_INDEX;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, types, &first));
  kiln_graph_shape_t shape = first->shape;
  for (size_t i = 1; i < args->node->input_count; ++i) {
    const kiln_graph_value_t* v = NULL;
    KILN_RETURN_IF_ERROR(kiln_op_require_input(args, i, 1u << first->dtype, &v));
    kiln_graph_shape_t joined;
    KILN_RETURN_IF_ERROR(kiln_op_broadcast(args, &shape, &v->shape, &joined));
    shape = joined;
  }
  return kiln_op_set_output(args, 0, first->dtype, &shape);
}

typedef struct kiln_fold_ctx_t {
  const kiln_ref_tensor_t* in[2];
  void* out;
  char kind;  // M(ax) m(in) S(um)
  bool first;
} kiln_fold_ctx_t;

static int64_t kiln_fold_int_at(const kiln_ref_tensor_t* t, int64_t at) {
  return t->dtype == KILN_GRAPH_DTYPE_I64 ? ((const int64_t*)t->data)[at]
                                          : ((const int32_t*)t->data)[at];
}

static void kiln_fold_step(void* context, size_t i, const int64_t* o) {
  kiln_fold_ctx_t* c = (kiln_fold_ctx_t*)context;
  const kiln_graph_dtype_t dtype = c->in[1]->dtype;
  if (dtype == KILN_GRAPH_DTYPE_I64 || dtype == KILN_GRAPH_DTYPE_I32) {
    const int64_t v = kiln_fold_int_at(c->in[1], o[1]);
    int64_t acc = c->first ? v : kiln_fold_int_at(c->in[0], o[0]);
    if (!c->first) {
      if (c->kind == 'S') acc = (int64_t)((uint64_t)acc + (uint64_t)v);  // wraps
      else if (c->kind == 'M') acc = v > acc ? v : acc;
      else acc = v < acc ? v : acc;
    }
    if (dtype == KILN_GRAPH_DTYPE_I64) {
      ((int64_t*)c->out)[i] = acc;
    } else {
      ((int32_t*)c->out)[i] = (int32_t)(uint32_t)(uint64_t)acc;
    }
    return;
  }
  float v = ((const float*)c->in[1]->data)[o[1]];
  float acc = c->first ? v : ((const float*)c->in[0]->data)[o[0]];
  if (!c->first) {
    if (c->kind == 'S') acc += v;
    else if (isnan(v) || isnan(acc)) acc = NAN;
    else if (c->kind == 'M') acc = v > acc ? v : acc;
    else acc = v < acc ? v : acc;
  }
  ((float*)c->out)[i] = acc;
}

static kiln_status_t kiln_run_variadic(const kiln_op_run_args_t* args) {
  const char* op = args->node->op_type;
  kiln_ref_tensor_t* out = &args->outputs[0];
  char kind = strcmp(op, "Max") == 0 ? 'M' : strcmp(op, "Min") == 0 ? 'm' : 'S';
  // Accumulates input by input into the output (which broadcasts to itself).
  for (size_t k = 0; k < args->input_count; ++k) {
    kiln_fold_ctx_t c = {{out, &args->inputs[k]}, out->data, kind, k == 0};
    kiln_broadcast_walk(&out->shape, out->count, c.in, 2, kiln_fold_step, &c);
  }
  if (strcmp(op, "Mean") == 0) {
    float* y = (float*)out->data;
    for (size_t i = 0; i < out->count; ++i) {
      y[i] = y[i] / (float)args->input_count;
    }
  }
  return kiln_ok_status();
}

// ---- ConstantOfShape, Range -------------------------------------------------

static kiln_status_t kiln_infer_constant_of_shape(
    const kiln_op_infer_args_t* args) {
  int64_t dims[KILN_GRAPH_MAX_RANK];
  size_t count = 0;
  KILN_RETURN_IF_ERROR(
      kiln_op_constant_ints(args, 0, dims, KILN_GRAPH_MAX_RANK, &count));
  kiln_graph_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  shape.rank = (int32_t)count;
  for (size_t i = 0; i < count; ++i) {
    if (dims[i] < 0) return kiln_op_invalid(args, "negative dim");
    shape.dims[i] = dims[i];
  }
  kiln_graph_dtype_t dtype = KILN_GRAPH_DTYPE_F32;
  const kiln_graph_attr_t* value = kiln_graph_node_find_attr(args->node, "value");
  if (value) {
    if (value->type != KILN_GRAPH_ATTR_TENSOR) {
      return kiln_op_invalid(args, "value must be a tensor");
    }
    const kiln_graph_value_t* t = &args->graph->values[value->tensor];
    size_t elements = 0;
    KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&t->shape, &elements));
    if (elements != 1) return kiln_op_invalid(args, "value must hold one element");
    dtype = t->dtype;
  }
  return kiln_op_set_output(args, 0, dtype, &shape);
}

// The value attribute's tensor is only reachable through the graph, so the
// output is filled at inference (its input is a constant there).
static kiln_status_t kiln_run_constant_of_shape(const kiln_op_run_args_t* args) {
  return kiln_make_status(KILN_STATUS_INTERNAL,
                          "node '%s' (ConstantOfShape) should have been "
                          "folded at import", args->node->name);
}

static kiln_status_t kiln_infer_constant_of_shape_and_fill(
    const kiln_op_infer_args_t* args) {
  KILN_RETURN_IF_ERROR(kiln_infer_constant_of_shape(args));
  int32_t out = args->node->outputs[0];
  if (out < 0) return kiln_ok_status();
  kiln_graph_value_t* v = &args->graph->values[out];
  size_t count = 0, elem = kiln_graph_dtype_size(v->dtype);
  KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&v->shape, &count));
  uint8_t fill[8] = {0};
  const kiln_graph_attr_t* value = kiln_graph_node_find_attr(args->node, "value");
  if (value) memcpy(fill, args->graph->values[value->tensor].data, elem);
  void* data = NULL;
  KILN_RETURN_IF_ERROR(kiln_arena_allocate_aligned(
      &args->graph->arena, count ? count * elem : 1, 64, &data));
  for (size_t i = 0; i < count; ++i) memcpy((uint8_t*)data + i * elem, fill, elem);
  args->graph->values[out].data = data;
  return kiln_ok_status();
}

static kiln_status_t kiln_range_count(const kiln_op_infer_args_t* args,
                                      double start, double limit,
                                      double delta, int64_t* out_count) {
  *out_count = 0;
  if (delta == 0.0 || isnan(start) || isnan(limit) || isnan(delta)) {
    return kiln_op_invalid(args, "delta must be non-zero and values finite");
  }
  double n = ceil((limit - start) / delta);
  if (!(n < (double)KILN_GRAPH_MAX_ELEMENTS)) {
    return kiln_op_invalid(args, "range too long");
  }
  *out_count = n > 0 ? (int64_t)n : 0;
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_range(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* v[3];
  for (size_t i = 0; i < 3; ++i) {
    KILN_RETURN_IF_ERROR(kiln_op_require_input(
        args, i, i ? 1u << v[0]->dtype : KILN_OP_NUMERIC, &v[i]));
    if (!v[i]->data) {
      return kiln_op_unsupported(args, "input %zu must be a constant (static "
                                 "shapes only)", i);
    }
    if (v[i]->shape.rank != 0) return kiln_op_invalid(args, "inputs must be scalars");
  }
  kiln_ref_tensor_t t[3];
  for (size_t i = 0; i < 3; ++i) {
    t[i].dtype = v[i]->dtype;
    t[i].data = v[i]->data;
  }
  double s = v[0]->dtype == KILN_GRAPH_DTYPE_I64 ? (double)*(const int64_t*)t[0].data : kiln_load(&t[0], 0);
  double l = v[0]->dtype == KILN_GRAPH_DTYPE_I64 ? (double)*(const int64_t*)t[1].data : kiln_load(&t[1], 0);
  double d = v[0]->dtype == KILN_GRAPH_DTYPE_I64 ? (double)*(const int64_t*)t[2].data : kiln_load(&t[2], 0);
  int64_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_range_count(args, s, l, d, &count));
  kiln_graph_shape_t shape = {1, {count}};
  return kiln_op_set_output(args, 0, v[0]->dtype, &shape);
}

static kiln_status_t kiln_run_range(const kiln_op_run_args_t* args) {
  kiln_ref_tensor_t* y = &args->outputs[0];
  for (size_t i = 0; i < y->count; ++i) {
    switch (y->dtype) {
      case KILN_GRAPH_DTYPE_I64:
        // Wrapping arithmetic: the count bound keeps values sane, and no
        // input can make this undefined behaviour.
        ((int64_t*)y->data)[i] = (int64_t)(
            (uint64_t)*(const int64_t*)args->inputs[0].data +
            (uint64_t)i * (uint64_t)*(const int64_t*)args->inputs[2].data);
        break;
      case KILN_GRAPH_DTYPE_I32:
        ((int32_t*)y->data)[i] = (int32_t)(
            (uint32_t)*(const int32_t*)args->inputs[0].data +
            (uint32_t)i * (uint32_t)*(const int32_t*)args->inputs[2].data);
        break;
      default:
        ((float*)y->data)[i] = *(const float*)args->inputs[0].data +
                               (float)i * *(const float*)args->inputs[2].data;
        break;
    }
  }
  return kiln_ok_status();
}

#define KILN_COMPARE(name, min)                                         \
  {name, "", 2, 2, 1, 1, kiln_infer_compare, kiln_run_compare, min}
#define KILN_VARIADIC(name) \
  {name, "", 1, 64, 1, 1, kiln_infer_variadic, kiln_run_variadic, 8}
const kiln_op_def_t kiln_ops_logic[] = {
    KILN_COMPARE("Equal", 7), KILN_COMPARE("Less", 7),
    KILN_COMPARE("Greater", 7), KILN_COMPARE("LessOrEqual", 12),
    KILN_COMPARE("GreaterOrEqual", 12), KILN_COMPARE("And", 7),
    KILN_COMPARE("Or", 7), KILN_COMPARE("Xor", 7),
    {"Not", "", 1, 1, 1, 1, kiln_infer_not, kiln_run_not, 1},
    {"Where", "", 3, 3, 1, 1, kiln_infer_where, kiln_run_where, 9},
    KILN_VARIADIC("Max"), KILN_VARIADIC("Min"), KILN_VARIADIC("Sum"),
    KILN_VARIADIC("Mean"),
    {"ConstantOfShape", "value", 1, 1, 1, 1,
     kiln_infer_constant_of_shape_and_fill, kiln_run_constant_of_shape, 9},
    {"Range", "", 3, 3, 1, 1, kiln_infer_range, kiln_run_range, 11},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
