// kiln.Attention (attention.h): attribute reading, the checker (every view
// inside its value, the output a dense permutation) and the plain C
// reference the GPU kernel is tested against.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "kiln/compiler/kernels_codes.h"
#include "ops.h"

static kiln_status_t kiln_attention_ints(const kiln_graph_node_t* node, const char* name,
                                         int64_t* out, size_t count, bool required) {
  const int64_t* values = NULL;
  size_t n = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_ints(node, name, &values, &n));
  if (n == 0 && !required) return kiln_ok_status();
  if (n != count) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "node '%s' (op %s): %s must hold %zu ints, not %zu",
                            node->name ? node->name : "?", KILN_ATTENTION_OP, name, count, n);
  }
  memcpy(out, values, count * sizeof(*out));
  return kiln_ok_status();
}

kiln_status_t kiln_attention_read(const kiln_graph_node_t* node, kiln_attention_t* out) {
  memset(out, 0, sizeof(*out));
  int64_t dims[6];
  KILN_RETURN_IF_ERROR(kiln_attention_ints(node, "kiln.dims", dims, 6, true));
  out->batch = dims[0], out->heads = dims[1], out->sq = dims[2];
  out->sk = dims[3], out->d = dims[4], out->dv = dims[5];
  KILN_RETURN_IF_ERROR(kiln_attention_ints(node, "kiln.q_view", out->q, 4, true));
  KILN_RETURN_IF_ERROR(kiln_attention_ints(node, "kiln.k_view", out->k, 4, true));
  KILN_RETURN_IF_ERROR(kiln_attention_ints(node, "kiln.v_view", out->v, 4, true));
  KILN_RETURN_IF_ERROR(kiln_attention_ints(node, "kiln.out_view", out->out, 4, true));
  KILN_RETURN_IF_ERROR(kiln_attention_ints(node, "kiln.mask_view", out->mask, 4, false));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(node, "kiln.mask", 0, &out->mask_kind));
  int64_t causal = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(node, "kiln.causal", 0, &causal));
  out->causal = causal != 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(node, "kiln.scale", 1.0f, &out->scale));
  const int64_t* shape = NULL;
  size_t rank = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_ints(node, "kiln.out_shape", &shape, &rank));
  if (rank > KILN_GRAPH_MAX_RANK) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "node '%s': kiln.out_shape rank %zu",
                            node->name ? node->name : "?", rank);
  }
  if (rank) memcpy(out->out_shape, shape, rank * sizeof(*shape));
  out->out_rank = (int32_t)rank;
  return kiln_ok_status();
}

// The largest element index a view reaches, or -1 when an offset or stride
// is negative or past 2^31 (sizes are at most 2^31 too, so every term is
// below 2^62 and the unsigned sum cannot wrap).
static int64_t kiln_view_extent(const int64_t view[4], int64_t batch, int64_t heads,
                                int64_t rows, int64_t cols) {
  const int64_t limit = (int64_t)1 << 31;
  const int64_t sizes[3] = {batch, heads, rows};
  if (view[0] < 0 || view[0] > limit) return -1;
  uint64_t last = (uint64_t)view[0] + (uint64_t)cols - 1;
  for (int i = 0; i < 3; ++i) {
    if (view[i + 1] < 0 || view[i + 1] > limit) return -1;
    last += (uint64_t)(sizes[i] - 1) * (uint64_t)view[i + 1];
  }
  return last > (uint64_t)INT64_MAX ? -1 : (int64_t)last;
}

static int kiln_compare_pairs(const void* a, const void* b) {
  const int64_t* x = (const int64_t*)a;
  const int64_t* y = (const int64_t*)b;
  return x[1] < y[1] ? -1 : x[1] > y[1];
}

