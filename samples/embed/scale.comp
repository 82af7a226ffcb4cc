#version 450
// y[i] = x[i] * scale for i < count.
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params { uint count; float scale; } params;

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < params.count) y[i] = x[i] * params.scale;
}
