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
//
// Cooperative-matrix loads and stores (SPV_NV_cooperative_matrix) reach
// rows x stride elements past their pointer, which an index clamp alone
// does not bound. A workgroup one must take its pointer from a one-index
// access chain into a fixed-length array of L elements; its stride s is
// clamped to (L - minor) / (major - 1) and the index to
// (L - minor) - (major - 1) * s, where major is the matrix's row count
// (columns when column-major) and minor the elements one row spans, so the
// whole access stays in the array. A buffer one is left to the device only
// where cooperativeMatrixRobustBufferAccess is on. Anything else is refused
// (kiln_hal_spirv_cooperative_matrix_status): the full pass knows nothing
// of these instructions.
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
  kOpIMul = 132,
  kOpTypeFloat = 22,
  kOpConstantTrue = 41,
  kOpConstantFalse = 42,
  kOpVariable = 59,
  kOpTypeCooperativeMatrixKHR = 4456,
  kOpCooperativeMatrixLoadKHR = 4457,
  kOpCooperativeMatrixStoreKHR = 4458,
  kOpTypeCooperativeMatrixNV = 5358,
  kOpCooperativeMatrixLoadNV = 5359,
  kOpCooperativeMatrixStoreNV = 5360,
  kStorageWorkgroup = 4,
  kMaxCoopOps = 512,
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

// One workgroup cooperative-matrix load/store and the clamps planned for it.
typedef struct kiln_coop_patch_t {
  size_t chain_at;     // the one-index access chain giving its pointer
  size_t op_at;        // the load / store
  size_t stride_word;  // word offset of its stride operand
  uint32_t type;       // the 32-bit int type of index and stride
  uint32_t stride_max, major_less_one, room;  // constants (ids)
  uint32_t stride_id, product_id, bound_id, index_id;
} kiln_coop_patch_t;

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
  size_t coop_ops[kMaxCoopOps];  // word offsets of the NV loads / stores
  uint32_t coop_op_count;
  kiln_coop_patch_t coop_patches[kMaxCoopOps];
  uint32_t coop_patch_count;
  const char* coop_refusal;  // set: refuse the module, with this reason
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
    case kOpCooperativeMatrixLoadNV:
    case kOpCooperativeMatrixStoreNV:
      if (s->coop_op_count == kMaxCoopOps) {
        s->coop_refusal = "more cooperative-matrix loads and stores than the clamp plans";
      } else {
        s->coop_ops[s->coop_op_count++] = at;
      }
      break;
    case kOpTypeCooperativeMatrixKHR:
    case kOpCooperativeMatrixLoadKHR:
    case kOpCooperativeMatrixStoreKHR:
      s->coop_refusal = "SPV_KHR_cooperative_matrix is not bounded by kiln's clamp";
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

// Bytes of a scalar or vector numeric type, 0 for anything else.
static uint32_t kiln_clamp_type_bytes(const kiln_clamp_state_t* s, uint32_t type) {
  const uint32_t* def = kiln_clamp_def(s, type);
  uint32_t opcode = kiln_clamp_opcode(def);
  if ((opcode == kOpTypeInt || opcode == kOpTypeFloat) && def[2] % 8 == 0) return def[2] / 8;
  if (opcode == kOpTypeVector && (def[0] >> 16) == 4 && def[3] <= 16) {
    return kiln_clamp_type_bytes(s, def[2]) * def[3];
  }
  return 0;
}

// The value of an OpConstant 32-bit integer, or false.
static bool kiln_clamp_constant_value(const kiln_clamp_state_t* s, uint32_t id,
                                      uint32_t* out_value) {
  const uint32_t* def = kiln_clamp_def(s, id);
  if (kiln_clamp_opcode(def) != kOpConstant || (def[0] >> 16) != 4 ||
      !kiln_clamp_is_int32(s, def[1])) {
    return false;
  }
  *out_value = def[3];
  return true;
}

