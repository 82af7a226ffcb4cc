// Weight-only quantization at compile time (--quantize): a MatMul or Gemm
// whose B is a constant fp32 [K, N] (or [N, K] with transB) runs as one
// qgemm dispatch reading B packed in the program's layout
// (kiln/compiler/quant.h) instead of fp32. Products the kernel cannot take
// stay fp32; each decision is counted and, with a statistics stream,
// printed with its reason.
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "kiln/compiler/kernels_loops.h"
#include "kiln/compiler/kernels_qgemv_tuning.h"
#include "kiln/compiler/quant.h"
#include "lower_qweight.h"

kiln_status_t kiln_quant_keep_fp32(const kiln_lower_t* l, bool* out_done,
                                   const char* format, ...) {
  *out_done = false;
  kiln_emit_program_t* program = l->program;
  program->quant_kept_fp32++;
  if (program->statistics_stream) {
    // At f16 the product stays unquantized with fp16 weights.
    fprintf(program->statistics_stream, "quantize: %s '%s' stays %s: ", l->node->op_type,
            l->node->name ? l->node->name : "", kiln_emit_node_is_f16(program) ? "f16" : "fp32");
    va_list args;
    va_start(args, format);
    vfprintf(program->statistics_stream, format, args);
    va_end(args);
    fputc('\n', program->statistics_stream);
  }
  return kiln_ok_status();
}

// Rows of A per qgemm invocation: each decoded weight group is reused for
// them (8 from 8 rows, 4 below); qgemv takes all of its m <= 8 rows.
static uint32_t kiln_quant_rows_per_invocation(kiln_kernel_id_t kernel, uint32_t m) {
  if (kernel == KILN_KERNEL_QGEMV) return m;
  return m == 1 ? 1u : (m >= 8 ? 8u : 4u);
}

// The storage of the node's kernels: f16 nodes run the fp16-storage builds
// (f16 activations, bias, residual and output; the weight words as packed).
static kiln_kernel_storage_t kiln_quant_storage(const kiln_lower_t* l) {
  return kiln_emit_node_is_f16(l->program) ? KILN_KERNEL_STORAGE_FP16 : KILN_KERNEL_STORAGE_FP32;
}

// Whether the dispatch (qgemv, qgemm or qconv2d_gemm) stays within the loop
// budget and the grid limits on every target, in the configuration the
// node's storage selects (qgemm_f16 on CPU devices is not qgemv_cpu).
static kiln_status_t kiln_quant_fits(const kiln_lower_t* l, const kiln_emit_dispatch_desc_t* d,
                                     bool* out_fits) {
  *out_fits = true;
  for (size_t t = 0; t < l->program->target_count && *out_fits; ++t) {
    kiln_kernel_config_t config;
    KILN_RETURN_IF_ERROR(kiln_kernel_config_select(d->kernel, &l->program->caps[t],
                                                   kiln_quant_storage(l), &config));
    // An f16 node must get an fp16-storage build on every target (a cpu
    // variant reads fp32 texels): anything else does not fit.
    if (kiln_quant_storage(l) == KILN_KERNEL_STORAGE_FP16 &&
        config.variant != KILN_KERNEL_VARIANT_FP16_STORAGE &&
        config.variant != KILN_KERNEL_VARIANT_FP16_SUBGROUP) {
      *out_fits = false;
      break;
    }
    for (size_t i = 0; i < d->op_count; ++i) {
      KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(&config, d->ops[i].id, d->ops[i].value));
    }
    uint32_t grid[3];
    kiln_status_t status = kiln_emit_dispatch_grid(&config, d, grid);
    if (kiln_status_code(status) == KILN_STATUS_OUT_OF_RANGE) {  // over 65535 workgroups
      kiln_status_free(status);
      *out_fits = false;
      break;
    }
    KILN_RETURN_IF_ERROR(status);
    uint64_t passes = 0;
    KILN_RETURN_IF_ERROR(kiln_kernel_loop_passes(&config, d->push, grid, &passes));
    *out_fits = passes <= KILN_KERNEL_LOOP_PASS_BUDGET;
  }
  return kiln_ok_status();
}

