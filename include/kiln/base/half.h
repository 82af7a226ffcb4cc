// IEEE half and bfloat16 conversions (round to nearest even; f32 values
// past the half range become infinities, NaNs stay NaNs).
#ifndef KILN_BASE_HALF_H_
#define KILN_BASE_HALF_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

float kiln_f16_to_f32(uint16_t bits);
uint16_t kiln_f32_to_f16(float value);
float kiln_bf16_to_f32(uint16_t bits);
uint16_t kiln_f32_to_bf16(float value);

#ifdef __cplusplus
}
#endif

#endif  // KILN_BASE_HALF_H_
