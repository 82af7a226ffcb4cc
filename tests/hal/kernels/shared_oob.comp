#version 450
// A valid kernel that indexes workgroup memory (an array sized by the
// specialized workgroup size) and its output out of bounds when stride > 1:
// the HAL's robust-access pass must clamp both (lavapipe bounds-checks
// neither). Spec constant 1 sizes a second shared array, so tests can ask
// for more workgroup memory than the device has.
layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = 1) const uint kExtraFloats = 64;
layout(set = 0, binding = 0) buffer Output { float values[]; } dst;
layout(push_constant) uniform Push { uint stride; uint count; } pc;
shared float scratch[gl_WorkGroupSize.x];
shared float extra[kExtraFloats];
void main() {
  uint i = gl_LocalInvocationID.x;
  scratch[i * pc.stride] = float(i + 1);
  extra[i * pc.stride] = float(i + 1);
  barrier();
  dst.values[i * pc.stride] = min(scratch[i * pc.stride], extra[i * pc.stride]);
}