// QDQ int8 rows (pass_fuse_qdq.c): row j is scale[j], then the codes
// w / scale[j], each checked to give back the folded value exactly.
// *out_exact false: some value is not an int8 code times its row's scale.
static void kiln_quant_pack_qdq_int8(const float* rows, const float* scale, uint32_t n,
                                     uint32_t k, uint64_t row_bytes, uint8_t* out,
                                     bool* out_exact) {
  *out_exact = true;
  for (uint64_t j = 0; j < n && *out_exact; ++j) {
    uint8_t* row = out + j * row_bytes;
    memcpy(row, &scale[j], sizeof(float));
    for (uint64_t i = 0; i < k; ++i) {
      const float v = rows[j * k + i];
      const float c = scale[j] != 0.0f ? nearbyintf(v / scale[j]) : 0.0f;
      if (!(c >= -128.0f && c <= 127.0f) || c * scale[j] != v) {
        *out_exact = false;
        break;
      }
      row[4 + i] = (uint8_t)(int8_t)c;
    }
  }
}

// Whether `kernel` has a build for the node's storage (qgemv has no
// fp16-storage build yet: f16 nodes then take qgemm).
static bool kiln_quant_has_build(const kiln_lower_t* l, kiln_kernel_id_t kernel) {
  const kiln_kernel_desc_t* desc = kiln_kernel_desc(kernel);
  return desc && (kiln_quant_storage(l) == KILN_KERNEL_STORAGE_FP32 ||
                  (desc->variant_mask & (1u << KILN_KERNEL_VARIANT_FP16_STORAGE)));
}

// Picks the kernel of `d` (whose ops[0] is TM): qgemv for products of at
// most KILN_QGEMV_MAX_ROWS rows (the bandwidth-bound GEMV) where it has a
// build for the node's storage, else, or where qgemv does not fit a
// target, qgemm; *out_fits false when neither fits.
static kiln_status_t kiln_quant_pick(const kiln_lower_t* l, kiln_emit_dispatch_desc_t* d,
                                     kiln_kernel_spec_value_t* ops, uint32_t m, bool* out_fits) {
  *out_fits = false;
  if (m <= KILN_QGEMV_MAX_ROWS && kiln_quant_has_build(l, KILN_KERNEL_QGEMV)) {
    d->kernel = KILN_KERNEL_QGEMV;
    ops[0].value = kiln_quant_rows_per_invocation(d->kernel, m);
    KILN_RETURN_IF_ERROR(kiln_quant_fits(l, d, out_fits));
    if (*out_fits) return kiln_ok_status();
  }
  d->kernel = KILN_KERNEL_QGEMM;
  ops[0].value = kiln_quant_rows_per_invocation(d->kernel, m);
  return kiln_quant_fits(l, d, out_fits);
}

// Packs w ([k][n] when !nk, else [n][k]) as n rows of k, plus the 4 bytes
// the kernel may read past the last row, and places it in the weights.
// With `qdq_scale` (int8 only) the rows hold the QDQ codes instead of a
// fresh quantization; *out_placed false: they do not reproduce w exactly,
// nothing placed.
static kiln_status_t kiln_quant_place(const kiln_lower_t* l, kiln_quant_layout_t layout,
                                      const float* qdq_scale, const float* w, bool nk,
                                      uint32_t n, uint32_t k, uint64_t row_bytes,
                                      kiln_emit_range_t* out, bool* out_placed) {
  kiln_allocator_t allocator = l->program->allocator;
  const uint64_t bytes = ((uint64_t)n * row_bytes + 4 + 3) & ~(uint64_t)3;
  float* rows = NULL;
  uint8_t* packed = NULL;
  bool exact = true;
  kiln_status_t status = kiln_ok_status();
  if (!nk) {
    status = kiln_allocator_malloc(allocator, (size_t)n * k * sizeof(float), (void**)&rows);
    for (uint64_t j = 0; !status && j < n; ++j) {
      for (uint64_t i = 0; i < k; ++i) rows[j * k + i] = w[i * n + j];
    }
  }
  if (!status) status = kiln_allocator_malloc(allocator, (size_t)bytes, (void**)&packed);
  if (!status) {
    memset(packed, 0, (size_t)bytes);
    if (qdq_scale) {
      kiln_quant_pack_qdq_int8(nk ? w : rows, qdq_scale, n, k, row_bytes, packed, &exact);
    } else {
      status = kiln_quant_pack(layout, nk ? w : rows, n, k, packed);
      if (status) status = kiln_status_annotate(status, "quantizing node '%s'", l->node->name);
    }
  }
  if (!status && exact) status = kiln_emit_add_weight(l->program, packed, (size_t)bytes, out);
  if (!status && exact && qdq_scale) {
    l->program->qdq_int8_fp32_bytes += (uint64_t)n * k * sizeof(float);
    l->program->qdq_int8_bytes += bytes;
    l->program->qdq_int8_count++;
  } else if (!status && exact) {
    l->program->quant_fp32_bytes += (uint64_t)n * k * sizeof(float);
    l->program->quant_bytes += bytes;
    l->program->quant_count++;
  }
  if (rows) kiln_allocator_free(allocator, rows);
  if (packed) kiln_allocator_free(allocator, packed);
  *out_placed = exact;
  return status;
}

