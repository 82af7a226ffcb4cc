// Element storage type of the kernel's buffers: fp32, or fp16 when the
// variant is built with KILN_FP16_STORAGE (arithmetic stays fp32).
#ifndef KILN_STORAGE_GLSL_
#define KILN_STORAGE_GLSL_
#ifdef KILN_FP16_STORAGE
#extension GL_EXT_shader_16bit_storage : require
#define STORAGE_T float16_t
#define STORAGE_VEC4_T f16vec4
#define LOAD(x) float(x)
#define STORE(x) float16_t(x)
#define LOAD4(x) vec4(x)
// Element i of a STORAGE_VEC4_T array (16-bit types allow no dynamic
// component index: the quad is converted first).
#define LOAD_AT(buf4, i) (vec4(buf4[(i) >> 2])[(i) & 3])
// An output written by element and by aligned quad (i a multiple of 4).
#define KILN_OUTPUT_BUFFER(bind)                                                   \
  layout(set = 0, binding = bind) writeonly buffer OutputBuffer { float16_t kiln_out[]; }; \
  void kiln_store1(uint i, float v) { kiln_out[i] = float16_t(v); }               \
  void kiln_store4(uint i, vec4 v) {                                              \
    kiln_out[i] = float16_t(v.x);                                                 \
    kiln_out[i + 1] = float16_t(v.y);                                             \
    kiln_out[i + 2] = float16_t(v.z);                                             \
    kiln_out[i + 3] = float16_t(v.w);                                             \
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
