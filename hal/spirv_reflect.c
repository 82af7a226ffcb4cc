// Reflection of a variant's validated SPIR-V against the interface the module
// declares for it. A module is untrusted: a driver given a pipeline layout
// that differs from what its SPIR-V uses (a set or binding it lacks, another
// descriptor type, a short push-constant range, a workgroup size other than
// the one kiln dispatches for) reads and writes out of bounds. So the
// SPIR-V's resources, push-constant size and specialized workgroup size must
// EQUAL the declared metadata, every specialization constant must exist and
// be 32-bit, and the workgroup memory after specialization is reported for
// the device-limit check. Runs after SPIRV-Tools validation; still checks
// every index it reads.
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kiln/base/size_math.h"
#include "hal_internal.h"

enum {
  kOpEntryPoint = 15, kOpExecutionMode = 16, kOpTypeBool = 20,
  kOpTypeInt = 21, kOpTypeFloat = 22, kOpTypeVector = 23, kOpTypeMatrix = 24,
  kOpTypeImage = 25, kOpTypeSampledImage = 27, kOpTypeArray = 28,
  kOpTypeRuntimeArray = 29, kOpTypeStruct = 30, kOpTypePointer = 32,
  kOpConstantTrue = 41, kOpConstantFalse = 42, kOpConstant = 43,
  kOpConstantComposite = 44, kOpConstantNull = 46, kOpSpecConstantTrue = 48,
  kOpSpecConstantFalse = 49, kOpSpecConstant = 50,
  kOpSpecConstantComposite = 51, kOpSpecConstantOp = 52, kOpFunction = 54,
  kOpVariable = 59, kOpDecorate = 71, kOpMemberDecorate = 72,
  kOpExecutionModeId = 331,
  // Decorations, storage classes, execution modes, built-ins.
  kDecSpecId = 1, kDecBlock = 2, kDecBufferBlock = 3, kDecArrayStride = 6,
  kDecBuiltIn = 11, kDecNonWritable = 24, kDecBinding = 33,
  kDecDescriptorSet = 34, kDecOffset = 35, kBuiltInWorkgroupSize = 25,
  kScUniformConstant = 0, kScUniform = 2, kScWorkgroup = 4,
  kScPushConstant = 9, kScStorageBuffer = 12, kModeLocalSize = 17,
  kModeLocalSizeId = 38, kDimBuffer = 5,
  kMaxSpecConstants = 64, kMaxTypeDepth = 16, kMaxTypeVisits = 1 << 16,
  // Each entry point costs a few passes over the words.
  kMaxEntryWords = 1 << 26, kMaxResourceVariables = 128,
};

enum {
  kHasSet = 1, kHasBinding = 2, kHasSpecId = 4, kWorkgroupBuiltIn = 8,
  kNonWritable = 16, kBlock = 32, kBufferBlock = 64, kKnown = 128,
};

typedef struct kiln_spirv_id_t {
  uint32_t at;  // word index of the defining instruction; 0 = undefined
  uint32_t set, binding, spec_id, array_stride;
  uint32_t flags;
  uint64_t value;  // a scalar constant's specialized value when kKnown
} kiln_spirv_id_t;

typedef struct kiln_spirv_reflector_t {
  const uint32_t* words;
  size_t count;
  uint32_t bound;
  kiln_spirv_id_t* ids;
  const kiln_hal_executable_variant_spec_t* variant;
  const char* exe;
  uint32_t variant_index;
  uint32_t type_visits;  // bounds type_size over nested structs
  bool spec_found[kMaxSpecConstants];
} kiln_spirv_reflector_t;

typedef struct kiln_spirv_resource_t {
  uint32_t set, binding;
  kiln_hal_binding_type_t type;
  bool read_only;
} kiln_spirv_resource_t;

// A refusal whose message names the executable and variant first.
static kiln_status_t refuse(const kiln_spirv_reflector_t* r,
                            const char* format, ...) KILN_PRINTF_LIKE(2, 3);
static kiln_status_t refuse(const kiln_spirv_reflector_t* r,
                            const char* format, ...) {
  char detail[384];
  va_list args;
  va_start(args, format);
  vsnprintf(detail, sizeof(detail), format, args);
  va_end(args);
  return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                          "executable '%s' variant %u ('%s'): %s", r->exe,
                          r->variant_index, r->variant->selector, detail);
}

