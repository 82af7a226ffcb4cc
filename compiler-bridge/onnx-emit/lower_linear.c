// Conv, Gemm and MatMul with their fused epilogues (bias, residual,
// activation) onto the gemm, conv2d and depthwise kernels.
#include <string.h>

#include "kiln/compiler/kernels_gemm_tuning.h"

#include "lower_qweight.h"
#include "lower_util.h"
#include "lower_winograd.h"
#include "window.h"

typedef struct kiln_lower_epilogue_t {
  uint32_t activation;
  float alpha, beta;
  int64_t bias;      // input index or -1 (MatMul's kiln.bias)
  int64_t residual;  // input index or -1
} kiln_lower_epilogue_t;

// The kernels add the residual before the activation; the other order is
// refused.
static kiln_status_t kiln_lower_epilogue(const kiln_lower_t* l,
                                         kiln_lower_epilogue_t* out) {
  memset(out, 0, sizeof(*out));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "kiln.bias", -1, &out->bias));
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(l->node, "kiln.residual", -1, &out->residual));
  int64_t residual_first = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(l->node, "kiln.residual_first", 0, &residual_first));
  const char* activation = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_string(l->node, "kiln.activation", NULL, &activation));
  float alpha = 0, beta = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_float(l->node, "kiln.activation_alpha", 0.0f, &alpha));
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_float(l->node, "kiln.activation_beta", 0.0f, &beta));
  out->alpha = alpha;
  out->beta = beta;
  if (activation) {
    KILN_RETURN_IF_ERROR(kiln_lower_activation(l, activation, alpha, beta,
                                               &out->activation, &out->alpha,
                                               &out->beta));
  }
  if (out->residual >= 0) {
    if (out->activation != KILN_ACT_NONE && !residual_first) {
      return kiln_lower_refuse(l, "a residual added after the activation is not supported");
    }
    const kiln_graph_value_t* residual = kiln_lower_in(l, (size_t)out->residual);
    const kiln_graph_value_t* y = kiln_lower_out(l, 0);
    int64_t flat = 0;
    KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "kiln.residual_flat", 0, &flat));
    // The kernels read the residual in the output's layout: a flat residual
    // (inference checked its element count) is that by definition.
    if (!residual || !y ||
        (!flat && !kiln_graph_shape_equal(&residual->shape, &y->shape))) {
      return kiln_lower_refuse(l, "a broadcast residual is not supported");
    }
  }
  return kiln_ok_status();
}

// The spec constants of each kernel family's epilogue, in the order
// activation, has_bias, has_residual.
static const uint32_t kGemmEpilogueSpecs[3] = {
    KILN_SPEC_GEMM_ACTIVATION, KILN_SPEC_GEMM_HAS_BIAS, KILN_SPEC_GEMM_HAS_RESIDUAL};
static const uint32_t kConvEpilogueSpecs[3] = {
    KILN_SPEC_CONV_ACTIVATION, KILN_SPEC_CONV_HAS_BIAS, KILN_SPEC_CONV_HAS_RESIDUAL};

// Every epilogue kernel binds the residual at 3 (an unused slot repeats
// binding `placeholder`) and the output at 4, then records the dispatch
// with its three spec constants (split where a reduction is too long).
static kiln_status_t kiln_lower_finish_epilogue(const kiln_lower_t* l,
                                                const kiln_lower_epilogue_t* e,
                                                bool has_bias, const uint32_t specs[3],
                                                uint32_t placeholder,
                                                kiln_emit_dispatch_desc_t* desc) {
  desc->bindings[3] = desc->bindings[placeholder];
  if (e->residual >= 0) {
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, (size_t)e->residual, &desc->bindings[3]));
  }
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc->bindings[4]));
  kiln_lower_reduction_t r = {specs, e->activation, has_bias, e->residual >= 0};
  bool split = false;
  KILN_RETURN_IF_ERROR(kiln_lower_add_split_k(l, desc, &r, &split));
  if (split) return kiln_ok_status();
  return kiln_lower_add_big_reduction(l, desc, &r);
}

// Below this many 128x128 output blocks a desktop GPU's big tiling leaves
// most of it idle (two waves of an H100's 132 SMs).
#define KILN_GEMM_SMALL_BLOCKS 256

// One-row products (batch-1 linear layers) take gemv, products with few
// output blocks gemm_small, the rest the tiled gemm; all have gemm's ABI
// (and on CPU-like and mobile targets gemm and gemm_small tile alike).
// With --cooperative-matrix, fp16 products of at least 16 rows and 16
// columns (one 16x16 tensor-core tile) run on tensor cores (gemm_coopmat)
// when every target of the module has cooperative matrix and fp16
// arithmetic (a module keeps one kernel per dispatch; multi-target modules
// with a target without it keep gemm_f16); the tiling follows the product
// (kiln_kernel_coopmat_tiling_select_shape). On an H100 gemm_coopmat ran
// BERT's 128 x 3072 linear in 0.024 ms where gemm_small_f16 took 0.072
// (docs/precision.md).
// Only products whose steps all load whole runs: k of at least one
// 32-deep step, A along k contiguous and 8-aligned, B along its run
// contiguous and 8-aligned (uvec4s), or n-major and 4-aligned (two 8-byte
// quads a run, KILN_SPEC_COOPMAT_B_QUADS: a 14x14 image's rows of 196).
// Elsewhere gemm_coopmat fetches element by element, and 1x1 convs at 7x7
// (B rows of 49) ran slower on it than on gemm_small_f16 (ResNet-50 f16
// 3.21 ms against 2.73 on an H100, 14x14 included); the large ones take
// padded columns instead (kiln_lower_conv).
#define KILN_COOPMAT_MIN_SIDE 16u
#define KILN_COOPMAT_MIN_K 32u
// Least multiply-adds per image of a 1x1 conv worth its columns copy (see
// kiln_lower_conv).
#define KILN_COOPMAT_MIN_COLUMNS_MACS (32u << 20)
// Most output pixels per image of a stride-1 KxK conv that reads its
// windows in place on tensor cores by default (kiln_lower_conv_columns).
#define KILN_COOPMAT_WINDOWS_MAX_PIXELS 1024u
// Longest reduction that reads windows in place: its k steps stay inside
// the loop budget whole (windows cannot be split by k chunks, lower_split.c).
#define KILN_COOPMAT_WINDOWS_MAX_K 16384u
// Most columns a KxK conv gathers for the SIMT gemm (kiln_lower_conv_columns).
#define KILN_SIMT_COLUMNS_MAX_BYTES (128ull << 20)

