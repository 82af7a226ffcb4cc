// LayerNorm of a split-K product's rows, summed from its parts
// (norm_parts, issue 16): x = sum of the parts + bias + residual, the
// product's epilogue without activation or scale, then y = (x - mean) /
// sqrt(var + epsilon) * scale + beta over each row, as norm.comp. It
// also stores x (the product's output, which other nodes may read). It
// replaces the gemv that summed the parts and the LayerNorm after it: one
// dispatch instead of two (BERT-base: 24 a call).
// Bindings: 0 the parts (part s of element i at s * part_stride + i), 1 the
// weights holding the product's bias and the norm's scale and beta
// (offsets in the push constants), 2 residual (rows x size), 3 y, 4 x.
// One workgroup per row, workgroup-stride; grid: (min(rows, 65535), 1, 1).
// The row's sums are staged in shared memory (rows of up to
// KILN_NORM_PARTS_ROW_CAP values; the lowering keeps longer rows apart):
// summing the parts again in each of the norm's three passes ran 9.3 us a
// row block of BERT-base on an H100, no faster than the two dispatches.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kernels_codes.h"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
// After the layout: the helper sizes its scratch by gl_WorkGroupSize.
#include "workgroup_reduce.glsl"
layout(constant_id = KILN_SPEC_NORM_PARTS_BIAS) const bool HAS_BIAS = false;
layout(constant_id = KILN_SPEC_NORM_PARTS_RESIDUAL) const bool HAS_RESIDUAL = false;
// The number of parts, 1..KILN_NORM_PARTS_MAX_COUNT, or 0: p.part_count's.
layout(constant_id = KILN_SPEC_NORM_PARTS_COUNT) const uint PART_COUNT = 0;

layout(set = 0, binding = 0) readonly buffer PartsBuffer { STORAGE_T parts[]; };
layout(set = 0, binding = 1) readonly buffer ParamsBuffer { STORAGE_T params[]; };
layout(set = 0, binding = 2) readonly buffer ResidualBuffer { STORAGE_T residual[]; };
layout(set = 0, binding = 3) writeonly buffer OutBuffer { STORAGE_T y[]; };
layout(set = 0, binding = 4) writeonly buffer SumBuffer { STORAGE_T x_out[]; };

// The row's sums (fp32 whatever the storage).
shared float kiln_row[KILN_NORM_PARTS_ROW_CAP];

// Mirrors kiln_kernel_norm_parts_params_t.
layout(push_constant) uniform Params {
  uint rows, size, part_count, part_stride;
  uint bias_at, scale_at, beta_at;
  float epsilon;
} p;

// The parts in order, then bias, then residual. With the part count a
// spec constant (the lowering's) every part's load is issued before the
// first add, and none past the count; 0 (a runtime count) issues them 4 at
// a time. On an H100 a loop of 4 at a time left BERT-base f16's norms (3
// and 12 parts) at 8 us a dispatch, and 16 guarded loads (the driver loads
// all 16: robust access makes them safe to speculate) made ViT-B/16 fp32's
// (3 and 8 parts) 6.6 -> 8.2 us.
float kiln_x(uint row, uint r) {
  const uint i = row * p.size + r;
  const float bias = HAS_BIAS ? LOAD(params[p.bias_at + r]) : 0.0;
  const float res = HAS_RESIDUAL ? LOAD(residual[i]) : 0.0;
  float v = 0.0;
  if (PART_COUNT != 0) {
    float t[KILN_NORM_PARTS_MAX_COUNT];
    [[unroll]] for (uint j = 0; j < KILN_NORM_PARTS_MAX_COUNT; ++j) {
      if (j < PART_COUNT) t[j] = LOAD(parts[j * p.part_stride + i]);
    }
    [[unroll]] for (uint j = 0; j < KILN_NORM_PARTS_MAX_COUNT; ++j) {
      if (j < PART_COUNT) v += t[j];
    }
  } else {
    uint s = 0;
    for (; s + 4 <= p.part_count; s += 4) {
      const float a = LOAD(parts[s * p.part_stride + i]);
      const float b = LOAD(parts[(s + 1) * p.part_stride + i]);
      const float c = LOAD(parts[(s + 2) * p.part_stride + i]);
      const float d = LOAD(parts[(s + 3) * p.part_stride + i]);
      v += a;
      v += b;
      v += c;
      v += d;
    }
    for (; s < p.part_count; ++s) v += LOAD(parts[s * p.part_stride + i]);
  }
  // A spec count that is not the push constants' (a malformed module)
  // writes NaN, never a partial sum, and loops over none of a bogus count.
  if (PART_COUNT != 0 && PART_COUNT != p.part_count) v = uintBitsToFloat(0x7fc00000u);
  if (HAS_BIAS) v += bias;
  if (HAS_RESIDUAL) v += res;
  return v;
}

void main() {
  // The scale and beta of each invocation's first value, loaded before the
  // reductions (waited for after them, they were a round trip of their own).
  const uint r0 = gl_LocalInvocationID.x;
  const float scale0 = r0 < p.size ? LOAD(params[p.scale_at + r0]) : 0.0;
  const float beta0 = r0 < p.size ? LOAD(params[p.beta_at + r0]) : 0.0;
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    const uint base = row * p.size;
    for (uint r = gl_LocalInvocationID.x; r < p.size; r += gl_WorkGroupSize.x) {
      const float v = kiln_x(row, r);
      kiln_row[r] = v;
      x_out[base + r] = STORE(v);
    }
    barrier();
    // Shifted by the row's first element, as norm.comp (exact deviations).
    const float shift = kiln_row[0];
    float s = 0.0;
    for (uint r = gl_LocalInvocationID.x; r < p.size; r += gl_WorkGroupSize.x) {
      s += kiln_row[r] - shift;
    }
    const float mean = kiln_workgroup_reduce(KILN_COMBINE_SUM, s) / float(p.size);
    float q = 0.0;
    for (uint r = gl_LocalInvocationID.x; r < p.size; r += gl_WorkGroupSize.x) {
      const float d = (kiln_row[r] - shift) - mean;
      q += d * d;
    }
    const float var = kiln_workgroup_reduce(KILN_COMBINE_SUM, q) / float(p.size);
    const float inv_std = inversesqrt(var + p.epsilon);
    for (uint r = gl_LocalInvocationID.x; r < p.size; r += gl_WorkGroupSize.x) {
      float scale = scale0, beta = beta0;
      if (r != r0) {
        scale = LOAD(params[p.scale_at + r]);
        beta = LOAD(params[p.beta_at + r]);
      }
      y[base + r] = STORE(((kiln_row[r] - shift) - mean) * inv_std * scale + beta);
    }
    barrier();  // the next row's sums overwrite kiln_row
  }
}