// The defining instruction of `id` (its first word), or NULL.
static const uint32_t* def(const kiln_spirv_reflector_t* r, uint32_t id) {
  if (id == 0 || id >= r->bound || r->ids[id].at == 0) return NULL;
  return &r->words[r->ids[id].at];
}

static uint32_t def_opcode(const kiln_spirv_reflector_t* r, uint32_t id) {
  const uint32_t* d = def(r, id);
  return d ? (d[0] & 0xffff) : 0;
}

// Bit width of a scalar type (bool counts as 32: a VkBool32); 0 otherwise.
static uint32_t scalar_width(const kiln_spirv_reflector_t* r, uint32_t type) {
  const uint32_t* d = def(r, type);
  if (!d) return 0;
  uint32_t op = d[0] & 0xffff;
  if (op == kOpTypeBool) return 32;
  if ((op == kOpTypeInt || op == kOpTypeFloat) && (d[0] >> 16) >= 3) {
    return d[2];
  }
  return 0;
}

static bool known(const kiln_spirv_reflector_t* r, uint32_t id,
                  uint64_t* out) {
  if (!def(r, id) || !(r->ids[id].flags & kKnown)) return false;
  *out = r->ids[id].value;
  return true;
}

// A component of a (spec) constant composite, followed to its scalar.
static bool composite_component(const kiln_spirv_reflector_t* r,
                                uint32_t composite, uint32_t index,
                                uint64_t* out) {
  const uint32_t* d = def(r, composite);
  if (!d) return false;
  uint32_t op = d[0] & 0xffff, length = d[0] >> 16;
  if (op != kOpConstantComposite && op != kOpSpecConstantComposite) {
    return false;
  }
  if (length < 3 || index >= length - 3) return false;
  return known(r, d[3 + index], out);
}

// OpSpecConstantOp over 32-bit unsigned values: the operations compilers use
// for array sizes and workgroup sizes. Anything else stays unknown, which
// makes a workgroup array sized by it a refusal, not a guess.
static bool eval_spec_op(const kiln_spirv_reflector_t* r, const uint32_t* d,
                         uint32_t length, uint64_t* out) {
  if (length < 5) return false;
  uint32_t op = d[3];
  if (op == 81) {  // CompositeExtract with one index
    return length == 6 && composite_component(r, d[4], d[5], out);
  }
  uint64_t a = 0, b = 0, c = 0;
  if (!known(r, d[4], &a)) return false;
  if (length >= 6 && !known(r, d[5], &b)) return false;
  if (length == 7 && !known(r, d[6], &c)) return false;
  bool binary = length == 6;
  switch (op) {
    case 128: if (!binary) return false; *out = a + b; return true;
    case 130: if (!binary) return false; *out = a - b; return true;
    case 132: if (!binary) return false; *out = a * b; return true;
    case 134: if (!binary || !b) return false; *out = a / b; return true;
    case 137: if (!binary || !b) return false; *out = a % b; return true;
    case 194: if (!binary || b > 31) return false; *out = a >> b; return true;
    case 196: if (!binary || b > 31) return false; *out = a << b; return true;
    case 197: if (!binary) return false; *out = a | b; return true;
    case 198: if (!binary) return false; *out = a ^ b; return true;
    case 199: if (!binary) return false; *out = a & b; return true;
    case 169: if (length != 7) return false; *out = a ? b : c; return true;
    case 170: if (!binary) return false; *out = a == b; return true;
    case 171: if (!binary) return false; *out = a != b; return true;
    case 172: if (!binary) return false; *out = a > b; return true;
    case 174: if (!binary) return false; *out = a >= b; return true;
    case 176: if (!binary) return false; *out = a < b; return true;
    case 178: if (!binary) return false; *out = a <= b; return true;
    default: return false;
  }
}

// The value kiln specializes `spec_id` to, if the variant sets it.
static bool declared_spec(kiln_spirv_reflector_t* r, uint32_t spec_id,
                          uint32_t* out) {
  for (uint32_t i = 0; i < r->variant->specialization_constant_count; ++i) {
    if (r->variant->specialization_constants[i].id == spec_id) {
      r->spec_found[i] = true;
      *out = r->variant->specialization_constants[i].value;
      return true;
    }
  }
  return false;
}

