// The time loop of ONNX LSTM (gates iofc), GRU (zrh) and RNN: steps
// [step_begin, step_end) of one (direction, batch) row per workgroup. The
// input projection X.W^T + Wb of every step is precomputed (a gemm, binding
// 0); each step adds h_{t-1}.R^T + Rb. h lives in shared memory (two
// buffers: read one, write the other, one barrier per step), c and GRU's z
// and r*h beside it; each invocation owns hidden units j = lid, lid + WG...
// Between dispatches (time chunks, sized by the lowering to llvmpipe's loop
// budget, kernels_loops.h) h and c are carried in `state`.
// With lengths, steps past a row's length write zeros to Y and leave the
// state alone; a backwards row starts at t = length - 1 (ONNX semantics).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
#include "activation.glsl"

layout(constant_id = KILN_SPEC_RNN_KIND) const uint KIND = KILN_RNN_CELL_LSTM;
layout(constant_id = KILN_SPEC_RNN_LBR) const uint LBR = 0;
layout(constant_id = KILN_SPEC_RNN_ACT_F) const uint ACT_F = KILN_ACT_SIGMOID;
layout(constant_id = KILN_SPEC_RNN_ACT_G) const uint ACT_G = KILN_ACT_TANH;
layout(constant_id = KILN_SPEC_RNN_ACT_H) const uint ACT_H = KILN_ACT_TANH;

layout(set = 0, binding = 0) readonly buffer GatesBuffer { float gx[]; };
// vec4s: each lane reads its gate rows 4 k at a time (a quarter of the
// loads of scalar reads on llvmpipe, which gathers per lane).
layout(set = 0, binding = 1) readonly buffer ParamsBuffer { vec4 prm4[]; };
layout(set = 0, binding = 2) buffer StateBuffer { float state[]; };
layout(set = 0, binding = 3) buffer YBuffer { float y[]; };

// Mirrors kiln_kernel_recurrent_params_t.
layout(push_constant) uniform Params {
  uint batch, hidden, hidden4, seq, step_begin, step_end, flags;
  uint gx_d, gx_t, gx_b;
  uint r_offset, rb_offset, lens_offset;
  uint state_d, state_b, c_offset;
  uint y_d, y_t, y_b;
  float clip;
  float alpha[3], beta[3];
  uint p_offset;
} p;

#define MAXH KILN_RNN_MAX_HIDDEN
// [0, MAXH) and [MAXH, 2 MAXH): h buffers; [2 MAXH, 3 MAXH): c (LSTM) or z
// (GRU); [3 MAXH, 4 MAXH): r * h_{t-1} (GRU, reset before the product).
shared float sh[4 * MAXH];

float prm(uint i) { return prm4[i >> 2][i & 3u]; }

float kiln_rnn_clip(float x) {
  return (p.flags & KILN_RNN_FLAG_CLIP) != 0 ? kiln_clamp(x, -p.clip, p.clip) : x;
}
float kiln_rnn_f(float x) { return kiln_activate(ACT_F, kiln_rnn_clip(x), p.alpha[0], p.beta[0]); }
float kiln_rnn_g(float x) { return kiln_activate(ACT_G, kiln_rnn_clip(x), p.alpha[1], p.beta[1]); }
float kiln_rnn_h(float x) { return kiln_activate(ACT_H, x, p.alpha[2], p.beta[2]); }

// sum_k v[k] * R[row][k] for rows col + n * hidden, gates n < COUNT, over
// the padded hidden4 (R's padding columns and v's padding are zero); R rows
// of one direction start at float `rt`, hidden4 floats each.
vec4 kiln_rnn_dot(uint v, uint rt, uint col, uint count) {
  vec4 acc = vec4(0.0);
  const uint k4 = p.hidden4 / 4;
  const uint r0 = (rt + col * p.hidden4) / 4, step = p.hidden * k4;
  for (uint k = 0; k < k4; ++k) {
    vec4 h = vec4(sh[v + 4 * k], sh[v + 4 * k + 1], sh[v + 4 * k + 2], sh[v + 4 * k + 3]);
    acc.x += dot(prm4[r0 + k], h);
    if (count > 1) acc.y += dot(prm4[r0 + step + k], h);
    if (count > 2) acc.z += dot(prm4[r0 + 2 * step + k], h);
    if (count > 3) acc.w += dot(prm4[r0 + 3 * step + k], h);
  }
  return acc;
}

