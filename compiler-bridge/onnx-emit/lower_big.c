// Tensors larger than a target's storage-buffer range (issue 13): a gemm
// whose operand, bias, residual or output binding would span more bytes than
// kiln_emit_range_limit is recorded as parts over blocks of m, n and k, each
// binding only its block's bytes (a K part accumulates into the output like
// the loop-budget split of lower_split.c, which then runs inside each part);
// a Gather from a table that large reads it in row ranges. Every part starts
// its bindings at KILN_EMIT_ALIGNMENT multiples. Conv of one image and
// group goes in blocks of output channels, binary ops in blocks of their
// outer dimension, unary ops and copies in tiles. Dispatches that fit are
// recorded unchanged.
#include <string.h>

#include "lower_util.h"

enum { KILN_BIG_M, KILN_BIG_N, KILN_BIG_K, KILN_BIG_DIMS };
#define KILN_BIG_BINDINGS 5
static const char* const kBigBindingNames[KILN_BIG_BINDINGS] = {"A", "B", "bias", "residual",
                                                                "output"};

// Element strides of gemm binding `b` along m, n and k, and per batch.
static void kiln_big_gemm_strides(const kiln_kernel_gemm_params_t* p, uint32_t b,
                                  uint64_t s[KILN_BIG_DIMS], uint64_t* batch) {
  const uint32_t table[KILN_BIG_BINDINGS][4] = {
      {p->a_row_stride, 0, p->a_col_stride, p->a_batch_stride},
      {0, p->b_col_stride, p->b_row_stride, p->b_batch_stride},
      {p->bias_row_stride, p->bias_col_stride, 0, p->bias_batch_stride},
      {p->residual_row_stride, 1, 0, p->residual_batch_stride},
      {p->c_row_stride, 1, 0, p->c_batch_stride},
  };
  for (int d = 0; d < KILN_BIG_DIMS; ++d) s[d] = table[b][d];
  *batch = table[b][3];
}

// Bytes binding `b` spans for a block of `extent` (m, n, k) over all batches.
static uint64_t kiln_big_gemm_span(const kiln_kernel_gemm_params_t* p, uint32_t b,
                                   const uint64_t extent[KILN_BIG_DIMS]) {
  uint64_t s[KILN_BIG_DIMS], batch = 0;
  kiln_big_gemm_strides(p, b, s, &batch);
  uint64_t last = (uint64_t)(p->batch ? p->batch - 1 : 0) * batch;
  for (int d = 0; d < KILN_BIG_DIMS; ++d) last += (extent[d] ? extent[d] - 1 : 0) * s[d];
  return (last + 1) * sizeof(float);
}

// Smallest block step along `d` that keeps every shifted binding aligned:
// step * stride * 4 must be a multiple of KILN_EMIT_ALIGNMENT.
static uint64_t kiln_big_gemm_step(const kiln_kernel_gemm_params_t* p, const bool* active,
                                   int d) {
  uint64_t step = 1;
  for (uint32_t b = 0; b < KILN_BIG_BINDINGS; ++b) {
    uint64_t s[KILN_BIG_DIMS], batch = 0;
    kiln_big_gemm_strides(p, b, s, &batch);
    if (!active[b] || s[d] == 0) continue;
    uint64_t need = KILN_EMIT_ALIGNMENT / sizeof(float);  // floats per alignment
    uint64_t stride = s[d];
    while (need > 1 && stride % 2 == 0) {
      need /= 2;
      stride /= 2;
    }
    if (need > step) step = need;
  }
  return step;
}

