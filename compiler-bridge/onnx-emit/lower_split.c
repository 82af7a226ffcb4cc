// Reductions split to the loop budget (kernels_loops.h): a gemm- or
// conv-family dispatch whose invocations would make more loop passes than
// KILN_KERNEL_LOOP_PASS_BUDGET on any target is recorded as several
// dispatches over parts of the reduction. The first adds bias and residual;
// each later one binds the output as its residual (out += part) and the
// last applies the activation. Dispatches that fit are recorded unchanged.
#include <string.h>

#include "kiln/compiler/kernels_loops.h"
#include "lower_util.h"

// gemm chunks start at multiples of this many k, so the shifted operand
// bindings stay KILN_EMIT_ALIGNMENT-aligned (64 floats = 256 bytes).
#define KILN_SPLIT_K_ALIGN 64u

// Whether every target's invocations of `desc` stay within the budget.
static kiln_status_t kiln_split_fits(const kiln_lower_t* l, const kiln_emit_dispatch_desc_t* desc,
                                     bool* out_fits) {
  const kiln_emit_program_t* program = l->program;
  *out_fits = true;
  for (size_t t = 0; t < program->target_count && *out_fits; ++t) {
    kiln_kernel_config_t config;
    KILN_RETURN_IF_ERROR_ANNOTATE(
        kiln_emit_select_config(program, desc, t, KILN_KERNEL_STORAGE_FP32, &config),
        "target '%s'", program->targets[t]);
    uint32_t grid[3];
    KILN_RETURN_IF_ERROR(kiln_emit_dispatch_grid(&config, desc, grid));
    uint64_t passes = 0;
    KILN_RETURN_IF_ERROR(kiln_kernel_loop_passes(&config, desc->push, grid, &passes));
    *out_fits = passes <= KILN_KERNEL_LOOP_PASS_BUDGET;
  }
  return kiln_ok_status();
}

// Records part `index` of `count` (push and operand bindings already set):
// the epilogue's specs, then the ones `d` brought (up to 5).
static kiln_status_t kiln_split_record(const kiln_lower_t* l, kiln_emit_dispatch_desc_t* d,
                                       const kiln_lower_reduction_t* r, size_t index,
                                       size_t count) {
  const bool first = index == 0, last = index + 1 == count;
  if (!first) d->bindings[3] = d->bindings[4];
  kiln_kernel_spec_value_t ops[8] = {{r->specs[0], last ? r->activation : KILN_ACT_NONE},
                                     {r->specs[1], first && r->has_bias},
                                     {r->specs[2], !first || r->has_residual}};
  if (d->op_count > 5) {
    return kiln_make_status(KILN_STATUS_INTERNAL, "%zu specs beside the epilogue's", d->op_count);
  }
  for (size_t i = 0; i < d->op_count; ++i) ops[3 + i] = d->ops[i];
  d->ops = ops;
  d->op_count += 3;
  return kiln_emit_add_dispatch(l->program, d);
}

// Largest value in [1, max] for which `fits(value)` holds (it is monotone),
// or 0 when none does.
typedef kiln_status_t (*kiln_split_probe_fn)(const kiln_lower_t* l,
                                             const kiln_emit_dispatch_desc_t* desc,
                                             uint32_t value, bool* out_fits);

static kiln_status_t kiln_split_search(const kiln_lower_t* l,
                                       const kiln_emit_dispatch_desc_t* desc, uint32_t max,
                                       kiln_split_probe_fn probe, uint32_t* out_value) {
  uint32_t lo = 0, hi = max;  // lo fits (or is 0), everything above hi fails
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo + 1) / 2;
    bool fits = false;
    KILN_RETURN_IF_ERROR(probe(l, desc, mid, &fits));
    if (fits) lo = mid;
    else hi = mid - 1;
  }
  *out_value = lo;
  return kiln_ok_status();
}

