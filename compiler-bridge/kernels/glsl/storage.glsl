// Element storage type of the kernel's buffers: fp32, or fp16 when the
// variant is built with KILN_FP16_STORAGE (arithmetic stays fp32).
#ifndef KILN_STORAGE_GLSL_
#define KILN_STORAGE_GLSL_
#ifdef KILN_FP16_STORAGE
#extension GL_EXT_shader_16bit_storage : require
#define STORAGE_T float16_t
#define LOAD(x) float(x)
#define STORE(x) float16_t(x)
#else
#define STORAGE_T float
#define LOAD(x) (x)
#define STORE(x) (x)
#endif
#endif  // KILN_STORAGE_GLSL_
