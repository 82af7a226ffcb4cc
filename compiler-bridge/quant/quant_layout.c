// The layout table (names, block sizes, row bytes) and whole-matrix pack
// and unpack over the per-layout row functions.
#include <math.h>
#include <strings.h>

#include "kiln/compiler/quant.h"

typedef struct kiln_quant_layout_info_t {
  const char* name;
  uint32_t block_elements;
  uint32_t block_bytes;
  uint32_t row_header_bytes;  // int8's per-row scale
  void (*pack_row)(const float*, uint64_t, uint8_t*);
  void (*unpack_row)(const uint8_t*, uint64_t, float*);
} kiln_quant_layout_info_t;

static const kiln_quant_layout_info_t kLayouts[KILN_QUANT_LAYOUT_COUNT] = {
    [KILN_QUANT_INT8] = {"int8", 32, 32, 4, kiln_quant_int8_pack_row,
                         kiln_quant_int8_unpack_row},
    [KILN_QUANT_Q8_0] = {"q8_0", 32, 34, 0, kiln_quant_q8_0_pack_row,
                         kiln_quant_q8_0_unpack_row},
    [KILN_QUANT_Q4_0] = {"q4_0", 32, 18, 0, kiln_quant_q4_0_pack_row,
                         kiln_quant_q4_0_unpack_row},
    [KILN_QUANT_Q4_K] = {"q4_k", 256, 144, 0, kiln_quant_q4_k_pack_row,
                         kiln_quant_q4_k_unpack_row},
    [KILN_QUANT_Q4_ZP] = {"q4_zp", 32, 28, 0, NULL, kiln_quant_q4_zp_unpack_row},
};

static const kiln_quant_layout_info_t* kiln_quant_info(kiln_quant_layout_t layout) {
  if ((unsigned)layout >= KILN_QUANT_LAYOUT_COUNT || !kLayouts[layout].name) return NULL;
  return &kLayouts[layout];
}

const char* kiln_quant_layout_name(kiln_quant_layout_t layout) {
  const kiln_quant_layout_info_t* info = kiln_quant_info(layout);
  return info ? info->name : NULL;
}

kiln_status_t kiln_quant_layout_parse(const char* name, kiln_quant_layout_t* out) {
  *out = KILN_QUANT_NONE;
  for (unsigned i = 0; i < KILN_QUANT_LAYOUT_COUNT; ++i) {
    if (name && kLayouts[i].name && strcasecmp(name, kLayouts[i].name) == 0) {
      *out = (kiln_quant_layout_t)i;
      return kiln_ok_status();
    }
  }
  return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                          "unknown quantization '%s' (known: int8, q8_0, q4_0, q4_k)",
                          name ? name : "(null)");
}

uint32_t kiln_quant_block_elements(kiln_quant_layout_t layout) {
  const kiln_quant_layout_info_t* info = kiln_quant_info(layout);
  return info ? info->block_elements : 0;
}

uint64_t kiln_quant_row_bytes(kiln_quant_layout_t layout, uint64_t k) {
  const kiln_quant_layout_info_t* info = kiln_quant_info(layout);
  if (!info || k == 0 || k % info->block_elements != 0) return 0;
  return info->row_header_bytes + k / info->block_elements * info->block_bytes;
}

static kiln_status_t kiln_quant_check(kiln_quant_layout_t layout, uint64_t k,
                                      const void* in, const void* out) {
  if (!kiln_quant_info(layout) || !in || !out) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_quant: bad layout %d or NULL buffer", (int)layout);
  }
  if (kiln_quant_row_bytes(layout, k) == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_quant: %s needs k a multiple of %u, got %llu",
                            kiln_quant_layout_name(layout), kiln_quant_block_elements(layout),
                            (unsigned long long)k);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_quant_pack(kiln_quant_layout_t layout, const float* w, uint64_t rows,
                              uint64_t k, uint8_t* out) {
  KILN_RETURN_IF_ERROR(kiln_quant_check(layout, k, w, out));
  if (!kLayouts[layout].pack_row) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_quant: %s is made from MatMulNBits blocks, not from floats",
                            kiln_quant_layout_name(layout));
  }
  for (uint64_t i = 0; i < rows * k; ++i) {
    if (!isfinite(w[i])) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "kiln_quant: weight element %llu is not finite",
                              (unsigned long long)i);
    }
  }
  const uint64_t row_bytes = kiln_quant_row_bytes(layout, k);
  for (uint64_t r = 0; r < rows; ++r) kLayouts[layout].pack_row(w + r * k, k, out + r * row_bytes);
  return kiln_ok_status();
}

kiln_status_t kiln_quant_unpack(kiln_quant_layout_t layout, const uint8_t* q, uint64_t rows,
                                uint64_t k, float* out) {
  KILN_RETURN_IF_ERROR(kiln_quant_check(layout, k, q, out));
  const uint64_t row_bytes = kiln_quant_row_bytes(layout, k);
  for (uint64_t r = 0; r < rows; ++r) {
    kLayouts[layout].unpack_row(q + r * row_bytes, k, out + r * k);
  }
  return kiln_ok_status();
}