static bool kiln_lower_coopmat_shape_ok(const kiln_kernel_gemm_params_t* p) {
  const bool b_n_major = p->b_col_stride == 1 && ((p->b_row_stride | p->b_batch_stride) & 3) == 0;
  const bool b_k_major = p->b_row_stride == 1 && ((p->b_col_stride | p->b_batch_stride) & 7) == 0;
  return p->m >= KILN_COOPMAT_MIN_SIDE && p->n >= KILN_COOPMAT_MIN_SIDE &&
         p->k >= KILN_COOPMAT_MIN_K && (p->k & 7) == 0 && p->a_col_stride == 1 &&
         (p->a_row_stride & 7) == 0 && (p->a_batch_stride & 7) == 0 &&
         (b_n_major || b_k_major);
}

kiln_kernel_id_t kiln_lower_gemm_kernel(const kiln_lower_t* l, const kiln_kernel_gemm_params_t* p) {
  if (p->m == 1) return KILN_KERNEL_GEMV;
  if (kiln_lower_coopmat_enabled(l) && kiln_lower_coopmat_shape_ok(p)) {
    return KILN_KERNEL_GEMM_COOPMAT;
  }
  uint64_t blocks = ((uint64_t)p->m + 127) / 128 * (((uint64_t)p->n + 127) / 128) * p->batch;
  return blocks < KILN_GEMM_SMALL_BLOCKS ? KILN_KERNEL_GEMM_SMALL : KILN_KERNEL_GEMM;
}

// Records a 1x1 conv's product `p` (gemm's ABI) with the conv's bias
// (input 2) and epilogue; A is the node's input `a_input`, B `b_input`
// (0 the image, 1 the weight).
static kiln_status_t kiln_lower_conv_product(const kiln_lower_t* l,
                                             const kiln_lower_epilogue_t* e,
                                             const kiln_kernel_gemm_params_t* p,
                                             size_t a_input, size_t b_input) {
  const bool has_bias = kiln_lower_in(l, 2) != NULL;
  kiln_emit_dispatch_desc_t desc = {.kernel = kiln_lower_gemm_kernel(l, p), .push = p,
                                    .binding_count = 5, .written_mask = 1u << 4,
                                    .grid = KILN_EMIT_GRID_GEMM};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, a_input, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, b_input, &desc.bindings[1]));
  desc.bindings[2] = desc.bindings[0];
  if (has_bias) KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 2, &desc.bindings[2]));
  return kiln_lower_finish_epilogue(l, e, has_bias, kGemmEpilogueSpecs, 0, &desc);
}

// conv2d as one gemm when it is a plain 1x1 (MobileNet's pointwise convs):
// y[n] = W [co x ci] . x[n] [ci x hw], a per-row bias. Over 1x1 images (a
// squeeze-and-excitation block's) the product of the images' rows and the
// transposed weight instead, y [n x co] = x [n x ci] . W^T, a per-column
// bias: one row at batch 1, so gemv, which reads W along its rows with
// every k slice busy. As W . x[n] (co x 1 per image) the product took
// gemm_small blocks of one column, k split over dispatches and a sum:
// 12-18 us a squeeze of EfficientNet-B0 on an H200.
static kiln_status_t kiln_lower_conv_gemm(const kiln_lower_t* l,
                                          const kiln_lower_epilogue_t* e,
                                          const kiln_graph_shape_t* x,
                                          const kiln_graph_shape_t* y) {
  uint32_t n = (uint32_t)x->dims[0], ci = (uint32_t)x->dims[1];
  uint32_t co = (uint32_t)y->dims[1];
  uint32_t hw = (uint32_t)(y->dims[2] * y->dims[3]);
  if (hw == 1) {
    const kiln_kernel_gemm_params_t rows = {
        .m = n, .n = co, .k = ci, .batch = 1,
        .a_batch_stride = 0, .a_row_stride = ci, .a_col_stride = 1,
        .b_batch_stride = 0, .b_row_stride = 1, .b_col_stride = ci,
        .c_batch_stride = 0, .c_row_stride = co,
        .bias_batch_stride = 0, .bias_row_stride = 0, .bias_col_stride = 1,
        .residual_batch_stride = 0, .residual_row_stride = co,
        .scale = 1.0f, .alpha = e->alpha, .beta = e->beta};
    return kiln_lower_conv_product(l, e, &rows, 0, 1);
  }
  const kiln_kernel_gemm_params_t p = {
      .m = co, .n = hw, .k = ci, .batch = n,
      .a_batch_stride = 0, .a_row_stride = ci, .a_col_stride = 1,
      .b_batch_stride = ci * hw, .b_row_stride = hw, .b_col_stride = 1,
      .c_batch_stride = co * hw, .c_row_stride = hw,
      .bias_batch_stride = 0, .bias_row_stride = 1, .bias_col_stride = 0,
      .residual_batch_stride = co * hw, .residual_row_stride = hw,
      .scale = 1.0f, .alpha = e->alpha, .beta = e->beta};
  return kiln_lower_conv_product(l, e, &p, 1, 0);
}

// Zero-pads `in` into `out` (the pad kernel): a tensor of `rank` dims
// `in_dims`, placed at `begin` inside `out_dims`. The outermost dim goes to
// the kernel's dim 0, which it does not divide by, the rest right-aligned.
static kiln_status_t kiln_lower_zero_pad(const kiln_lower_t* l, kiln_emit_range_t in,
                                         kiln_emit_range_t out, int32_t rank,
                                         const uint32_t* in_dims, const uint32_t* out_dims,
                                         const int32_t* begin) {
  kiln_kernel_pad_params_t pad;
  memset(&pad, 0, sizeof(pad));
  uint64_t count = 1;
  for (int32_t d = 0; d < KILN_KERNEL_MAX_RANK; ++d) {
    const int32_t v = d == 0 ? 0 : d - (KILN_KERNEL_MAX_RANK - rank);
    const bool one = d != 0 && v < 1;  // a dim of 1 between dim 0 and the rest
    pad.in_shape[d] = one ? 1 : in_dims[v];
    pad.out_shape[d] = one ? 1 : out_dims[v];
    pad.pad_begin[d] = one ? 0 : begin[v];
    count *= pad.out_shape[d];
  }
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, count));
  pad.count = (uint32_t)count;
  kiln_kernel_spec_value_t pad_ops[] = {{KILN_SPEC_PAD_MODE, KILN_PAD_CONSTANT}};
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_PAD, .push = &pad, .ops = pad_ops,
                                    .op_count = 1, .binding_count = 2, .bindings = {in, out},
                                    .written_mask = 2u, .grid = KILN_EMIT_GRID_LINEAR,
                                    .grid_count = pad.count};
  return kiln_emit_add_dispatch(l->program, &desc);
}

// Whether every target is a desktop-sized GPU (the per-product tilings
// of gemm_occupancy.c), where a KxK conv's columns feed the SIMT gemm.
static bool kiln_lower_desktop_targets(const kiln_lower_t* l) {
  if (l->program->target_count == 0) return false;
  for (size_t t = 0; t < l->program->target_count; ++t) {
    if (!kiln_kernel_gemm_occupancy_enabled(&l->program->caps[t])) return false;
  }
  return true;
}

