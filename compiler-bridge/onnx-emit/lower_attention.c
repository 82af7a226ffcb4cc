// kiln.Attention (onnx/attention.h) -> the attention kernel: one dispatch,
// or, when one invocation would loop past llvmpipe's pass budget
// (kernels_loops.h), one partial dispatch over key chunks plus a merge.
// f16 heads of up to 128 dims on tensor cores (kiln_lower_coopmat_enabled)
// take attention_coopmat instead, and other heads of up to 64 dims on
// desktop-sized GPUs attention_tiled: one dispatch, every key.
#include "attention.h"
#include "kiln/compiler/kernels_gemm_tuning.h"
#include "kiln/compiler/kernels_loops.h"
#include "lower_util.h"

static uint64_t kiln_div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Loop passes of one invocation over `keys` keys (attention.comp), counted
// as if no loop were unrolled: the q load and store loops (D4 + 1 each),
// per tile the shared-memory load loop, the key loop's exit and its masked
// extra pass over the two inner loops, per key the dot and update loops.
static uint64_t kiln_attention_passes(uint64_t keys, uint64_t d4, uint64_t tile,
                                      uint64_t wg) {
  uint64_t fixed = 4 * (d4 + 1) + 32;
  uint64_t per_tile = kiln_div_up(tile * d4, wg) + 1 + 2 * (d4 + 1) + 4;
  uint64_t per_key = 2 * (d4 + 1) + 2;
  return fixed + kiln_div_up(keys, tile) * per_tile + keys * per_key;
}

// The merge phase: a max loop and an accumulate loop over the chunks.
static uint64_t kiln_attention_merge_passes(uint64_t chunks, uint64_t d4) {
  return 2 * (chunks + 1) + chunks * (d4 + 2) + 2 * (d4 + 1) + 16;
}

// The smallest budget share leaves room for the model's rounding.
#define KILN_ATTENTION_PASS_LIMIT (KILN_KERNEL_LOOP_PASS_BUDGET - 4096u)

static kiln_status_t kiln_attention_chunk(const kiln_lower_t* l, uint64_t sk, uint64_t d4,
                                          uint64_t* out_chunk) {
  uint64_t chunk = sk;
  for (size_t t = 0; t < l->program->target_count; ++t) {
    kiln_kernel_config_t config;
    KILN_RETURN_IF_ERROR(kiln_kernel_config_select(KILN_KERNEL_ATTENTION, &l->program->caps[t],
                                                   KILN_KERNEL_STORAGE_FP32, &config));
    uint64_t tile = kiln_kernel_config_spec(&config, KILN_SPEC_ATTN_KEY_TILE, 1);
    uint64_t wg = config.workgroup_size[0];
    while (chunk > tile && kiln_attention_passes(chunk, d4, tile, wg) > KILN_ATTENTION_PASS_LIMIT) {
      // Whole tiles per chunk, shrinking until the model fits.
      uint64_t tiles = kiln_div_up(chunk, tile);
      chunk = (tiles - (tiles > 8 ? tiles / 8 : 1)) * tile;
    }
    if (kiln_attention_passes(chunk, d4, tile, wg) > KILN_ATTENTION_PASS_LIMIT) {
      return kiln_lower_refuse(l, "head dim %llu leaves no loop budget for one key tile",
                               (unsigned long long)(d4 * 4));
    }
  }
  *out_chunk = chunk;
  return kiln_ok_status();
}

static kiln_status_t kiln_attention_u32(const kiln_lower_t* l, const int64_t* values,
                                        size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (values[i] < 0) return kiln_lower_refuse(l, "negative attention view value");
    KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, (uint64_t)values[i]));
  }
  return kiln_ok_status();
}