// Places the packed weight as binding 1 of `d` (bias and residual, when
// absent, alias it: never read) and emits the dispatch; *out_done false
// with the layer kept fp32 when a QDQ weight's codes do not reproduce it.
static kiln_status_t kiln_quant_place_and_emit(const kiln_lower_t* l,
                                               kiln_emit_dispatch_desc_t* d,
                                               kiln_quant_layout_t layout,
                                               const float* qdq_scale, const float* w,
                                               bool nk, uint32_t n, uint32_t k,
                                               uint64_t row_bytes, bool has_bias,
                                               bool has_residual, bool* out_done) {
  bool placed = false;
  KILN_RETURN_IF_ERROR(
      kiln_quant_place(l, layout, qdq_scale, w, nk, n, k, row_bytes, &d->bindings[1], &placed));
  if (!placed) {
    return kiln_quant_keep_fp32(l, out_done, "the folded QDQ weight is not int8 codes times "
                                "one scale per output channel");
  }
  if (!has_bias) d->bindings[2] = d->bindings[1];
  if (!has_residual) d->bindings[3] = d->bindings[1];
  KILN_RETURN_IF_ERROR(kiln_emit_add_dispatch(l->program, d));
  *out_done = true;
  return kiln_ok_status();
}

// The QDQ per-output-channel scales the fold left on the node
// (kiln.int8_scale, pass_fuse_qdq.c), or NULL when absent or not `rows`
// fp32 values.
static const float* kiln_quant_qdq_scale(const kiln_lower_t* l, uint32_t rows) {
  const kiln_graph_attr_t* attr = kiln_graph_node_find_attr(l->node, "kiln.int8_scale");
  if (!attr || attr->type != KILN_GRAPH_ATTR_TENSOR || attr->tensor < 0 ||
      (size_t)attr->tensor >= l->graph->value_count) {
    return NULL;
  }
  const kiln_graph_value_t* v = &l->graph->values[attr->tensor];
  if (!v->data || v->dtype != KILN_GRAPH_DTYPE_F32 || v->shape.rank != 1 ||
      v->shape.dims[0] != (int64_t)rows) {
    return NULL;
  }
  return (const float*)v->data;
}

bool kiln_lower_weight_quantizable(const kiln_lower_t* l) {
  return l->program->quantize != KILN_QUANT_NONE ||
         kiln_graph_node_find_attr(l->node, "kiln.int8_scale") != NULL;
}

