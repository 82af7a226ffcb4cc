#version 450
// Does nothing either, but through one storage binding (the rebinding row
// of kiln-benchmark-hal): the write never happens (no invocation has that
// index), yet the binding is used, as the HAL requires of a declared one.
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Sink { uint words[]; };
void main() {
  if (gl_GlobalInvocationID.x == 0xffffffffu) words[0] = 0u;
}
