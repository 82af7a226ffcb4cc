#version 450
// data[i] *= 2 (linked with add_one.comp into one two-entry module).
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Data { uint values[]; } data;
layout(push_constant) uniform Push { uint count; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < pc.count) data.values[i] *= 2u;
}