static kiln_kernel_attention_params_t kiln_attention_params(const kiln_attention_t* a,
                                                           uint64_t chunk, uint64_t chunks) {
  const kiln_kernel_attention_params_t p = {
      (uint32_t)a->batch, (uint32_t)a->heads, (uint32_t)a->sq, (uint32_t)a->sk,
      (uint32_t)a->d, (uint32_t)a->dv, a->scale, (uint32_t)chunk, (uint32_t)chunks,
      (uint32_t)a->q[0], (uint32_t)a->q[1], (uint32_t)a->q[2], (uint32_t)a->q[3],
      (uint32_t)a->k[0], (uint32_t)a->k[1], (uint32_t)a->k[2], (uint32_t)a->k[3],
      (uint32_t)a->v[0], (uint32_t)a->v[1], (uint32_t)a->v[2], (uint32_t)a->v[3],
      (uint32_t)a->out[0], (uint32_t)a->out[1], (uint32_t)a->out[2], (uint32_t)a->out[3],
      (uint32_t)a->mask[0], (uint32_t)a->mask[1], (uint32_t)a->mask[2], (uint32_t)a->mask[3]};
  return p;
}

// attention_tiled serves heads of up to KILN_ATTN_TILED_DIM dims on modules
// whose targets are all desktop-sized GPUs (kiln_kernel_gemm_occupancy_enabled,
// as for the SIMT kernel's key lanes) and take its config. Its one run-time
// loop makes a pass per 32-key tile (plus the exit pass and a margin for the
// rest), so it fits llvmpipe's budget up to ~2M keys.
static bool kiln_attention_tiled_fits(const kiln_lower_t* l, uint64_t dim, uint64_t sk) {
  if (dim > KILN_ATTN_TILED_DIM || l->program->target_count == 0) return false;
  if (kiln_div_up(sk, KILN_ATTN_TILED_KEYS) + 64 > KILN_ATTENTION_PASS_LIMIT) return false;
  for (size_t t = 0; t < l->program->target_count; ++t) {
    if (!kiln_kernel_gemm_occupancy_enabled(&l->program->caps[t])) return false;
    kiln_kernel_config_t config;
    kiln_status_t status = kiln_kernel_config_select(
        KILN_KERNEL_ATTENTION_TILED, &l->program->caps[t], KILN_KERNEL_STORAGE_FP32, &config);
    if (!kiln_status_is_ok(status)) {  // too little shared memory: attention.comp
      kiln_status_ignore(status);
      return false;
    }
  }
  return true;
}

// One dispatch over every key: attention_coopmat or attention_tiled, whose
// builds' head-dim capacity is `dim4` vec4s.
static kiln_status_t kiln_attention_emit_one_pass(const kiln_lower_t* l,
                                                  const kiln_attention_t* a,
                                                  kiln_kernel_id_t kernel, uint32_t dim4,
                                                  const kiln_emit_range_t bindings[5]) {
  const kiln_kernel_attention_params_t p = kiln_attention_params(a, (uint64_t)a->sk, 1);
  kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_ATTN_DIM4, dim4},
                                    {KILN_SPEC_ATTN_MASK, (uint32_t)a->mask_kind},
                                    {KILN_SPEC_ATTN_CAUSAL, a->causal ? 1u : 0u}};
  kiln_emit_dispatch_desc_t desc = {
      .kernel = kernel, .ops = ops, .op_count = 3, .push = &p, .binding_count = 5,
      .bindings = {bindings[0], bindings[1], bindings[2], bindings[3], bindings[4]},
      .written_mask = 16u, .grid = KILN_EMIT_GRID_ATTENTION};
  return kiln_emit_add_dispatch(l->program, &desc);
}