// Records a scalar (spec) constant's value after specialization.
static kiln_status_t eval_constant(kiln_spirv_reflector_t* r, uint32_t at) {
  const uint32_t* d = &r->words[at];
  uint32_t op = d[0] & 0xffff, length = d[0] >> 16;
  kiln_spirv_id_t* id = &r->ids[d[2]];
  uint32_t width = scalar_width(r, d[1]);
  uint64_t value = 0;
  bool is_known = true;
  uint32_t given = 0;
  bool specialized = (op == kOpSpecConstant || op == kOpSpecConstantTrue ||
                      op == kOpSpecConstantFalse) &&
                     (id->flags & kHasSpecId) &&
                     declared_spec(r, id->spec_id, &given);
  if (specialized && width != 32) {
    return refuse(r, "specialization constant %u is %u-bit in the SPIR-V; "
                  "kiln passes 32-bit values", id->spec_id, width);
  }
  switch (op) {
    case kOpConstantTrue: case kOpSpecConstantTrue: value = 1; break;
    case kOpConstantFalse: case kOpSpecConstantFalse: case kOpConstantNull:
      value = 0;
      break;
    case kOpConstant: case kOpSpecConstant:
      if (length < 4) return refuse(r, "SPIR-V constant %%%u has no value", d[2]);
      value = d[3];
      if (width == 64 && length >= 5) value |= (uint64_t)d[4] << 32;
      break;
    case kOpSpecConstantOp:
      is_known = eval_spec_op(r, d, length, &value);
      break;
    default:
      is_known = false;  // composites are read through their components
  }
  if (specialized) {
    bool is_bool = def_opcode(r, d[1]) == kOpTypeBool;
    value = is_bool ? (given != 0) : given;
  }
  if (width && width < 64) value &= (UINT64_C(1) << width) - 1;
  id->value = value;
  if (is_known && width) id->flags |= kKnown;
  return kiln_ok_status();
}

static void decorate(kiln_spirv_reflector_t* r, const uint32_t* d,
                     uint32_t length) {
  uint32_t target = d[1];
  if (target >= r->bound) return;  // the validator refuses these anyway
  kiln_spirv_id_t* id = &r->ids[target];
  uint32_t literal = length >= 4 ? d[3] : 0;
  switch (d[2]) {
    case kDecSpecId: id->flags |= kHasSpecId; id->spec_id = literal; break;
    case kDecBlock: id->flags |= kBlock; break;
    case kDecBufferBlock: id->flags |= kBufferBlock; break;
    case kDecArrayStride: id->array_stride = literal; break;
    case kDecNonWritable: id->flags |= kNonWritable; break;
    case kDecBinding: id->flags |= kHasBinding; id->binding = literal; break;
    case kDecDescriptorSet: id->flags |= kHasSet; id->set = literal; break;
    case kDecBuiltIn:
      if (literal == kBuiltInWorkgroupSize) id->flags |= kWorkgroupBuiltIn;
      break;
    default: break;
  }
}

// One pass: instruction bounds, definitions, decorations, constants.
static kiln_status_t scan(kiln_spirv_reflector_t* r) {
  for (size_t at = 5; at < r->count;) {
    uint32_t length = r->words[at] >> 16, op = r->words[at] & 0xffff;
    if (length == 0 || length > r->count - at) {
      return refuse(r, "SPIR-V instruction at word %zu overruns the module",
                    at);
    }
    const uint32_t* d = &r->words[at];
    uint32_t result = 0;
    if (op >= 19 && op <= 39 && length >= 2) result = d[1];  // OpType*
    if (((op >= kOpConstantTrue && op <= kOpSpecConstantOp) ||
         op == kOpFunction || op == kOpVariable) && length >= 3) {
      result = d[2];
    }
    if (result) {
      if (result >= r->bound) {
        return refuse(r, "SPIR-V id %u is past the bound %u", result,
                      r->bound);
      }
      r->ids[result].at = (uint32_t)at;
    }
    if (op == kOpDecorate && length >= 3) decorate(r, d, length);
    if (op >= kOpConstantTrue && op <= kOpSpecConstantOp && length >= 3) {
      KILN_RETURN_IF_ERROR(eval_constant(r, (uint32_t)at));
    }
    at += length;
  }
  for (uint32_t i = 0; i < r->variant->specialization_constant_count; ++i) {
    if (!r->spec_found[i]) {
      return refuse(r, "specialization constant id %u (value %u) is not "
                    "declared in the SPIR-V",
                    r->variant->specialization_constants[i].id,
                    r->variant->specialization_constants[i].value);
    }
  }
  return kiln_ok_status();
}

