#version 450
// Row-wise softmax of a [rows, cols] matrix: one workgroup per row, a
// shared-memory tree reduction for the max and the sum (numerically stable).
layout(constant_id = 0) const uint WORKGROUP = 64;
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer In { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Out { float y[]; };
layout(push_constant) uniform Params { uint rows, cols; } params;

shared float scratch[WORKGROUP];

void main() {
  uint row = gl_WorkGroupID.x;
  uint lane = gl_LocalInvocationID.x;
  uint base = row * params.cols;
  float local_max = -3.402823466e38;
  for (uint i = lane; i < params.cols; i += WORKGROUP) local_max = max(local_max, x[base + i]);
  scratch[lane] = local_max;
  barrier();
  for (uint s = WORKGROUP / 2; s > 0; s >>= 1) {
    if (lane < s) scratch[lane] = max(scratch[lane], scratch[lane + s]);
    barrier();
  }
  float row_max = scratch[0];
  barrier();
  float local_sum = 0.0;
  for (uint i = lane; i < params.cols; i += WORKGROUP) local_sum += exp(x[base + i] - row_max);
  scratch[lane] = local_sum;
  barrier();
  for (uint s = WORKGROUP / 2; s > 0; s >>= 1) {
    if (lane < s) scratch[lane] += scratch[lane + s];
    barrier();
  }
  float inv = 1.0 / scratch[0];
  for (uint i = lane; i < params.cols; i += WORKGROUP) y[base + i] = exp(x[base + i] - row_max) * inv;
}
