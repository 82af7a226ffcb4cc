#version 450
// C[M,N] = A[M,K] * B[K,N] (+ bias[N], then ReLU when flags say so), row-major.
// Each workgroup computes a TILE x TILE block of C, staging A and B tiles in
// shared memory; TILE comes from a specialization constant so each target
// variant picks its own.
layout(constant_id = 0) const uint TILE = 16;
layout(local_size_x_id = 0, local_size_y_id = 0) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) readonly buffer Bias { float bias[]; };
layout(set = 0, binding = 3) writeonly buffer C { float c[]; };
layout(push_constant) uniform Params {
  uint m, n, k;
  uint flags;  // bit 0: add bias, bit 1: ReLU
} params;

shared float tile_a[TILE][TILE];
shared float tile_b[TILE][TILE];

void main() {
  uint row = gl_GlobalInvocationID.y;
  uint col = gl_GlobalInvocationID.x;
  uint ly = gl_LocalInvocationID.y;
  uint lx = gl_LocalInvocationID.x;
  float sum = 0.0;
  for (uint t = 0; t < params.k; t += TILE) {
    uint ak = t + lx;
    uint bk = t + ly;
    tile_a[ly][lx] = (row < params.m && ak < params.k) ? a[row * params.k + ak] : 0.0;
    tile_b[ly][lx] = (bk < params.k && col < params.n) ? b[bk * params.n + col] : 0.0;
    barrier();
    for (uint i = 0; i < TILE; ++i) sum += tile_a[ly][i] * tile_b[i][lx];
    barrier();
  }
  if (row < params.m && col < params.n) {
    if ((params.flags & 1u) != 0u) sum += bias[col];
    if ((params.flags & 2u) != 0u) sum = max(sum, 0.0);
    c[row * params.n + col] = sum;
  }
}