// Offset of struct member `member`, or UINT32_MAX when undecorated.
static uint32_t member_offset(const kiln_spirv_reflector_t* r,
                              uint32_t structure, uint32_t member) {
  for (size_t at = 5; at < r->count; at += r->words[at] >> 16) {
    const uint32_t* d = &r->words[at];
    if ((d[0] & 0xffff) == kOpFunction) break;  // annotations come first
    if ((d[0] & 0xffff) == kOpMemberDecorate && (d[0] >> 16) >= 5 &&
        d[1] == structure && d[2] == member && d[3] == kDecOffset) {
      return d[4];
    }
  }
  return UINT32_MAX;
}

// Bytes a type occupies; `offsets` uses the Offset decorations of structs
// (push constants) rather than packing members (workgroup memory).
static bool type_size(kiln_spirv_reflector_t* r, uint32_t type,
                      bool offsets, int depth, uint64_t* out) {
  const uint32_t* d = def(r, type);
  // Structs of structs can fan out exponentially: a budget, not a guess.
  if (!d || depth > kMaxTypeDepth || ++r->type_visits > kMaxTypeVisits) {
    return false;
  }
  uint32_t op = d[0] & 0xffff, length = d[0] >> 16;
  uint64_t inner = 0, count = 0;
  switch (op) {
    case kOpTypeBool: case kOpTypeInt: case kOpTypeFloat:
      *out = scalar_width(r, type) / 8;
      return *out != 0;
    case kOpTypeVector: case kOpTypeMatrix:
      return length >= 4 && type_size(r, d[2], offsets, depth + 1, &inner) &&
             kiln_u64_mul(inner, d[3], out);
    case kOpTypeArray:
      if (length < 4 || !known(r, d[3], &count) ||
          !type_size(r, d[2], offsets, depth + 1, &inner)) {
        return false;
      }
      if (r->ids[type].array_stride) inner = r->ids[type].array_stride;
      return kiln_u64_mul(inner, count, out);
    case kOpTypeStruct: {
      uint64_t total = 0;
      for (uint32_t m = 0; m + 2 < length; ++m) {
        if (!type_size(r, d[2 + m], offsets, depth + 1, &inner)) return false;
        uint32_t offset = offsets ? member_offset(r, type, m) : UINT32_MAX;
        uint64_t end = 0;
        if (offset == UINT32_MAX) {
          if (!kiln_u64_add(total, inner, &total)) return false;
        } else if (kiln_u64_add(offset, inner, &end) && end > total) {
          total = end;
        }
      }
      *out = total;
      return true;
    }
    default:
      return false;
  }
}

// The descriptor type of a resource variable, or a refusal naming it.
static kiln_status_t classify(const kiln_spirv_reflector_t* r,
                              uint32_t variable, uint32_t storage,
                              uint32_t pointee, kiln_spirv_resource_t* out) {
  const kiln_spirv_id_t* v = &r->ids[variable];
  const uint32_t* t = def(r, pointee);
  uint32_t op = t ? (t[0] & 0xffff) : 0;
  if (!(v->flags & kHasSet) || !(v->flags & kHasBinding)) {
    return refuse(r, "SPIR-V resource variable %%%u lacks a descriptor set "
                  "or binding", variable);
  }
  out->set = v->set;
  out->binding = v->binding;
  if (storage == kScUniformConstant && op == kOpTypeSampledImage &&
      (t[0] >> 16) >= 3) {
    t = def(r, t[2]);
    op = t ? (t[0] & 0xffff) : 0;
  }
  if (storage == kScUniformConstant && op == kOpTypeImage &&
      (t[0] >> 16) >= 9 && t[3] == kDimBuffer && t[7] == 1 &&
      def_opcode(r, t[2]) == kOpTypeFloat && scalar_width(r, t[2]) == 32) {
    out->type = KILN_HAL_BINDING_UNIFORM_TEXEL_BUFFER_VEC4F32;
    out->read_only = true;
    return kiln_ok_status();
  }
  uint32_t block = op == kOpTypeStruct ? r->ids[pointee].flags : 0;
  if ((storage == kScStorageBuffer && (block & kBlock)) ||
      (storage == kScUniform && (block & kBufferBlock))) {
    out->type = KILN_HAL_BINDING_STORAGE_BUFFER;
    // Read-only when the variable, or every member, is NonWritable.
    bool read_only = (v->flags & kNonWritable) != 0;
    if (!read_only) {
      uint32_t members = (t[0] >> 16) - 2, non_writable = 0;
      for (size_t at = 5; at < r->count; at += r->words[at] >> 16) {
        const uint32_t* d = &r->words[at];
        if ((d[0] & 0xffff) == kOpFunction) break;
        if ((d[0] & 0xffff) == kOpMemberDecorate && (d[0] >> 16) >= 4 &&
            d[1] == pointee && d[3] == kDecNonWritable) {
          non_writable++;
        }
      }
      read_only = members > 0 && non_writable >= members;
    }
    out->read_only = read_only;
    return kiln_ok_status();
  }
  return refuse(r, "SPIR-V set %u binding %u has a descriptor type kiln "
                "does not bind (storage class %u, type opcode %u): only "
                "storage buffers and vec4 f32 uniform texel buffers",
                v->set, v->binding, storage, op);
}

