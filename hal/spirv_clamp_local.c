// Clamps the indices of every access chain into memory that the device's
// robustBufferAccess does not bound: workgroup (shared), private, function,
// push-constant, input/output and descriptor arrays. Storage and uniform
// buffer chains are left as they are, because the device bounds those
// accesses itself. This is SPIRV-Tools' graphics-robust-access pass
// narrowed to what the device does not already cover: on llvmpipe, that
// pass's buffer clamps (an OpArrayLength per access) cost 10-20% per call
// (docs/security.md).
//
// Each index into an array, vector or matrix becomes UMin(index, length-1)
// (GLSL.std.450). Read as unsigned, a negative index clamps to the last
// element. A length that is a specialization constant gets an
// OpSpecConstantOp ISub, so the clamp follows specialization. Anything the
// transform does not handle returns UNIMPLEMENTED and the caller runs the
// full pass. That covers pointer access chains, runtime arrays outside
// buffers, non-32-bit indices and lengths, and pointers whose storage class
// cannot be traced.
#define kDefaultMaxIdBound kiln_hal_spirv_clamp_max_id_bound
#include <spirv-tools/libspirv.h>
#undef kDefaultMaxIdBound

#include <string.h>

#include "hal_internal.h"

enum {
  kOpExtInstImport = 11,
  kOpExtInst = 12,
  kOpMemoryModel = 14,
  kOpTypeInt = 21,
  kOpTypeVector = 23,
  kOpTypeMatrix = 24,
  kOpTypeArray = 28,
  kOpTypeStruct = 30,
  kOpTypePointer = 32,
  kOpConstant = 43,
  kOpSpecConstant = 50,
  kOpSpecConstantOp = 52,
  kOpFunction = 54,
  kOpImageTexelPointer = 60,
  kOpAccessChain = 65,
  kOpInBoundsAccessChain = 66,
  kOpPtrAccessChain = 67,
  kOpInBoundsPtrAccessChain = 70,
  kOpISub = 130,
  kGlslUMin = 38,
  kStorageUniform = 2,
  kStorageStorageBuffer = 12,
  kStoragePhysicalStorageBuffer = 5349,
  // Bounds the per-id tables (validated modules from kiln stay far below).
  kMaxIdBound = 1u << 22,
  kMaxClamps = 1u << 16,
  kMaxConstants = 1024,
};

// A constant the transform adds before the first function: either
// OpConstant type value, or OpSpecConstantOp type ISub length one.
typedef struct kiln_clamp_constant_t {
  uint32_t type, id;
  bool spec;             // OpSpecConstantOp ISub length one
  uint32_t value;        // OpConstant: the value
  uint32_t length, one;  // spec: the length id and the 1 of `type`
} kiln_clamp_constant_t;

// One index to clamp: the word holding it, its type, the clamp's bound and
// the id of the clamped value.
typedef struct kiln_clamp_t {
  size_t instruction;  // word offset of the access chain
  size_t word;         // word offset of the index operand
  uint32_t type, bound, id;
} kiln_clamp_t;

typedef struct kiln_clamp_state_t {
  kiln_allocator_t allocator;
  const uint32_t* words;
  size_t word_count;
  uint32_t bound;
  size_t* def_at;     // id -> word offset of its defining instruction
  uint32_t* type_of;  // id -> its result type
  uint32_t glsl_import;
  size_t memory_model_at, first_function_at;
  bool unsupported;
  kiln_clamp_constant_t constants[kMaxConstants];
  uint32_t constant_count;
  kiln_clamp_t* clamps;
  uint32_t clamp_count, clamp_capacity;
} kiln_clamp_state_t;

static spv_result_t kiln_clamp_record(void* user, const spv_parsed_instruction_t* parsed) {
  kiln_clamp_state_t* s = user;
  size_t at = (size_t)(parsed->words - s->words);
  if (parsed->result_id) {
    s->def_at[parsed->result_id] = at;
    s->type_of[parsed->result_id] = parsed->type_id;
  }
  switch (parsed->opcode) {
    case kOpExtInstImport:
      if (parsed->num_words >= 3 &&
          strncmp((const char*)&parsed->words[2], "GLSL.std.450",
                  (size_t)(parsed->num_words - 2) * 4) == 0) {
        s->glsl_import = parsed->result_id;
      }
      break;
    case kOpMemoryModel:
      s->memory_model_at = at;
      break;
    case kOpFunction:
      if (!s->first_function_at) s->first_function_at = at;
      break;
    case kOpImageTexelPointer:
    case kOpPtrAccessChain:
    case kOpInBoundsPtrAccessChain:
      s->unsupported = true;  // left to the full pass
      break;
    default:
      break;
  }
  return SPV_SUCCESS;
}