// Plans the clamps of the cooperative-matrix load/store at word `at` (see
// the top of the file), or sets coop_refusal.
static void kiln_clamp_plan_coop(kiln_clamp_state_t* s, const kiln_hal_device_info_t* info,
                                 size_t at) {
  const uint32_t* op = &s->words[at];
  bool load = (op[0] & 0xffff) == kOpCooperativeMatrixLoadNV;
  if ((op[0] >> 16) < (load ? 6u : 5u)) {
    s->coop_refusal = "a malformed cooperative-matrix instruction";
    return;
  }
  uint32_t pointer = load ? op[3] : op[1];
  uint32_t stride = load ? op[4] : op[3];
  uint32_t column_major = load ? op[5] : op[4];
  uint32_t matrix_type = load ? op[1] : (op[2] < s->bound ? s->type_of[op[2]] : 0);
  const uint32_t* pointer_type =
      kiln_clamp_def(s, pointer < s->bound ? s->type_of[pointer] : 0);
  if (kiln_clamp_opcode(pointer_type) != kOpTypePointer) {
    s->coop_refusal = "a cooperative-matrix pointer of unknown type";
    return;
  }
  uint32_t storage = pointer_type[2];
  if (storage == kStorageStorageBuffer || storage == kStorageUniform) {
    if (!info->cooperative_matrix_robust_buffer_access) {
      s->coop_refusal = "a cooperative-matrix buffer access on a device without "
                        "cooperativeMatrixRobustBufferAccess";
    }
    return;
  }
  if (storage != kStorageWorkgroup) {
    s->coop_refusal = "a cooperative-matrix access outside workgroup and buffer memory";
    return;
  }
  const uint32_t* chain = kiln_clamp_def(s, pointer);
  uint32_t chain_opcode = kiln_clamp_opcode(chain);
  const uint32_t* variable = chain ? kiln_clamp_def(s, chain[3]) : NULL;
  const uint32_t* variable_type =
      variable ? kiln_clamp_def(s, s->type_of[chain[3]]) : NULL;
  const uint32_t* array =
      kiln_clamp_opcode(variable_type) == kOpTypePointer ? kiln_clamp_def(s, variable_type[3])
                                                         : NULL;
  uint32_t length = 0;
  if ((chain_opcode != kOpAccessChain && chain_opcode != kOpInBoundsAccessChain) ||
      (chain[0] >> 16) != 5 || kiln_clamp_opcode(variable) != kOpVariable ||
      kiln_clamp_opcode(array) != kOpTypeArray ||
      !kiln_clamp_constant_value(s, array[3], &length)) {
    s->coop_refusal = "a workgroup cooperative-matrix pointer that is not one index into "
                      "a fixed-length array variable";
    return;
  }
  const uint32_t* matrix = kiln_clamp_def(s, matrix_type);
  uint32_t rows = 0, columns = 0;
  const uint32_t* flag = kiln_clamp_def(s, column_major);
  uint32_t element_bytes = kiln_clamp_type_bytes(s, array[2]);
  uint32_t component_bytes =
      kiln_clamp_opcode(matrix) == kOpTypeCooperativeMatrixNV && (matrix[0] >> 16) == 6
          ? kiln_clamp_type_bytes(s, matrix[2])
          : 0;
  if (!component_bytes || !element_bytes ||
      !kiln_clamp_constant_value(s, matrix[4], &rows) ||
      !kiln_clamp_constant_value(s, matrix[5], &columns) || rows == 0 || columns == 0 ||
      rows > 1024 || columns > 1024 ||
      (kiln_clamp_opcode(flag) != kOpConstantTrue && kiln_clamp_opcode(flag) != kOpConstantFalse)) {
    s->coop_refusal = "a cooperative-matrix shape, element type or layout the clamp "
                      "cannot read as constants";
    return;
  }
  bool by_column = kiln_clamp_opcode(flag) == kOpConstantTrue;
  uint32_t major = by_column ? columns : rows;
  uint32_t minor_bytes = (by_column ? rows : columns) * component_bytes;
  uint32_t minor = (minor_bytes + element_bytes - 1) / element_bytes;
  uint32_t type = s->type_of[chain[4]];
  if (!kiln_clamp_is_int32(s, type) || stride >= s->bound || s->type_of[stride] != type) {
    s->coop_refusal = "a cooperative-matrix index or stride that is not a 32-bit integer "
                      "of one type";
    return;
  }
  if (length < minor) {
    s->coop_refusal = "a cooperative-matrix access larger than its array";
    return;
  }
  uint32_t room = length - minor;
  for (uint32_t i = 0; i < s->coop_patch_count; ++i) {
    const kiln_coop_patch_t* first = &s->coop_patches[i];
    if (first->chain_at != s->def_at[pointer]) continue;
    // A pointer the optimizer shared between accesses of one shape, layout
    // and stride operand (a tile stored and loaded back) takes one clamp:
    // the chain's, which every use of the pointer follows. The op only
    // takes the clamped stride; anything else is refused.
    if (s->words[first->stride_word] != stride || first->type != type ||
        first->room != kiln_clamp_constant(s, type, room) ||
        first->major_less_one != kiln_clamp_constant(s, type, major - 1)) {
      s->coop_refusal = "one pointer shared by cooperative-matrix accesses of different "
                        "shapes, layouts or strides";
      return;
    }
    kiln_coop_patch_t* alias = &s->coop_patches[s->coop_patch_count++];
    *alias = *first;
    alias->op_at = at;
    alias->stride_word = at + (load ? 4 : 3);
    return;
  }
  kiln_coop_patch_t* patch = &s->coop_patches[s->coop_patch_count++];
  patch->chain_at = s->def_at[pointer];
  patch->op_at = at;
  patch->stride_word = at + (load ? 4 : 3);
  patch->type = type;
  patch->room = kiln_clamp_constant(s, type, room);
  patch->major_less_one = kiln_clamp_constant(s, type, major - 1);
  patch->stride_max = kiln_clamp_constant(s, type, major > 1 ? room / (major - 1) : room);
  patch->stride_id = kiln_clamp_new_id(s);
  patch->product_id = kiln_clamp_new_id(s);
  patch->bound_id = kiln_clamp_new_id(s);
  patch->index_id = kiln_clamp_new_id(s);
}