// The entry point's specialized workgroup size: the WorkgroupSize built-in
// if any, else LocalSizeId, else LocalSize. The built-in takes precedence
// by the spec, but a LocalSize beside it must not exceed it: drivers have
// been seen to size things by LocalSize anyway (lavapipe crashed on a
// LocalSize y of 0xffffffff); compilers emit 1x1x1 or the same size.
static kiln_status_t workgroup_size(const kiln_spirv_reflector_t* r,
                                    uint32_t function, const char* name,
                                    uint32_t out[3]) {
  bool has_mode = false, has_builtin = false;
  uint32_t mode[3] = {0, 0, 0};
  for (size_t at = 5; at < r->count; at += r->words[at] >> 16) {
    const uint32_t* d = &r->words[at];
    uint32_t op = d[0] & 0xffff, length = d[0] >> 16;
    if (op == kOpFunction) break;
    uint64_t value[3] = {0, 0, 0};
    if ((op == kOpConstantComposite || op == kOpSpecConstantComposite) &&
        length >= 3 && d[2] < r->bound &&
        (r->ids[d[2]].flags & kWorkgroupBuiltIn)) {
      for (uint32_t i = 0; i < 3; ++i) {
        if (!composite_component(r, d[2], i, &value[i])) {
          return refuse(r, "entry point '%s': the WorkgroupSize built-in "
                        "has a component kiln cannot evaluate", name);
        }
        out[i] = (uint32_t)value[i];
      }
      has_builtin = true;
      continue;
    }
    if (has_mode || length < 6 || d[1] != function) continue;
    if (op == kOpExecutionMode && d[2] == kModeLocalSize) {
      memcpy(mode, &d[3], sizeof(mode));
      has_mode = true;
    } else if (op == kOpExecutionModeId && d[2] == kModeLocalSizeId) {
      for (uint32_t i = 0; i < 3; ++i) {
        if (!known(r, d[3 + i], &value[i])) {
          return refuse(r, "entry point '%s': LocalSizeId operand %u is not "
                        "a constant kiln can evaluate", name, i);
        }
        mode[i] = (uint32_t)value[i];
      }
      has_mode = true;
    }
  }
  if (!has_builtin && !has_mode) {
    return refuse(r, "entry point '%s': the SPIR-V declares no workgroup "
                  "size", name);
  }
  if (!has_builtin) {
    memcpy(out, mode, sizeof(mode));
  } else if (has_mode && (mode[0] > out[0] || mode[1] > out[1] ||
                          mode[2] > out[2])) {
    return refuse(r, "entry point '%s': LocalSize %ux%ux%u exceeds the "
                  "WorkgroupSize built-in %ux%ux%u", name, mode[0], mode[1],
                  mode[2], out[0], out[1], out[2]);
  }
  return kiln_ok_status();
}

static bool in_interface(const uint32_t* entry, uint32_t first,
                         uint32_t length, uint32_t id) {
  for (uint32_t i = first; i < length; ++i) {
    if (entry[i] == id) return true;
  }
  return false;
}