// The output view must write every element of the output exactly once:
// offset 0 and the (size, stride) pairs, sorted by stride, dense.
static bool kiln_out_view_dense(const kiln_attention_t* a) {
  int64_t pairs[4][2] = {{a->batch, a->out[1]}, {a->heads, a->out[2]},
                         {a->sq, a->out[3]}, {a->dv, 1}};
  if (a->out[0] != 0) return false;
  qsort(pairs, 4, sizeof(pairs[0]), kiln_compare_pairs);
  int64_t expect = 1;
  for (int i = 0; i < 4; ++i) {
    if (pairs[i][0] == 1) continue;
    if (pairs[i][1] != expect) return false;
    expect *= pairs[i][0];
  }
  return true;
}

static kiln_status_t kiln_check_view(const kiln_op_infer_args_t* args, const char* what,
                                     size_t input, const int64_t view[4], int64_t rows,
                                     int64_t cols, const kiln_attention_t* a) {
  const kiln_graph_value_t* value = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, input, KILN_OP_F32, &value));
  size_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&value->shape, &count));
  int64_t last = kiln_view_extent(view, a->batch, a->heads, rows, cols);
  if (last < 0 || (uint64_t)last >= count) {
    return kiln_op_invalid(args, "the %s view reaches element %lld of a %zu-element input",
                           what, (long long)last, count);
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_attention(const kiln_op_infer_args_t* args) {
  kiln_attention_t a;
  kiln_status_t status = kiln_attention_read(args->node, &a);
  if (!kiln_status_is_ok(status)) {
    kiln_status_ignore(status);
    return kiln_op_invalid(args, "malformed kiln.* attributes");
  }
  const int64_t sizes[6] = {a.batch, a.heads, a.sq, a.sk, a.d, a.dv};
  for (int i = 0; i < 6; ++i) {
    if (sizes[i] < 1 || sizes[i] > ((int64_t)1 << 31)) {
      return kiln_op_invalid(args, "kiln.dims[%d] = %lld is out of range", i,
                             (long long)sizes[i]);
    }
  }
  KILN_RETURN_IF_ERROR(kiln_check_view(args, "Q", 0, a.q, a.sq, a.d, &a));
  KILN_RETURN_IF_ERROR(kiln_check_view(args, "K", 1, a.k, a.sk, a.d, &a));
  KILN_RETURN_IF_ERROR(kiln_check_view(args, "V", 2, a.v, a.sk, a.dv, &a));
  if (a.mask_kind != KILN_ATTN_MASK_NONE) {
    if (a.mask_kind != KILN_ATTN_MASK_ADD && a.mask_kind != KILN_ATTN_MASK_SELECT) {
      return kiln_op_invalid(args, "kiln.mask = %lld is not a mask kind", (long long)a.mask_kind);
    }
    // The mask view has no offset; reuse the extent check with one.
    int64_t view[4] = {0, a.mask[0], a.mask[1], a.mask[2]};
    int64_t last = kiln_view_extent(view, a.batch, a.heads, a.sq, 1);
    if (a.mask[3] < 0 || a.mask[3] > ((int64_t)1 << 31) || last < 0 ||
        last > ((int64_t)1 << 62)) {
      return kiln_op_invalid(args, "negative or huge mask strides");
    }
    last += (a.sk - 1) * a.mask[3];
    const kiln_graph_value_t* mask = NULL;
    KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 3, KILN_OP_F32, &mask));
    size_t count = 0;
    KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&mask->shape, &count));
    if ((uint64_t)last >= count) {
      return kiln_op_invalid(args, "the mask view reaches element %lld of %zu",
                             (long long)last, count);
    }
  } else if (kiln_op_input(args, 3)) {
    return kiln_op_invalid(args, "a mask input without kiln.mask");
  }
  kiln_graph_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  shape.rank = a.out_rank;
  int64_t total = 1;
  for (int32_t i = 0; i < a.out_rank; ++i) {
    if (a.out_shape[i] < 1 || a.out_shape[i] > ((int64_t)1 << 31)) {
      return kiln_op_invalid(args, "kiln.out_shape[%d] is out of range", i);
    }
    shape.dims[i] = a.out_shape[i];
    total *= a.out_shape[i];
    if (total > KILN_GRAPH_MAX_ELEMENTS) return kiln_op_invalid(args, "output too large");
  }
  // Each factor is at most 2^31: stop multiplying once past the total.
  int64_t product = 1;
  const int64_t factors[4] = {a.batch, a.heads, a.sq, a.dv};
  for (int i = 0; i < 4 && product <= total; ++i) product *= factors[i];
  if (product != total || !kiln_out_view_dense(&a)) {
    return kiln_op_invalid(args, "kiln.out_view does not cover the %lld-element output "
                           "exactly once", (long long)total);
  }
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &shape);
}

