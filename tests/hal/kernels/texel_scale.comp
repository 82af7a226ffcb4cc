#version 450
// Uniform texel buffers (vec4 f32) through the HAL: out[i] = x[i] * 2 +
// w[i % w_count] for i < count, reading scalars out of texels; out[count]
// is the texel count of x's view (its range rounded up to whole texels).
// W_SET 1 puts w and out in a second set, so the driver cannot push
// descriptors and takes its descriptor-pool path.
#ifndef W_SET
#define W_SET 0
#endif
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) uniform samplerBuffer x;
layout(set = W_SET, binding = 1) uniform samplerBuffer w;
layout(set = W_SET, binding = 2) writeonly buffer Output { float values[]; } dst;
layout(push_constant) uniform Push { uint count; uint w_count; } pc;
float at(samplerBuffer t, uint i) { return texelFetch(t, int(i >> 2))[i & 3]; }
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < pc.count) dst.values[i] = at(x, i) * 2.0 + at(w, i % pc.w_count);
  if (i == pc.count) dst.values[i] = float(textureSize(x));
}