// Compares one entry point's SPIR-V interface with its declaration.
static kiln_status_t check_entry(kiln_spirv_reflector_t* r,
                                 const kiln_hal_entry_point_spec_t* entry,
                                 uint64_t* shared_bytes) {
  // Find the OpEntryPoint (its presence was checked by spec_verify).
  const uint32_t* ep = NULL;
  uint32_t ep_length = 0, first_interface = 0;
  size_t name_length = strlen(entry->name);
  for (size_t at = 5; at < r->count && !ep; at += r->words[at] >> 16) {
    const uint32_t* d = &r->words[at];
    uint32_t length = d[0] >> 16;
    if ((d[0] & 0xffff) != kOpEntryPoint || length < 4 || d[1] != 5) continue;
    const char* text = (const char*)&d[3];
    size_t capacity = (size_t)(length - 3) * 4;
    size_t text_length = strnlen(text, capacity);
    if (text_length == name_length && text_length < capacity &&
        memcmp(text, entry->name, name_length) == 0) {
      ep = d;
      ep_length = length;
      first_interface = 3 + (uint32_t)(text_length / 4 + 1);
    }
  }
  if (!ep) return refuse(r, "no compute entry point '%s'", entry->name);
  // SPIR-V 1.4+ lists every global an entry point uses; before, only
  // inputs and outputs, so every global of the module counts (compilers
  // drop unused ones; a superset is safe, a missing binding is not).
  bool listed = r->words[1] >= 0x00010400;
  uint32_t size[3];
  KILN_RETURN_IF_ERROR(workgroup_size(r, ep[2], entry->name, size));
  if (memcmp(size, entry->workgroup_size, sizeof(size)) != 0) {
    return refuse(r, "entry point '%s': workgroup size is %ux%ux%u in the "
                  "specialized SPIR-V but the module declares %ux%ux%u",
                  entry->name, size[0], size[1], size[2],
                  entry->workgroup_size[0], entry->workgroup_size[1],
                  entry->workgroup_size[2]);
  }
  kiln_spirv_resource_t found[KILN_HAL_MAX_BINDINGS_PER_DISPATCH];
  uint32_t found_count = 0, push_count = 0, resource_count = 0;
  uint64_t push_bytes = 0, shared = 0;
  for (size_t at = 5; at < r->count; at += r->words[at] >> 16) {
    const uint32_t* d = &r->words[at];
    if ((d[0] & 0xffff) == kOpFunction) break;
    if ((d[0] & 0xffff) != kOpVariable || (d[0] >> 16) < 4) continue;
    uint32_t storage = d[3], variable = d[2];
    if (listed && !in_interface(ep, first_interface, ep_length, variable)) {
      continue;
    }
    const uint32_t* pointer = def(r, d[1]);
    if (!pointer || (pointer[0] & 0xffff) != kOpTypePointer ||
        (pointer[0] >> 16) < 4) {
      return refuse(r, "SPIR-V variable %%%u has no pointer type", variable);
    }
    uint32_t pointee = pointer[3];
    uint64_t bytes = 0;
    if (storage == kScWorkgroup) {
      if (!type_size(r, pointee, false, 0, &bytes) ||
          !kiln_u64_add(shared, bytes, &shared)) {
        return refuse(r, "entry point '%s': workgroup variable %%%u has a "
                      "size kiln cannot evaluate after specialization",
                      entry->name, variable);
      }
    } else if (storage == kScPushConstant) {
      // Before SPIR-V 1.4 a module of several entry points (spirv-link)
      // holds each one's block: the largest must match.
      if ((listed && ++push_count > 1) ||
          !type_size(r, pointee, true, 0, &bytes)) {
        return refuse(r, "entry point '%s': push constants: one block of "
                      "evaluable size expected", entry->name);
      }
      if (bytes > push_bytes) push_bytes = bytes;
    } else if (storage == kScUniformConstant || storage == kScUniform ||
               storage == kScStorageBuffer) {
      if (++resource_count > kMaxResourceVariables) {
        return refuse(r, "entry point '%s': more than %d resource variables",
                      entry->name, kMaxResourceVariables);
      }
      kiln_spirv_resource_t resource;
      KILN_RETURN_IF_ERROR(classify(r, variable, storage, pointee, &resource));
      // Variables sharing a set and binding (linked modules) must agree.
      uint32_t same = 0;
      while (same < found_count && (found[same].set != resource.set ||
                                    found[same].binding != resource.binding)) {
        ++same;
      }
      if (same < found_count) {
        if (found[same].type != resource.type) {
          return refuse(r, "entry point '%s': set %u binding %u has two "
                        "descriptor types in the SPIR-V",
                        entry->name, resource.set, resource.binding);
        }
        found[same].read_only = found[same].read_only && resource.read_only;
        continue;
      }
      if (found_count == KILN_HAL_MAX_BINDINGS_PER_DISPATCH) {
        return refuse(r, "entry point '%s': more than %d bindings",
                      entry->name, KILN_HAL_MAX_BINDINGS_PER_DISPATCH);
      }
      found[found_count++] = resource;
    }
  }
  if (push_bytes != entry->push_constant_bytes) {
    return refuse(r, "entry point '%s': push constants are %llu bytes in the "
                  "SPIR-V but the module declares %u",
                  entry->name, (unsigned long long)push_bytes,
                  entry->push_constant_bytes);
  }
  for (uint32_t i = 0; i < found_count; ++i) {
    const kiln_spirv_resource_t* s = &found[i];
    const kiln_hal_binding_layout_t* declared = NULL;
    for (uint32_t b = 0; b < entry->binding_count && !declared; ++b) {
      if (entry->bindings[b].set == s->set &&
          entry->bindings[b].binding == s->binding) {
        declared = &entry->bindings[b];
      }
    }
    if (!declared) {
      return refuse(r, "entry point '%s': the SPIR-V uses set %u binding %u, "
                    "which the module does not declare",
                    entry->name, s->set, s->binding);
    }
    if (declared->type != s->type || (declared->read_only && !s->read_only)) {
      return refuse(r, "entry point '%s': set %u binding %u is a %s%s in the "
                    "SPIR-V but the module declares a %s%s",
                    entry->name, s->set, s->binding,
                    s->read_only ? "read-only " : "",
                    s->type ? "uniform texel buffer" : "storage buffer",
                    declared->read_only ? "read-only " : "",
                    declared->type ? "uniform texel buffer"
                                   : "storage buffer");
    }
  }
  if (found_count != entry->binding_count) {
    return refuse(r, "entry point '%s': the module declares %u bindings, "
                  "the SPIR-V uses %u",
                  entry->name, entry->binding_count, found_count);
  }
  if (shared > *shared_bytes) *shared_bytes = shared;
  return kiln_ok_status();
}

