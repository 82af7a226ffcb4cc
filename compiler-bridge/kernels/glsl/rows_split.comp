// Softmax / LogSoftmax / LayerNorm / InstanceNorm over rows too long for one
// workgroup's loops (each would pass KILN_KERNEL_MAX_LOOP_ITERATIONS): the
// row ([outer, size, inner] view, row = (o, i)) is cut into chunks of
// `chunk` values and normalized in three dispatches (PHASE):
//   partial: per (row, chunk) statistics into stats[3 * item]:
//     softmax (max m, sum of exp(x - m), -), norm (count, mean, M2) of
//     x - shift with shift = the row's first value (as norm.comp);
//   combine: per row, the chunk statistics merged (softmax: rescaled by
//     exp(m - M); norm: Chan's parallel-axis merge) into
//     stats[final + 2 * row] = (M, S) or (mean, 1/sqrt(var + epsilon));
//   apply: per (row, chunk) the outputs.
// NaN and +-inf give what the fused kernels give (a NaN row). Bindings: 0 x,
// 1 scale, 2 bias (norms only), 3 stats (read-write), 4 y. One workgroup
// per item, workgroup-stride; grid: (min(items, 65535), 1, 1).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
// After the layout: the helper sizes its scratch by gl_WorkGroupSize.
#include "workgroup_reduce.glsl"
layout(constant_id = KILN_SPEC_ROWS_KIND) const uint KIND = 0;
layout(constant_id = KILN_SPEC_ROWS_PHASE) const uint PHASE = 0;

layout(set = 0, binding = 0) readonly buffer InBuffer { STORAGE_T x[]; };
layout(set = 0, binding = 1) readonly buffer ScaleBuffer { STORAGE_T scale[]; };
layout(set = 0, binding = 2) readonly buffer BiasBuffer { STORAGE_T bias[]; };
layout(set = 0, binding = 3) buffer StatsBuffer { float stats[]; };
layout(set = 0, binding = 4) writeonly buffer OutBuffer { STORAGE_T y[]; };

// Mirrors kiln_kernel_rows_split_params_t.
layout(push_constant) uniform Params {
  uint outer, size, inner, chunk, channels;
  float epsilon;
} p;

const bool SOFTMAX = KIND == KILN_ROWS_SOFTMAX || KIND == KILN_ROWS_LOG_SOFTMAX;
#define NEG_INF uintBitsToFloat(0xff800000u)

void partial(uint row, uint base, uint begin, uint end, uint item) {
  const uint tid = gl_LocalInvocationID.x;
  if (SOFTMAX) {
    float m = NEG_INF;
    for (uint r = begin + tid; r < end; r += gl_WorkGroupSize.x) {
      m = kiln_max_nan(m, LOAD(x[base + r * p.inner]));
    }
    m = kiln_workgroup_reduce(KILN_COMBINE_MAX, m);
    float s = 0.0;
    // An all -inf chunk adds nothing (exp(-inf - -inf) would be NaN).
    if (m != NEG_INF) {
      for (uint r = begin + tid; r < end; r += gl_WorkGroupSize.x) {
        s += exp(LOAD(x[base + r * p.inner]) - m);
      }
    }
    s = kiln_workgroup_reduce(KILN_COMBINE_SUM, s);
    if (tid == 0) {
      stats[3 * item] = m;
      stats[3 * item + 1] = s;
    }
  } else {
    float shift = LOAD(x[base]);
    float n = float(end - begin);
    float s = 0.0;
    for (uint r = begin + tid; r < end; r += gl_WorkGroupSize.x) s += LOAD(x[base + r]) - shift;
    float mean = kiln_workgroup_reduce(KILN_COMBINE_SUM, s) / n;
    float q = 0.0;
    for (uint r = begin + tid; r < end; r += gl_WorkGroupSize.x) {
      float d = (LOAD(x[base + r]) - shift) - mean;
      q += d * d;
    }
    q = kiln_workgroup_reduce(KILN_COMBINE_SUM, q);
    if (tid == 0) {
      stats[3 * item] = n;
      stats[3 * item + 1] = mean;
      stats[3 * item + 2] = q;
    }
  }
}