// gemm: `value` chunks of KILN_SPLIT_K_ALIGN k.
static kiln_status_t kiln_split_gemm_probe(const kiln_lower_t* l,
                                           const kiln_emit_dispatch_desc_t* desc,
                                           uint32_t value, bool* out_fits) {
  kiln_kernel_gemm_params_t p = *(const kiln_kernel_gemm_params_t*)desc->push;
  uint64_t k = (uint64_t)value * KILN_SPLIT_K_ALIGN;
  p.k = k < p.k ? (uint32_t)k : p.k;
  kiln_emit_dispatch_desc_t d = *desc;
  d.push = &p;
  return kiln_split_fits(l, &d, out_fits);
}

static kiln_status_t kiln_split_gemm(const kiln_lower_t* l, const kiln_emit_dispatch_desc_t* desc,
                                     const kiln_lower_reduction_t* r) {
  const kiln_kernel_gemm_params_t* full = desc->push;
  uint32_t chunks64 = 0;
  KILN_RETURN_IF_ERROR(kiln_split_search(l, desc, (full->k + KILN_SPLIT_K_ALIGN - 1) / KILN_SPLIT_K_ALIGN,
                                         kiln_split_gemm_probe, &chunks64));
  if (chunks64 == 0) {
    return kiln_lower_refuse(l, "a reduction of %u k exceeds the %u loop passes an invocation "
                             "may make even in parts of %u",
                             full->k, KILN_KERNEL_LOOP_PASS_BUDGET, KILN_SPLIT_K_ALIGN);
  }
  uint32_t chunk = chunks64 * KILN_SPLIT_K_ALIGN;
  // f16 operands: k0 * 2 bytes per value must stay 256-byte aligned too.
  if (kiln_emit_node_is_f16(l->program)) {
    chunk &= ~(uint32_t)(2 * KILN_SPLIT_K_ALIGN - 1);
    if (chunk == 0) {
      return kiln_lower_refuse(l, "a reduction of %u k needs f16 parts of under %u values",
                               full->k, 2 * KILN_SPLIT_K_ALIGN);
    }
  }
  const uint64_t value_bytes = kiln_emit_float_bytes(l->program);
  const size_t count = (full->k + chunk - 1) / chunk;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t k0 = (uint32_t)i * chunk;
    kiln_kernel_gemm_params_t p = *full;
    p.k = full->k - k0 < chunk ? full->k - k0 : chunk;
    if (i > 0) {
      p.residual_batch_stride = full->c_batch_stride;
      p.residual_row_stride = full->c_row_stride;
    }
    kiln_emit_dispatch_desc_t d = *desc;
    d.push = &p;
    // A and B start at k0: bytes k0 * stride * value bytes, a multiple of 256.
    const uint64_t a_shift = (uint64_t)k0 * full->a_col_stride * value_bytes;
    const uint64_t b_shift = (uint64_t)k0 * full->b_row_stride * value_bytes;
    if (a_shift >= d.bindings[0].length || b_shift >= d.bindings[1].length) {
      return kiln_make_status(KILN_STATUS_INTERNAL, "gemm split: part %zu outside its operands",
                              i);
    }
    d.bindings[0].offset += a_shift;
    d.bindings[0].length -= a_shift;
    d.bindings[1].offset += b_shift;
    d.bindings[1].length -= b_shift;
    KILN_RETURN_IF_ERROR(kiln_split_record(l, &d, r, i, count));
  }
  return kiln_ok_status();
}

// conv: `value` input channels per part (all kernel rows), or with one
// channel per part, `value` kernel rows.
static kiln_status_t kiln_split_conv_probe(const kiln_lower_t* l,
                                           const kiln_emit_dispatch_desc_t* desc,
                                           uint32_t value, bool* out_fits) {
  kiln_kernel_conv2d_params_t p = *(const kiln_kernel_conv2d_params_t*)desc->push;
  if (p.ci_end == 0) p.ci_end = value;  // channels [0, value)
  else p.kh_end = value;                // rows [0, value) of one channel
  kiln_emit_dispatch_desc_t d = *desc;
  d.push = &p;
  return kiln_split_fits(l, &d, out_fits);
}