// The instruction defining `id`, or NULL.
static const uint32_t* kiln_clamp_def(const kiln_clamp_state_t* s, uint32_t id) {
  if (id == 0 || id >= s->bound || !s->def_at[id]) return NULL;
  return &s->words[s->def_at[id]];
}

static uint32_t kiln_clamp_opcode(const uint32_t* def) { return def ? (def[0] & 0xffff) : 0; }

// True when `type` is a 32-bit OpTypeInt.
static bool kiln_clamp_is_int32(const kiln_clamp_state_t* s, uint32_t type) {
  const uint32_t* def = kiln_clamp_def(s, type);
  return kiln_clamp_opcode(def) == kOpTypeInt && def[2] == 32;
}

static uint32_t kiln_clamp_new_id(kiln_clamp_state_t* s) {
  if (s->bound >= kMaxIdBound) {
    s->unsupported = true;
    return 0;
  }
  return s->bound++;
}

static uint32_t kiln_clamp_constant(kiln_clamp_state_t* s, uint32_t type, uint32_t value) {
  for (uint32_t i = 0; i < s->constant_count; ++i) {
    const kiln_clamp_constant_t* c = &s->constants[i];
    if (!c->spec && c->type == type && c->value == value) return c->id;
  }
  if (s->constant_count == kMaxConstants) {
    s->unsupported = true;
    return 0;
  }
  kiln_clamp_constant_t* c = &s->constants[s->constant_count++];
  *c = (kiln_clamp_constant_t){.type = type, .id = kiln_clamp_new_id(s), .value = value};
  return c->id;
}

// The id of length-1 in `type` for an array whose length is `length_id`.
static uint32_t kiln_clamp_array_bound(kiln_clamp_state_t* s, uint32_t type,
                                       uint32_t length_id) {
  const uint32_t* def = kiln_clamp_def(s, length_id);
  if (!def || !kiln_clamp_is_int32(s, s->type_of[length_id])) {
    s->unsupported = true;
    return 0;
  }
  if (kiln_clamp_opcode(def) == kOpConstant) {
    if (def[3] == 0) {
      s->unsupported = true;
      return 0;
    }
    return kiln_clamp_constant(s, type, def[3] - 1);
  }
  uint32_t one = kiln_clamp_constant(s, type, 1);
  for (uint32_t i = 0; i < s->constant_count; ++i) {
    const kiln_clamp_constant_t* c = &s->constants[i];
    if (c->spec && c->type == type && c->length == length_id) return c->id;
  }
  if (s->constant_count == kMaxConstants) {
    s->unsupported = true;
    return 0;
  }
  kiln_clamp_constant_t* c = &s->constants[s->constant_count++];
  *c = (kiln_clamp_constant_t){
      .type = type, .id = kiln_clamp_new_id(s), .spec = true, .length = length_id, .one = one};
  return c->id;
}

static void kiln_clamp_add(kiln_clamp_state_t* s, size_t instruction, size_t word,
                           uint32_t type, uint32_t bound) {
  if (s->unsupported) return;
  if (s->clamp_count == s->clamp_capacity) {
    uint32_t capacity = s->clamp_capacity ? s->clamp_capacity * 2 : 64;
    kiln_status_t status =
        capacity > kMaxClamps
            ? kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "too many clamps")
            : kiln_allocator_realloc(s->allocator, capacity * sizeof(kiln_clamp_t),
                                     (void**)&s->clamps);
    if (status) {
      kiln_status_free(status);  // the full pass runs instead
      s->unsupported = true;
      return;
    }
    s->clamp_capacity = capacity;
  }
  s->clamps[s->clamp_count++] =
      (kiln_clamp_t){instruction, word, type, bound, kiln_clamp_new_id(s)};
}

