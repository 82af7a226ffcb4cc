// Quantized weight reader shared by qgemm.comp and conv2d_gemm.comp's
// quantized build: the weight binding (1) and the decoding of a weight row's
// 32-element groups in a layout of include/kiln/compiler/quant.h.
// The includer declares the spec constant LAYOUT (KILN_QGEMM_*). A weight
// row starts at byte `row` (4-aligned for int8/q4_K/q4_zp, 2-aligned for
// q4_0/q8_0); the buffer ends with at least 4 readable bytes past the last
// row (2-aligned blocks are loaded as whole words, up to one word past
// their last byte).
#ifndef KILN_QWEIGHT_GLSL_
#define KILN_QWEIGHT_GLSL_

#ifdef KILN_QGEMM_TEXEL_B
// The cpu variant reads the weight words through a texel buffer too (vec4
// f32 texels reinterpreted as 4 words: texel fetches move bits unchanged),
// a 16-byte fetch where a storage load gives 4 bytes.
layout(set = 0, binding = 1) uniform samplerBuffer b4_t;
uvec4 btexel(uint t) { return floatBitsToUint(texelFetch(b4_t, int(t))); }
uint bword(uint i) { return btexel(i >> 2)[i & 3]; }
#else
layout(set = 0, binding = 1) readonly buffer BBuffer { uint bw[]; };
uint bword(uint i) { return bw[i]; }
#endif

// A 2-aligned block: its words loaded once (`count`, from the word holding
// its first byte), then its fp16 d and the i-th 4 bytes after d by funnel
// shifts in registers.
uint blk[9];
void load_block(uint o, uint count) {
#ifdef KILN_QGEMM_TEXEL_B
  // The texels holding the block's words (2 for 5 words, 3 for 9), then
  // the words from the first one on, chosen by constant-index selects.
  const uint first = o >> 2, off = first & 3u;
  const uvec4 t0 = btexel(first >> 2), t1 = btexel((first >> 2) + 1);
  const uvec4 t2 = count > 5u ? btexel((first >> 2) + 2) : uvec4(0);
  const uint all[12] = uint[12](t0.x, t0.y, t0.z, t0.w, t1.x, t1.y, t1.z, t1.w,
                                t2.x, t2.y, t2.z, t2.w);
  for (uint i = 0; i < 9; ++i) {
    blk[i] = off == 0u ? all[i] : off == 1u ? all[i + 1] : off == 2u ? all[i + 2] : all[i + 3];
  }
#else
  for (uint i = 0; i < 9; ++i) {
    if (i < count) blk[i] = bw[(o >> 2) + i];
  }
#endif
}
float block_d(uint o) { return unpackHalf2x16((o & 2u) != 0 ? blk[0] >> 16 : blk[0]).x; }
uint block_word(uint o, uint i) {
  return (o & 2u) != 0 ? blk[i + 1] : (blk[i] >> 16) | (blk[i + 1] << 16);
}

vec4 nibbles(uint word, uint shift) {
  return vec4((uvec4(word) >> (uvec4(0, 8, 16, 24) + shift)) & 15u);
}

vec4 bytes_signed(uint word) {
  return vec4((ivec4(word) << ivec4(24, 16, 8, 0)) >> 24);  // sign-extended bytes
}

// q4_K: sub-block j's scale d * sc[j] and min dmin * m[j] of the
// superblock at word `base`. Superblocks (144 = 9 x 16 bytes) and weight
// rows are 16-aligned: header and scales are one texel's worth of words.
vec2 q4k_scale_min(uint base, uint j) {
  const vec2 dm = unpackHalf2x16(bword(base));
  const uint s0 = bword(base + 1), s1 = bword(base + 2), s2 = bword(base + 3);
  // get_scale_min_k4: bytes j, j + 4 (and j - 4 for j >= 4) of s0 s1 s2.
  uint sc, mn;
  if (j < 4u) {
    sc = (s0 >> (8u * j)) & 63u;
    mn = (s1 >> (8u * j)) & 63u;
  } else {
    const uint sh = 8u * (j - 4u);
    const uint hi = (s2 >> sh) & 255u;
    sc = (hi & 15u) | (((s0 >> sh) >> 6u) & 3u) << 4u;
    mn = (hi >> 4u) | (((s1 >> sh) >> 6u) & 3u) << 4u;
  }
  return vec2(dm.x * float(sc), dm.y * float(mn));
}