// The patch whose chain (or, `op`, whose load / store) is at `at`, or NULL.
static const kiln_coop_patch_t* kiln_clamp_coop_at(const kiln_clamp_state_t* s, size_t at,
                                                   bool op) {
  for (uint32_t i = 0; i < s->coop_patch_count; ++i) {
    if ((op ? s->coop_patches[i].op_at : s->coop_patches[i].chain_at) == at) {
      return &s->coop_patches[i];
    }
  }
  return NULL;
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
    const kiln_coop_patch_t* chain = kiln_clamp_coop_at(s, at, false);
    if (chain) {
      // s' = UMin(s, stride_max); bound = room - (major - 1) * s';
      // index' = UMin(index, bound).
      kiln_clamp_emit(&o, (7u << 16) | kOpExtInst);
      kiln_clamp_emit(&o, chain->type);
      kiln_clamp_emit(&o, chain->stride_id);
      kiln_clamp_emit(&o, glsl_import);
      kiln_clamp_emit(&o, kGlslUMin);
      kiln_clamp_emit(&o, s->words[chain->stride_word]);
      kiln_clamp_emit(&o, chain->stride_max);
      kiln_clamp_emit(&o, (5u << 16) | kOpIMul);
      kiln_clamp_emit(&o, chain->type);
      kiln_clamp_emit(&o, chain->product_id);
      kiln_clamp_emit(&o, chain->stride_id);
      kiln_clamp_emit(&o, chain->major_less_one);
      kiln_clamp_emit(&o, (5u << 16) | kOpISub);
      kiln_clamp_emit(&o, chain->type);
      kiln_clamp_emit(&o, chain->bound_id);
      kiln_clamp_emit(&o, chain->room);
      kiln_clamp_emit(&o, chain->product_id);
      kiln_clamp_emit(&o, (7u << 16) | kOpExtInst);
      kiln_clamp_emit(&o, chain->type);
      kiln_clamp_emit(&o, chain->index_id);
      kiln_clamp_emit(&o, glsl_import);
      kiln_clamp_emit(&o, kGlslUMin);
      kiln_clamp_emit(&o, s->words[at + 4]);
      kiln_clamp_emit(&o, chain->bound_id);
    }
    const kiln_coop_patch_t* op = kiln_clamp_coop_at(s, at, true);
    uint32_t* instruction = o;
    memcpy(o, &s->words[at], length * sizeof(uint32_t));
    o += length;
    for (uint32_t i = first; i < next_clamp; ++i) {
      instruction[s->clamps[i].word - at] = s->clamps[i].id;
    }
    if (chain) instruction[4] = chain->index_id;
    if (op) instruction[op->stride_word - at] = op->stride_id;
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
  // Plan: the cooperative-matrix accesses, then every other access chain
  // in the functions.
  for (uint32_t i = 0; !status && !s->unsupported && !s->coop_refusal && i < s->coop_op_count;
       ++i) {
    kiln_clamp_plan_coop(s, info, s->coop_ops[i]);
  }
  if (!status && s->coop_refusal) {
    status = kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "SPIR-V refused: %s (docs/security.md)", s->coop_refusal);
  }
  uint32_t glsl_import = s->glsl_import;
  bool add_import = false;
  for (size_t at = s->first_function_at; !status && !s->unsupported && at && at < word_count;
       at += words[at] >> 16) {
    uint32_t opcode = words[at] & 0xffff;
    if ((opcode == kOpAccessChain || opcode == kOpInBoundsAccessChain) &&
        !kiln_clamp_coop_at(s, at, false)) {
      kiln_clamp_plan_chain(s, at);
    }
  }
  if (!status && !s->unsupported && s->clamp_count + s->coop_patch_count > 0 && !glsl_import) {
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
                   (size_t)s->clamp_count * 7 + (size_t)s->coop_patch_count * 24;
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
