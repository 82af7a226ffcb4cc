// Split-K (issue 16): a gemm or implicit-GEMM conv of one image whose
// output blocks are too few to fill a GPU's compute units
// (kiln_kernel_gemm_split_k_parts) sums its k in parts. Each part is a
// dispatch of the same kernel over a k range (gemm: operand bindings
// shifted by whole 64-k chunks; conv: a range of input channels) writing its
// partial product, without epilogue, into a slice of scratch; the parts
// write disjoint slices and read only operands, so no barrier orders them.
// A gemm whose parts are equal runs them as one dispatch instead, the
// parts as the batch of the same kernel.
// One gemv then adds the slices (per output row, a row of ones times that
// row's [parts x n] partials; a short k, so one k slice per workgroup on
// targets that tile per product) and applies scale, bias, residual and
// activation. The order of the sum is fixed.
// gemm_coopmat splits the same way, where its cost model says the parts
// and their sum beat the whole (kiln_kernel_coopmat_split_k_parts); its
// equal parts sum in their own dispatch instead (gemm_coopmat_split,
// kiln_splitk_fused: f32 partials, the last part of a block adds them in
// order) unless a LayerNorm will take the sum (norm_parts). On fp16
// storage the gemv's partials are fp16: each part rounds once, as a split
// for the loop budget does (docs/precision.md).
#include <string.h>

#include "kiln/compiler/kernels_gemm_tuning.h"
#include "lower_util.h"

// The split every target agrees to: the least of their parts (1: none).
static uint32_t kiln_splitk_parts(const kiln_lower_t* l, bool coopmat, uint64_t rows,
                                  uint64_t cols, uint64_t k, uint64_t groups) {
  uint32_t parts = KILN_COOPMAT_SPLIT_K_MAX_PARTS;
  for (size_t t = 0; t < l->program->target_count; ++t) {
    const kiln_kernel_arch_caps_t* caps = &l->program->caps[t];
    uint32_t p = 1;
    if (coopmat) {
      p = kiln_kernel_coopmat_split_k_parts(caps, rows, cols, k, groups);
    } else if (kiln_kernel_gemm_split_k_enabled(caps->arch)) {
      p = kiln_kernel_gemm_split_k_parts(caps, rows, cols, k, groups);
    }
    if (p < parts) parts = p;
  }
  return parts;
}

// Bindings that all fit the targets' range and none of them in the scratch
// the partials take (an operand the lowering expanded into scratch must lie
// in the part it holds: kiln_emit_scratch_reserve).
static bool kiln_splitk_bindings_ok(const kiln_lower_t* l, const kiln_emit_dispatch_desc_t* d) {
  const uint64_t limit = kiln_emit_range_limit(l->program);
  const uint64_t end = l->program->scratch_reserved ? kiln_emit_scratch_held_end(l->program)
                                                    : l->program->plan->peak_bytes;
  for (uint32_t b = 0; b < d->binding_count; ++b) {
    const kiln_emit_range_t* r = &d->bindings[b];
    if (r->length > limit) return false;
    if (r->space == KILN_EMIT_SPACE_TRANSIENT && r->offset + r->length > end) return false;
  }
  return true;
}

// The most output blocks of any gemm_coopmat build over rows x cols (the
// targets pick their tilings later; every one gets a counter per block).
static uint64_t kiln_splitk_max_blocks(uint64_t rows, uint64_t cols) {
  uint64_t most = 0;
  for (size_t i = 0; i < kiln_kernel_coopmat_candidate_count(); ++i) {
    const kiln_kernel_coopmat_tiling_t* t = kiln_kernel_coopmat_candidate(i);
    const uint64_t bm = 16ull * t->warps_m * t->tiles_m, bn = 16ull * t->warps_n * t->tiles_n;
    const uint64_t blocks = ((rows + bm - 1) / bm) * ((cols + bn - 1) / bn);
    if (blocks > most) most = blocks;
  }
  return most;
}

