// Debian's SPIRV-Cross predates SPV_NV_cooperative_matrix and stops at its
// type declaration ("no block to insert opcode"). Reflection needs only the
// module-level interface (entry points, execution modes, decorations,
// resources, push constants, spec constants), so for such a module it reads
// a copy without the cooperative-matrix capability, extension and types
// (and whatever declares itself through them) and with every function body
// replaced by one unreachable block. The input has passed SPIRV-Tools.
#include <stdlib.h>
#include <string.h>

#include "spirv_internal.h"

enum {
  kOpName = 5, kOpMemberName = 6, kOpExtension = 10, kOpCapability = 17,
  kOpTypeArray = 28, kOpTypeRuntimeArray = 29, kOpTypeStruct = 30,
  kOpTypePointer = 32, kOpTypeFunction = 33, kOpFunction = 54,
  kOpFunctionParameter = 55, kOpFunctionEnd = 56, kOpDecorate = 71,
  kOpMemberDecorate = 72, kOpLabel = 248, kOpUnreachable = 255,
  kCapabilityCooperativeMatrixNV = 5357, kOpTypeCooperativeMatrixNV = 5358,
  kOpUndef = 1, kOpConstantTrue = 41, kOpConstantFalse = 42, kOpConstant = 43,
  kOpConstantComposite = 44, kOpConstantNull = 46, kOpSpecConstantTrue = 48,
  kOpSpecConstantFalse = 49, kOpSpecConstant = 50, kOpSpecConstantComposite = 51,
  kOpSpecConstantOp = 52, kOpVariable = 59,
  kMaxBound = 1 << 22,
};

static bool kiln_strip_is(const uint32_t* at, uint32_t length, const char* text) {
  size_t size = strlen(text) + 1;
  return (size_t)(length - 1) * 4 >= size && memcmp(&at[1], text, size) == 0;
}

bool kiln_spirv_uses_nv_cooperative_matrix(const uint32_t* words, size_t word_count) {
  for (size_t at = 5; at < word_count;) {
    uint32_t length = words[at] >> 16;
    if (length == 0 || length > word_count - at) return false;
    if ((words[at] & 0xffff) == kOpCapability && length == 2 &&
        words[at + 1] == kCapabilityCooperativeMatrixNV) {
      return true;
    }
    at += length;
  }
  return false;
}

kiln_status_t kiln_spirv_strip_cooperative_matrix(const char* kernel_name,
                                                  const uint32_t* words, size_t word_count,
                                                  uint32_t** out_words, size_t* out_count) {
  *out_words = NULL;
  *out_count = 0;
  if (word_count < 5 || words[3] == 0 || words[3] > kMaxBound) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kernel '%s': SPIR-V id bound outside the reflection's range",
                            kernel_name);
  }
  uint32_t bound = words[3];
  bool* dropped = calloc(bound, sizeof(bool));
  // Each function shrinks to its header and parameters plus two words.
  uint32_t* out = malloc((word_count + 4) * sizeof(uint32_t));
  if (!dropped || !out) {
    free(dropped);
    free(out);
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "kernel '%s': out of memory reflecting", kernel_name);
  }
  memcpy(out, words, 5 * sizeof(uint32_t));
  size_t o = 5;
  bool in_body = false, bad = false;
#define KILN_DROPPED(id) ((id) < bound && dropped[(id)])
  for (size_t at = 5; at < word_count && !bad;) {
    const uint32_t* in = &words[at];
    uint32_t length = in[0] >> 16, opcode = in[0] & 0xffff;
    if (length == 0 || length > word_count - at) {
      bad = true;
      break;
    }
    at += length;
    if (in_body) {
      if (opcode == kOpFunctionParameter) {
        if (length != 3 || KILN_DROPPED(in[1])) bad = true;
        memcpy(&out[o], in, length * sizeof(uint32_t));
        o += length;
      } else if (opcode == kOpFunctionEnd) {
        // One block that never runs: valid for any return type.
        if (bound >= kMaxBound) {
          bad = true;
          break;
        }
        out[o++] = (2u << 16) | kOpLabel;
        out[o++] = bound++;
        out[o++] = (1u << 16) | kOpUnreachable;
        out[o++] = (1u << 16) | kOpFunctionEnd;
        in_body = false;
      }
      continue;
    }
    bool drop = false;
    switch (opcode) {
      case kOpCapability: drop = length == 2 && in[1] == kCapabilityCooperativeMatrixNV; break;
      case kOpExtension: drop = kiln_strip_is(in, length, "SPV_NV_cooperative_matrix"); break;
      case kOpName: case kOpMemberName: case kOpDecorate: case kOpMemberDecorate:
        drop = length >= 2 && KILN_DROPPED(in[1]);
        break;
      case kOpTypeCooperativeMatrixNV: drop = true; break;
      case kOpTypePointer: drop = length == 4 && KILN_DROPPED(in[3]); break;
      case kOpTypeArray: case kOpTypeRuntimeArray: drop = length >= 3 && KILN_DROPPED(in[2]); break;
      case kOpTypeStruct: case kOpTypeFunction:
        for (uint32_t i = 2; i < length; ++i) drop |= KILN_DROPPED(in[i]);
        break;
      case kOpFunction:
        if (length != 5 || KILN_DROPPED(in[1])) bad = true;
        in_body = true;
        break;
      case kOpUndef: case kOpConstantTrue: case kOpConstantFalse: case kOpConstant:
      case kOpConstantNull: case kOpSpecConstantTrue: case kOpSpecConstantFalse:
      case kOpSpecConstant: case kOpVariable:
        drop = length >= 3 && KILN_DROPPED(in[1]);  // of a dropped type
        break;
      case kOpConstantComposite: case kOpSpecConstantComposite: case kOpSpecConstantOp:
        // Of a dropped type, or built from a dropped constant.
        for (uint32_t i = 1; i < length; ++i) drop |= i != 2 && KILN_DROPPED(in[i]);
        break;
      default:
        break;
    }
    if (drop) {
      // The result of a dropped declaration (types: word 1, others: word 2).
      uint32_t result = opcode == kOpTypeCooperativeMatrixNV || opcode == kOpTypePointer ||
                                opcode == kOpTypeArray || opcode == kOpTypeRuntimeArray ||
                                opcode == kOpTypeStruct || opcode == kOpTypeFunction
                            ? in[1]
                            : (length >= 3 ? in[2] : 0);
      if (opcode != kOpCapability && opcode != kOpExtension && opcode != kOpName &&
          opcode != kOpMemberName && opcode != kOpDecorate && opcode != kOpMemberDecorate &&
          result < bound) {
        dropped[result] = true;
      }
      continue;
    }
    memcpy(&out[o], in, length * sizeof(uint32_t));
    o += length;
  }
#undef KILN_DROPPED
  free(dropped);
  if (bad || in_body) {
    free(out);
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kernel '%s': a cooperative-matrix module the reflection cannot "
                            "read (a function or parameter of cooperative-matrix type)",
                            kernel_name);
  }
  out[3] = bound;
  *out_words = out;
  *out_count = o;
  return kiln_ok_status();
}
