// A squeeze-and-excitation block's squeeze in one dispatch (the global
// average pool and its two 1x1 convs over 1x1 images, lowered from three
// dispatches by lower_squeeze_excite.c):
//   s[n][c] = act2(b2[c] + sum_r w2[c][r] * act1(b1[r] + sum_j w1[r][j] * mean(x[n][j])))
// Workgroup w (grid ROWS: images x groups x parts) sums KILN_SE_GROUP_CHANNELS
// channels of one image over one part of their pixels, a team of
// invocations per channel, into `partials` (f32 [image][part][channel]);
// then counts itself in its image's counter. The image's last workgroup
// to count adds the parts in order 0, 1, ... (the result does not depend
// on which ends last), and runs both products through shared memory: a
// team per hidden unit (lanes along the channels), then an invocation per
// channel. The module zeroes the counters before every call (emit_module.c's
// fill); `coherent`: the last workgroup reads what the others wrote.
// Every loop is bounded by the lowering: the pixel loop by
// KILN_SE_PART_PIXELS / KILN_SE_MIN_TEAM, the parts by KILN_SE_MAX_PARTS,
// channels and hidden units by KILN_SE_MAX_CHANNELS / KILN_SE_MAX_HIDDEN
// (llvmpipe's loop cap).
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kernels_codes.h"
#include "activation.glsl"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_SE_ACTIVATION_1) const uint ACTIVATION_1 = 0;
layout(constant_id = KILN_SPEC_SE_ACTIVATION_2) const uint ACTIVATION_2 = 0;
layout(constant_id = KILN_SPEC_SE_HAS_BIAS_1) const bool HAS_BIAS_1 = false;
layout(constant_id = KILN_SPEC_SE_HAS_BIAS_2) const bool HAS_BIAS_2 = false;

layout(set = 0, binding = 0) readonly buffer InBuffer { STORAGE_T x[]; };
layout(set = 0, binding = 1) readonly buffer Weight1Buffer { STORAGE_T w1[]; };
layout(set = 0, binding = 2) readonly buffer Bias1Buffer { STORAGE_T b1[]; };
layout(set = 0, binding = 3) readonly buffer Weight2Buffer { STORAGE_T w2[]; };
layout(set = 0, binding = 4) readonly buffer Bias2Buffer { STORAGE_T b2[]; };
layout(set = 0, binding = 5) writeonly buffer OutBuffer { STORAGE_T s[]; };
// The weights' rows as vectors (8 halves or 4 floats a load) where they
// are whole vectors: the products run in one workgroup, so their loads
// must be few and in flight together (element by element, one load at a
// time, EfficientNet-B0's 1152-channel block took 31 us).
#ifdef KILN_FP16_STORAGE
layout(set = 0, binding = 1) readonly buffer Weight1Vectors { uvec4 w1v[]; };
layout(set = 0, binding = 3) readonly buffer Weight2Vectors { uvec4 w2v[]; };
const uint VEC = 8;
#define KILN_SE_VEC_T uvec4
float kiln_se_dot(uvec4 w, float v[8]) {
  const vec2 a = unpackHalf2x16(w.x), b = unpackHalf2x16(w.y);
  const vec2 c = unpackHalf2x16(w.z), d = unpackHalf2x16(w.w);
  return a.x * v[0] + a.y * v[1] + b.x * v[2] + b.y * v[3] + c.x * v[4] + c.y * v[5] +
         d.x * v[6] + d.y * v[7];
}
#else
layout(set = 0, binding = 1) readonly buffer Weight1Vectors { vec4 w1v[]; };
layout(set = 0, binding = 3) readonly buffer Weight2Vectors { vec4 w2v[]; };
const uint VEC = 4;
#define KILN_SE_VEC_T vec4
float kiln_se_dot(vec4 w, float v[8]) { return dot(w, vec4(v[0], v[1], v[2], v[3])); }
#endif
layout(set = 0, binding = 6) coherent buffer PartialsBuffer { float partials[]; };
layout(set = 0, binding = 7) coherent buffer CountersBuffer { uint counters[]; };

// Mirrors kiln_kernel_squeeze_excite_params_t.
layout(push_constant) uniform Params {
  uint images, channels, pixels, hidden;
  uint chunk, parts;
  float alpha1, beta1, alpha2, beta2;
} p;

const uint TEAMS = KILN_SE_GROUP_CHANNELS;
// Invocations per team (the config keeps the workgroup a multiple of TEAMS
// and of a power of two).
const uint TEAM = gl_WorkGroupSize.x / TEAMS;

shared float kiln_team_sums[gl_WorkGroupSize.x];
shared float kiln_pooled[KILN_SE_MAX_CHANNELS];
shared float kiln_hidden[KILN_SE_MAX_HIDDEN];
shared bool kiln_last;

// Each team's sum of v, returned to the team. Every invocation calls it.
float kiln_team_reduce(float v) {
  const uint tid = gl_LocalInvocationID.x, lane = tid % TEAM;
  kiln_team_sums[tid] = v;
  barrier();
  for (uint half_team = TEAM / 2; half_team > 0; half_team >>= 1) {
    if (lane < half_team) kiln_team_sums[tid] += kiln_team_sums[tid + half_team];
    barrier();
  }
  const float sum = kiln_team_sums[tid - lane];
  barrier();
  return sum;
}