// Whether a LayerNorm of the rows may take the parts' sum's place
// (lower_norm_parts.c: the sum and the norm in one dispatch, beside which
// summing in the product lost on the H200: BERT-base 1.117 -> 1.243 ms).
// The conditions of the record below, and a LayerNormalization reading
// the output (through views).
// A gemm's sum a LayerNorm may take (scale 1, no activation, bias per
// column, rows contiguous, one output).
static bool kiln_splitk_plain_sum(const kiln_lower_t* l, const kiln_kernel_gemm_params_t* g,
                                  const kiln_lower_reduction_t* r, uint64_t cols) {
  return l->node->output_count == 1 && l->node->outputs[0] >= 0 && g->scale == 1.0f &&
         r->activation == KILN_ACT_NONE &&
         (!r->has_bias || (g->bias_row_stride == 0 && g->bias_col_stride == 1)) &&
         (!r->has_residual || g->residual_row_stride == cols);
}

// Whether value `v` reaches a LayerNormalization's input through at most
// `depth` views (exporters put a Reshape and a Transpose between BERT's
// out-projection and its residual's norm; they move no data at batch 1).
static bool kiln_splitk_reaches_norm(const kiln_graph_t* graph, int32_t v, int depth) {
  static const char* const kViews[] = {"Reshape", "Transpose", "Squeeze", "Unsqueeze",
                                       "Flatten", "Identity"};
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed || node->input_count == 0 || node->inputs[0] != v) continue;
    if (strcmp(node->op_type, "LayerNormalization") == 0) return true;
    for (size_t i = 0; depth > 0 && node->output_count && i < sizeof(kViews) / sizeof(kViews[0]);
         ++i) {
      if (strcmp(node->op_type, kViews[i]) == 0 &&
          kiln_splitk_reaches_norm(graph, node->outputs[0], depth - 1)) {
        return true;
      }
    }
  }
  return false;
}

static bool kiln_splitk_norm_may_take(const kiln_lower_t* l, const kiln_kernel_gemm_params_t* g,
                                      const kiln_lower_reduction_t* r, uint64_t cols) {
  return kiln_splitk_plain_sum(l, g, r, cols) &&
         kiln_splitk_reaches_norm(l->program->graph, l->node->outputs[0], 3);
}

// How far B moves for a part of `step` k: rows of B, or, where B is a
// conv's windows (gemm_coopmat), whole input planes (false when a part
// would cut a channel's taps).
static bool kiln_splitk_b_step(const kiln_emit_dispatch_desc_t* desc, uint64_t step,
                               uint64_t* out_b_step) {
  const kiln_kernel_gemm_params_t* g = desc->push;
  const kiln_kernel_conv2d_params_t* w = desc->b_windows;
  if (!w) {
    *out_b_step = step * g->b_row_stride;
    return true;
  }
  const uint64_t taps = (uint64_t)w->kernel_h * w->kernel_w;
  *out_b_step = step / taps * w->in_height * w->in_width;
  return taps != 0 && step % taps == 0;
}

// Equal parts of a gemm_coopmat product and their sum as one
// gemm_coopmat_split dispatch: each part's blocks write f32 partials, the
// last part of each block to finish sums them in order and runs the
// epilogue (glsl/gemm_coopmat.comp). No sum dispatch, no barrier before
// it. *out_fused false (nothing recorded) where a binding would pass the
// targets' range.
static kiln_status_t kiln_splitk_fused(const kiln_lower_t* l, const kiln_emit_dispatch_desc_t* desc,
                                       const kiln_lower_reduction_t* r, uint32_t parts,
                                       uint64_t step, bool* out_fused) {
  *out_fused = false;
  _Static_assert(KILN_COOPMAT_SPLIT_K_MAX_PARTS <= KILN_COOPMAT_SPLIT_PARTS_MAX,
                 "gemm_coopmat_split sums at most KILN_COOPMAT_SPLIT_PARTS_MAX parts");
  if (parts > KILN_COOPMAT_SPLIT_PARTS_MAX) return kiln_ok_status();
  const kiln_kernel_gemm_params_t* g = desc->push;
  const uint64_t row4 = ((uint64_t)g->n + 3) / 4;  // a partial row in vec4s
  const uint64_t partial_bytes = (uint64_t)parts * g->m * row4 * 16;
  if (partial_bytes > kiln_emit_range_limit(l->program) || partial_bytes / 16 > UINT32_MAX) {
    return kiln_ok_status();
  }
  kiln_emit_dispatch_desc_t d = *desc;
  kiln_kernel_gemm_params_t gp = *g;
  gp.k = (uint32_t)step;
  gp.batch = parts;
  gp.a_batch_stride = (uint32_t)(step * g->a_col_stride);
  uint64_t b_step = 0;
  if (!kiln_splitk_b_step(desc, step, &b_step)) return kiln_ok_status();
  gp.b_batch_stride = (uint32_t)b_step;
  if ((uint64_t)gp.a_batch_stride != step * g->a_col_stride || gp.b_batch_stride != b_step) {
    return kiln_ok_status();
  }
  d.kernel = KILN_KERNEL_GEMM_COOPMAT_SPLIT;
  d.push = &gp;
  const kiln_kernel_spec_value_t count = {KILN_SPEC_COOPMAT_PARTS, parts};
  d.ops = &count;
  d.op_count = 1;
  d.binding_count = 7;
  KILN_RETURN_IF_ERROR(kiln_emit_scratch(l->program, partial_bytes, &d.bindings[5]));
  KILN_RETURN_IF_ERROR(kiln_emit_counters(
      l->program, kiln_splitk_max_blocks(g->m, g->n) * sizeof(uint32_t), &d.bindings[6]));
  d.written_mask |= (1u << 5) | (1u << 6);
  KILN_RETURN_IF_ERROR(kiln_lower_add_reduction(l, &d, r));
  memset(&l->program->split_sum, 0, sizeof(l->program->split_sum));  // no sum to replace
  *out_fused = true;
  return kiln_ok_status();
}