// Block sizes along m, n, k such that every active binding of a block fits
// `limit`: repeatedly shrinks, for the first binding still too large, the
// dimension that contributes most to its span.
static kiln_status_t kiln_big_gemm_blocks(const kiln_lower_t* l, const kiln_kernel_gemm_params_t* p,
                                          const bool* active, uint64_t limit,
                                          uint64_t block[KILN_BIG_DIMS]) {
  const uint64_t full[KILN_BIG_DIMS] = {p->m, p->n, p->k};
  uint64_t step[KILN_BIG_DIMS];
  for (int d = 0; d < KILN_BIG_DIMS; ++d) {
    block[d] = full[d];
    step[d] = kiln_big_gemm_step(p, active, d);
  }
  for (;;) {
    uint32_t b = 0;
    while (b < KILN_BIG_BINDINGS && (!active[b] || kiln_big_gemm_span(p, b, block) <= limit)) ++b;
    if (b == KILN_BIG_BINDINGS) return kiln_ok_status();
    uint64_t s[KILN_BIG_DIMS], batch = 0;
    kiln_big_gemm_strides(p, b, s, &batch);
    int cut = -1;
    for (int d = 0; d < KILN_BIG_DIMS; ++d) {
      if (s[d] == 0 || block[d] <= step[d]) continue;
      if (cut < 0 || s[d] * (block[d] - 1) > s[cut] * (block[cut] - 1)) cut = d;
    }
    if (cut < 0) {
      return kiln_lower_refuse(l, "the gemm's %s binding spans %llu bytes even in the smallest "
                               "block (%llu x %llu x %llu of m x n x k), more than the "
                               "%llu-byte storage-buffer range of the targets",
                               kBigBindingNames[b],
                               (unsigned long long)kiln_big_gemm_span(p, b, block),
                               (unsigned long long)block[0], (unsigned long long)block[1],
                               (unsigned long long)block[2], (unsigned long long)limit);
    }
    // The largest multiple of the step along `cut` for which binding b
    // fits (at least one step, and always smaller than now).
    uint64_t one[KILN_BIG_DIMS] = {block[0], block[1], block[2]};
    one[cut] = 1;
    const uint64_t rest = kiln_big_gemm_span(p, b, one);
    uint64_t fit = rest <= limit ? (limit - rest) / (s[cut] * sizeof(float)) + 1 : 0;
    fit -= fit % step[cut];
    if (fit < step[cut]) fit = step[cut];
    if (fit >= block[cut]) fit = block[cut] - 1;  // unreachable: b does not fit now
    block[cut] = fit;
  }
}

// Shifts binding `b` of `d` to the block at (m0, n0, k0) and trims it to the
// block's span.
static kiln_status_t kiln_big_gemm_shift(const kiln_kernel_gemm_params_t* full,
                                         const kiln_kernel_gemm_params_t* part, uint32_t b,
                                         const uint64_t origin[KILN_BIG_DIMS],
                                         kiln_emit_range_t* range) {
  uint64_t s[KILN_BIG_DIMS], batch = 0;
  kiln_big_gemm_strides(full, b, s, &batch);
  uint64_t shift = 0;
  for (int d = 0; d < KILN_BIG_DIMS; ++d) shift += origin[d] * s[d] * sizeof(float);
  if (shift % KILN_EMIT_ALIGNMENT || shift >= range->length) {
    return kiln_make_status(KILN_STATUS_INTERNAL,
                            "gemm block split: binding %u shifted by %llu of %llu bytes", b,
                            (unsigned long long)shift, (unsigned long long)range->length);
  }
  const uint64_t extent[KILN_BIG_DIMS] = {part->m, part->n, part->k};
  const uint64_t span = kiln_big_gemm_span(full, b, extent);
  range->offset += shift;
  range->length -= shift;
  if (span < range->length) range->length = span;
  return kiln_ok_status();
}