void combine(uint row, uint chunks, uint final_at) {
  const uint tid = gl_LocalInvocationID.x;
  const uint first = row * chunks;  // items of one row are consecutive
  if (SOFTMAX) {
    float m = NEG_INF;
    for (uint c = tid; c < chunks; c += gl_WorkGroupSize.x) {
      m = kiln_max_nan(m, stats[3 * (first + c)]);
    }
    m = kiln_workgroup_reduce(KILN_COMBINE_MAX, m);
    float s = 0.0;
    for (uint c = tid; c < chunks; c += gl_WorkGroupSize.x) {
      float part = stats[3 * (first + c) + 1];
      if (part != 0.0) s += part * exp(stats[3 * (first + c)] - m);
    }
    s = kiln_workgroup_reduce(KILN_COMBINE_SUM, s);
    if (tid == 0) {
      stats[final_at + 2 * row] = m;
      stats[final_at + 2 * row + 1] = s;
    }
  } else {
    // Chan et al.: M2 = sum M2_c + sum n_c (mean_c - mean)^2.
    float weighted = 0.0;
    for (uint c = tid; c < chunks; c += gl_WorkGroupSize.x) {
      weighted += stats[3 * (first + c)] * stats[3 * (first + c) + 1];
    }
    float mean = kiln_workgroup_reduce(KILN_COMBINE_SUM, weighted) / float(p.size);
    float q = 0.0;
    for (uint c = tid; c < chunks; c += gl_WorkGroupSize.x) {
      float d = stats[3 * (first + c) + 1] - mean;
      q += stats[3 * (first + c) + 2] + stats[3 * (first + c)] * d * d;
    }
    float var = kiln_workgroup_reduce(KILN_COMBINE_SUM, q) / float(p.size);
    if (tid == 0) {
      stats[final_at + 2 * row] = mean;
      stats[final_at + 2 * row + 1] = inversesqrt(var + p.epsilon);
    }
  }
}

void apply(uint row, uint base, uint begin, uint end, uint final_at) {
  float a = stats[final_at + 2 * row], b = stats[final_at + 2 * row + 1];
  if (SOFTMAX) {
    float log_s = log(b), inv_s = 1.0 / b;
    for (uint r = begin + gl_LocalInvocationID.x; r < end; r += gl_WorkGroupSize.x) {
      float d = LOAD(x[base + r * p.inner]) - a;
      y[base + r * p.inner] = STORE((KIND == KILN_ROWS_LOG_SOFTMAX) ? d - log_s : exp(d) * inv_s);
    }
  } else {
    float shift = LOAD(x[base]);
    for (uint r = begin + gl_LocalInvocationID.x; r < end; r += gl_WorkGroupSize.x) {
      uint k = (KIND == KILN_ROWS_INSTANCE_NORM) ? row % p.channels : r;
      y[base + r] = STORE(((LOAD(x[base + r]) - shift) - a) * b * LOAD(scale[k]) + LOAD(bias[k]));
    }
  }
}

void main() {
  const uint chunks = (p.size + p.chunk - 1) / p.chunk;
  const uint rows = p.outer * p.inner;
  const uint final_at = 3 * rows * chunks;
  const uint items = PHASE == KILN_ROWS_PHASE_COMBINE ? rows : rows * chunks;
  for (uint item = gl_WorkGroupID.x; item < items; item += gl_NumWorkGroups.x) {
    if (PHASE == KILN_ROWS_PHASE_COMBINE) {
      combine(item, chunks, final_at);
      continue;
    }
    // Items are (o, i, c) with c fastest, so a row's chunks are consecutive.
    uint c = item % chunks, row = item / chunks;
    uint o = row / p.inner, i = row % p.inner;
    uint base = o * p.size * p.inner + i;
    uint begin = c * p.chunk, end = min(p.size, begin + p.chunk);
    if (PHASE == KILN_ROWS_PHASE_PARTIAL) {
      partial(row, base, begin, end, item);
    } else {
      apply(row, base, begin, end, final_at);
    }
  }
}
