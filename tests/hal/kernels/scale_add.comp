#version 450
// out[i] = in[i] * scale + bias for i < count; bias is a specialization
// constant so tests can check that variants' constants reach the pipeline.
layout(local_size_x = 64) in;
layout(constant_id = 0) const float kBias = 0.0;
layout(set = 0, binding = 0) readonly buffer Input { float values[]; } src;
layout(set = 0, binding = 1) writeonly buffer Output { float values[]; } dst;
layout(push_constant) uniform Push { float scale; uint count; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < pc.count) dst.values[i] = src.values[i] * pc.scale + kBias;
}
