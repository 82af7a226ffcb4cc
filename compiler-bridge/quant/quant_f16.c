// IEEE half conversions for the fp16 scales of the GGUF blocks: base/half.c's
// (round to nearest even, as ggml's GGML_FP32_TO_FP16 on F16C hardware), not
// the compiler's _Float16, which clang lacks on some x86 targets (the fuzz
// build).
#include "kiln/base/half.h"
#include "kiln/compiler/quant.h"

float kiln_quant_f16_to_f32(uint16_t bits) { return kiln_f16_to_f32(bits); }

uint16_t kiln_quant_f32_to_f16(float value) { return kiln_f32_to_f16(value); }
