#version 450
// out[i] = lhs[i] * rhs[i] for i < count.
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer Lhs { float lhs[]; };
layout(set = 0, binding = 1) readonly buffer Rhs { float rhs[]; };
layout(set = 0, binding = 2) writeonly buffer Out { float result[]; };
layout(push_constant) uniform Params { uint count; } params;

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < params.count) result[i] = lhs[i] * rhs[i];
}