// Plans the clamps of the access chain at word `at`.
static void kiln_clamp_plan_chain(kiln_clamp_state_t* s, size_t at) {
  const uint32_t* chain = &s->words[at];
  uint32_t length = chain[0] >> 16;
  if (length < 4 || chain[3] >= s->bound) {
    s->unsupported = true;
    return;
  }
  const uint32_t* pointer = kiln_clamp_def(s, s->type_of[chain[3]]);
  if (kiln_clamp_opcode(pointer) != kOpTypePointer) {
    s->unsupported = true;
    return;
  }
  uint32_t storage = pointer[2];
  if (storage == kStorageStorageBuffer || storage == kStorageUniform) return;
  if (storage == kStoragePhysicalStorageBuffer) {
    s->unsupported = true;
    return;
  }
  uint32_t type = pointer[3];
  for (uint32_t i = 4; i < length && !s->unsupported; ++i) {
    uint32_t index = chain[i];
    const uint32_t* type_def = kiln_clamp_def(s, type);
    uint32_t opcode = kiln_clamp_opcode(type_def);
    uint32_t index_type = index < s->bound ? s->type_of[index] : 0;
    const uint32_t* index_def = kiln_clamp_def(s, index);
    bool constant = kiln_clamp_opcode(index_def) == kOpConstant;
    if (opcode == kOpTypeStruct) {
      // The validator requires a constant member index in range.
      if (!constant || index_def[3] + 2 >= (type_def[0] >> 16)) {
        s->unsupported = true;
        return;
      }
      type = type_def[2 + index_def[3]];
      continue;
    }
    if (!kiln_clamp_is_int32(s, index_type)) {
      s->unsupported = true;
      return;
    }
    if (opcode == kOpTypeVector || opcode == kOpTypeMatrix) {
      uint32_t count = type_def[3];
      if (!constant || index_def[3] >= count) {
        kiln_clamp_add(s, at, at + i, index_type, kiln_clamp_constant(s, index_type, count - 1));
      }
      type = type_def[2];
    } else if (opcode == kOpTypeArray) {
      const uint32_t* length_def = kiln_clamp_def(s, type_def[3]);
      bool fixed = kiln_clamp_opcode(length_def) == kOpConstant;
      if (!(constant && fixed && index_def[3] < length_def[3])) {
        kiln_clamp_add(s, at, at + i, index_type,
                       kiln_clamp_array_bound(s, index_type, type_def[3]));
      }
      type = type_def[2];
    } else {
      s->unsupported = true;  // runtime arrays outside buffers, or unknown types
      return;
    }
  }
}

static void kiln_clamp_emit(uint32_t** out, uint32_t word) { *(*out)++ = word; }

// Writes the module with the planned clamps into `out` (sized by the caller).
static size_t kiln_clamp_write(const kiln_clamp_state_t* s, uint32_t glsl_import,
                               bool add_import, uint32_t* out) {
  uint32_t* o = out;
  static const char kGlslName[] = "GLSL.std.450";  // 12 chars + NUL: 4 words
  uint32_t next_clamp = 0;
  size_t at = 5;
  memcpy(o, s->words, 5 * sizeof(uint32_t));
  o[3] = s->bound;
  o += 5;
  while (at < s->word_count) {
    uint32_t length = s->words[at] >> 16;
    if (add_import && at == s->memory_model_at) {
      kiln_clamp_emit(&o, (6u << 16) | kOpExtInstImport);
      kiln_clamp_emit(&o, glsl_import);
      uint32_t name[4] = {0};
      memcpy(name, kGlslName, sizeof(kGlslName));
      for (int i = 0; i < 4; ++i) kiln_clamp_emit(&o, name[i]);
    }
    if (at == s->first_function_at) {
      // Plain constants first: the spec-constant ISubs use the 1s.
      for (int pass = 0; pass < 2; ++pass) {
        for (uint32_t i = 0; i < s->constant_count; ++i) {
          const kiln_clamp_constant_t* c = &s->constants[i];
          if (c->spec != (pass == 1)) continue;
          if (!c->spec) {
            kiln_clamp_emit(&o, (4u << 16) | kOpConstant);
            kiln_clamp_emit(&o, c->type);
            kiln_clamp_emit(&o, c->id);
            kiln_clamp_emit(&o, c->value);
          } else {
            kiln_clamp_emit(&o, (6u << 16) | kOpSpecConstantOp);
            kiln_clamp_emit(&o, c->type);
            kiln_clamp_emit(&o, c->id);
            kiln_clamp_emit(&o, kOpISub);
            kiln_clamp_emit(&o, c->length);
            kiln_clamp_emit(&o, c->one);
          }
        }
      }
    }
    uint32_t first = next_clamp;
    while (next_clamp < s->clamp_count && s->clamps[next_clamp].instruction == at) {
      const kiln_clamp_t* c = &s->clamps[next_clamp++];
      kiln_clamp_emit(&o, (7u << 16) | kOpExtInst);
      kiln_clamp_emit(&o, c->type);
      kiln_clamp_emit(&o, c->id);
      kiln_clamp_emit(&o, glsl_import);
      kiln_clamp_emit(&o, kGlslUMin);
      kiln_clamp_emit(&o, s->words[c->word]);
      kiln_clamp_emit(&o, c->bound);
    }
    uint32_t* instruction = o;
    memcpy(o, &s->words[at], length * sizeof(uint32_t));
    o += length;
    for (uint32_t i = first; i < next_clamp; ++i) {
      instruction[s->clamps[i].word - at] = s->clamps[i].id;
    }
    at += length;
  }
  return (size_t)(o - out);
}

