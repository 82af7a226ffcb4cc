// kiln-kernels-bench --coopmat's probe of the driver's cooperative-matrix
// rate (KILN_COOPMAT_SPV_DIR/peak*.spv, built by coopmat_probe_spv.sh): 4
// subgroups, each 8 * p.k independent 16x16x16 f16 -> f32 multiply-adds
// on fragments in registers (no memory in the loop), or with
// KILN_PEAK_LOADS TA A and TB B fragments loaded from shared memory per
// TA * TB of them (gemm_coopmat's load-to-MMA ratio for that tiling).
// gemm_coopmat's ABI, so the HAL checks and clamps it as the kernel; the
// sums land in C so nothing is dead.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_control_flow_attributes : require
#include "kernels_codes.h"

layout(local_size_x = 128, local_size_y = 1, local_size_z = 1) in;
// All five of gemm's bindings are used (the HAL matches the declared
// layout to what the SPIR-V uses); the inputs only seed the fragments.
layout(set = 0, binding = 0) readonly buffer ABuffer { float a_in[]; };
layout(set = 0, binding = 1) readonly buffer BBuffer { float b_in[]; };
layout(set = 0, binding = 2) readonly buffer BiasBuffer { float bias_in[]; };
layout(set = 0, binding = 3) readonly buffer ResidualBuffer { float residual_in[]; };
layout(set = 0, binding = 4) writeonly buffer OutputBuffer { float kiln_out[]; };
#include "gemm_params.glsl"

shared uvec4 kiln_sh[KILN_COOPMAT_SHARED_VEC4];

// Fragments per subgroup: TA of A by TB of B, TA * TB accumulators
// (coopmat_probe_spv.sh builds 2x4, gemm_coopmat's medium blocks' 2x2 and
// its big blocks' 4x4). Every build does 8 multiply-adds per subgroup per
// p.k, so the bench's rate formula holds for all.
#ifndef KILN_PEAK_TA
#define KILN_PEAK_TA 2
#define KILN_PEAK_TB 4
#endif
// Each subgroup stores its accumulators as 16 f16 matrices of 32 uvec4s.
#if KILN_PEAK_TA * KILN_PEAK_TB > 16
#error "coopmat_peak.comp stores at most 16 accumulators per subgroup"
#endif
const uint TA = KILN_PEAK_TA, TB = KILN_PEAK_TB;

void main() {
  const uint warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
  for (uint i = gl_LocalInvocationID.x; i < 1024; i += 128) {
    const float seed = a_in[0] + b_in[0] + bias_in[0] + residual_in[0];  // zeros
    kiln_sh[i] = uvec4(packHalf2x16(vec2(float(i & 7) / 1024.0 + seed, 1.0 / 512.0)));
  }
  barrier();
  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> a[TA], b[TB];
  [[unroll]] for (uint i = 0; i < TA; ++i) coopMatLoadNV(a[i], kiln_sh, i * 64, 2, false);
  [[unroll]] for (uint j = 0; j < TB; ++j) coopMatLoadNV(b[j], kiln_sh, 256 + j * 64, 4, false);
  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc[TA * TB];
  [[unroll]] for (uint i = 0; i < TA * TB; ++i) {
    acc[i] = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
  }
  const uint rounds = p.k * 8 / (TA * TB);
  for (uint t = 0; t < rounds; ++t) {
#ifdef KILN_PEAK_LOADS
    const uint at = (t & 7) * 8 + warp * 4;
    [[unroll]] for (uint i = 0; i < TA; ++i) {
      coopMatLoadNV(a[i], kiln_sh, at + i * 16 * 9, 9, false);
    }
    [[unroll]] for (uint j = 0; j < TB; ++j) {
      coopMatLoadNV(b[j], kiln_sh, 400 + at + j * 2, 17, false);
    }
#endif
    [[unroll]] for (uint i = 0; i < TA; ++i) {
      [[unroll]] for (uint j = 0; j < TB; ++j) {
        acc[i * TB + j] = coopMatMulAddNV(a[i], b[j], acc[i * TB + j]);
      }
    }
  }
  // Every accumulator stored (as f16, so that all fit), so every
  // multiply-add counts.
  barrier();
  [[unroll]] for (uint i = 0; i < TA * TB; ++i) {
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> h = fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>(acc[i]);
    coopMatStoreNV(h, kiln_sh, (warp * 16 + i) * 32, 2, false);
  }
  barrier();
  if (lane < 8) {
    kiln_out[(gl_WorkGroupID.x * 4 + warp) * 8 + lane] =
        uintBitsToFloat(kiln_sh[(warp * 16 + lane) * 32].x);
  }
}