// Whether every target is one where Winograd was measured to pay: a
// desktop-sized GPU (H100) or the CPU (lavapipe: ResNet-18 2.07 -> 0.91 s
// a call on this 2-core box under load, alternating runs, 2026-11-25).
// Mobile and unknown targets (and so the default targets) keep their
// convs' paths: unmeasured there.
static bool kiln_lower_winograd_targets(const kiln_lower_t* l) {
  if (l->program->target_count == 0) return false;
  for (size_t t = 0; t < l->program->target_count; ++t) {
    const kiln_kernel_arch_caps_t* caps = &l->program->caps[t];
    if (!kiln_kernel_gemm_occupancy_enabled(caps) && strcmp(caps->arch, "cpu") != 0) return false;
  }
  return true;
}

// KxK conv (group 1) as columns and a product: x's windows gathered into
// columns by conv_columns (cols[n][c][i][j][p], zero where a window leaves
// x, rows of P = OH * OW padded to P8, a multiple of 8, so every row
// starts uvec4-aligned), then y[n] = W [co x K] . cols[n] [K x P] with the
// conv's epilogue, on tensor cores (gemm_coopmat) or, on desktop GPUs
// without them, on the SIMT gemm. Only where K is at least 32 and co and P
// at least 16, and the columns fit one binding; *out_done false otherwise,
// nothing recorded (the conv stays on conv2d_gemm, implicit GEMM). On
// tensor cores, columns past a binding or 32-bit offsets are not needed:
// gemm_coopmat reads the windows from x itself (b_windows), and so do
// stride-1 KxK convs of at most KILN_COOPMAT_WINDOWS_MAX_PIXELS per image:
// per dispatch on the H200 (f16) their products took 1-3 us less than
// product and copy at 28x28, 14x14 and 7x7, 1-3 us more at 56x56, and
// strided ones up to 14 us more (their loads skip half of what they
// fetch). With every KxK conv on windows ResNet-50 ran 1.041x the time
// (ResNet-18 0.935x, ResNet-50 batch 32 0.988x); with this rule 0.999x
// (0.95x, 0.99x; docs/precision.md).
// Tensor cores: on an H100 ResNet-50 f16's 3x3 convs took 0.96 ms on
// conv2d_gemm_f16 (SIMT). A K that is not a multiple of 8 (a 7x7 stem over
// 3 channels: 147) is taken when the weight is a constant fp32 tensor: it
// is placed with rows padded by zeros to a multiple of 8, so A still loads
// by uvec4, and only the last k step fetches B element by element.
// SIMT: up to KILN_SIMT_COLUMNS_MAX_BYTES of columns. On an H100 (fp32,
// alternating A/B runs) ResNet-50 went 1.85 -> 1.72 ms a call, ResNet-18
// 0.944 -> 0.905, ResNet-50 batch 32 15.34 -> 14.63 with at most 64 MiB;
// 128 MiB took its 28x28 3x3s too (115 MB of columns): 14.40 -> 14.30;
// with every size allowed batch 32 went back to 15.2 (its 56x56 3x3s, 231
// MB of columns, ran 0.61 ms a conv against 0.44 on conv2d_gemm).
static kiln_status_t kiln_lower_conv_columns(const kiln_lower_t* l,
                                              const kiln_lower_epilogue_t* e,
                                              const kiln_kernel_conv2d_params_t* c,
                                              bool* out_done) {
  *out_done = false;
  const bool coop = kiln_lower_coopmat_enabled(l);
  const uint64_t N = c->batch, C = c->in_channels;
  const uint64_t KH = c->kernel_h, KW = c->kernel_w, CO = c->out_channels;
  const uint64_t OH = c->out_height, OW = c->out_width, P = OH * OW, K = C * KH * KW;
  const uint64_t P8 = (P + 7) / 8 * 8, K8 = (K + 7) / 8 * 8;
  const kiln_graph_value_t* wv = kiln_lower_in(l, 1);
  const bool pad_rows = K != K8 && coop;
  if ((!coop && !kiln_lower_desktop_targets(l)) || c->groups != 1 || K < KILN_COOPMAT_MIN_K ||
      CO < KILN_COOPMAT_MIN_SIDE || P < KILN_COOPMAT_MIN_SIDE ||
      (pad_rows && !(wv && wv->data && wv->dtype == KILN_GRAPH_DTYPE_F32))) {
    return kiln_ok_status();
  }
  const uint64_t elem = kiln_emit_float_bytes(l->program);
  const uint64_t cols = N * K * P8;
  const bool columns_fit = cols * elem <= kiln_emit_range_limit(l->program) &&
                           cols <= UINT32_MAX &&
                           (coop || cols * elem <= KILN_SIMT_COLUMNS_MAX_BYTES);
  // Tensor cores read the windows from x in place (KILN_SPEC_COOPMAT_CONV_*)
  // where the geometry packs into gemm_coopmat's constants, k is at most
  // KILN_COOPMAT_WINDOWS_MAX_K and x's offsets stay below 2^31: for columns
  // that would not fit, for the convs where that measured faster than the
  // copy (see above), or every conv under --conv-windows.
  const bool faster = c->stride_h == 1 && c->stride_w == 1 && KH * KW > 1 &&
                      P <= KILN_COOPMAT_WINDOWS_MAX_PIXELS;
  const bool windows = coop && (!columns_fit || l->program->conv_windows || faster) &&
                       kiln_emit_conv_windows_fit(c) && K <= KILN_COOPMAT_WINDOWS_MAX_K &&
                       N * C * c->in_height * c->in_width <= INT32_MAX;
  if (!columns_fit && !windows) return kiln_ok_status();
  kiln_emit_range_t xcol;
  if (windows) {
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &xcol));
  } else {
    KILN_RETURN_IF_ERROR(kiln_emit_scratch(l->program, cols * elem, &xcol));
    kiln_emit_dispatch_desc_t columns = {.kernel = KILN_KERNEL_CONV_COLUMNS, .push = c,
                                         .binding_count = 2, .written_mask = 2u,
                                         .grid = KILN_EMIT_GRID_LINEAR,
                                         .grid_count = (uint32_t)(cols / 8)};
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &columns.bindings[0]));
    columns.bindings[1] = xcol;
    KILN_RETURN_IF_ERROR(kiln_emit_add_dispatch(l->program, &columns));
  }
  const bool has_bias = kiln_lower_in(l, 2) != NULL;
  kiln_kernel_gemm_params_t p = {
      .m = (uint32_t)CO, .n = (uint32_t)P, .k = (uint32_t)K, .batch = (uint32_t)N,
      .a_batch_stride = 0, .a_row_stride = (uint32_t)(pad_rows ? K8 : K), .a_col_stride = 1,
      .b_batch_stride = (uint32_t)(windows ? C * c->in_height * c->in_width : K * P8),
      .b_row_stride = (uint32_t)P8, .b_col_stride = 1,
      .c_batch_stride = (uint32_t)(CO * P), .c_row_stride = (uint32_t)P,
      .bias_batch_stride = 0, .bias_row_stride = 1, .bias_col_stride = 0,
      .residual_batch_stride = (uint32_t)(CO * P), .residual_row_stride = (uint32_t)P,
      .scale = 1.0f, .alpha = e->alpha, .beta = e->beta};
  // On tensor cores gemm_coopmat whatever kiln_lower_gemm_kernel says of a
  // K off the multiple of 8 (its last step is the only one fetched by
  // element); elsewhere the SIMT gemm it picks.
  kiln_emit_dispatch_desc_t desc = {
      .kernel = coop ? KILN_KERNEL_GEMM_COOPMAT : kiln_lower_gemm_kernel(l, &p), .push = &p,
      .binding_count = 5, .written_mask = 1u << 4, .grid = KILN_EMIT_GRID_GEMM,
      .b_windows = windows ? c : NULL};
  if (pad_rows) {
    float* padded = NULL;
    KILN_RETURN_IF_ERROR(kiln_allocator_malloc(l->program->allocator,
                                               CO * K8 * sizeof(float), (void**)&padded));
    const float* w = (const float*)wv->data;
    for (uint64_t o = 0; o < CO; ++o) {
      for (uint64_t k = 0; k < K8; ++k) padded[o * K8 + k] = k < K ? w[o * K + k] : 0.0f;
    }
    kiln_status_t placed =
        kiln_emit_add_float_weight(l->program, padded, (size_t)(CO * K8), &desc.bindings[0]);
    kiln_allocator_free(l->program->allocator, padded);
    KILN_RETURN_IF_ERROR(placed);
  } else {
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &desc.bindings[0]));
  }
  desc.bindings[1] = xcol;
  desc.bindings[2] = desc.bindings[0];
  if (has_bias) KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 2, &desc.bindings[2]));
  *out_done = true;
  // The columns stay held while split-K places its partials after them.
  (void)kiln_emit_scratch_reserve(l->program, windows ? 0 : cols * elem);
  kiln_status_t status = kiln_lower_finish_epilogue(l, e, has_bias, kGemmEpilogueSpecs, 0, &desc);
  (void)kiln_emit_scratch_reserve(l->program, 0);
  return status;
}