kiln_status_t kiln_lower_add_split_k(const kiln_lower_t* l, const kiln_emit_dispatch_desc_t* desc,
                                     const kiln_lower_reduction_t* r, bool* out_done) {
  *out_done = false;
  const bool coopmat = desc->kernel == KILN_KERNEL_GEMM_COOPMAT;
  const bool gemm =
      desc->kernel == KILN_KERNEL_GEMM || desc->kernel == KILN_KERNEL_GEMM_SMALL || coopmat;
  const bool conv = desc->kernel == KILN_KERNEL_CONV2D_GEMM;
  if ((!gemm && !conv) || !kiln_splitk_bindings_ok(l, desc)) return kiln_ok_status();
  // Partials, scratch and operand shifts count the node's float size: only
  // nodes whose tensors all have it (constants are placed in it).
  const uint64_t elem = kiln_emit_float_bytes(l->program);
  const kiln_graph_dtype_t dtype = elem == 2 ? KILN_GRAPH_DTYPE_F16 : KILN_GRAPH_DTYPE_F32;
  for (size_t i = 0; i < l->node->output_count; ++i) {
    const kiln_graph_value_t* y = kiln_lower_out(l, i);
    if (y && y->dtype != dtype) return kiln_ok_status();
  }
  for (size_t i = 0; i < l->node->input_count; ++i) {
    const kiln_graph_value_t* x = kiln_lower_in(l, i);
    if (x && !x->data && x->dtype != dtype) return kiln_ok_status();
  }
  // gemm parts start at multiples of `align` k, so the shifted operand
  // bindings stay KILN_EMIT_ALIGNMENT-aligned (64 floats, 128 halves).
  const uint64_t align = KILN_EMIT_ALIGNMENT / elem;
  const kiln_kernel_gemm_params_t* g = desc->push;
  const kiln_kernel_conv2d_params_t* c = desc->push;
  // The product as rows x cols x k per group; the partials as out_rows x
  // cols, laid out as the output is.
  uint64_t rows, cols, k, groups = 1, cig = 0;
  if (gemm) {
    if (g->batch != 1 || g->c_row_stride != g->n) return kiln_ok_status();
    rows = g->m;
    cols = g->n;
    k = g->k;
  } else {
    if (c->batch != 1 || c->groups == 0 || c->ci_begin || c->ci_end || c->kh_begin || c->kh_end) {
      return kiln_ok_status();
    }
    groups = c->groups;
    cig = c->in_channels / groups;
    rows = c->out_channels / groups;
    cols = (uint64_t)c->out_height * c->out_width;
    k = cig * c->kernel_h * c->kernel_w;
  }
  const uint64_t out_rows = rows * groups;
  uint32_t parts = kiln_splitk_parts(l, coopmat, rows, cols, k, groups);
  if (parts < 2 || out_rows == 0 || cols == 0 || out_rows > KILN_KERNEL_MAX_GRID_X) {
    return kiln_ok_status();
  }
  // Part sizes: whole channels (conv); for a gemm, equal parts where k
  // splits into them by multiples of 8 (one dispatch, the parts as its
  // batch: only the operands' vector loads need the alignment), else
  // whole 64-k chunks (128 at fp16: each part's shifted bindings). At
  // fp16 the chunks had split MobileNetV2's k-960 1x1 convs 384 + 384 +
  // 192, three dispatches where fp32 ran one.
  uint64_t step = 0;
  if (gemm && desc->b_windows) {
    // A conv's windows move by whole channels (kiln_splitk_b_step): the
    // most parts up to the model's of equal runs of channels, 8 at least.
    const kiln_kernel_conv2d_params_t* w = desc->b_windows;
    const uint64_t taps = (uint64_t)w->kernel_h * w->kernel_w;
    const uint64_t channels = taps ? k / taps : 0;
    while (parts >= 2 && (channels % parts != 0 || (channels / parts) % 8 != 0)) --parts;
    if (parts < 2 || channels * taps != k) return kiln_ok_status();
  }
  if (gemm) {
    step = k / parts;
    if (k % parts != 0 || step % 8 != 0) {
      step = (k + parts - 1) / parts;
      step = (step + align - 1) / align * align;
      parts = (uint32_t)((k + step - 1) / step);
    }
  } else {
    step = (cig + parts - 1) / parts;
    parts = (uint32_t)((cig + step - 1) / step);
  }
  if (parts < 2 || (desc->b_windows && k != (uint64_t)parts * step)) return kiln_ok_status();
  if (coopmat && k == (uint64_t)parts * step && !kiln_splitk_norm_may_take(l, g, r, cols)) {
    bool fused = false;
    KILN_RETURN_IF_ERROR(kiln_splitk_fused(l, desc, r, parts, step, &fused));
    if (fused) {
      *out_done = true;
      return kiln_ok_status();
    }
  }
  const uint64_t count = out_rows * cols;
  const uint64_t slice = (count + align - 1) / align * align;
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, parts * slice));
  kiln_emit_range_t scratch;
  KILN_RETURN_IF_ERROR(kiln_emit_scratch(l->program, parts * slice * elem, &scratch));
  const kiln_lower_reduction_t plain = {r->specs, KILN_ACT_NONE, false, false};
  if (gemm && k == (uint64_t)parts * step) {
    // Equal parts: one dispatch, the parts as its batch (operands shifted
    // by the batch strides, partials in consecutive slices): no dispatch
    // per part, and every part's blocks run side by side.
    kiln_emit_dispatch_desc_t d = *desc;
    kiln_kernel_gemm_params_t gp = *g;
    gp.k = (uint32_t)step;
    gp.batch = parts;
    gp.scale = 1.0f;
    gp.a_batch_stride = (uint32_t)(step * g->a_col_stride);
    uint64_t b_step = 0;
    const bool b_moves = kiln_splitk_b_step(desc, step, &b_step);
    gp.b_batch_stride = (uint32_t)b_step;
    gp.c_batch_stride = (uint32_t)slice;
    if (!b_moves || (uint64_t)gp.a_batch_stride != step * g->a_col_stride ||
        gp.b_batch_stride != b_step) {
      return kiln_ok_status();
    }
    d.push = &gp;
    d.bindings[4] = scratch;
    d.bindings[4].length = ((parts - 1) * slice + count) * elem;
    d.bindings[3] = d.bindings[1];  // no residual: any read-only binding
    KILN_RETURN_IF_ERROR(kiln_lower_add_reduction(l, &d, &plain));
  }
  for (uint32_t s = 0; gemm ? k != (uint64_t)parts * step && s < parts : s < parts; ++s) {
    kiln_emit_dispatch_desc_t d = *desc;
    kiln_kernel_gemm_params_t gp;
    kiln_kernel_conv2d_params_t cp;
    d.bindings[4] = scratch;
    d.bindings[4].offset += s * slice * elem;
    d.bindings[4].length = count * elem;
    d.bindings[3] = d.bindings[1];  // no residual: any read-only binding
    if (gemm) {
      const uint64_t k0 = s * step;
      gp = *g;
      gp.k = (uint32_t)(k - k0 < step ? k - k0 : step);
      gp.scale = 1.0f;
      const uint64_t a_shift = k0 * g->a_col_stride * elem;
      const uint64_t b_shift = k0 * g->b_row_stride * elem;
      if (a_shift >= d.bindings[0].length || b_shift >= d.bindings[1].length) {
        return kiln_make_status(KILN_STATUS_INTERNAL, "split-K: part %u outside its operands", s);
      }
      d.bindings[0].offset += a_shift;
      d.bindings[0].length -= a_shift;
      d.bindings[1].offset += b_shift;
      d.bindings[1].length -= b_shift;
      d.bindings[3] = d.bindings[1];
      d.push = &gp;
    } else {
      cp = *c;
      cp.ci_begin = (uint32_t)(s * step);
      cp.ci_end = (uint32_t)((s + 1) * step < cig ? (s + 1) * step : cig);
      d.push = &cp;
    }
    KILN_RETURN_IF_ERROR(kiln_lower_add_reduction(l, &d, &plain));
  }
  // The sum: gemv batch = output row, k = parts, n = cols.
  float ones[KILN_COOPMAT_SPLIT_K_MAX_PARTS];
  for (uint32_t s = 0; s < parts; ++s) ones[s] = 1.0f;
  kiln_emit_range_t ones_range;
  KILN_RETURN_IF_ERROR(kiln_emit_add_float_weight(l->program, ones, parts, &ones_range));
  kiln_kernel_gemm_params_t q = {
      .m = 1, .n = (uint32_t)cols, .k = parts, .batch = (uint32_t)out_rows,
      .a_batch_stride = 0, .a_row_stride = parts, .a_col_stride = 1,
      .b_batch_stride = (uint32_t)cols, .b_row_stride = (uint32_t)slice, .b_col_stride = 1,
      .c_batch_stride = (uint32_t)cols, .c_row_stride = (uint32_t)cols,
      .residual_batch_stride = (uint32_t)cols, .residual_row_stride = 0,
      .scale = 1.0f};
  if (gemm) {
    q.c_batch_stride = g->c_row_stride;
    q.residual_batch_stride = g->residual_row_stride;
    q.bias_batch_stride = g->bias_row_stride;
    q.bias_col_stride = g->bias_col_stride;
    q.scale = g->scale;
    q.alpha = g->alpha;
    q.beta = g->beta;
  } else {
    q.bias_batch_stride = 1;  // one bias per output channel
    q.alpha = c->alpha;
    q.beta = c->beta;
  }
  kiln_emit_dispatch_desc_t sum = {.kernel = KILN_KERNEL_GEMV, .push = &q, .binding_count = 5,
                                   .written_mask = 1u << 4, .grid = KILN_EMIT_GRID_GEMM};
  sum.bindings[0] = ones_range;
  sum.bindings[1] = scratch;
  sum.bindings[1].length = ((parts - 1) * slice + count) * elem;
  sum.bindings[2] = r->has_bias ? desc->bindings[2] : ones_range;
  sum.bindings[3] = r->has_residual ? desc->bindings[3] : ones_range;
  sum.bindings[4] = desc->bindings[4];
  const size_t before = l->program->dispatch_count;
  KILN_RETURN_IF_ERROR(kiln_lower_add_reduction(l, &sum, r));
  // A LayerNorm of the rows may take the sum's place: a gemm's plain sum
  // (scale 1, no activation, bias per column, rows contiguous), recorded
  // as one dispatch.
  kiln_emit_split_sum_t* rec = &l->program->split_sum;
  memset(rec, 0, sizeof(*rec));
  if (gemm && l->program->dispatch_count == before + 1 && kiln_splitk_plain_sum(l, g, r, cols)) {
    *rec = (kiln_emit_split_sum_t){
        .valid = true, .dispatch = l->program->dispatch_count - 1, .rows = out_rows,
        .cols = cols, .parts = parts, .part_stride = slice, .partials = sum.bindings[1],
        .bias = desc->bindings[2], .residual = desc->bindings[3], .out = desc->bindings[4],
        .has_bias = r->has_bias, .has_residual = r->has_residual,
        .host_ops = l->program->host_op_count};
  }
  *out_done = true;
  return kiln_ok_status();
}