// The score of key j after scale and mask (the softmax input).
static float kiln_ref_score(const kiln_attention_t* a, const float* q, const float* k,
                            const float* mask, int64_t b, int64_t h, int64_t i, int64_t j) {
  const float* qr = q + a->q[0] + b * a->q[1] + h * a->q[2] + i * a->q[3];
  const float* kr = k + a->k[0] + b * a->k[1] + h * a->k[2] + j * a->k[3];
  float s = 0.0f;
  for (int64_t d = 0; d < a->d; ++d) s += qr[d] * kr[d];
  s *= a->scale;
  if (a->mask_kind != KILN_ATTN_MASK_NONE) {
    float m = mask[b * a->mask[0] + h * a->mask[1] + i * a->mask[2] + j * a->mask[3]];
    uint32_t bits;
    memcpy(&bits, &m, sizeof(bits));
    if (a->mask_kind == KILN_ATTN_MASK_ADD) {
      s += m;
    } else if (bits != KILN_SELECT_KEEP_BITS) {
      s = m;
    }
  }
  if (a->causal && j > i) s = -INFINITY;
  return s;
}

static kiln_status_t kiln_run_attention(const kiln_op_run_args_t* args) {
  kiln_attention_t a;
  KILN_RETURN_IF_ERROR(kiln_attention_read(args->node, &a));
  const float* q = (const float*)args->inputs[0].data;
  const float* k = (const float*)args->inputs[1].data;
  const float* v = (const float*)args->inputs[2].data;
  const float* mask = args->input_count > 3 ? (const float*)args->inputs[3].data : NULL;
  float* out = (float*)args->outputs[0].data;
  float* p = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_malloc(args->allocator, (size_t)a.sk * sizeof(float), (void**)&p));
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t h = 0; h < a.heads; ++h) {
      for (int64_t i = 0; i < a.sq; ++i) {
        float m = -INFINITY;
        for (int64_t j = 0; j < a.sk; ++j) {
          p[j] = kiln_ref_score(&a, q, k, mask, b, h, i, j);
          m = isnan(p[j]) || isnan(m) ? NAN : fmaxf(m, p[j]);
        }
        float sum = 0.0f;
        for (int64_t j = 0; j < a.sk; ++j) sum += p[j] = expf(p[j] - m);
        float* o = out + a.out[0] + b * a.out[1] + h * a.out[2] + i * a.out[3];
        for (int64_t d = 0; d < a.dv; ++d) {
          float acc = 0.0f;
          for (int64_t j = 0; j < a.sk; ++j) {
            acc += p[j] * v[a.v[0] + b * a.v[1] + h * a.v[2] + j * a.v[3] + d];
          }
          o[d] = acc / sum;
        }
      }
    }
  }
  kiln_allocator_free(args->allocator, p);
  return kiln_ok_status();
}

const kiln_op_def_t kiln_ops_attention[] = {
    {KILN_ATTENTION_OP,
     "kiln.dims,kiln.q_view,kiln.k_view,kiln.v_view,kiln.out_view,kiln.mask_view,kiln.mask,"
     "kiln.causal,kiln.scale,kiln.out_shape",
     3, 4, 1, 1, kiln_infer_attention, kiln_run_attention, 0},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