static kiln_status_t kiln_big_gemm(const kiln_lower_t* l, const kiln_emit_dispatch_desc_t* desc,
                                   const kiln_lower_reduction_t* r, uint64_t limit) {
  const kiln_kernel_gemm_params_t* full = desc->push;
  const bool active[KILN_BIG_BINDINGS] = {true, true, r->has_bias, r->has_residual, true};
  uint64_t block[KILN_BIG_DIMS];
  KILN_RETURN_IF_ERROR(kiln_big_gemm_blocks(l, full, active, limit, block));
  const uint64_t extent[KILN_BIG_DIMS] = {full->m, full->n, full->k};
  uint64_t origin[KILN_BIG_DIMS] = {0, 0, 0};
  for (origin[0] = 0; origin[0] < extent[0]; origin[0] += block[0]) {
    for (origin[1] = 0; origin[1] < extent[1]; origin[1] += block[1]) {
      for (origin[2] = 0; origin[2] < extent[2]; origin[2] += block[2]) {
        kiln_kernel_gemm_params_t p = *full;
        uint64_t size[KILN_BIG_DIMS];
        for (int d = 0; d < KILN_BIG_DIMS; ++d) {
          size[d] = extent[d] - origin[d] < block[d] ? extent[d] - origin[d] : block[d];
        }
        p.m = (uint32_t)size[0];
        p.n = (uint32_t)size[1];
        p.k = (uint32_t)size[2];
        kiln_emit_dispatch_desc_t d = *desc;
        d.push = &p;
        for (uint32_t b = 0; b < KILN_BIG_BINDINGS; ++b) {
          if (!active[b]) continue;
          KILN_RETURN_IF_ERROR(kiln_big_gemm_shift(full, &p, b, origin, &d.bindings[b]));
        }
        // Unused bias/residual slots repeat the part's A (never read).
        if (!active[2]) d.bindings[2] = d.bindings[0];
        if (!active[3]) d.bindings[3] = d.bindings[0];
        // K blocks after the first add to the output the earlier ones wrote.
        kiln_lower_reduction_t part = *r;
        const bool first = origin[2] == 0, last = origin[2] + block[2] >= extent[2];
        part.has_bias = r->has_bias && first;
        part.activation = last ? r->activation : KILN_ACT_NONE;
        if (!first) {
          d.bindings[3] = d.bindings[4];
          p.residual_batch_stride = full->c_batch_stride;
          p.residual_row_stride = full->c_row_stride;
          part.has_residual = true;
        }
        KILN_RETURN_IF_ERROR(kiln_lower_add_reduction(l, &d, &part));
      }
    }
  }
  return kiln_ok_status();
}

static bool kiln_big_fits(const kiln_emit_dispatch_desc_t* desc, uint64_t limit) {
  for (uint32_t b = 0; b < desc->binding_count; ++b) {
    if (desc->bindings[b].length > limit) return false;
  }
  return true;
}

// The block splits below count 4-byte floats; f16 tensors that large are
// refused rather than split at wrong offsets.
static kiln_status_t kiln_big_refuse_f16(const kiln_lower_t* l, uint64_t limit) {
  return kiln_lower_refuse(l, "an f16 tensor larger than the %llu-byte storage-buffer range "
                           "is not split (compile with --precision=f32)",
                           (unsigned long long)limit);
}

