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
#include "kernels_codes.h"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
// After the layout: the helper sizes its scratch by gl_WorkGroupSize.
#include "workgroup_reduce.glsl"
layout(constant_id = KILN_SPEC_NORM_PARTS_BIAS) const bool HAS_BIAS = false;
layout(constant_id = KILN_SPEC_NORM_PARTS_RESIDUAL) const bool HAS_RESIDUAL = false;

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

// The parts in order, their loads issued 4 at a time (a loop of one load
// and one add waits out an L2 round trip per part).
float kiln_x(uint row, uint r) {
  const uint i = row * p.size + r;
  float v = 0.0;
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
  if (HAS_BIAS) v += LOAD(params[p.bias_at + r]);
  if (HAS_RESIDUAL) v += LOAD(residual[i]);
  return v;
}

void main() {
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
      y[base + r] = STORE(((kiln_row[r] - shift) - mean) * inv_std *
                              LOAD(params[p.scale_at + r]) + LOAD(params[p.beta_at + r]));
    }
    barrier();  // the next row's sums overwrite kiln_row
  }
}
