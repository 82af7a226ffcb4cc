#version 450
// dst[i] = src[i] + i with bindings in two descriptor sets, so the driver's
// descriptor-set path (not push descriptors) is exercised.
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) readonly buffer Input { uint values[]; } src;
layout(set = 1, binding = 3) writeonly buffer Output { uint values[]; } dst;
layout(push_constant) uniform Push { uint count; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < pc.count) dst.values[i] = src.values[i] + i;
}
