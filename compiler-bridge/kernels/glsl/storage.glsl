// Element storage type of the kernel's buffers: fp32, or fp16 when the
// variant is built with KILN_FP16_STORAGE (arithmetic stays fp32).
#ifndef KILN_STORAGE_GLSL_
#define KILN_STORAGE_GLSL_
#ifdef KILN_FP16_STORAGE
#extension GL_EXT_shader_16bit_storage : require
#define STORAGE_T float16_t
// Quads are two 32-bit words of packed halves, and one element is read as
// its word (a 32-bit load, a shift): read as an f16vec4 whose component
// was picked at run time, gemm_small_f16 ran MobileNetV2's 7x7 1x1 convs
// (rows of 49, element by element) 2.4x slower than fp32 on an H100.
#define STORAGE_VEC4_T uvec2
#define LOAD(x) float(x)
#define STORE(x) float16_t(x)
#define LOAD4(x) kiln_unpack_half4(x)
vec4 kiln_unpack_half4(uvec2 u) { return vec4(unpackHalf2x16(u.x), unpackHalf2x16(u.y)); }
float kiln_half_of(uint word, uint i) { return unpackHalf2x16(word >> ((i & 1u) * 16u)).x; }
// Element i of a STORAGE_VEC4_T array.
#define LOAD_AT(buf4, i) kiln_half_of(buf4[(i) >> 2][((i) >> 1) & 1u], (i))
// An output written by element and by aligned quad (i a multiple of 4).
// A quad is one 64-bit store through a second view of the same binding:
// as four 16-bit stores, ResNet-50 batch 32's 1x1 convs with K = 64
// (bound by their epilogue's stores) ran at a fifth of the H100's bandwidth.
#define KILN_OUTPUT_BUFFER(bind)                                                   \
  layout(set = 0, binding = bind) writeonly buffer OutputBuffer { float16_t kiln_out[]; }; \
  layout(set = 0, binding = bind) writeonly buffer OutputQuads { uvec2 kiln_out_quads[]; }; \
  void kiln_store1(uint i, float v) { kiln_out[i] = float16_t(v); }               \
  void kiln_store4(uint i, vec4 v) {                                              \
    kiln_out_quads[i >> 2] = uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw));       \
  }
#else
#define STORAGE_T float
#define STORAGE_VEC4_T vec4
#define LOAD(x) (x)
#define STORE(x) (x)
#define LOAD4(x) (x)
#define LOAD_AT(buf4, i) (buf4[(i) >> 2][(i) & 3])
#define KILN_OUTPUT_BUFFER(bind)                                                   \
  layout(set = 0, binding = bind) writeonly buffer OutputBuffer { vec4 kiln_out4[]; };    \
  void kiln_store1(uint i, float v) { kiln_out4[i >> 2][i & 3] = v; }             \
  void kiln_store4(uint i, vec4 v) { kiln_out4[i >> 2] = v; }
#endif
#endif  // KILN_STORAGE_GLSL_