void main() {
  const uint tid = gl_LocalInvocationID.x, lane = tid % TEAM, team = tid / TEAM;
  // Zero counts (a malformed module) read as 1 where they divide.
  const uint parts = max(p.parts, 1u);
  const uint groups = (p.channels + TEAMS - 1) / TEAMS;
  const uint per_image = max(groups * parts, 1u);
  const uint image = gl_WorkGroupID.x / per_image;
  const uint rest = gl_WorkGroupID.x - image * per_image;
  const uint group = rest / parts, part = rest - group * parts;
  if (image >= p.images) return;  // uniform: a grid larger than the work

  // Squeeze: this part's pixels of the group's channels.
  const uint c = group * TEAMS + team;
  const uint begin = part * p.chunk, end = min(begin + p.chunk, p.pixels);
  float sum = 0.0;
  if (c < p.channels) {
    const uint base = (image * p.channels + c) * p.pixels;
    for (uint i = begin + lane; i < end; i += TEAM) sum += LOAD(x[base + i]);
  }
  sum = kiln_team_reduce(sum);
  if (lane == 0 && c < p.channels) partials[(image * p.parts + part) * p.channels + c] = sum;
  memoryBarrierBuffer();  // this workgroup's partials before its count
  barrier();
  if (tid == 0) kiln_last = atomicAdd(counters[image], 1u) == per_image - 1;
  barrier();
  if (!kiln_last) return;
  memoryBarrierBuffer();  // the other workgroups' partials after their counts

  // The image's mean per channel, the parts added in order (four loads
  // in flight).
  const uint channels = min(p.channels, KILN_SE_MAX_CHANNELS);
  for (uint j = tid; j < channels; j += gl_WorkGroupSize.x) {
    const uint at = image * p.parts * p.channels + j;
    float total = 0.0;
    uint q = 0;
    for (; q + 4 <= p.parts; q += 4) {
      const float a = partials[at + q * p.channels], b = partials[at + (q + 1) * p.channels];
      const float c2 = partials[at + (q + 2) * p.channels], d = partials[at + (q + 3) * p.channels];
      total += a;
      total += b;
      total += c2;
      total += d;
    }
    for (; q < p.parts; ++q) total += partials[at + q * p.channels];
    kiln_pooled[j] = total / float(max(p.pixels, 1u));
  }
  barrier();
  // Excite, first product: team t takes hidden units t, t + TEAMS, ...;
  // its lanes take a row's vectors, four in flight.
  const uint hidden = min(p.hidden, KILN_SE_MAX_HIDDEN);
  const uint rounds = (hidden + TEAMS - 1) / TEAMS;
  const bool rows1 = p.channels % VEC == 0, rows2 = p.hidden % VEC == 0;
  for (uint k = 0; k < rounds; ++k) {
    const uint r = k * TEAMS + team;
    float dot = 0.0;
    if (r < hidden && rows1) {
      const uint vectors = channels / VEC, row = r * vectors;
      for (uint v = lane; v < vectors; v += 4 * TEAM) {
        KILN_SE_VEC_T w[4];
        [[unroll]] for (uint u = 0; u < 4; ++u) {
          const uint vu = v + u * TEAM;
          w[u] = w1v[row + min(vu, vectors - 1)];
        }
        [[unroll]] for (uint u = 0; u < 4; ++u) {
          const uint vu = v + u * TEAM;
          float x8[8];
          [[unroll]] for (uint e = 0; e < 8; ++e) {
            x8[e] = e < VEC && vu < vectors ? kiln_pooled[vu * VEC + e] : 0.0;
          }
          dot += vu < vectors ? kiln_se_dot(w[u], x8) : 0.0;
        }
      }
    } else if (r < hidden) {
      for (uint j = lane; j < channels; j += TEAM) dot += LOAD(w1[r * p.channels + j]) * kiln_pooled[j];
    }
    dot = kiln_team_reduce(dot);
    if (lane == 0 && r < hidden) {
      kiln_hidden[r] = kiln_activate(ACTIVATION_1, dot + (HAS_BIAS_1 ? LOAD(b1[r]) : 0.0),
                                     p.alpha1, p.beta1);
    }
  }
  barrier();
  // Second product: an invocation per channel, its row's vectors four in
  // flight.
  for (uint j = tid; j < channels; j += gl_WorkGroupSize.x) {
    float dot = 0.0;
    if (rows2) {
      const uint vectors = hidden / VEC, row = j * vectors;
      for (uint v = 0; v < vectors; v += 4) {
        KILN_SE_VEC_T w[4];
        [[unroll]] for (uint u = 0; u < 4; ++u) w[u] = w2v[row + min(v + u, vectors - 1)];
        [[unroll]] for (uint u = 0; u < 4; ++u) {
          float h8[8];
          [[unroll]] for (uint e = 0; e < 8; ++e) {
            h8[e] = e < VEC && v + u < vectors ? kiln_hidden[(v + u) * VEC + e] : 0.0;
          }
          dot += v + u < vectors ? kiln_se_dot(w[u], h8) : 0.0;
        }
      }
    } else {
      for (uint r = 0; r < hidden; ++r) dot += LOAD(w2[j * p.hidden + r]) * kiln_hidden[r];
    }
    s[image * p.channels + j] =
        STORE(kiln_activate(ACTIVATION_2, dot + (HAS_BIAS_2 ? LOAD(b2[j]) : 0.0), p.alpha2,
                            p.beta2));
  }
}
