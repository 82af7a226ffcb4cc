// Quantized weight layouts (docs/quantization.md has every byte): the GGUF
// (ggml) blocks q8_0, q4_0 and q4_K, bit for bit, and kiln's int8 rows
// (per-row symmetric int8 with an fp32 scale). A weight is a matrix of
// `rows` rows of `k` elements, each row quantized along k and stored
// whole after the previous one with no padding (as in a GGUF tensor whose
// ne0 is k). The qgemm kernel reads these bytes directly.
#ifndef KILN_COMPILER_QUANT_H_
#define KILN_COMPILER_QUANT_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/base/status.h"
#include "kiln/compiler/kernels_codes.h"

#ifdef __cplusplus
extern "C" {
#endif

// Values are the qgemm kernel's KILN_SPEC_QGEMM_LAYOUT (kernels_codes.h).
typedef enum kiln_quant_layout_e {
  KILN_QUANT_NONE = 0,
  KILN_QUANT_INT8 = KILN_QGEMM_INT8,  // per row: fp32 scale, then k int8 (value q * scale)
  KILN_QUANT_Q8_0 = KILN_QGEMM_Q8_0,  // 32-element blocks: fp16 d, 32 int8 (34 bytes)
  KILN_QUANT_Q4_0 = KILN_QGEMM_Q4_0,  // 32-element blocks: fp16 d, 16 nibble bytes (18 bytes)
  KILN_QUANT_Q4_K = KILN_QGEMM_Q4_K,  // 256-element superblocks of 144 bytes
  // 32-element groups of 28 bytes: fp32 scale and uint8 zero point per 16
  // elements, value (q - zp) * scale (MatMulNBits' blocks, repacked; no
  // packer from floats).
  KILN_QUANT_Q4_ZP = KILN_QGEMM_Q4_ZP,
  KILN_QUANT_LAYOUT_COUNT,
} kiln_quant_layout_t;

// "int8", "q8_0", "q4_0", "q4_k" (NULL for others).
const char* kiln_quant_layout_name(kiln_quant_layout_t layout);
// Parses a name above (case-insensitive); the error lists the known ones.
kiln_status_t kiln_quant_layout_parse(const char* name, kiln_quant_layout_t* out);
// Elements per block along k: k must be a multiple of it (int8: 32, the
// kernel's step).
uint32_t kiln_quant_block_elements(kiln_quant_layout_t layout);
// Bytes of one row of k elements (0 when k is not a multiple of the block).
uint64_t kiln_quant_row_bytes(kiln_quant_layout_t layout, uint64_t k);

// Quantizes `rows` rows of `k` floats (row-major, row r at w + r * k) into
// out (rows * kiln_quant_row_bytes bytes). Refuses k not a multiple of the
// block and non-finite values.
kiln_status_t kiln_quant_pack(kiln_quant_layout_t layout, const float* w, uint64_t rows,
                              uint64_t k, uint8_t* out);
// The reference dequantizer: the values a kernel must see.
kiln_status_t kiln_quant_unpack(kiln_quant_layout_t layout, const uint8_t* q, uint64_t rows,
                                uint64_t k, float* out);

// Per layout, one row (k a multiple of the block; w finite).
void kiln_quant_q8_0_pack_row(const float* w, uint64_t k, uint8_t* out);
void kiln_quant_q8_0_unpack_row(const uint8_t* q, uint64_t k, float* out);
void kiln_quant_q4_0_pack_row(const float* w, uint64_t k, uint8_t* out);
void kiln_quant_q4_0_unpack_row(const uint8_t* q, uint64_t k, float* out);
void kiln_quant_q4_k_pack_row(const float* w, uint64_t k, uint8_t* out);
void kiln_quant_q4_k_unpack_row(const uint8_t* q, uint64_t k, float* out);
void kiln_quant_int8_pack_row(const float* w, uint64_t k, uint8_t* out);
void kiln_quant_int8_unpack_row(const uint8_t* q, uint64_t k, float* out);
void kiln_quant_q4_zp_unpack_row(const uint8_t* q, uint64_t k, float* out);

// MatMulNBits (com.microsoft, bits = 4) as q4_zp: `b` [n][k_blocks][block
// / 2] bytes (element e of a block in byte e / 2, low nibble first),
// `scales` [n * k_blocks], `zero_points` [n * ceil(k_blocks / 2)] nibbles or
// NULL (8); k a multiple of 32, block a power of two >= 16. Writes
// n * kiln_quant_row_bytes(KILN_QUANT_Q4_ZP, k) bytes.
void kiln_quant_q4_zp_from_nbits(const uint8_t* b, const float* scales,
                                 const uint8_t* zero_points, uint64_t n, uint64_t k,
                                 uint64_t block, uint8_t* out);

// IEEE half <-> float (round to nearest even), as ggml stores d and dmin.
float kiln_quant_f16_to_f32(uint16_t bits);
uint16_t kiln_quant_f32_to_f16(float value);

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_QUANT_H_