// With --quantize, a product whose B (input 1) is a constant 2-D matrix
// goes to qgemm when it can (B is then never placed as fp32); otherwise B
// is bound as usual. `desc` holds A at 0 and the bias (or a placeholder)
// at 2.
static kiln_status_t kiln_lower_quantized_or_bind_b(const kiln_lower_t* l,
                                                    const kiln_lower_epilogue_t* e,
                                                    const kiln_kernel_gemm_params_t* p,
                                                    bool b_nk, bool has_bias,
                                                    kiln_emit_dispatch_desc_t* desc,
                                                    bool* out_done) {
  *out_done = false;
  const kiln_graph_value_t* bv = kiln_lower_in(l, 1);
  if (kiln_lower_weight_quantizable(l) && bv && bv->data && bv->shape.rank == 2) {
    kiln_lower_qgemm_t q = {
        .params = p,
        .eligible_a = p->a_col_stride == 1 && (p->a_row_stride & 3) == 0 &&
                      (p->a_batch_stride & 3) == 0,
        .b_nk = b_nk, .activation = e->activation, .has_bias = has_bias,
        .has_residual = e->residual >= 0};
    q.bindings[0] = desc->bindings[0];
    q.bindings[2] = desc->bindings[2];
    q.bindings[3] = desc->bindings[0];
    if (e->residual >= 0) {
      KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, (size_t)e->residual, &q.bindings[3]));
    }
    KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &q.bindings[4]));
    KILN_RETURN_IF_ERROR(kiln_lower_try_qgemm(l, &q, out_done));
    if (*out_done) return kiln_ok_status();
  }
  return kiln_lower_in_range(l, 1, &desc->bindings[1]);
}