void main() {
  const uint row = gl_WorkGroupID.x;
  const uint d = row / p.batch, b = row % p.batch;
  const uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
  const uint H = p.hidden;
  const uint gates = KIND == KILN_RNN_CELL_LSTM ? 4u : KIND == KILN_RNN_CELL_GRU ? 3u : 1u;
  const uint gh = gates * H;
  const uint rt = p.r_offset + d * p.hidden4 * gh;
  const uint rb = p.rb_offset + d * gh;
  const uint s0 = d * p.state_d + b * p.state_b;
  // Run-time lengths arrive as floats; clamped so no step leaves the sequence.
  const float lens_f = prm(p.lens_offset + b);
  const uint len = (p.flags & KILN_RNN_FLAG_LENS) == 0 ? p.seq
                   : (p.flags & KILN_RNN_FLAG_LENS_FLOAT) != 0
                       ? (isnan(lens_f) ? 0u : uint(kiln_clamp(lens_f, 0.0, float(p.seq))))
                       : floatBitsToUint(lens_f);
  const bool backwards = d == 1 || (p.flags & KILN_RNN_FLAG_REVERSE) != 0;
  const bool has_y = (p.flags & KILN_RNN_FLAG_HAS_Y) != 0;

  // Both h buffers and r*h get zero padding up to hidden4 (the dot product
  // reads it); buffer 0 holds h at the chunk's start.
  for (uint j = lid; j < p.hidden4; j += wg) {
    bool live = j < H;
    sh[j] = live && (p.flags & KILN_RNN_FLAG_ZERO_H) == 0 ? state[s0 + j] : 0.0;
    sh[MAXH + j] = 0.0;
    sh[3 * MAXH + j] = 0.0;
    if (KIND == KILN_RNN_CELL_LSTM) {
      sh[2 * MAXH + j] =
          live && (p.flags & KILN_RNN_FLAG_ZERO_C) == 0 ? state[p.c_offset + s0 + j] : 0.0;
    }
  }
  barrier();
  uint cur = 0;
  for (uint step = p.step_begin; step < p.step_end; ++step) {
    if (step >= len) {
      // Past this row's length (uniform in the workgroup): Y is zero.
      if (has_y) {
        for (uint j = lid; j < H; j += wg) y[d * p.y_d + step * p.y_t + b * p.y_b + j] = 0.0;
      }
      continue;
    }
    const uint t = backwards ? len - 1 - step : step;
    const uint xg = d * p.gx_d + t * p.gx_t + b * p.gx_b;
    const uint yo = d * p.y_d + t * p.y_t + b * p.y_b;
    const uint hin = cur * MAXH, hout = (1 - cur) * MAXH;
    for (uint j = lid; j < H; j += wg) {
      vec4 acc = kiln_rnn_dot(hin, rt, j, KIND == KILN_RNN_CELL_GRU && LBR == 0 ? 2u : gates);
      float hn;
      if (KIND == KILN_RNN_CELL_LSTM) {
        // Peepholes (p_offset is 0 without them: reads stay in the blob).
        const bool peep = (p.flags & KILN_RNN_FLAG_PEEPHOLE) != 0;
        const uint po = p.p_offset + d * 3 * H + j;
        float c_prev = sh[2 * MAXH + j];
        float i = kiln_rnn_f(gx[xg + j] + acc.x + prm(rb + j) + (peep ? prm(po) * c_prev : 0.0));
        float f = (p.flags & KILN_RNN_FLAG_INPUT_FORGET) != 0
                      ? 1.0 - i
                      : kiln_rnn_f(gx[xg + 2 * H + j] + acc.z + prm(rb + 2 * H + j) +
                                   (peep ? prm(po + 2 * H) * c_prev : 0.0));
        float cc = kiln_rnn_g(gx[xg + 3 * H + j] + acc.w + prm(rb + 3 * H + j));
        float c = f * c_prev + i * cc;
        sh[2 * MAXH + j] = c;
        float o = kiln_rnn_f(gx[xg + H + j] + acc.y + prm(rb + H + j) +
                             (peep ? prm(po + H) * c : 0.0));
        hn = o * kiln_rnn_h(c);
      } else if (KIND == KILN_RNN_CELL_GRU) {
        float z = kiln_rnn_f(gx[xg + j] + acc.x + prm(rb + j));
        float r = kiln_rnn_f(gx[xg + H + j] + acc.y + prm(rb + H + j));
        if (LBR != 0) {
          float n = kiln_rnn_g(gx[xg + 2 * H + j] + r * (acc.z + prm(rb + 2 * H + j)));
          hn = (1.0 - z) * n + z * sh[hin + j];
        } else {
          sh[2 * MAXH + j] = z;
          sh[3 * MAXH + j] = r * sh[hin + j];
          hn = 0.0;
        }
      } else {
        hn = kiln_rnn_f(gx[xg + j] + acc.x + prm(rb + j));
      }
      if (KIND != KILN_RNN_CELL_GRU || LBR != 0) {
        sh[hout + j] = hn;
        if (has_y) y[yo + j] = hn;
      }
    }
    if (KIND == KILN_RNN_CELL_GRU && LBR == 0) {
      // n = g(x.Wn + Wbn + (r * h).Rn^T + Rbn) needs every unit's r * h.
      barrier();
      for (uint j = lid; j < H; j += wg) {
        float acc = kiln_rnn_dot(3 * MAXH, rt, 2 * H + j, 1u).x;
        float n = kiln_rnn_g(gx[xg + 2 * H + j] + acc + prm(rb + 2 * H + j));
        float z = sh[2 * MAXH + j];
        float hn = (1.0 - z) * n + z * sh[hin + j];
        sh[hout + j] = hn;
        if (has_y) y[yo + j] = hn;
      }
    }
    barrier();
    cur = 1 - cur;
  }
  for (uint j = lid; j < H; j += wg) {
    state[s0 + j] = sh[cur * MAXH + j];
    if (KIND == KILN_RNN_CELL_LSTM) state[p.c_offset + s0 + j] = sh[2 * MAXH + j];
  }
}