// Group g (32 elements) of the weight row starting at byte `row`.
void decode(uint row, uint g, out vec4 w[8]) {
  if (LAYOUT == KILN_QGEMM_Q4_0) {
    const uint o = row + g * 18u;
    load_block(o, 5u);  // 18 bytes from a 2-aligned offset span 5 words
    const float d = block_d(o);
    for (uint i = 0; i < 4; ++i) {
      const uint word = block_word(o, i);
      w[i] = (nibbles(word, 0u) - 8.0) * d;
      w[4 + i] = (nibbles(word, 4u) - 8.0) * d;
    }
  } else if (LAYOUT == KILN_QGEMM_Q8_0) {
    const uint o = row + g * 34u;
    load_block(o, 9u);  // 34 bytes: 9 words
    const float d = block_d(o);
    for (uint i = 0; i < 8; ++i) w[i] = bytes_signed(block_word(o, i)) * d;
  } else if (LAYOUT == KILN_QGEMM_Q4_K) {
    const uint base = (row + (g >> 3) * 144u) >> 2;  // superblocks are 4-aligned
    const uint j = g & 7u;
    const vec2 dm = q4k_scale_min(base, j);
    const float d = dm.x, m = dm.y;
    const uint q = base + 4u + 8u * (j >> 1);
    const uint shift = (j & 1u) * 4u;
    for (uint i = 0; i < 8; ++i) w[i] = nibbles(bword(q + i), shift) * d - m;
  } else if (LAYOUT == KILN_QGEMM_Q4_ZP) {
    // 7 words per group: scale 0..15, scale 16..31, zero points, 4 code words.
    const uint base = (row >> 2) + 7u * g;
    const vec2 s = vec2(uintBitsToFloat(bword(base)), uintBitsToFloat(bword(base + 1)));
    const uint zw = bword(base + 2);
    const vec2 z = vec2(float(zw & 255u), float((zw >> 8) & 255u));
    for (uint i = 0; i < 4; ++i) {
      const uint word = bword(base + 3 + i);  // elements 8i .. 8i + 7, low nibble first
      const uint h = i >> 1;
      w[2 * i] = (vec4((uvec4(word) >> uvec4(0, 4, 8, 12)) & 15u) - z[h]) * s[h];
      w[2 * i + 1] = (vec4((uvec4(word) >> uvec4(16, 20, 24, 28)) & 15u) - z[h]) * s[h];
    }
  } else {  // KILN_QGEMM_INT8: fp32 scale per row, then k int8
    const float s = uintBitsToFloat(bword(row >> 2));
    const uint q = (row >> 2) + 1u + 8u * g;
    for (uint i = 0; i < 8; ++i) w[i] = bytes_signed(bword(q + i)) * s;
  }
}

// Single weights and quads for readers that take them one k at a time
// (the quantized conv's weight loader): bytes and 2-aligned words by
// offset, no block kept in registers.
uint qweight_byte(uint o) { return (bword(o >> 2) >> (8u * (o & 3u))) & 255u; }
uint qweight_word2(uint o) {  // the 4 bytes at 2-aligned offset o
  const uint w = o >> 2;
  return (o & 2u) != 0 ? (bword(w) >> 16) | (bword(w + 1) << 16) : bword(w);
}
float qweight_signed(uint byte_) { return float(int(byte_ << 24) >> 24); }

// Element k of the weight row starting at byte `row`.
float qweight_elem(uint row, uint k) {
  const uint g = k >> 5, e = k & 31u;
  if (LAYOUT == KILN_QGEMM_Q4_0) {
    const uint o = row + g * 18u;
    const float d = unpackHalf2x16(qweight_word2(o)).x;
    return (float((qweight_byte(o + 2u + (e & 15u)) >> ((e >> 4) * 4u)) & 15u) - 8.0) * d;
  } else if (LAYOUT == KILN_QGEMM_Q8_0) {
    const uint o = row + g * 34u;
    return qweight_signed(qweight_byte(o + 2u + e)) * unpackHalf2x16(qweight_word2(o)).x;
  } else if (LAYOUT == KILN_QGEMM_Q4_K) {
    const uint base = (row + (g >> 3) * 144u) >> 2, j = g & 7u;
    const vec2 dm = q4k_scale_min(base, j);
    const uint b = qweight_byte(4u * base + 16u + 32u * (j >> 1) + e);
    return float((b >> ((j & 1u) * 4u)) & 15u) * dm.x - dm.y;
  } else if (LAYOUT == KILN_QGEMM_Q4_ZP) {
    const uint base = (row >> 2) + 7u * g, h = e >> 4;
    const float z = float((bword(base + 2) >> (8u * h)) & 255u);
    const uint code = (qweight_byte(4u * base + 12u + (e >> 1)) >> ((e & 1u) * 4u)) & 15u;
    return (float(code) - z) * uintBitsToFloat(bword(base + h));
  }
  // KILN_QGEMM_INT8
  return qweight_signed(qweight_byte(row + 4u + k)) * uintBitsToFloat(bword(row >> 2));
}

// Elements k..k+3 (k a multiple of 4) of the weight row at byte `row`:
// the same values as qweight_elem, from whole words.
vec4 qweight_quad(uint row, uint k) {
  const uint g = k >> 5, i = (k & 31u) >> 2;  // group, quad of the group
  if (LAYOUT == KILN_QGEMM_Q4_0) {
    // Quads 0..3 are low nibbles of code words 0..3, quads 4..7 their high ones.
    const uint o = row + g * 18u;
    const float d = unpackHalf2x16(qweight_word2(o)).x;
    return (nibbles(qweight_word2(o + 2u + 4u * (i & 3u)), (i >> 2) * 4u) - 8.0) * d;
  } else if (LAYOUT == KILN_QGEMM_Q8_0) {
    const uint o = row + g * 34u;
    return bytes_signed(qweight_word2(o + 2u + 4u * i)) * unpackHalf2x16(qweight_word2(o)).x;
  } else if (LAYOUT == KILN_QGEMM_Q4_K) {
    const uint base = (row + (g >> 3) * 144u) >> 2, j = g & 7u;
    const vec2 dm = q4k_scale_min(base, j);
    return nibbles(bword(base + 4u + 8u * (j >> 1) + i), (j & 1u) * 4u) * dm.x - dm.y;
  } else if (LAYOUT == KILN_QGEMM_INT8) {
    return bytes_signed(bword((row >> 2) + 1u + (k >> 2))) * uintBitsToFloat(bword(row >> 2));
  }
  return vec4(qweight_elem(row, k), qweight_elem(row, k + 1), qweight_elem(row, k + 2),
              qweight_elem(row, k + 3));
}

#endif  // KILN_QWEIGHT_GLSL_
