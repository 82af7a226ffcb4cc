// IEEE half conversions for the fp16 scales of the GGUF blocks. The
// compiler's _Float16 converts with round-to-nearest-even, as ggml's
// GGML_FP32_TO_FP16 does on F16C hardware.
#include <string.h>

#include "kiln/compiler/quant.h"

float kiln_quant_f16_to_f32(uint16_t bits) {
  _Float16 h;
  memcpy(&h, &bits, sizeof(h));
  return (float)h;
}

uint16_t kiln_quant_f32_to_f16(float value) {
  _Float16 h = (_Float16)value;
  uint16_t bits;
  memcpy(&bits, &h, sizeof(bits));
  return bits;
}