// 3-D (NCDHW) convolution on the 2-D kernels: x zero-padded along D (pad
// kernel), the kd depth taps of every output depth gathered as channels
// ([N, D', C, kd, H, W] = [N * D', C * kd, H, W], one strided copy: W's
// [M, C / g, kd, kh, kw] is already [M, C / g * kd, kh, kw]), a grouped 2-D
// conv with bias over the N * D' images, then [N, D', M, .] -> [N, M, D', .]
// into the output; a fused residual and activation follow as in-place
// binary / unary dispatches (residual first, as the kernels do).
static kiln_status_t kiln_lower_conv3d(const kiln_lower_t* l, const kiln_lower_epilogue_t* e) {
  const kiln_graph_shape_t* x = &kiln_lower_in(l, 0)->shape;
  const kiln_graph_shape_t* w = &kiln_lower_in(l, 1)->shape;
  const kiln_graph_shape_t* y = &kiln_lower_out(l, 0)->shape;
  kiln_window_t win;
  KILN_RETURN_IF_ERROR(
      kiln_window_resolve(l->node, 3, &x->dims[2], &w->dims[2], false, true, &win));
  int64_t group = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "group", 1, &group));
  const uint64_t N = (uint64_t)x->dims[0], C = (uint64_t)x->dims[1], D = (uint64_t)x->dims[2];
  const uint64_t H = (uint64_t)x->dims[3], W = (uint64_t)x->dims[4], M = (uint64_t)y->dims[1];
  const uint64_t OD = (uint64_t)y->dims[2], OHW = (uint64_t)(y->dims[3] * y->dims[4]);
  const uint64_t KD = (uint64_t)win.kernel[0];
  const uint64_t DP = D + (uint64_t)win.pad_begin[0] + (uint64_t)win.pad_end[0];
  const uint64_t padded = N * C * DP * H * W, cols = N * OD * C * KD * H * W;
  const uint64_t conv_out = N * OD * M * OHW;
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, padded));
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, cols));
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, conv_out));
  // Scratch in the program's storage type (2 bytes a value at f16).
  const uint64_t elem = kiln_emit_float_bytes(l->program);
  const uint64_t cols_at = kiln_emit_align_up(padded * elem);
  const uint64_t out_at = cols_at + kiln_emit_align_up(cols * elem);
  kiln_emit_range_t scratch, in, weights, out;
  KILN_RETURN_IF_ERROR(kiln_emit_scratch(l->program, out_at + conv_out * elem, &scratch));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &in));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &weights));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  kiln_emit_range_t xp = scratch, xcol = scratch, ycol = scratch;
  xp.length = padded * elem;
  xcol.offset += cols_at;
  xcol.length = cols * elem;
  ycol.offset += out_at;
  ycol.length = conv_out * elem;
  // Zero pads along D over the [N * C, D, H * W] view.
  const uint32_t view_in[3] = {(uint32_t)(N * C), (uint32_t)D, (uint32_t)(H * W)};
  const uint32_t view_out[3] = {(uint32_t)(N * C), (uint32_t)DP, (uint32_t)(H * W)};
  const int32_t view_begin[3] = {0, (int32_t)win.pad_begin[0], 0};
  KILN_RETURN_IF_ERROR(kiln_lower_zero_pad(l, in, xp, 3, view_in, view_out, view_begin));
  // Taps as channels: cols[n][od][c][j][h][w] = xp[n][c][od * sd + j * dd][h][w].
  const int64_t hw = (int64_t)(H * W);
  kiln_graph_shape_t gather = {6, {(int64_t)N, (int64_t)OD, (int64_t)C, (int64_t)KD,
                                   (int64_t)H, (int64_t)W}};
  const int64_t gather_in[6] = {(int64_t)(C * DP) * hw, win.stride[0] * hw, (int64_t)DP * hw,
                                win.dilation[0] * hw, (int64_t)W, 1};
  const int64_t gather_out[6] = {(int64_t)(OD * C * KD) * hw, (int64_t)(C * KD) * hw,
                                 (int64_t)KD * hw, hw, (int64_t)W, 1};
  KILN_RETURN_IF_ERROR(
      kiln_lower_strided_copy(l, &xp, &xcol, &gather, gather_in, gather_out, 0, 0));
  const uint32_t CK = (uint32_t)(C * KD);
  const bool depthwise = group > 1 && (uint64_t)group == CK && (uint64_t)group == M;
  kiln_kernel_conv2d_params_t p = {
      .batch = (uint32_t)(N * OD), .in_channels = CK, .in_height = (uint32_t)H,
      .in_width = (uint32_t)W, .out_channels = (uint32_t)M,
      .out_height = (uint32_t)y->dims[3], .out_width = (uint32_t)y->dims[4],
      .groups = (uint32_t)group, .kernel_h = (uint32_t)win.kernel[1],
      .kernel_w = (uint32_t)win.kernel[2], .stride_h = (uint32_t)win.stride[1],
      .stride_w = (uint32_t)win.stride[2], .pad_top = (uint32_t)win.pad_begin[1],
      .pad_left = (uint32_t)win.pad_begin[2], .dilation_h = (uint32_t)win.dilation[1],
      .dilation_w = (uint32_t)win.dilation[2]};
  const bool has_bias = kiln_lower_in(l, 2) != NULL;
  const bool tiled = !depthwise;  // conv2d_gemm; its cpu variant is conv2d_cpu
  kiln_emit_dispatch_desc_t desc = {
      .kernel = depthwise ? KILN_KERNEL_DEPTHWISE_CONV2D
                          : (tiled ? KILN_KERNEL_CONV2D_GEMM : KILN_KERNEL_CONV2D),
      .push = &p, .binding_count = 5, .written_mask = 1u << 4,
      .grid = depthwise ? KILN_EMIT_GRID_LINEAR
                        : (tiled ? KILN_EMIT_GRID_CONV2D_GEMM : KILN_EMIT_GRID_CONV2D),
      .grid_count = conv_out};
  desc.bindings[0] = xcol;
  desc.bindings[1] = weights;
  desc.bindings[2] = weights;
  if (has_bias) KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 2, &desc.bindings[2]));
  desc.bindings[3] = weights;
  desc.bindings[4] = ycol;
  kiln_lower_reduction_t r = {tiled ? kGemmEpilogueSpecs : kConvEpilogueSpecs, KILN_ACT_NONE,
                              has_bias, false};
  KILN_RETURN_IF_ERROR(kiln_lower_add_big_reduction(l, &desc, &r));
  // [N, D', M, H'W'] -> [N, M, D', H'W'].
  kiln_graph_shape_t back = {4, {(int64_t)N, (int64_t)M, (int64_t)OD, (int64_t)OHW}};
  const int64_t back_in[4] = {(int64_t)(OD * M * OHW), (int64_t)OHW, (int64_t)(M * OHW), 1};
  const int64_t back_out[4] = {(int64_t)(M * OD * OHW), (int64_t)(OD * OHW), (int64_t)OHW, 1};
  KILN_RETURN_IF_ERROR(
      kiln_lower_strided_copy(l, &ycol, &out, &back, back_in, back_out, 0, 0));
  if (e->residual >= 0) {
    kiln_emit_range_t residual;
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, (size_t)e->residual, &residual));
    KILN_RETURN_IF_ERROR(
        kiln_lower_binary_ranges(l, KILN_BINARY_ADD, &out, y, &residual, y, &out, y));
  }
  if (e->activation == KILN_ACT_NONE) return kiln_ok_status();
  kiln_kernel_unary_params_t u = {(uint32_t)kiln_lower_count(y), e->alpha, e->beta};
  kiln_kernel_spec_value_t unary_ops[] = {{KILN_SPEC_UNARY_OP, e->activation}};
  kiln_emit_dispatch_desc_t act = {.kernel = KILN_KERNEL_UNARY, .push = &u, .ops = unary_ops,
                                   .op_count = 1, .binding_count = 2, .bindings = {out, out},
                                   .written_mask = 2u, .grid = KILN_EMIT_GRID_LINEAR,
                                   .grid_count = u.count};
  return kiln_emit_add_tiled(l->program, &act);
}