// conv2d (one image, one group): blocks of output channels, each binding
// its rows of the weight, bias, residual and output; the input whole.
static kiln_status_t kiln_big_conv(const kiln_lower_t* l, const kiln_emit_dispatch_desc_t* desc,
                                   const kiln_lower_reduction_t* r, uint64_t limit) {
  const kiln_kernel_conv2d_params_t* full = desc->push;
  const bool plain = (desc->kernel == KILN_KERNEL_CONV2D ||
                      desc->kernel == KILN_KERNEL_CONV2D_GEMM) &&
                     full->batch == 1 && full->groups == 1;
  if (!plain || desc->bindings[0].length > limit) {
    return kiln_lower_refuse(l, "a convolution binding larger than the %llu-byte storage-buffer "
                             "range of the targets is split only for the weight and output "
                             "of one image and one group",
                             (unsigned long long)limit);
  }
  // Floats per output channel in the weight (1), bias (2), residual (3)
  // and output (4).
  const uint64_t weight = (uint64_t)full->in_channels * full->kernel_h * full->kernel_w;
  const uint64_t pixels = (uint64_t)full->out_height * full->out_width;
  const uint64_t per[KILN_BIG_BINDINGS] = {0, weight, 1, pixels, pixels};
  const bool active[KILN_BIG_BINDINGS] = {false, true, r->has_bias, r->has_residual, true};
  uint64_t step = 1, block = full->out_channels;
  for (uint32_t b = 1; b < KILN_BIG_BINDINGS; ++b) {
    if (!active[b]) continue;
    uint64_t need = KILN_EMIT_ALIGNMENT / sizeof(float), rest = per[b];
    while (need > 1 && rest % 2 == 0) {
      need /= 2;
      rest /= 2;
    }
    if (need > step) step = need;
    const uint64_t fit = limit / (per[b] * sizeof(float));
    if (fit < block) block = fit;
  }
  block -= block % step;
  if (block == 0) {
    return kiln_lower_refuse(l, "one block of output channels of the convolution exceeds the "
                             "%llu-byte storage-buffer range of the targets",
                             (unsigned long long)limit);
  }
  for (uint64_t c0 = 0; c0 < full->out_channels; c0 += block) {
    kiln_kernel_conv2d_params_t p = *full;
    p.out_channels = (uint32_t)(full->out_channels - c0 < block ? full->out_channels - c0 : block);
    kiln_emit_dispatch_desc_t d = *desc;
    d.push = &p;
    d.grid_count = (uint64_t)p.out_channels * pixels;
    for (uint32_t b = 1; b < KILN_BIG_BINDINGS; ++b) {
      if (!active[b]) continue;
      const uint64_t shift = c0 * per[b] * sizeof(float);
      if (shift >= d.bindings[b].length) {
        return kiln_make_status(KILN_STATUS_INTERNAL, "conv split: binding %u outside", b);
      }
      d.bindings[b].offset += shift;
      d.bindings[b].length -= shift;
      const uint64_t span = p.out_channels * per[b] * sizeof(float);
      if (span < d.bindings[b].length) d.bindings[b].length = span;
    }
    // Unused bias/residual slots repeat the part's weight (never read).
    if (!active[2]) d.bindings[2] = d.bindings[1];
    if (!active[3]) d.bindings[3] = d.bindings[1];
    KILN_RETURN_IF_ERROR(kiln_lower_add_reduction(l, &d, r));
  }
  return kiln_ok_status();
}

kiln_status_t kiln_lower_add_big_reduction(const kiln_lower_t* l,
                                           const kiln_emit_dispatch_desc_t* desc,
                                           const kiln_lower_reduction_t* r) {
  const uint64_t limit = kiln_emit_range_limit(l->program);
  if (kiln_big_fits(desc, limit)) return kiln_lower_add_reduction(l, desc, r);
  if (kiln_emit_node_is_f16(l->program)) return kiln_big_refuse_f16(l, limit);
  // gemv and gemm_small share gemm's ABI, so its blocks apply to them.
  if (desc->kernel == KILN_KERNEL_GEMM || desc->kernel == KILN_KERNEL_GEMM_SMALL ||
      desc->kernel == KILN_KERNEL_GEMV) {
    return kiln_big_gemm(l, desc, r, limit);
  }
  return kiln_big_conv(l, desc, r, limit);
}