kiln_status_t kiln_lower_attention(const kiln_lower_t* l) {
  kiln_attention_t a;
  KILN_RETURN_IF_ERROR(kiln_attention_read(l->node, &a));
  if (a.d > KILN_ATTN_MAX_DIM || a.dv > KILN_ATTN_MAX_DIM) {
    return kiln_lower_refuse(l, "head dims %lld/%lld; the attention kernel takes at most %u",
                             (long long)a.d, (long long)a.dv, KILN_ATTN_MAX_DIM);
  }
  const int64_t dims[6] = {a.batch, a.heads, a.sq, a.sk, a.d, a.dv};
  KILN_RETURN_IF_ERROR(kiln_attention_u32(l, dims, 6));
  KILN_RETURN_IF_ERROR(kiln_attention_u32(l, a.q, 4));
  KILN_RETURN_IF_ERROR(kiln_attention_u32(l, a.k, 4));
  KILN_RETURN_IF_ERROR(kiln_attention_u32(l, a.v, 4));
  KILN_RETURN_IF_ERROR(kiln_attention_u32(l, a.out, 4));
  KILN_RETURN_IF_ERROR(kiln_attention_u32(l, a.mask, 4));
  kiln_emit_range_t q, k, v, mask, out;
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &q));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &k));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 2, &v));
  mask = q;  // any buffer when there is no mask
  if (a.mask_kind != KILN_ATTN_MASK_NONE) KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 3, &mask));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  const uint64_t dim = (uint64_t)(a.d > a.dv ? a.d : a.dv);
  // Select masks stay on the SIMT kernels: their keep marker is an f32 NaN
  // payload that f16 storage does not carry.
  if (kiln_lower_coopmat_enabled(l) && dim <= KILN_ATTN_COOPMAT_DIM_MAX &&
      a.mask_kind != KILN_ATTN_MASK_SELECT) {
    const uint32_t capacity =
        dim <= KILN_ATTN_COOPMAT_DIM_SMALL ? KILN_ATTN_COOPMAT_DIM_SMALL : KILN_ATTN_COOPMAT_DIM_MAX;
    const kiln_emit_range_t bindings[5] = {q, k, v, mask, out};
    return kiln_attention_emit_one_pass(l, &a, KILN_KERNEL_ATTENTION_COOPMAT, capacity / 4,
                                        bindings);
  }
  if (kiln_attention_tiled_fits(l, dim, (uint64_t)a.sk)) {
    const kiln_emit_range_t bindings[5] = {q, k, v, mask, out};
    return kiln_attention_emit_one_pass(l, &a, KILN_KERNEL_ATTENTION_TILED,
                                        KILN_ATTN_TILED_DIM / 4, bindings);
  }
  uint64_t d4 = kiln_div_up(dim, 4);
  uint64_t chunk = 0;
  KILN_RETURN_IF_ERROR(kiln_attention_chunk(l, (uint64_t)a.sk, d4, &chunk));
  uint64_t chunks = kiln_div_up((uint64_t)a.sk, chunk);
  const kiln_kernel_attention_params_t p = kiln_attention_params(&a, chunk, chunks);
  kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_ATTN_DIM4, (uint32_t)d4},
                                    {KILN_SPEC_ATTN_MASK, (uint32_t)a.mask_kind},
                                    {KILN_SPEC_ATTN_CAUSAL, a.causal ? 1u : 0u},
                                    {KILN_SPEC_ATTN_PHASE, KILN_ATTN_PHASE_FULL}};
  kiln_emit_dispatch_desc_t desc = {
      .kernel = KILN_KERNEL_ATTENTION, .ops = ops, .op_count = 4, .push = &p,
      .binding_count = 5, .bindings = {q, k, v, mask, out}, .written_mask = 16u,
      .grid = KILN_EMIT_GRID_ATTENTION};
  if (chunks == 1) return kiln_emit_add_dispatch(l->program, &desc);
  // The f16 build would keep its partial (max, sum, accumulator) records in
  // f16 too.
  if (kiln_emit_node_is_f16(l->program)) {
    return kiln_lower_refuse(l, "%lld keys need %llu key chunks, which run in float32 only "
                             "(compile with --precision=f32)",
                             (long long)a.sk, (unsigned long long)chunks);
  }
  if (kiln_attention_merge_passes(chunks, d4) > KILN_ATTENTION_PASS_LIMIT) {
    return kiln_lower_refuse(l, "%lld keys need %llu chunks, too many to merge in one pass",
                             (long long)a.sk, (unsigned long long)chunks);
  }
  uint64_t records = (uint64_t)a.batch * a.heads * a.sq * chunks * (uint64_t)(a.dv + 2);
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, records));
  kiln_emit_range_t scratch;
  KILN_RETURN_IF_ERROR(kiln_emit_scratch(l->program, records * sizeof(float), &scratch));
  ops[3].value = KILN_ATTN_PHASE_PARTIAL;
  desc.bindings[4] = scratch;
  KILN_RETURN_IF_ERROR(kiln_emit_add_dispatch(l->program, &desc));
  ops[3].value = KILN_ATTN_PHASE_MERGE;
  desc.bindings[0] = scratch;
  desc.bindings[4] = out;
  desc.grid = KILN_EMIT_GRID_ATTENTION_MERGE;
  return kiln_emit_add_dispatch(l->program, &desc);
}