kiln_status_t kiln_hal_spirv_check_interface(
    const kiln_hal_executable_spec_t* spec, uint32_t variant_index,
    kiln_allocator_t allocator, uint64_t* out_shared_bytes) {
  *out_shared_bytes = 0;
  kiln_spirv_reflector_t r;
  memset(&r, 0, sizeof(r));
  r.variant = &spec->variants[variant_index];
  r.words = r.variant->spirv_words;
  r.count = r.variant->spirv_word_count;
  r.exe = spec->name ? spec->name : "?";
  r.variant_index = variant_index;
  if (r.count < 5) return refuse(&r, "SPIR-V header is truncated");
  r.bound = r.words[3];
  // Every id costs an instruction, so a bound above the word count is a
  // file asking for memory it does not back.
  if (r.bound > r.count) {
    return refuse(&r, "SPIR-V id bound %u exceeds its %zu words", r.bound,
                  r.count);
  }
  if ((uint64_t)r.variant->entry_point_count * r.count > kMaxEntryWords) {
    return refuse(&r, "%u entry points over %zu SPIR-V words is more than "
                  "kiln reflects (%d entry-words)",
                  r.variant->entry_point_count, r.count, kMaxEntryWords);
  }
  if (r.variant->specialization_constant_count > kMaxSpecConstants) {
    return refuse(&r, "%u specialization constants (max %d)",
                  r.variant->specialization_constant_count,
                  kMaxSpecConstants);
  }
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc_array(
      allocator, r.bound, sizeof(kiln_spirv_id_t), (void**)&r.ids));
  kiln_status_t status = scan(&r);
  for (uint32_t e = 0; !status && e < r.variant->entry_point_count; ++e) {
    status = check_entry(&r, &r.variant->entry_points[e], out_shared_bytes);
  }
  kiln_allocator_free(allocator, r.ids);
  return status;
}
