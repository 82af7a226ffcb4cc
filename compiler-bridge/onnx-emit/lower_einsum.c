// Einsum with two operands onto the gemm kernel: labels are grouped into
// batch (both inputs and the output), M (first input and output), N (second
// input and output) and K (both inputs, summed). Each group must be
// contiguous, in one order, in every operand it appears in, so it flattens
// to a single stride; the output must be [batch, M, N] (or [batch, N, M],
// computed with the operands swapped). Attention's "bhid,bhjd->bhij" and
// "bhij,bhjd->bhid" are of this kind; anything else is refused.
#include <string.h>

#include "einsum.h"
#include "lower_util.h"

enum { KILN_GROUP_BATCH, KILN_GROUP_M, KILN_GROUP_N, KILN_GROUP_K, KILN_GROUP_COUNT };

typedef struct kiln_einsum_group_t {
  int32_t labels[KILN_GRAPH_MAX_RANK];  // canonical order
  int32_t count;
  uint64_t size;
} kiln_einsum_group_t;

// Position of `label` in operand `o`, or -1.
static int32_t kiln_einsum_find(const kiln_einsum_t* e, size_t o, int32_t label) {
  for (int32_t d = 0; d < e->rank[o]; ++d) {
    if (e->labels[o][d] == label) return d;
  }
  return -1;
}

// The flattened stride of group `g` in operand `o` (dense `shape`); false
// when its labels are not contiguous there in canonical order.
static bool kiln_einsum_group_stride(const kiln_einsum_t* e, size_t o,
                                     const kiln_graph_shape_t* shape,
                                     const kiln_einsum_group_t* g, uint64_t* out_stride) {
  *out_stride = 0;
  if (g->count == 0) return true;
  int32_t first = kiln_einsum_find(e, o, g->labels[0]);
  if (first < 0) return true;  // absent: broadcast (stride 0)
  for (int32_t i = 1; i < g->count; ++i) {
    if (kiln_einsum_find(e, o, g->labels[i]) != first + i) return false;
  }
  *out_stride = kiln_lower_dims(shape, first + g->count, shape->rank);
  return true;
}