// Gather: parts over rows of the table (axis 0 of the data, outer = 1) and
// over blocks of indices, each binding at most `limit` bytes.
kiln_status_t kiln_lower_add_gather(const kiln_lower_t* l, const kiln_emit_dispatch_desc_t* desc,
                                    uint32_t index_words) {
  const uint64_t limit = kiln_emit_range_limit(l->program);
  if (kiln_big_fits(desc, limit)) return kiln_emit_add_dispatch(l->program, desc);
  const kiln_kernel_gather_params_t* full = desc->push;
  if (kiln_emit_node_is_f16(l->program)) return kiln_big_refuse_f16(l, limit);
  if (full->outer != 1) {
    return kiln_lower_refuse(l, "a Gather along axis > 0 of a tensor larger than the "
                             "%llu-byte storage-buffer range is not split",
                             (unsigned long long)limit);
  }
  const uint64_t row_bytes = (uint64_t)full->inner * sizeof(float);
  const uint64_t index_bytes = (uint64_t)index_words * sizeof(int32_t);
  const uint64_t floats_per_block = KILN_EMIT_ALIGNMENT / sizeof(float);
  // Steps that keep shifted bindings aligned: rows of the table, indices
  // (with their output rows).
  uint64_t row_step = 1, index_step = 1;
  while ((row_step * full->inner) % floats_per_block) row_step *= 2;
  while ((index_step * row_bytes) % KILN_EMIT_ALIGNMENT ||
         (index_step * index_bytes) % KILN_EMIT_ALIGNMENT) {
    index_step *= 2;
  }
  uint64_t rows = limit / row_bytes, indices = limit / (row_bytes > index_bytes ? row_bytes
                                                                                 : index_bytes);
  rows -= rows % row_step;
  indices -= indices % index_step;
  if (rows == 0 || indices == 0) {
    return kiln_lower_refuse(l, "a Gather row of %llu bytes does not fit the %llu-byte "
                             "storage-buffer range in aligned parts",
                             (unsigned long long)row_bytes, (unsigned long long)limit);
  }
  for (uint64_t j0 = 0; j0 < full->index_count; j0 += indices) {
    const uint64_t count = full->index_count - j0 < indices ? full->index_count - j0 : indices;
    for (uint64_t r0 = 0; r0 < full->axis_size; r0 += rows) {
      const uint64_t part_rows = full->axis_size - r0 < rows ? full->axis_size - r0 : rows;
      kiln_kernel_gather_params_t p = *full;
      p.index_count = (uint32_t)count;
      p.axis_begin = (uint32_t)r0;
      p.axis_rows = (uint32_t)part_rows;
      kiln_emit_dispatch_desc_t d = *desc;
      d.push = &p;
      d.grid_count = count * full->inner;
      const uint64_t shifts[3] = {r0 * row_bytes, j0 * index_bytes, j0 * row_bytes};
      const uint64_t lengths[3] = {part_rows * row_bytes, count * index_bytes,
                                   count * row_bytes};
      for (int b = 0; b < 3; ++b) {
        if (shifts[b] >= d.bindings[b].length) {
          return kiln_make_status(KILN_STATUS_INTERNAL, "gather split: binding %d outside", b);
        }
        d.bindings[b].offset += shifts[b];
        d.bindings[b].length -= shifts[b];
        if (lengths[b] < d.bindings[b].length) d.bindings[b].length = lengths[b];
      }
      KILN_RETURN_IF_ERROR(kiln_emit_add_dispatch(l->program, &d));
    }
  }
  return kiln_ok_status();
}

kiln_status_t kiln_emit_add_tiled(kiln_emit_program_t* program,
                                  const kiln_emit_dispatch_desc_t* desc) {
  const uint64_t limit = kiln_emit_range_limit(program);
  if (kiln_big_fits(desc, limit)) return kiln_emit_add_dispatch(program, desc);
  const kiln_kernel_desc_t* kernel = kiln_kernel_desc(desc->kernel);
  if (!kernel || kernel->push_constant_size > KILN_KERNEL_MAX_PUSH_CONSTANT_BYTES) {
    return kiln_make_status(KILN_STATUS_INTERNAL, "tiled dispatch of kernel %d",
                            (int)desc->kernel);
  }
  uint32_t count = 0;
  memcpy(&count, desc->push, sizeof(count));
  // Whole 256-byte blocks per tile, so every tile's bindings stay aligned.
  const uint64_t bytes = kiln_emit_desc_float_bytes(program, desc);
  const uint64_t tile = (limit / bytes) & ~(uint64_t)(KILN_EMIT_ALIGNMENT / bytes - 1);
  for (uint64_t first = 0; first < count; first += tile) {
    const uint64_t n = count - first < tile ? count - first : tile;
    uint8_t push[KILN_KERNEL_MAX_PUSH_CONSTANT_BYTES];
    memcpy(push, desc->push, kernel->push_constant_size);
    const uint32_t n32 = (uint32_t)n;
    memcpy(push, &n32, sizeof(n32));
    kiln_emit_dispatch_desc_t d = *desc;
    d.push = push;
    d.grid_count = n;
    for (uint32_t b = 0; b < d.binding_count; ++b) {
      d.bindings[b].offset += first * bytes;
      d.bindings[b].length = n * bytes;
    }
    KILN_RETURN_IF_ERROR(kiln_emit_add_dispatch(program, &d));
  }
  return kiln_ok_status();
}