kiln_status_t kiln_hal_spirv_clamp_local(const kiln_hal_device_info_t* info,
                                         kiln_allocator_t allocator, const uint32_t* words,
                                         size_t word_count, uint32_t** out_words,
                                         size_t* out_word_count) {
  *out_words = NULL;
  *out_word_count = 0;
  if (word_count < 5 || words[3] == 0 || words[3] > kMaxIdBound) {
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED, "id bound outside the local clamp's range");
  }
  kiln_clamp_state_t* s = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc(allocator, sizeof(*s), (void**)&s));
  s->allocator = allocator;
  s->words = words;
  s->word_count = word_count;
  s->bound = words[3];
  kiln_status_t status = kiln_allocator_calloc_array(allocator, s->bound, sizeof(size_t),
                                                     (void**)&s->def_at);
  if (!status) {
    status = kiln_allocator_calloc_array(allocator, s->bound, sizeof(uint32_t),
                                         (void**)&s->type_of);
  }
  const char* env_name = NULL;
  spv_context context = NULL;
  if (!status) {
    context = spvContextCreate((spv_target_env)kiln_hal_spirv_env(info, &env_name));
    if (!context) status = kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "spvContextCreate failed");
  }
  if (!status && spvBinaryParse(context, s, words, word_count, NULL, kiln_clamp_record, NULL) !=
                     SPV_SUCCESS) {
    s->unsupported = true;
  }
  if (context) spvContextDestroy(context);
  if (!status && (!s->memory_model_at || !s->first_function_at)) s->unsupported = true;
  // Plan: every access chain in the functions.
  uint32_t glsl_import = s->glsl_import;
  bool add_import = false;
  for (size_t at = s->first_function_at; !status && !s->unsupported && at && at < word_count;
       at += words[at] >> 16) {
    uint32_t opcode = words[at] & 0xffff;
    if (opcode == kOpAccessChain || opcode == kOpInBoundsAccessChain) {
      kiln_clamp_plan_chain(s, at);
    }
  }
  if (!status && !s->unsupported && s->clamp_count > 0 && !glsl_import) {
    glsl_import = kiln_clamp_new_id(s);
    add_import = true;
  }
  if (!status && s->unsupported) {
    status = kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                              "SPIR-V uses a form the local clamp does not handle");
  }
  uint32_t* out = NULL;
  if (!status) {
    size_t extra = (add_import ? 6 : 0) + (size_t)s->constant_count * 6 +
                   (size_t)s->clamp_count * 7;
    status = kiln_allocator_malloc(allocator, (word_count + extra) * sizeof(uint32_t),
                                   (void**)&out);
  }
  if (!status) {
    *out_word_count = kiln_clamp_write(s, glsl_import, add_import, out);
    *out_words = out;
  }
  kiln_allocator_free(allocator, s->clamps);
  kiln_allocator_free(allocator, s->type_of);
  kiln_allocator_free(allocator, s->def_at);
  kiln_allocator_free(allocator, s);
  return status;
}
