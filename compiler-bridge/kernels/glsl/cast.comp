// fp32 <-> fp16 conversion of `count` values (KILN_CAST_TO_F16 picks the
// direction at build time), so fp16-storage kernels can sit next to fp32
// ones in one program. Both builds need 16-bit storage. Grid: linear.
#version 450
#extension GL_EXT_shader_16bit_storage : require

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

#ifdef KILN_CAST_TO_F16
layout(set = 0, binding = 0) readonly buffer InBuffer { float x[]; };
layout(set = 0, binding = 1) writeonly buffer OutBuffer { float16_t y[]; };
#define CONVERT(v) float16_t(v)
#else
layout(set = 0, binding = 0) readonly buffer InBuffer { float16_t x[]; };
layout(set = 0, binding = 1) writeonly buffer OutBuffer { float y[]; };
#define CONVERT(v) float(v)
#endif

// Mirrors kiln_kernel_copy_params_t.
layout(push_constant) uniform Params { uint count; } p;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) y[i] = CONVERT(x[i]);
}