// One weight placement attempt in `layout` (qdq_scale: the QDQ int8 codes).
static kiln_status_t kiln_qgemm_with(const kiln_lower_t* l, const kiln_lower_qgemm_t* q,
                                     kiln_quant_layout_t layout, const float* qdq_scale,
                                     bool* out_done) {
  *out_done = false;
  const kiln_graph_value_t* wv = kiln_lower_in(l, 1);
  const kiln_kernel_gemm_params_t* p = q->params;
  if (!wv || !wv->data || wv->dtype != KILN_GRAPH_DTYPE_F32 || wv->shape.rank != 2) {
    return kiln_quant_keep_fp32(l, out_done, "B is not a constant fp32 matrix");
  }
  if (!q->eligible_a) {
    return kiln_quant_keep_fp32(l, out_done, "A is not a dense row-major operand");
  }
  const uint32_t block = kiln_quant_block_elements(layout);
  if (p->k % block != 0) {
    return kiln_quant_keep_fp32(l, out_done, "K = %u is not a multiple of %s's %u-element block",
                                p->k, kiln_quant_layout_name(layout), block);
  }
  const uint64_t row_bytes = kiln_quant_row_bytes(layout, p->k);
  if ((uint64_t)p->n * row_bytes + 8 > kiln_emit_range_limit(l->program)) {
    return kiln_quant_keep_fp32(l, out_done,
                                "the packed weight exceeds the storage-buffer range");
  }
  kiln_kernel_gemm_params_t qp = *p;
  qp.b_batch_stride = 0;
  qp.b_row_stride = (uint32_t)row_bytes;
  qp.b_col_stride = 0;
  kiln_kernel_spec_value_t ops[] = {
      {KILN_SPEC_GEMM_TM, 1},  // kiln_quant_pick's
      {KILN_SPEC_GEMM_ACTIVATION, q->activation},
      {KILN_SPEC_GEMM_HAS_BIAS, q->has_bias},
      {KILN_SPEC_GEMM_HAS_RESIDUAL, q->has_residual},
      {KILN_SPEC_QGEMM_LAYOUT, (uint32_t)layout}};
  kiln_emit_dispatch_desc_t d = {.kernel = KILN_KERNEL_QGEMM, .ops = ops,
                                 .op_count = sizeof(ops) / sizeof(ops[0]), .push = &qp,
                                 .binding_count = 5, .written_mask = 1u << 4,
                                 .grid = KILN_EMIT_GRID_GEMM};
  memcpy(d.bindings, q->bindings, sizeof(d.bindings[0]) * 5);
  bool fits = false;
  KILN_RETURN_IF_ERROR(kiln_quant_pick(l, &d, ops, p->m, &fits));
  if (!fits) {
    return kiln_quant_keep_fp32(l, out_done,
                                "K = %u exceeds qgemm's loop budget or the grid 65535 workgroups",
                                p->k);
  }
  return kiln_quant_place_and_emit(l, &d, layout, qdq_scale, (const float*)wv->data, q->b_nk,
                                   p->n, p->k, row_bytes, q->has_bias, q->has_residual,
                                   out_done);
}

// --quantize's layout for a reduction of k: q4_K falls back to q4_0 where
// its 256-element superblock does not divide k but 32 does (llama.cpp's
// rule for k-quants), so such layers still shrink about 7x.
kiln_quant_layout_t kiln_quant_layout_for_k(kiln_quant_layout_t layout, uint64_t k) {
  if (layout == KILN_QUANT_Q4_K && k % 256 != 0 && k % 32 == 0) return KILN_QUANT_Q4_0;
  return layout;
}

kiln_status_t kiln_lower_try_qgemm(const kiln_lower_t* l, const kiln_lower_qgemm_t* q,
                                   bool* out_done) {
  *out_done = false;
  const float* qdq_scale = kiln_quant_qdq_scale(l, q->params->n);
  if (qdq_scale) KILN_RETURN_IF_ERROR(kiln_qgemm_with(l, q, KILN_QUANT_INT8, qdq_scale, out_done));
  if (*out_done || l->program->quantize == KILN_QUANT_NONE) return kiln_ok_status();
  return kiln_qgemm_with(
      l, q, kiln_quant_layout_for_k((kiln_quant_layout_t)l->program->quantize, q->params->k),
      NULL, out_done);
}