kiln_status_t kiln_lower_conv(const kiln_lower_t* l) {
  bool fused = false;
  KILN_RETURN_IF_ERROR(kiln_lower_squeeze_excite(l, &fused));
  if (fused) return kiln_ok_status();
  const kiln_graph_value_t* xv = kiln_lower_in(l, 0);
  const kiln_graph_value_t* wv = kiln_lower_in(l, 1);
  const kiln_graph_value_t* yv = kiln_lower_out(l, 0);
  if (xv && wv && yv && xv->shape.rank == 5 && wv->shape.rank == 5 && yv->shape.rank == 5) {
    kiln_lower_epilogue_t e3;
    KILN_RETURN_IF_ERROR(kiln_lower_epilogue(l, &e3));
    if (e3.bias >= 0) return kiln_lower_refuse(l, "kiln.bias on Conv is not supported");
    return kiln_lower_conv3d(l, &e3);
  }
  kiln_graph_shape_t x4, y4;
  if (!xv || !wv || !yv || !kiln_lower_shape_2d(&xv->shape, &x4) ||
      !kiln_lower_shape_2d(&yv->shape, &y4)) {
    return kiln_lower_refuse(l, "only 1-D (NCL), 2-D (NCHW) and 3-D (NCDHW) convolutions are "
                             "supported");
  }
  kiln_lower_epilogue_t e;
  KILN_RETURN_IF_ERROR(kiln_lower_epilogue(l, &e));
  if (e.bias >= 0) return kiln_lower_refuse(l, "kiln.bias on Conv is not supported");
  kiln_window_t window;
  KILN_RETURN_IF_ERROR(
      kiln_lower_window_2d(l, &xv->shape, &wv->shape, false, false, true, &window));
  int64_t group = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "group", 1, &group));
  const kiln_graph_shape_t* x = &x4;
  const kiln_graph_shape_t* y = &y4;
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, kiln_lower_count(x)));
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, kiln_lower_count(y)));
  bool pointwise = group == 1 && window.kernel[0] == 1 && window.kernel[1] == 1 &&
                   window.stride[0] == 1 && window.stride[1] == 1 &&
                   window.pad_begin[0] == 0 && window.pad_begin[1] == 0 &&
                   window.pad_end[0] == 0 && window.pad_end[1] == 0;
  bool depthwise = group > 1 && group == x->dims[1] && group == y->dims[1];
  kiln_kernel_conv2d_params_t p = {
      .batch = (uint32_t)x->dims[0], .in_channels = (uint32_t)x->dims[1],
      .in_height = (uint32_t)x->dims[2], .in_width = (uint32_t)x->dims[3],
      .out_channels = (uint32_t)y->dims[1], .out_height = (uint32_t)y->dims[2],
      .out_width = (uint32_t)y->dims[3], .groups = (uint32_t)group,
      .kernel_h = (uint32_t)window.kernel[0], .kernel_w = (uint32_t)window.kernel[1],
      .stride_h = (uint32_t)window.stride[0], .stride_w = (uint32_t)window.stride[1],
      .pad_top = (uint32_t)window.pad_begin[0], .pad_left = (uint32_t)window.pad_begin[1],
      .dilation_h = (uint32_t)window.dilation[0], .dilation_w = (uint32_t)window.dilation[1],
      .alpha = e.alpha, .beta = e.beta};
  bool has_bias = kiln_lower_in(l, 2) != NULL;
  if (kiln_lower_weight_quantizable(l) && wv->data) {
    // --quantize: 1x1 and KxK convs alike as qconv2d_gemm (the pointwise
    // gemm path would put the weight on A, which qgemm does not read).
    kiln_lower_qconv_t q = {.params = &p, .depthwise = depthwise, .activation = e.activation,
                            .has_bias = has_bias, .has_residual = e.residual >= 0};
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &q.bindings[0]));
    q.bindings[2] = q.bindings[3] = q.bindings[0];
    if (has_bias) KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 2, &q.bindings[2]));
    if (e.residual >= 0) {
      KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, (size_t)e.residual, &q.bindings[3]));
    }
    KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &q.bindings[4]));
    bool done = false;
    KILN_RETURN_IF_ERROR(kiln_lower_try_qconv(l, &q, &done));
    if (done) return kiln_ok_status();
  }
  if (pointwise) {
    // A 1x1 whose image rows are not 4-aligned (7x7) cannot feed
    // gemm_coopmat by whole runs in place: the columns path's copy pads
    // each row to a multiple of 8. That pays where the product is large:
    // on an H100 ResNet-50's (51 M multiply-adds each) took f16 ResNet-50
    // 1.67 -> 1.60 ms and batch 32 14.5 -> 13.8, while MobileNetV2's and
    // EfficientNet's (11-20 M) ran slower than on gemm_small_f16 (0.62 ->
    // 0.78 ms, 1.26 -> 1.45). 14x14 rows (196) load in place by quads: on
    // an H200 ResNet-50 f16 went 1.040 -> 0.999 ms without their copies,
    // EfficientNet-B0 0.852 -> 0.839, MobileNetV2 unchanged (2026-11-26).
    const uint64_t hw = (uint64_t)(y->dims[2] * y->dims[3]);
    const uint64_t macs = (uint64_t)p.out_channels * hw * p.in_channels;
    if (hw % 4 != 0 && macs >= KILN_COOPMAT_MIN_COLUMNS_MACS && kiln_lower_coopmat_enabled(l)) {
      bool done = false;
      KILN_RETURN_IF_ERROR(kiln_lower_conv_columns(l, &e, &p, &done));
      if (done) return kiln_ok_status();
    }
    return kiln_lower_conv_gemm(l, &e, x, y);
  }
  if (!depthwise) {
    bool done = false;
    // Large fp32 3x3s on desktop GPUs and the CPU: Winograd (lower_winograd.c).
    if (kiln_lower_winograd_targets(l) && !kiln_emit_node_is_f16(l->program)) {
      const kiln_lower_winograd_epilogue_t we = {e.activation, has_bias, e.residual};
      KILN_RETURN_IF_ERROR(kiln_lower_conv_winograd(l, &we, &p, &done));
      if (done) return kiln_ok_status();
    }
    KILN_RETURN_IF_ERROR(kiln_lower_conv_columns(l, &e, &p, &done));
    if (done) return kiln_ok_status();
  }
  // Other KxK convs run as implicit GEMMs on the tiled core (conv2d_gemm)
  // on GPU targets; its cpu variant, conv2d_cpu, serves CPU targets (config.c
  // picks per target, so one module holds both).
  kiln_emit_dispatch_desc_t desc = {
      .kernel = depthwise ? KILN_KERNEL_DEPTHWISE_CONV2D : KILN_KERNEL_CONV2D_GEMM,
      .push = &p, .binding_count = 5, .written_mask = 1u << 4,
      .grid = depthwise ? KILN_EMIT_GRID_LINEAR : KILN_EMIT_GRID_CONV2D_GEMM,
      .grid_count = kiln_lower_count(y)};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &desc.bindings[1]));
  desc.bindings[2] = desc.bindings[1];
  if (has_bias) KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 2, &desc.bindings[2]));
  return kiln_lower_finish_epilogue(l, &e, has_bias,
                                    depthwise ? kConvEpilogueSpecs : kGemmEpilogueSpecs, 1,
                                    &desc);
}

// Bias strides for an addend broadcast onto [batch, m, n] (rank-`rank` out).
static kiln_status_t kiln_lower_bias_strides(const kiln_lower_t* l,
                                             const kiln_graph_shape_t* bias,
                                             const kiln_graph_shape_t* out,
                                             kiln_kernel_gemm_params_t* p) {
  int32_t rank = out->rank;
  int32_t offset = rank - bias->rank;
  int64_t dims[KILN_GRAPH_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) dims[d] = d < offset ? 1 : bias->dims[d - offset];
  for (int32_t d = 0; d < rank - 2; ++d) {
    if (dims[d] != 1) return kiln_lower_refuse(l, "a batched bias is not supported");
  }
  bool row = dims[rank - 2] != 1, col = dims[rank - 1] != 1;
  p->bias_batch_stride = 0;
  p->bias_row_stride = row ? (col ? (uint32_t)dims[rank - 1] : 1) : 0;
  p->bias_col_stride = col ? 1 : 0;
  return kiln_ok_status();
}