// Bytes a binary-kernel operand with `strides` spans over `shape`.
static uint64_t kiln_big_binary_span(const uint32_t shape[KILN_KERNEL_MAX_RANK],
                                     const uint32_t strides[KILN_KERNEL_MAX_RANK]) {
  uint64_t last = 0;
  for (int d = 0; d < KILN_KERNEL_MAX_RANK; ++d) {
    last += (uint64_t)(shape[d] ? shape[d] - 1 : 0) * strides[d];
  }
  return (last + 1) * sizeof(float);
}

kiln_status_t kiln_lower_add_binary(const kiln_lower_t* l, const kiln_emit_dispatch_desc_t* desc) {
  const uint64_t limit = kiln_emit_range_limit(l->program);
  if (kiln_big_fits(desc, limit)) return kiln_emit_add_dispatch(l->program, desc);
  const kiln_kernel_binary_params_t* full = desc->push;
  if (kiln_emit_node_is_f16(l->program)) return kiln_big_refuse_f16(l, limit);
  // Blocks of the outermost dimension larger than 1 (the output is dense).
  int lead = 0;
  while (lead + 1 < KILN_KERNEL_MAX_RANK && full->shape[lead] == 1) ++lead;
  uint32_t out_strides[KILN_KERNEL_MAX_RANK];
  uint64_t stride = 1;
  for (int d = KILN_KERNEL_MAX_RANK - 1; d >= 0; --d) {
    out_strides[d] = (uint32_t)stride;
    stride *= full->shape[d];
  }
  const uint32_t* strides[3] = {full->a_strides, full->b_strides, out_strides};
  uint64_t step = 1, rows = full->shape[lead];
  for (int b = 0; b < 3; ++b) {
    const uint64_t s = strides[b][lead];
    if (s == 0) continue;
    uint64_t need = KILN_EMIT_ALIGNMENT / sizeof(float), rest = s;
    while (need > 1 && rest % 2 == 0) {
      need /= 2;
      rest /= 2;
    }
    if (need > step) step = need;
    uint32_t one[KILN_KERNEL_MAX_RANK];
    memcpy(one, full->shape, sizeof(one));
    one[lead] = 1;
    const uint64_t slice = kiln_big_binary_span(one, strides[b]);
    const uint64_t fit = slice <= limit ? (limit - slice) / (s * sizeof(float)) + 1 : 0;
    if (fit < rows) rows = fit;
  }
  rows -= rows % step;
  if (rows == 0) {
    return kiln_lower_refuse(l, "an elementwise operand larger than the %llu-byte "
                             "storage-buffer range whose outer slices do not fit it in "
                             "aligned blocks is not split",
                             (unsigned long long)limit);
  }
  for (uint64_t r0 = 0; r0 < full->shape[lead]; r0 += rows) {
    kiln_kernel_binary_params_t p = *full;
    p.shape[lead] = (uint32_t)(full->shape[lead] - r0 < rows ? full->shape[lead] - r0 : rows);
    p.count = (uint32_t)(p.count / full->shape[lead] * p.shape[lead]);
    kiln_emit_dispatch_desc_t d = *desc;
    d.push = &p;
    d.grid_count = p.count;
    for (int b = 0; b < 3; ++b) {
      const uint64_t shift = r0 * strides[b][lead] * sizeof(float);
      const uint64_t span = kiln_big_binary_span(p.shape, strides[b]);
      if (shift >= d.bindings[b].length) {
        return kiln_make_status(KILN_STATUS_INTERNAL, "binary split: binding %d outside", b);
      }
      d.bindings[b].offset += shift;
      d.bindings[b].length -= shift;
      if (span < d.bindings[b].length) d.bindings[b].length = span;
    }
    KILN_RETURN_IF_ERROR(kiln_emit_add_dispatch(l->program, &d));
  }
  return kiln_ok_status();
}