static kiln_status_t kiln_qconv_with(const kiln_lower_t* l, const kiln_lower_qconv_t* q,
                                     kiln_quant_layout_t layout, const float* qdq_scale,
                                     bool* out_done) {
  *out_done = false;
  const kiln_graph_value_t* wv = kiln_lower_in(l, 1);
  const kiln_kernel_conv2d_params_t* p = q->params;
  if (!wv || !wv->data || wv->dtype != KILN_GRAPH_DTYPE_F32) {
    return kiln_quant_keep_fp32(l, out_done, "the weight is not a constant fp32 tensor");
  }
  if (q->depthwise) {
    return kiln_quant_keep_fp32(l, out_done, "depthwise (%u weights per channel: tiny, and "
                                "the depthwise kernel reads fp32)", p->kernel_h * p->kernel_w);
  }
  const uint32_t block = kiln_quant_block_elements(layout);
  const uint64_t k = (uint64_t)(p->in_channels / p->groups) * p->kernel_h * p->kernel_w;
  // int8 rows hold their scale then k bytes: k % 32 keeps them 4-aligned.
  if (k % block != 0 || k % 32 != 0) {
    return kiln_quant_keep_fp32(l, out_done, "K = C/groups*KH*KW = %llu is not a multiple of "
                                "%s's %u-element block", (unsigned long long)k,
                                kiln_quant_layout_name(layout), block < 32 ? 32 : block);
  }
  const uint64_t row_bytes = kiln_quant_row_bytes(layout, k);
  const uint64_t limit = kiln_emit_range_limit(l->program);
  if ((uint64_t)p->out_channels * row_bytes + 8 > limit || q->bindings[0].length > limit ||
      q->bindings[4].length > limit) {
    return kiln_quant_keep_fp32(l, out_done,
                                "a binding exceeds the storage-buffer range (not split)");
  }
  const kiln_kernel_spec_value_t ops[] = {
      {KILN_SPEC_GEMM_ACTIVATION, q->activation},
      {KILN_SPEC_GEMM_HAS_BIAS, q->has_bias},
      {KILN_SPEC_GEMM_HAS_RESIDUAL, q->has_residual},
      {KILN_SPEC_QGEMM_LAYOUT, (uint32_t)layout}};
  kiln_emit_dispatch_desc_t d = {.kernel = KILN_KERNEL_QCONV2D_GEMM, .ops = ops,
                                 .op_count = sizeof(ops) / sizeof(ops[0]), .push = p,
                                 .binding_count = 5, .written_mask = 1u << 4,
                                 .grid = KILN_EMIT_GRID_CONV2D_GEMM};
  memcpy(d.bindings, q->bindings, sizeof(d.bindings[0]) * 5);
  bool fits = false;
  KILN_RETURN_IF_ERROR(kiln_quant_fits(l, &d, &fits));
  if (!fits) {
    return kiln_quant_keep_fp32(l, out_done, "K = %llu exceeds qconv2d_gemm's loop budget "
                                "(not split)", (unsigned long long)k);
  }
  return kiln_quant_place_and_emit(l, &d, layout, qdq_scale, (const float*)wv->data, true,
                                   p->out_channels, (uint32_t)k, row_bytes, q->has_bias,
                                   q->has_residual, out_done);
}

kiln_status_t kiln_lower_try_qconv(const kiln_lower_t* l, const kiln_lower_qconv_t* q,
                                   bool* out_done) {
  *out_done = false;
  const float* qdq_scale = kiln_quant_qdq_scale(l, q->params->out_channels);
  if (qdq_scale) KILN_RETURN_IF_ERROR(kiln_qconv_with(l, q, KILN_QUANT_INT8, qdq_scale, out_done));
  if (*out_done || l->program->quantize == KILN_QUANT_NONE) return kiln_ok_status();
  const kiln_kernel_conv2d_params_t* p = q->params;
  const uint64_t k = p->groups ? (uint64_t)(p->in_channels / p->groups) * p->kernel_h *
                                     p->kernel_w : 0;
  return kiln_qconv_with(
      l, q, kiln_quant_layout_for_k((kiln_quant_layout_t)l->program->quantize, k), NULL,
      out_done);
}