static kiln_status_t kiln_split_conv(const kiln_lower_t* l, const kiln_emit_dispatch_desc_t* desc,
                                     const kiln_lower_reduction_t* r) {
  const kiln_kernel_conv2d_params_t* full = desc->push;
  // The depthwise kernel has one input channel per output channel.
  const uint32_t cig = desc->kernel == KILN_KERNEL_DEPTHWISE_CONV2D || full->groups == 0
                           ? 1 : full->in_channels / full->groups;
  uint32_t channels = 0, rows = full->kernel_h;
  KILN_RETURN_IF_ERROR(kiln_split_search(l, desc, cig, kiln_split_conv_probe, &channels));
  if (channels == 0) {
    // One channel's window is too much: parts of its kernel rows.
    kiln_kernel_conv2d_params_t one = *full;
    one.ci_end = 1;
    kiln_emit_dispatch_desc_t d = *desc;
    d.push = &one;
    channels = 1;
    rows = 0;
    KILN_RETURN_IF_ERROR(kiln_split_search(l, &d, full->kernel_h, kiln_split_conv_probe, &rows));
    if (rows == 0) {
      return kiln_lower_refuse(l, "one kernel row of %u taps exceeds the %u loop passes an "
                               "invocation may make",
                               full->kernel_w, KILN_KERNEL_LOOP_PASS_BUDGET);
    }
  }
  const size_t channel_parts = (cig + channels - 1) / channels;
  const size_t row_parts = (full->kernel_h + rows - 1) / rows;
  const size_t count = channel_parts * row_parts;
  for (size_t i = 0; i < count; ++i) {
    kiln_kernel_conv2d_params_t p = *full;
    p.ci_begin = (uint32_t)(i / row_parts) * channels;
    p.ci_end = p.ci_begin + channels < cig ? p.ci_begin + channels : cig;
    p.kh_begin = (uint32_t)(i % row_parts) * rows;
    p.kh_end = p.kh_begin + rows < full->kernel_h ? p.kh_begin + rows : full->kernel_h;
    kiln_emit_dispatch_desc_t d = *desc;
    d.push = &p;
    KILN_RETURN_IF_ERROR(kiln_split_record(l, &d, r, i, count));
  }
  return kiln_ok_status();
}

kiln_status_t kiln_lower_add_reduction(const kiln_lower_t* l,
                                       const kiln_emit_dispatch_desc_t* desc,
                                       const kiln_lower_reduction_t* r) {
  bool fits = false;
  KILN_RETURN_IF_ERROR(kiln_split_fits(l, desc, &fits));
  kiln_emit_dispatch_desc_t d = *desc;
  if (fits) return kiln_split_record(l, &d, r, 0, 1);
  // A conv's windows cannot move by k chunks (gemm_coopmat reads them by
  // the geometry from a fixed input): refused rather than shifted.
  if (desc->b_windows) {
    const kiln_kernel_gemm_params_t* g = desc->push;
    return kiln_lower_refuse(l, "a conv of %u k reading its windows in place exceeds the %u "
                             "loop passes an invocation may make",
                             g->k, KILN_KERNEL_LOOP_PASS_BUDGET);
  }
  switch (desc->kernel) {
    case KILN_KERNEL_GEMM:
    case KILN_KERNEL_GEMM_SMALL:
    case KILN_KERNEL_GEMM_COOPMAT:
    case KILN_KERNEL_GEMV:
      return kiln_split_gemm(l, desc, r);
    case KILN_KERNEL_CONV2D:
    case KILN_KERNEL_CONV2D_GEMM:
    case KILN_KERNEL_DEPTHWISE_CONV2D:
    case KILN_KERNEL_CONV_TRANSPOSE2D:
      return kiln_split_conv(l, desc, r);
    default:
      return kiln_make_status(KILN_STATUS_INTERNAL, "no reduction split for kernel %d",
                              (int)desc->kernel);
  }
}