kiln_status_t kiln_lower_gemm(const kiln_lower_t* l) {
  const kiln_graph_value_t* av = kiln_lower_in(l, 0);
  const kiln_graph_value_t* bv = kiln_lower_in(l, 1);
  const kiln_graph_value_t* cv = kiln_lower_in(l, 2);
  const kiln_graph_value_t* yv = kiln_lower_out(l, 0);
  int64_t trans_a = 0, trans_b = 0;
  float alpha = 1, beta = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "transA", 0, &trans_a));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "transB", 0, &trans_b));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(l->node, "alpha", 1.0f, &alpha));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(l->node, "beta", 1.0f, &beta));
  kiln_lower_epilogue_t e;
  KILN_RETURN_IF_ERROR(kiln_lower_epilogue(l, &e));
  if (e.bias >= 0) return kiln_lower_refuse(l, "kiln.bias on Gemm is not supported");
  uint32_t m = (uint32_t)yv->shape.dims[0], n = (uint32_t)yv->shape.dims[1];
  uint32_t k = (uint32_t)(trans_a ? av->shape.dims[0] : av->shape.dims[1]);
  uint32_t a_cols = (uint32_t)av->shape.dims[1], b_cols = (uint32_t)bv->shape.dims[1];
  kiln_kernel_gemm_params_t p = {
      .m = m, .n = n, .k = k, .batch = 1,
      .a_row_stride = trans_a ? 1 : a_cols, .a_col_stride = trans_a ? a_cols : 1,
      .b_row_stride = trans_b ? 1 : b_cols, .b_col_stride = trans_b ? b_cols : 1,
      .c_batch_stride = m * n, .c_row_stride = n,
      .residual_batch_stride = m * n, .residual_row_stride = n,
      .scale = alpha, .alpha = e.alpha, .beta = e.beta};
  if (cv) KILN_RETURN_IF_ERROR(kiln_lower_bias_strides(l, &cv->shape, &yv->shape, &p));
  kiln_emit_dispatch_desc_t desc = {.kernel = kiln_lower_gemm_kernel(l, &p), .push = &p,
                                    .binding_count = 5, .written_mask = 1u << 4,
                                    .grid = KILN_EMIT_GRID_GEMM};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  // A constant 2-D B is bound at the end when it may be quantized.
  const bool b_later = kiln_lower_weight_quantizable(l) && bv->data && bv->shape.rank == 2;
  if (!b_later) KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &desc.bindings[1]));
  desc.bindings[2] = desc.bindings[0];
  if (cv && beta != 1.0f && cv->data) {
    // A constant C is pre-scaled by beta into the weights.
    size_t count = (size_t)kiln_lower_count(&cv->shape);
    float* scaled = NULL;
    KILN_RETURN_IF_ERROR(kiln_allocator_malloc(l->program->allocator,
                                               count * sizeof(float), (void**)&scaled));
    for (size_t i = 0; i < count; ++i) scaled[i] = beta * ((const float*)cv->data)[i];
    kiln_status_t status = kiln_emit_add_float_weight(l->program, scaled, count,
                                                      &desc.bindings[2]);
    kiln_allocator_free(l->program->allocator, scaled);
    KILN_RETURN_IF_ERROR(status);
  } else if (cv) {
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 2, &desc.bindings[2]));
  }
  if (cv && beta != 1.0f && !cv->data) {
    // A run-time C: beta * C into scratch first (one binary dispatch).
    kiln_emit_range_t beta_range, scaled;
    kiln_graph_shape_t scalar = {0};
    KILN_RETURN_IF_ERROR(kiln_emit_add_float_weight(l->program, &beta, 1, &beta_range));
    KILN_RETURN_IF_ERROR(kiln_emit_scratch(
        l->program, kiln_lower_count(&cv->shape) * sizeof(float), &scaled));
    KILN_RETURN_IF_ERROR(kiln_lower_binary_ranges(l, KILN_BINARY_MUL, &desc.bindings[2],
                                                  &cv->shape, &beta_range, &scalar, &scaled,
                                                  &cv->shape));
    desc.bindings[2] = scaled;
  }
  if (b_later) {
    bool quantized = false;
    KILN_RETURN_IF_ERROR(
        kiln_lower_quantized_or_bind_b(l, &e, &p, trans_b != 0, cv != NULL, &desc, &quantized));
    if (quantized) return kiln_ok_status();
  }
  return kiln_lower_finish_epilogue(l, &e, cv != NULL, kGemmEpilogueSpecs, 0, &desc);
}

// One MatMul operand as the gemm kernel reads it: numpy's rule makes a
// rank-1 A a row [1, K] and a rank-1 B a column [K, 1]; `full` is the
// operand with those 1s inserted (same memory), `batch` its leading dims.
typedef struct kiln_matmul_operand_t {
  kiln_graph_shape_t full;
  int32_t batch_rank;
} kiln_matmul_operand_t;

static void kiln_matmul_operand(const kiln_graph_shape_t* shape, bool is_a,
                                kiln_matmul_operand_t* out) {
  out->full = *shape;
  if (shape->rank == 1) {
    out->full.rank = 2;
    out->full.dims[is_a ? 0 : 1] = 1;
    out->full.dims[is_a ? 1 : 0] = shape->dims[0];
  }
  out->batch_rank = out->full.rank - 2;
}

// Whether an operand's batch dims need expanding to the output's `batch`
// for one batch stride to address them: not when its batch is 1 (stride 0)
// or when its batch dims, right-aligned, equal the output's (stride = the
// matrix size); numpy broadcasting such as [2, 1, M, K] x [3, K, N] does.
static bool kiln_matmul_needs_expand(const kiln_matmul_operand_t* op,
                                     const kiln_graph_shape_t* batch) {
  if (kiln_lower_dims(&op->full, 0, op->batch_rank) == 1) return false;
  for (int32_t d = 0; d < batch->rank; ++d) {
    int32_t od = d - (batch->rank - op->batch_rank);
    if ((od >= 0 ? op->full.dims[od] : 1) != batch->dims[d]) return true;
  }
  return false;
}