// com.microsoft::MatMulNBits (checked at import, ops_matmul_nbits.c): its
// blocks repacked as q4_zp (the same codes, scales and zero points, so the
// kernel sees onnxruntime's values) and one qgemm dispatch over the rows of
// A ([..., K] -> [rows, K]).
kiln_status_t kiln_lower_matmul_nbits(const kiln_lower_t* l) {
  int64_t k = 0, n = 0, block = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "K", 0, &k));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "N", 0, &n));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "block_size", 0, &block));
  const kiln_graph_value_t* av = kiln_lower_in(l, 0);
  const kiln_graph_value_t* bv = kiln_lower_in(l, 1);
  const kiln_graph_value_t* sv = kiln_lower_in(l, 2);
  const kiln_graph_value_t* zv = kiln_lower_in(l, 3);
  const kiln_graph_value_t* bias = kiln_lower_in(l, 5);
  if (!av || !bv || !bv->data || !sv || !sv->data || (zv && !zv->data)) {
    return kiln_lower_refuse(l, "B, scales and zero points must be constants");
  }
  if (k % 32 != 0) {
    return kiln_lower_refuse(l, "K = %lld is not a multiple of 32 (qgemm's step)", (long long)k);
  }
  const uint64_t rows = kiln_lower_count(&av->shape) / (uint64_t)k;
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, rows * (uint64_t)(n > k ? n : k)));
  const uint64_t row_bytes = kiln_quant_row_bytes(KILN_QUANT_Q4_ZP, (uint64_t)k);
  const uint64_t bytes = (uint64_t)n * row_bytes + 4;
  if (bytes > kiln_emit_range_limit(l->program)) {
    return kiln_lower_refuse(l, "the repacked weight (%llu bytes) exceeds the storage-buffer "
                             "range", (unsigned long long)bytes);
  }
  kiln_kernel_gemm_params_t p = {
      .m = (uint32_t)rows, .n = (uint32_t)n, .k = (uint32_t)k, .batch = 1,
      .a_row_stride = (uint32_t)k, .a_col_stride = 1, .b_row_stride = (uint32_t)row_bytes,
      .c_batch_stride = (uint32_t)(rows * (uint64_t)n), .c_row_stride = (uint32_t)n,
      .bias_col_stride = bias ? 1u : 0u, .scale = 1.0f};
  kiln_kernel_spec_value_t ops[] = {
      {KILN_SPEC_GEMM_TM, 1},  // kiln_quant_pick's
      {KILN_SPEC_GEMM_ACTIVATION, KILN_ACT_NONE},
      {KILN_SPEC_GEMM_HAS_BIAS, bias != NULL},
      {KILN_SPEC_GEMM_HAS_RESIDUAL, 0},
      {KILN_SPEC_QGEMM_LAYOUT, KILN_QUANT_Q4_ZP}};
  kiln_emit_dispatch_desc_t d = {.kernel = KILN_KERNEL_QGEMM, .ops = ops,
                                 .op_count = sizeof(ops) / sizeof(ops[0]), .push = &p,
                                 .binding_count = 5, .written_mask = 1u << 4,
                                 .grid = KILN_EMIT_GRID_GEMM};
  bool fits = false;
  KILN_RETURN_IF_ERROR(kiln_quant_pick(l, &d, ops, (uint32_t)rows, &fits));
  if (!fits) {
    return kiln_lower_refuse(l, "K = %lld exceeds qgemm's loop budget or the grid 65535 "
                             "workgroups", (long long)k);
  }
  uint8_t* packed = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_malloc(l->program->allocator, (size_t)bytes, (void**)&packed));
  memset(packed, 0, (size_t)bytes);
  kiln_quant_q4_zp_from_nbits((const uint8_t*)bv->data, (const float*)sv->data,
                              zv ? (const uint8_t*)zv->data : NULL, (uint64_t)n, (uint64_t)k,
                              (uint64_t)block, packed);
  kiln_status_t status = kiln_emit_add_weight(l->program, packed, (size_t)bytes, &d.bindings[1]);
  kiln_allocator_free(l->program->allocator, packed);
  KILN_RETURN_IF_ERROR(status);
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &d.bindings[0]));
  d.bindings[2] = d.bindings[1];
  if (bias) KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 5, &d.bindings[2]));
  d.bindings[3] = d.bindings[1];
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &d.bindings[4]));
  return kiln_emit_add_dispatch(l->program, &d);
}
