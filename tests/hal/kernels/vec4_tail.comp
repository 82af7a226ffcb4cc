#version 450
// Writes scalar i of a float tensor through a vec4 array, as the kernel
// library does: out[i] = i + 1 for i < count. A tensor whose byte length is
// not a multiple of 16 ends in a partial vec4, which the robust-access pass
// must not clamp onto the vec4 before it.
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) writeonly buffer Output { vec4 values[]; } dst;
layout(push_constant) uniform Push { uint count; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < pc.count) dst.values[i >> 2][i & 3] = float(i + 1);
}