kiln_status_t kiln_lower_einsum(const kiln_lower_t* l) {
  const char* equation = NULL;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_string(l->node, "equation", "", &equation));
  kiln_einsum_t e;
  char error[160];
  if (l->node->input_count != 2 || !kiln_einsum_parse(equation, 2, &e, error, sizeof(error))) {
    return kiln_lower_refuse(l, "only two-operand matmul-shaped equations are supported");
  }
  const kiln_graph_value_t* in[2] = {kiln_lower_in(l, 0), kiln_lower_in(l, 1)};
  const kiln_graph_value_t* yv = kiln_lower_out(l, 0);
  if (!in[0] || !in[1] || !yv) return kiln_lower_refuse(l, "an operand is absent");
  // Classify every label; reject repeats (diagonals) and one-sided sums.
  int32_t group_of[KILN_EINSUM_MAX_LABELS];
  int64_t size_of[KILN_EINSUM_MAX_LABELS] = {0};
  for (int32_t label = 0; label < e.label_count; ++label) {
    int32_t where = 0;
    for (size_t o = 0; o < 3; ++o) {
      int32_t hits = 0;
      for (int32_t d = 0; d < e.rank[o]; ++d) {
        if (e.labels[o][d] != label) continue;
        ++hits;
        if (o < 2) size_of[label] = in[o]->shape.dims[d];
      }
      if (hits > 1) return kiln_lower_refuse(l, "repeated labels (diagonals) are not supported");
      where |= hits << o;
    }
    switch (where) {
      case 7: group_of[label] = KILN_GROUP_BATCH; break;
      case 5: group_of[label] = KILN_GROUP_M; break;
      case 6: group_of[label] = KILN_GROUP_N; break;
      case 3: group_of[label] = KILN_GROUP_K; break;
      default:
        return kiln_lower_refuse(l, "label '%c' is summed within one operand", e.names[label]);
    }
  }
  // Output order decides which operand plays A: [batch, A-only, B-only].
  int32_t rank_out = e.rank[2];
  int32_t d = 0;
  while (d < rank_out && group_of[e.labels[2][d]] == KILN_GROUP_BATCH) ++d;
  bool swap = d < rank_out && group_of[e.labels[2][d]] == KILN_GROUP_N;
  kiln_einsum_group_t groups[KILN_GROUP_COUNT];
  memset(groups, 0, sizeof(groups));
  int32_t expected = KILN_GROUP_BATCH;
  for (d = 0; d < rank_out; ++d) {
    int32_t g = group_of[e.labels[2][d]];
    if (swap && g != KILN_GROUP_BATCH) g = g == KILN_GROUP_M ? KILN_GROUP_N : KILN_GROUP_M;
    if (g < expected) {
      return kiln_lower_refuse(l, "output labels must be ordered batch, rows, columns");
    }
    expected = g;
    groups[g].labels[groups[g].count++] = e.labels[2][d];
  }
  size_t a = swap ? 1 : 0, b = swap ? 0 : 1;
  for (d = 0; d < e.rank[a]; ++d) {
    if (group_of[e.labels[a][d]] == KILN_GROUP_K) {
      groups[KILN_GROUP_K].labels[groups[KILN_GROUP_K].count++] = e.labels[a][d];
    }
  }
  for (int32_t g = 0; g < KILN_GROUP_COUNT; ++g) {
    groups[g].size = 1;
    for (int32_t i = 0; i < groups[g].count; ++i) groups[g].size *= (uint64_t)size_of[groups[g].labels[i]];
  }
  uint64_t strides[2][KILN_GROUP_COUNT];
  const size_t operand[2] = {a, b};
  for (size_t i = 0; i < 2; ++i) {
    for (int32_t g = 0; g < KILN_GROUP_COUNT; ++g) {
      if (!kiln_einsum_group_stride(&e, operand[i], &in[operand[i]]->shape, &groups[g],
                                    &strides[i][g])) {
        return kiln_lower_refuse(l, "input %zu's labels do not flatten to a matrix", operand[i]);
      }
    }
  }
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, kiln_lower_count(&in[0]->shape)));
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, kiln_lower_count(&in[1]->shape)));
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, kiln_lower_count(&yv->shape)));
  uint32_t m = (uint32_t)groups[KILN_GROUP_M].size, n = (uint32_t)groups[KILN_GROUP_N].size;
  kiln_kernel_gemm_params_t p = {
      .m = m, .n = n, .k = (uint32_t)groups[KILN_GROUP_K].size,
      .batch = (uint32_t)groups[KILN_GROUP_BATCH].size,
      .a_batch_stride = (uint32_t)strides[0][KILN_GROUP_BATCH],
      .a_row_stride = (uint32_t)strides[0][KILN_GROUP_M],
      .a_col_stride = (uint32_t)strides[0][KILN_GROUP_K],
      .b_batch_stride = (uint32_t)strides[1][KILN_GROUP_BATCH],
      .b_row_stride = (uint32_t)strides[1][KILN_GROUP_K],
      .b_col_stride = (uint32_t)strides[1][KILN_GROUP_N],
      .c_batch_stride = m * n, .c_row_stride = n,
      .residual_batch_stride = m * n, .residual_row_stride = n,
      .scale = 1.0f};
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_GEMM, .push = &p,
                                    .binding_count = 5, .written_mask = 1u << 4,
                                    .grid = KILN_EMIT_GRID_GEMM};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, a, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, b, &desc.bindings[1]));
  desc.bindings[2] = desc.bindings[0];
  desc.bindings[3] = desc.bindings[0];
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc.bindings[4]));
  static const uint32_t specs[3] = {KILN_SPEC_GEMM_ACTIVATION, KILN_SPEC_GEMM_HAS_BIAS,
                                    KILN_SPEC_GEMM_HAS_RESIDUAL};
  kiln_lower_reduction_t r = {specs, KILN_ACT_NONE, false, false};
  return kiln_lower_add_big_reduction(l, &desc, &r);
}