// Binds an operand for the batched gemm: its batch stride, and when it
// needs expanding, a broadcast copy into `scratch` read instead.
static kiln_status_t kiln_matmul_batch(const kiln_lower_t* l,
                                       const kiln_matmul_operand_t* op,
                                       const kiln_graph_shape_t* batch,
                                       kiln_emit_range_t* range,
                                       const kiln_emit_range_t* scratch,
                                       uint32_t* out_stride) {
  const kiln_graph_shape_t* f = &op->full;
  *out_stride = 0;
  if (kiln_lower_dims(f, 0, op->batch_rank) == 1) return kiln_ok_status();
  *out_stride = (uint32_t)(f->dims[f->rank - 2] * f->dims[f->rank - 1]);
  if (!kiln_matmul_needs_expand(op, batch)) return kiln_ok_status();
  kiln_graph_shape_t expanded = *batch;
  expanded.rank = batch->rank + 2;
  expanded.dims[batch->rank] = f->dims[f->rank - 2];
  expanded.dims[batch->rank + 1] = f->dims[f->rank - 1];
  KILN_RETURN_IF_ERROR(kiln_lower_broadcast_copy(l, range, f, scratch, &expanded));
  *range = *scratch;
  return kiln_ok_status();
}

kiln_status_t kiln_lower_matmul(const kiln_lower_t* l) {
  const kiln_graph_value_t* av = kiln_lower_in(l, 0);
  const kiln_graph_value_t* bv = kiln_lower_in(l, 1);
  const kiln_graph_value_t* yv = kiln_lower_out(l, 0);
  if (av->shape.rank < 1 || bv->shape.rank < 1) {
    return kiln_lower_refuse(l, "MatMul of a scalar operand");
  }
  kiln_lower_epilogue_t e;
  KILN_RETURN_IF_ERROR(kiln_lower_epilogue(l, &e));
  kiln_matmul_operand_t a, b;
  kiln_matmul_operand(&av->shape, true, &a);
  kiln_matmul_operand(&bv->shape, false, &b);
  // The output as [batch..., m, n]: y with the dims a rank-1 operand
  // dropped put back as 1s (same memory).
  const kiln_graph_shape_t* y = &yv->shape;
  uint32_t m = (uint32_t)a.full.dims[a.full.rank - 2];
  uint32_t k = (uint32_t)a.full.dims[a.full.rank - 1];
  uint32_t n = (uint32_t)b.full.dims[b.full.rank - 1];
  kiln_graph_shape_t batch = *y;
  batch.rank = y->rank - (av->shape.rank > 1) - (bv->shape.rank > 1);
  kiln_graph_shape_t y_full = batch;
  y_full.rank = batch.rank + 2;
  y_full.dims[batch.rank] = m;
  y_full.dims[batch.rank + 1] = n;
  uint64_t batch_count = kiln_lower_dims(&batch, 0, batch.rank);
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, kiln_lower_count(y)));
  kiln_kernel_gemm_params_t p = {
      .m = m, .n = n, .k = k, .batch = (uint32_t)batch_count,
      .a_row_stride = k, .a_col_stride = 1, .b_row_stride = n, .b_col_stride = 1,
      .c_batch_stride = m * n, .c_row_stride = n,
      .residual_batch_stride = m * n, .residual_row_stride = n,
      .scale = 1.0f, .alpha = e.alpha, .beta = e.beta};
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_GEMM, .push = &p,
                                    .binding_count = 5, .written_mask = 1u << 4,
                                    .grid = KILN_EMIT_GRID_GEMM};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  // A constant 2-D B (never expanded) is bound at the end, unless quantized.
  const bool b_later = kiln_lower_weight_quantizable(l) && bv->data && bv->shape.rank == 2;
  if (!b_later) KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &desc.bindings[1]));
  // Scratch for operands expanded over the batch: A's part, then B's.
  bool a_expand = kiln_matmul_needs_expand(&a, &batch);
  bool b_expand = kiln_matmul_needs_expand(&b, &batch);
  uint64_t a_bytes = a_expand ? batch_count * m * k * sizeof(float) : 0;
  uint64_t b_bytes = b_expand ? batch_count * k * n * sizeof(float) : 0;
  uint64_t a_region = kiln_emit_align_up(a_bytes);
  kiln_emit_range_t scratch = {0};
  if (a_expand || b_expand) {
    KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, batch_count * (m > n ? m : n) * k));
    KILN_RETURN_IF_ERROR(kiln_emit_scratch(l->program, a_region + b_bytes, &scratch));
  }
  kiln_emit_range_t a_scratch = scratch, b_scratch = scratch;
  a_scratch.length = a_bytes;
  b_scratch.offset += a_region;
  b_scratch.length = b_bytes;
  KILN_RETURN_IF_ERROR(
      kiln_matmul_batch(l, &a, &batch, &desc.bindings[0], &a_scratch, &p.a_batch_stride));
  KILN_RETURN_IF_ERROR(
      kiln_matmul_batch(l, &b, &batch, &desc.bindings[1], &b_scratch, &p.b_batch_stride));
  const kiln_graph_value_t* bias = e.bias >= 0 ? kiln_lower_in(l, (size_t)e.bias) : NULL;
  if (bias) {
    // The bias right-aligned against y, with y's dropped dims put back.
    kiln_graph_shape_t bias_full = bias->shape;
    if (bias_full.rank >= 1 && bv->shape.rank == 1) {
      bias_full.dims[bias_full.rank++] = 1;
    }
    if (bias_full.rank >= 1 && av->shape.rank == 1) {
      bias_full.dims[bias_full.rank] = bias_full.dims[bias_full.rank - 1];
      bias_full.dims[bias_full.rank - 1] = 1;
      ++bias_full.rank;
    }
    if (bias_full.rank > y_full.rank) {
      return kiln_lower_refuse(l, "a batched bias is not supported");
    }
    KILN_RETURN_IF_ERROR(kiln_lower_bias_strides(l, &bias_full, &y_full, &p));
  }
  // A shared B (a 2-D weight) with a contiguous batched A: the batch dims
  // fold into M, one GEMM of batch * m rows (seq-first transformers had
  // [128,1,768] x [768,3072] as 128 one-row GEMMs). C and the residual are
  // contiguous [batch, m, n] already; a per-row or per-batch bias would not
  // fold.
  if (p.batch > 1 && p.b_batch_stride == 0 && p.a_batch_stride == m * k &&
      p.bias_row_stride == 0 && p.bias_batch_stride == 0) {
    p.m = m * p.batch;
    p.batch = 1;
    p.a_batch_stride = 0;
    p.c_batch_stride = p.m * n;
    p.residual_batch_stride = p.m * n;
  }
  desc.kernel = kiln_lower_gemm_kernel(l, &p);
  desc.bindings[2] = desc.bindings[0];
  if (bias) KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, (size_t)e.bias, &desc.bindings[2]));
  if (b_later) {
    bool quantized = false;
    KILN_RETURN_IF_ERROR(
        kiln_lower_quantized_or_bind_b(l, &e, &p, false, bias != NULL, &desc, &quantized));
    if (quantized) return kiln_ok_status();
  }
  return kiln_lower_finish_epilogue(l, &e, bias != NULL, kGemmEpilogueSpecs, 0, &desc);
}
