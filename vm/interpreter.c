// The register interpreter. Everything here trusts the verifier: opcodes,
// register ordinals, branch targets, ordinals and call lists were checked
// at load against the exact frame sizes allocated below, so handlers only
// check what depends on run-time values (division by zero, null refs,
// bounds of lists and buffers, stack depth, fuel).
//
// Dispatch is computed goto (GCC/Clang) or a switch, chosen at build time
// with KILN_VM_DISPATCH_SWITCH; both use the same handler source.
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"
#include "superinstructions.h"

#if !defined(KILN_VM_DISPATCH_SWITCH) && !defined(__GNUC__)
#define KILN_VM_DISPATCH_SWITCH 1
#endif

static inline uint16_t ld16(const uint8_t* p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return v;
}
static inline uint32_t ld32(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}
static inline uint64_t ld64(const uint8_t* p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}
static inline uint64_t get64(const uint32_t* r, uint32_t i) {
  uint64_t v;
  memcpy(&v, &r[i], 8);
  return v;
}
static inline void set64(uint32_t* r, uint32_t i, uint64_t v) {
  memcpy(&r[i], &v, 8);
}
static inline float getf(const uint32_t* r, uint32_t i) {
  float v;
  memcpy(&v, &r[i], 4);
  return v;
}
static inline void setf(uint32_t* r, uint32_t i, float v) {
  memcpy(&r[i], &v, 4);
}
static inline double getd(const uint32_t* r, uint32_t i) {
  double v;
  memcpy(&v, &r[i], 8);
  return v;
}
static inline void setd(uint32_t* r, uint32_t i, double v) {
  memcpy(&r[i], &v, 8);
}

// Float to integer conversions saturate; NaN gives 0 (no UB in C).
static int32_t kiln_sat_i32(double x) {
  if (x != x) return 0;
  if (x <= -2147483648.0) return INT32_MIN;
  if (x >= 2147483647.0) return INT32_MAX;
  return (int32_t)x;
}
static uint32_t kiln_sat_u32(double x) {
  if (!(x > -1.0)) return 0;
  if (x >= 4294967295.0) return UINT32_MAX;
  return (uint32_t)x;
}
static int64_t kiln_sat_i64(double x) {
  if (x != x) return 0;
  if (x <= -9223372036854775808.0) return INT64_MIN;
  if (x >= 9223372036854775808.0) return INT64_MAX;
  return (int64_t)x;
}
static float kiln_fminf(float a, float b) {
  if (a != a || b != b) return NAN;
  return a < b ? a : b;
}
static float kiln_fmaxf(float a, float b) {
  if (a != a || b != b) return NAN;
  return a > b ? a : b;
}
static double kiln_fmin(double a, double b) {
  if (a != a || b != b) return NAN;
  return a < b ? a : b;
}
static double kiln_fmax(double a, double b) {
  if (a != a || b != b) return NAN;
  return a > b ? a : b;
}

// Builds the trap status: names module, function and bytecode offset.
__attribute__((cold, noinline)) static kiln_status_t kiln_vm_trap(
    const kiln_vm_frame_t* frame, const uint8_t* pc, kiln_status_code_t code,
    const char* format, ...) KILN_PRINTF_LIKE(4, 5);
static kiln_status_t kiln_vm_trap(const kiln_vm_frame_t* frame,
                                  const uint8_t* pc, kiln_status_code_t code,
                                  const char* format, ...) {
  char reason[512];
  va_list args;
  va_start(args, format);
  vsnprintf(reason, sizeof(reason), format, args);
  va_end(args);
  const kiln_vm_module_t* module = frame->state->module;
  return kiln_make_status(
      code, "trap in function '%s' of module '%.*s' at bytecode offset %u: %s",
      kiln_vm_module_function_display_name(module, frame->function),
      KILN_SV_ARG(module->name), (uint32_t)(pc - frame->code), reason);
}

// Pushes a frame for bytecode function `function` of `state`; NULL when
// the call depth or the register stack would be exceeded.
static inline kiln_vm_frame_t* kiln_vm_push_frame(kiln_vm_context_t* context,
                                                  kiln_vm_module_state_t* state,
                                                  uint32_t function) {
  const kiln_format_function_t* fn = &state->module->format.functions[function];
  uint32_t words = ((uint32_t)fn->i32_register_count + 1u) & ~1u;
  uint32_t refs = fn->ref_register_count;
  if (KILN_UNLIKELY(context->depth >= context->frame_capacity ||
                    words > context->i32_capacity - context->i32_top ||
                    refs > context->ref_capacity - context->ref_top)) {
    return NULL;
  }
  kiln_vm_frame_t* frame = &context->frames[context->depth++];
  frame->state = state;
  frame->function = function;
  // The private copy with superinstructions, not the file's bytes.
  frame->code = state->module->function_code[function];
  frame->pc = frame->code;
  frame->r32 = context->i32_stack + context->i32_top;
  frame->rr = context->ref_stack + context->ref_top;
  frame->i32_words = words;
  frame->refs = refs;
  frame->result_list = NULL;
  context->i32_top += words;
  context->ref_top += refs;
  if (refs) memset(frame->rr, 0, refs * sizeof(*frame->rr));
  return frame;
}

static inline void kiln_vm_pop_frame(kiln_vm_context_t* context) {
  kiln_vm_frame_t* frame = &context->frames[--context->depth];
  for (uint32_t i = 0; i < frame->refs; ++i) kiln_vm_ref_release(frame->rr[i]);
  context->i32_top -= frame->i32_words;
  context->ref_top -= frame->refs;
}

// Copies call arguments (caller registers listed at `list`) into the new
// frame's argument slots. Refs are retained.
static inline void kiln_vm_copy_args(const uint8_t* list,
                                     const kiln_format_signature_t* signature,
                                     const kiln_vm_signature_layout_t* layout,
                                     const uint32_t* from32,
                                     kiln_vm_ref_object_t* const* from_refs,
                                     kiln_vm_frame_t* to) {
  uint32_t count = list[0];
  for (uint32_t i = 0; i < count; ++i) {
    uint16_t reg = ld16(list + 1 + 2 * i);
    uint16_t slot = layout->slots[i];
    char type = signature->types[i];
    if (type == KILN_VALUE_TYPE_REF) {
      kiln_vm_ref_retain(from_refs[reg]);
      to->rr[slot] = from_refs[reg];
    } else if (kiln_value_type_is_64bit(type)) {
      set64(to->r32, slot, get64(from32, reg));
    } else {
      to->r32[slot] = from32[reg];
    }
  }
}

static inline void kiln_vm_set_ref(kiln_vm_ref_object_t** slot,
                                   kiln_vm_ref_object_t* value) {
  kiln_vm_ref_object_t* old = *slot;
  *slot = value;
  kiln_vm_ref_release(old);
}

// Checks a buffer access of `width` bytes at `offset`.
static inline bool kiln_vm_buffer_fits(const kiln_vm_buffer_t* buffer,
                                       uint64_t offset, uint64_t width) {
  return offset <= buffer->length && width <= buffer->length - offset;
}

kiln_status_t kiln_vm_interpret(kiln_vm_context_t* context,
                                kiln_vm_module_state_t* state,
                                uint32_t function, const kiln_vm_value_t* args,
                                kiln_vm_value_t* host_results) {
  const uint32_t base_depth = context->depth;
  kiln_vm_frame_t* frame = kiln_vm_push_frame(context, state, function);
  if (!frame) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "invoke: call stack exhausted (depth %u)",
                            context->depth);
  }
  kiln_vm_module_t* module = state->module;
  const kiln_format_module_t* format = &module->format;
  {
    // Host arguments go into the argument slots like a call's would.
    const kiln_format_function_t* fn = &format->functions[function];
    const kiln_format_signature_t* signature = &format->signatures[fn->signature];
    const kiln_vm_signature_layout_t* layout = &module->layouts[fn->signature];
    for (uint32_t i = 0; i < signature->arg_count; ++i) {
      char type = signature->types[i];
      uint16_t slot = layout->slots[i];
      if (type == KILN_VALUE_TYPE_REF) {
        kiln_vm_ref_retain(args[i].ref);
        frame->rr[slot] = args[i].ref;
      } else if (kiln_value_type_is_64bit(type)) {
        set64(frame->r32, slot, (uint64_t)args[i].i64);
      } else {
        frame->r32[slot] = (uint32_t)args[i].i32;
      }
    }
  }

  const uint8_t* code = frame->code;
  const uint8_t* pc = code;
  uint32_t* r32 = frame->r32;
  kiln_vm_ref_object_t** rr = frame->rr;
  uint32_t* globals = state->global_words;
  uint64_t fuel = context->fuel;
  kiln_status_t status = kiln_ok_status();

#define U16(o) ld16(pc + (o))
#define U32(o) ld32(pc + (o))
#define U64(o) ld64(pc + (o))
#define RI(o) r32[U16(o)]
#define RS(o) ((int32_t)r32[U16(o)])
#define RL(o) get64(r32, U16(o))
#define RLS(o) ((int64_t)get64(r32, U16(o)))
#define RF(o) getf(r32, U16(o))
#define RD(o) getd(r32, U16(o))
#define RR(o) rr[U16(o)]
#define TRAP(code, ...)                                   \
  do {                                                    \
    status = kiln_vm_trap(frame, pc, code, __VA_ARGS__);  \
    goto trap;                                            \
  } while (0)
#define USE_FUEL()                                                  \
  do {                                                              \
    if (KILN_UNLIKELY(fuel == 0)) {                                 \
      /* By value, not &fuel: the counter stays in a register. */   \
      fuel = kiln_vm_refuel(context);                               \
      if (fuel == 0 && context->fuel_reserve == 0) {                \
        TRAP(KILN_STATUS_RESOURCE_EXHAUSTED, "fuel exhausted");     \
      }                                                             \
      if (fuel == 0) {                                              \
        TRAP(KILN_STATUS_DEADLINE_EXCEEDED, "deadline exceeded");   \
      }                                                             \
    }                                                               \
    --fuel;                                                         \
  } while (0)
// Reloads the cached frame registers after a call or return.
#define LOAD_FRAME()                    \
  do {                                  \
    code = frame->code;                 \
    r32 = frame->r32;                   \
    rr = frame->rr;                     \
    state = frame->state;               \
    module = state->module;             \
    format = &module->format;           \
    globals = state->global_words;      \
  } while (0)

#if defined(KILN_VM_DISPATCH_SWITCH)
#define OP(name) case KILN_VM_OP_##name:
#define DISPATCH() goto dispatch
#define NEXT(name)                  \
  do {                              \
    pc += KILN_VM_SIZE_##name;      \
    goto dispatch;                  \
  } while (0)
dispatch:
  // Not the enum type: internal superinstructions follow the public ops.
  switch ((unsigned)*pc) {
#else
  static const void* const kDispatchTable[KILN_VM_OP_INTERNAL_END] = {
#define KILN_VM_ISA_LABEL(name, mnemonic, operands, terminator, size) \
  &&op_##name,
      KILN_VM_ISA(KILN_VM_ISA_LABEL)
#undef KILN_VM_ISA_LABEL
#define KILN_VM_CMP_BR_LABEL(arg, cmp, kind, expr) \
  [KILN_VM_OP_##cmp##_BR] = &&op_##cmp##_BR,
      KILN_VM_COMPARES(KILN_VM_CMP_BR_LABEL, _)
#undef KILN_VM_CMP_BR_LABEL
#define KILN_VM_STEP_LABEL(add, cmp, kind, expr) \
  [KILN_VM_OP_##add##_##cmp##_BR] = &&op_##add##_##cmp##_BR,
      KILN_VM_STEP_ADDS(KILN_VM_STEP_LABEL)
#undef KILN_VM_STEP_LABEL
  };
#define OP(name) op_##name:
#define DISPATCH() goto* kDispatchTable[*pc]
#define NEXT(name)                  \
  do {                              \
    pc += KILN_VM_SIZE_##name;      \
    goto* kDispatchTable[*pc];      \
  } while (0)
  DISPATCH();
  {
#endif

  // ---- constants and moves ----
  OP(CONST_I32) { RI(1) = U32(3); NEXT(CONST_I32); }
  OP(CONST_I64) { set64(r32, U16(1), U64(3)); NEXT(CONST_I64); }
  OP(CONST_F32) { RI(1) = U32(3); NEXT(CONST_F32); }
  OP(CONST_F64) { set64(r32, U16(1), U64(3)); NEXT(CONST_F64); }
  OP(MOV_I32) { RI(1) = RI(3); NEXT(MOV_I32); }
  OP(MOV_I64) { set64(r32, U16(1), RL(3)); NEXT(MOV_I64); }
  OP(MOV_REF) {
    kiln_vm_ref_object_t* value = RR(3);
    kiln_vm_ref_retain(value);
    kiln_vm_set_ref(&RR(1), value);
    NEXT(MOV_REF);
  }
  OP(MOVE_REF) {
    if (U16(1) != U16(3)) {
      kiln_vm_ref_object_t* value = RR(3);
      RR(3) = NULL;
      kiln_vm_set_ref(&RR(1), value);
    }
    NEXT(MOVE_REF);
  }
  OP(REF_NULL) { kiln_vm_set_ref(&RR(1), NULL); NEXT(REF_NULL); }
  OP(REF_IS_NULL) { RI(1) = RR(3) == NULL; NEXT(REF_IS_NULL); }
  OP(REF_EQ) { RI(1) = RR(3) == RR(5); NEXT(REF_EQ); }

  // ---- i32 ----
#define BIN_U32(name, expr)         \
  OP(name) {                        \
    uint32_t a = RI(3), b = RI(5);  \
    RI(1) = (uint32_t)(expr);       \
    NEXT(name);                     \
  }
  BIN_U32(ADD_I32, a + b)
  BIN_U32(SUB_I32, a - b)
  BIN_U32(MUL_I32, a * b)
  BIN_U32(AND_I32, a & b)
  BIN_U32(OR_I32, a | b)
  BIN_U32(XOR_I32, a ^ b)
  BIN_U32(SHL_I32, a << (b & 31))
  BIN_U32(SHR_I32_S, (uint32_t)((int32_t)a >> (b & 31)))
  BIN_U32(SHR_I32_U, a >> (b & 31))
  BIN_U32(MIN_I32_S, (int32_t)a < (int32_t)b ? a : b)
  BIN_U32(MIN_I32_U, a < b ? a : b)
  BIN_U32(MAX_I32_S, (int32_t)a > (int32_t)b ? a : b)
  BIN_U32(MAX_I32_U, a > b ? a : b)
  OP(DIV_I32_S) {
    int32_t a = RS(3), b = RS(5);
    if (KILN_UNLIKELY(b == 0)) TRAP(KILN_STATUS_INVALID_ARGUMENT, "integer division by zero");
    if (KILN_UNLIKELY(a == INT32_MIN && b == -1)) {
      TRAP(KILN_STATUS_INVALID_ARGUMENT, "integer overflow: INT32_MIN / -1");
    }
    RI(1) = (uint32_t)(a / b);
    NEXT(DIV_I32_S);
  }
  OP(DIV_I32_U) {
    uint32_t a = RI(3), b = RI(5);
    if (KILN_UNLIKELY(b == 0)) TRAP(KILN_STATUS_INVALID_ARGUMENT, "integer division by zero");
    RI(1) = a / b;
    NEXT(DIV_I32_U);
  }
  OP(REM_I32_S) {
    int32_t a = RS(3), b = RS(5);
    if (KILN_UNLIKELY(b == 0)) TRAP(KILN_STATUS_INVALID_ARGUMENT, "integer division by zero");
    RI(1) = (b == -1) ? 0u : (uint32_t)(a % b);
    NEXT(REM_I32_S);
  }
  OP(REM_I32_U) {
    uint32_t a = RI(3), b = RI(5);
    if (KILN_UNLIKELY(b == 0)) TRAP(KILN_STATUS_INVALID_ARGUMENT, "integer division by zero");
    RI(1) = a % b;
    NEXT(REM_I32_U);
  }
  OP(NEG_I32) { RI(1) = 0u - RI(3); NEXT(NEG_I32); }
  OP(ABS_I32) {
    int32_t a = RS(3);
    RI(1) = a < 0 ? 0u - (uint32_t)a : (uint32_t)a;
    NEXT(ABS_I32);
  }
  OP(NOT_I32) { RI(1) = ~RI(3); NEXT(NOT_I32); }
  OP(ADDI_I32) { RI(1) = RI(3) + U32(5); NEXT(ADDI_I32); }

  // ---- i64 ----
#define BIN_U64(name, expr)              \
  OP(name) {                             \
    uint64_t a = RL(3), b = RL(5);       \
    set64(r32, U16(1), (uint64_t)(expr)); \
    NEXT(name);                          \
  }
  BIN_U64(ADD_I64, a + b)
  BIN_U64(SUB_I64, a - b)
  BIN_U64(MUL_I64, a * b)
  BIN_U64(AND_I64, a & b)
  BIN_U64(OR_I64, a | b)
  BIN_U64(XOR_I64, a ^ b)
  BIN_U64(SHL_I64, a << (b & 63))
  BIN_U64(SHR_I64_S, (uint64_t)((int64_t)a >> (b & 63)))
  BIN_U64(SHR_I64_U, a >> (b & 63))
  BIN_U64(MIN_I64_S, (int64_t)a < (int64_t)b ? a : b)
  BIN_U64(MIN_I64_U, a < b ? a : b)
  BIN_U64(MAX_I64_S, (int64_t)a > (int64_t)b ? a : b)
  BIN_U64(MAX_I64_U, a > b ? a : b)
  OP(DIV_I64_S) {
    int64_t a = RLS(3), b = RLS(5);
    if (KILN_UNLIKELY(b == 0)) TRAP(KILN_STATUS_INVALID_ARGUMENT, "integer division by zero");
    if (KILN_UNLIKELY(a == INT64_MIN && b == -1)) {
      TRAP(KILN_STATUS_INVALID_ARGUMENT, "integer overflow: INT64_MIN / -1");
    }
    set64(r32, U16(1), (uint64_t)(a / b));
    NEXT(DIV_I64_S);
  }
  OP(DIV_I64_U) {
    uint64_t a = RL(3), b = RL(5);
    if (KILN_UNLIKELY(b == 0)) TRAP(KILN_STATUS_INVALID_ARGUMENT, "integer division by zero");
    set64(r32, U16(1), a / b);
    NEXT(DIV_I64_U);
  }
  OP(REM_I64_S) {
    int64_t a = RLS(3), b = RLS(5);
    if (KILN_UNLIKELY(b == 0)) TRAP(KILN_STATUS_INVALID_ARGUMENT, "integer division by zero");
    set64(r32, U16(1), b == -1 ? 0u : (uint64_t)(a % b));
    NEXT(REM_I64_S);
  }
  OP(REM_I64_U) {
    uint64_t a = RL(3), b = RL(5);
    if (KILN_UNLIKELY(b == 0)) TRAP(KILN_STATUS_INVALID_ARGUMENT, "integer division by zero");
    set64(r32, U16(1), a % b);
    NEXT(REM_I64_U);
  }
  OP(NEG_I64) { set64(r32, U16(1), 0u - RL(3)); NEXT(NEG_I64); }
  OP(ABS_I64) {
    int64_t a = RLS(3);
    set64(r32, U16(1), a < 0 ? 0u - (uint64_t)a : (uint64_t)a);
    NEXT(ABS_I64);
  }
  OP(NOT_I64) { set64(r32, U16(1), ~RL(3)); NEXT(NOT_I64); }

  // ---- f32 ----
#define BIN_F32(name, expr)           \
  OP(name) {                          \
    float a = RF(3), b = RF(5);       \
    setf(r32, U16(1), (expr));        \
    NEXT(name);                       \
  }
  BIN_F32(ADD_F32, a + b)
  BIN_F32(SUB_F32, a - b)
  BIN_F32(MUL_F32, a * b)
  BIN_F32(DIV_F32, a / b)
  BIN_F32(MIN_F32, kiln_fminf(a, b))
  BIN_F32(MAX_F32, kiln_fmaxf(a, b))
  OP(NEG_F32) { RI(1) = RI(3) ^ 0x80000000u; NEXT(NEG_F32); }
  OP(ABS_F32) { RI(1) = RI(3) & 0x7FFFFFFFu; NEXT(ABS_F32); }
  OP(SQRT_F32) { setf(r32, U16(1), sqrtf(RF(3))); NEXT(SQRT_F32); }

  // ---- f64 ----
#define BIN_F64(name, expr)           \
  OP(name) {                          \
    double a = RD(3), b = RD(5);      \
    setd(r32, U16(1), (expr));        \
    NEXT(name);                       \
  }
  BIN_F64(ADD_F64, a + b)
  BIN_F64(SUB_F64, a - b)
  BIN_F64(MUL_F64, a * b)
  BIN_F64(DIV_F64, a / b)
  BIN_F64(MIN_F64, kiln_fmin(a, b))
  BIN_F64(MAX_F64, kiln_fmax(a, b))
  OP(NEG_F64) { set64(r32, U16(1), RL(3) ^ UINT64_C(0x8000000000000000)); NEXT(NEG_F64); }
  OP(ABS_F64) { set64(r32, U16(1), RL(3) & UINT64_C(0x7FFFFFFFFFFFFFFF)); NEXT(ABS_F64); }
  OP(SQRT_F64) { setd(r32, U16(1), sqrt(RD(3))); NEXT(SQRT_F64); }

  // ---- conversions ----
  OP(SEXT_I32_I64) { set64(r32, U16(1), (uint64_t)(int64_t)RS(3)); NEXT(SEXT_I32_I64); }
  OP(ZEXT_I32_I64) { set64(r32, U16(1), (uint64_t)RI(3)); NEXT(ZEXT_I32_I64); }
  OP(TRUNC_I64_I32) { RI(1) = (uint32_t)RL(3); NEXT(TRUNC_I64_I32); }
  OP(CVT_I32_F32_S) { setf(r32, U16(1), (float)RS(3)); NEXT(CVT_I32_F32_S); }
  OP(CVT_I32_F32_U) { setf(r32, U16(1), (float)RI(3)); NEXT(CVT_I32_F32_U); }
  OP(CVT_F32_I32_S) { RI(1) = (uint32_t)kiln_sat_i32(RF(3)); NEXT(CVT_F32_I32_S); }
  OP(CVT_F32_I32_U) { RI(1) = kiln_sat_u32(RF(3)); NEXT(CVT_F32_I32_U); }
  OP(CVT_I64_F64_S) { setd(r32, U16(1), (double)RLS(3)); NEXT(CVT_I64_F64_S); }
  OP(CVT_F64_I64_S) { set64(r32, U16(1), (uint64_t)kiln_sat_i64(RD(3))); NEXT(CVT_F64_I64_S); }
  OP(CVT_I32_F64_S) { setd(r32, U16(1), (double)RS(3)); NEXT(CVT_I32_F64_S); }
  OP(CVT_F64_I32_S) { RI(1) = (uint32_t)kiln_sat_i32(RD(3)); NEXT(CVT_F64_I32_S); }
  OP(CVT_F32_F64) { setd(r32, U16(1), (double)RF(3)); NEXT(CVT_F32_F64); }
  OP(CVT_F64_F32) { setf(r32, U16(1), (float)RD(3)); NEXT(CVT_F64_F32); }

  // ---- select ----
  OP(SELECT_I32) { RI(1) = RI(3) ? RI(5) : RI(7); NEXT(SELECT_I32); }
  OP(SELECT_I64) { set64(r32, U16(1), RI(3) ? RL(5) : RL(7)); NEXT(SELECT_I64); }
  OP(SELECT_REF) {
    kiln_vm_ref_object_t* value = RI(3) ? RR(5) : RR(7);
    kiln_vm_ref_retain(value);
    kiln_vm_set_ref(&RR(1), value);
    NEXT(SELECT_REF);
  }

  // ---- compares, and their superinstructions ----
  // One row of KILN_VM_COMPARES gives the plain compare and the fused
  // `compare; cond_br`, which writes the same register, then behaves as
  // the cond_br after it (fuel used and traps reported at its offset).
#define CMP_OPERANDS_I32 uint32_t a = RI(3), b = RI(5);
#define CMP_OPERANDS_I32Z uint32_t a = RI(3);
#define CMP_OPERANDS_I64 uint64_t a = RL(3), b = RL(5);
#define CMP_OPERANDS_I64Z uint64_t a = RL(3);
#define CMP_OPERANDS_F32 float a = RF(3), b = RF(5);
#define CMP_OPERANDS_F64 double a = RD(3), b = RD(5);
// The cond_br at pc, on a condition already computed.
#define COND_BR_ON(cond)                          \
  do {                                            \
    USE_FUEL();                                   \
    pc = code + ((cond) ? U32(3) : U32(7));       \
    DISPATCH();                                   \
  } while (0)
#define COMPARE_OPS(arg, cmp, kind, expr)         \
  OP(cmp) {                                       \
    CMP_OPERANDS_##kind                           \
    RI(1) = (uint32_t)(expr);                     \
    NEXT(cmp);                                    \
  }                                               \
  OP(cmp##_BR) {                                  \
    CMP_OPERANDS_##kind                           \
    uint32_t cond = (uint32_t)(expr);             \
    RI(1) = cond;                                 \
    pc += KILN_VM_SIZE_##cmp;                     \
    COND_BR_ON(cond);                             \
  }
  KILN_VM_COMPARES(COMPARE_OPS, _)
  // `add; compare; cond_br`: the counted-loop step in one dispatch. The
  // loader fuses it only when the compare's first operand is the add's
  // destination, so the sum is compared without reloading it; the second
  // operand is read after the add's write (it may be the same register).
#define STEP_SUM_ADD_I32 (RI(3) + RI(5))
#define STEP_SUM_ADDI_I32 (RI(3) + U32(5))
#define STEP_OPS(add, cmp, kind, expr)            \
  OP(add##_##cmp##_BR) {                          \
    uint32_t a = STEP_SUM_##add;                  \
    RI(1) = a;                                    \
    pc += KILN_VM_SIZE_##add;                     \
    uint32_t b = RI(5);                           \
    uint32_t cond = (uint32_t)(expr);             \
    RI(1) = cond;                                 \
    pc += KILN_VM_SIZE_##cmp;                     \
    COND_BR_ON(cond);                             \
  }
  KILN_VM_STEP_ADDS(STEP_OPS)

  // ---- control ----
  OP(BR) {
    USE_FUEL();
    pc = code + U32(1);
    DISPATCH();
  }
  OP(COND_BR) {
    USE_FUEL();
    pc = code + (RI(1) ? U32(3) : U32(7));
    DISPATCH();
  }
  OP(BR_TABLE) {
    USE_FUEL();
    uint32_t index = RI(1);
    uint32_t count = U16(3);
    pc = code + U32(5 + 4 * (index < count ? index : count));
    DISPATCH();
  }
  OP(CALL) {
    USE_FUEL();
    uint32_t callee = U32(1);
    uint32_t signature_index = format->functions[callee].signature;
    frame->pc = pc;
    kiln_vm_frame_t* next = kiln_vm_push_frame(context, state, callee);
    if (KILN_UNLIKELY(!next)) {
      TRAP(KILN_STATUS_RESOURCE_EXHAUSTED,
           "call stack exhausted calling '%s' (depth %u, limit %u frames, "
           "%zu/%zu registers)",
           kiln_vm_module_function_display_name(module, callee), context->depth,
           context->frame_capacity, context->i32_top, context->i32_capacity);
    }
    const uint8_t* list = pc + 5;
    kiln_vm_copy_args(list, &format->signatures[signature_index],
                      &module->layouts[signature_index], r32, rr, next);
    next->result_list = list + 1 + 2 * list[0];
    frame = next;
    LOAD_FRAME();
    pc = code;
    DISPATCH();
  }
  OP(CALL_IMPORT) {
    USE_FUEL();
    uint32_t import = U32(1);
    const kiln_vm_import_binding_t* binding = &state->imports[import];
    const kiln_format_signature_t* signature =
        &format->signatures[format->imports[import].signature];
    const uint8_t* list = pc + 5;
    const uint8_t* result_list = list + 1 + 2 * list[0];
    if (KILN_UNLIKELY(!binding->target)) {
      TRAP(KILN_STATUS_FAILED_PRECONDITION,
           "optional import '%.*s' is not available",
           KILN_SV_ARG(format->imports[import].name));
    }
    kiln_vm_module_state_t* target = binding->target;
    if (target->module->is_native) {
      kiln_vm_value_t values[2 * KILN_FORMAT_MAX_SIGNATURE_VALUES];
      kiln_vm_value_t* results = values + signature->arg_count;
      for (uint32_t i = 0; i < signature->arg_count; ++i) {
        uint16_t reg = ld16(list + 1 + 2 * i);
        char type = signature->types[i];
        if (type == KILN_VALUE_TYPE_REF) {
          values[i].ref = rr[reg];
        } else if (kiln_value_type_is_64bit(type)) {
          values[i].i64 = (int64_t)get64(r32, reg);
        } else {
          values[i].i64 = 0;
          values[i].i32 = (int32_t)r32[reg];
        }
      }
      // A plain loop: memset of a variable size compiles to `rep stos`,
      // whose startup cost dominated native calls.
      for (uint32_t i = 0; i < signature->result_count; ++i) results[i].i64 = 0;
      frame->pc = pc;
      context->fuel = fuel;
      kiln_status_t call_status =
          kiln_vm_call_native(context, target, binding->ordinal, values, results);
      fuel = context->fuel;
      if (KILN_UNLIKELY(call_status)) {
        for (uint32_t i = 0; i < signature->result_count; ++i) {
          if (signature->types[signature->arg_count + i] == KILN_VALUE_TYPE_REF) {
            kiln_vm_ref_release(results[i].ref);
          }
        }
        status = kiln_status_annotate(
            call_status,
            "in import '%.*s' called from function '%s' of module '%.*s' at "
            "bytecode offset %u",
            KILN_SV_ARG(format->imports[import].name),
            kiln_vm_module_function_display_name(module, frame->function),
            KILN_SV_ARG(module->name), (uint32_t)(pc - code));
        goto trap;
      }
      for (uint32_t i = 0; i < signature->result_count; ++i) {
        uint16_t reg = ld16(result_list + 1 + 2 * i);
        char type = signature->types[signature->arg_count + i];
        if (type == KILN_VALUE_TYPE_REF) {
          kiln_vm_set_ref(&rr[reg], results[i].ref);
        } else if (kiln_value_type_is_64bit(type)) {
          set64(r32, reg, (uint64_t)results[i].i64);
        } else {
          r32[reg] = (uint32_t)results[i].i32;
        }
      }
      pc = result_list + 1 + 2 * result_list[0];
      DISPATCH();
    }
    // A bytecode function of another module.
    uint32_t callee = binding->ordinal;
    kiln_vm_module_t* target_module = target->module;
    uint32_t signature_index = target_module->format.functions[callee].signature;
    frame->pc = pc;
    kiln_vm_frame_t* next = kiln_vm_push_frame(context, target, callee);
    if (KILN_UNLIKELY(!next)) {
      TRAP(KILN_STATUS_RESOURCE_EXHAUSTED,
           "call stack exhausted calling import '%.*s' (depth %u)",
           KILN_SV_ARG(format->imports[import].name), context->depth);
    }
    kiln_vm_copy_args(list, &target_module->format.signatures[signature_index],
                      &target_module->layouts[signature_index], r32, rr, next);
    next->result_list = result_list;
    frame = next;
    LOAD_FRAME();
    pc = code;
    DISPATCH();
  }
  OP(RETURN) {
    const kiln_format_signature_t* signature =
        &format->signatures[format->functions[frame->function].signature];
    const uint8_t* list = pc + 1;
    uint32_t count = list[0];
    const uint8_t* result_list = frame->result_list;
    if (!result_list) {
      // Back to the host.
      for (uint32_t i = 0; i < count; ++i) {
        uint16_t reg = ld16(list + 1 + 2 * i);
        char type = signature->types[signature->arg_count + i];
        if (type == KILN_VALUE_TYPE_REF) {
          kiln_vm_ref_retain(rr[reg]);
          host_results[i].ref = rr[reg];
        } else if (kiln_value_type_is_64bit(type)) {
          host_results[i].i64 = (int64_t)get64(r32, reg);
        } else {
          host_results[i].i64 = 0;
          host_results[i].i32 = (int32_t)r32[reg];
        }
      }
      kiln_vm_pop_frame(context);
      context->fuel = fuel;
      return kiln_ok_status();
    }
    USE_FUEL();
    kiln_vm_frame_t* caller = frame - 1;
    for (uint32_t i = 0; i < count; ++i) {
      uint16_t reg = ld16(list + 1 + 2 * i);
      uint16_t dst = ld16(result_list + 1 + 2 * i);
      char type = signature->types[signature->arg_count + i];
      if (type == KILN_VALUE_TYPE_REF) {
        kiln_vm_ref_retain(rr[reg]);
        kiln_vm_set_ref(&caller->rr[dst], rr[reg]);
      } else if (kiln_value_type_is_64bit(type)) {
        set64(caller->r32, dst, get64(r32, reg));
      } else {
        caller->r32[dst] = r32[reg];
      }
    }
    kiln_vm_pop_frame(context);
    frame = caller;
    LOAD_FRAME();
    pc = result_list + 1 + 2 * result_list[0];
    DISPATCH();
  }
  OP(FAIL) {
    kiln_string_view_t message = format->strings[U32(1)];
    TRAP(KILN_STATUS_ABORTED, "fail: %.*s", KILN_SV_ARG(message));
  }

  // ---- lists ----
#define LIST_OPERAND(var, o, want)                                            \
  kiln_vm_list_t* var = (kiln_vm_list_t*)RR(o);                               \
  if (KILN_UNLIKELY(!var || var->header.type != &kiln_vm_list_type)) {        \
    TRAP(KILN_STATUS_FAILED_PRECONDITION, "expected a vm.list in r%u, got %s", \
         U16(o), var ? var->header.type->name : "null");                      \
  }                                                                           \
  if ((want) != 0xFFu && KILN_UNLIKELY(var->element_type != (want))) {         \
    TRAP(KILN_STATUS_FAILED_PRECONDITION,                                      \
         "list in r%u has element type %u, the op needs %u", U16(o),           \
         var->element_type, (unsigned)(want));                                 \
  }
#define LIST_INDEX(list, index)                                               \
  if (KILN_UNLIKELY((index) >= (list)->size)) {                               \
    TRAP(KILN_STATUS_OUT_OF_RANGE, "list index %u out of range (size %u)",    \
         (index), (list)->size);                                              \
  }
  OP(LIST_ALLOC) {
    if (KILN_UNLIKELY((uint64_t)RI(4) * 8u > context->max_allocation_bytes)) {
      TRAP(KILN_STATUS_RESOURCE_EXHAUSTED,
           "list.alloc of %u elements exceeds the allocation limit of %llu bytes",
           RI(4), (unsigned long long)context->max_allocation_bytes);
    }
    kiln_vm_list_t* list = NULL;
    kiln_status_t alloc_status = kiln_vm_list_create(
        context->allocator, pc[3], RI(4), &list);
    if (KILN_UNLIKELY(alloc_status)) {
      status = kiln_status_annotate(alloc_status, "in list.alloc");
      status = kiln_status_annotate(
          status, "in function '%s' at bytecode offset %u",
          kiln_vm_module_function_display_name(module, frame->function),
          (uint32_t)(pc - code));
      goto trap;
    }
    kiln_vm_set_ref(&RR(1), &list->header);
    NEXT(LIST_ALLOC);
  }
  OP(LIST_SIZE) {
    LIST_OPERAND(list, 3, 0xFFu);
    RI(1) = list->size;
    NEXT(LIST_SIZE);
  }
  OP(LIST_RESIZE) {
    LIST_OPERAND(list, 1, 0xFFu);
    uint32_t size = RI(3);
    if (KILN_UNLIKELY(size > KILN_VM_LIST_MAX_SIZE ||
                      (uint64_t)size * 8u > context->max_allocation_bytes)) {
      TRAP(KILN_STATUS_OUT_OF_RANGE,
           "list size %u exceeds the limit (%u elements, %llu bytes)", size,
           KILN_VM_LIST_MAX_SIZE,
           (unsigned long long)context->max_allocation_bytes);
    }
    kiln_status_t resize_status = kiln_vm_list_resize(list, size);
    if (KILN_UNLIKELY(resize_status)) {
      char reason[256];  // e.g. the session's memory budget, named
      kiln_status_format(resize_status, reason, sizeof(reason));
      kiln_status_free(resize_status);
      TRAP(KILN_STATUS_RESOURCE_EXHAUSTED, "list.resize to %u failed: %s",
           size, reason);
    }
    NEXT(LIST_RESIZE);
  }
  OP(LIST_GET_I32) {
    LIST_OPERAND(list, 3, KILN_VM_LIST_I32);
    uint32_t index = RI(5);
    LIST_INDEX(list, index);
    RI(1) = ((uint32_t*)list->data)[index];
    NEXT(LIST_GET_I32);
  }
  OP(LIST_SET_I32) {
    LIST_OPERAND(list, 1, KILN_VM_LIST_I32);
    uint32_t index = RI(3);
    LIST_INDEX(list, index);
    ((uint32_t*)list->data)[index] = RI(5);
    NEXT(LIST_SET_I32);
  }
  OP(LIST_GET_I64) {
    LIST_OPERAND(list, 3, KILN_VM_LIST_I64);
    uint32_t index = RI(5);
    LIST_INDEX(list, index);
    set64(r32, U16(1), ((uint64_t*)list->data)[index]);
    NEXT(LIST_GET_I64);
  }
  OP(LIST_SET_I64) {
    LIST_OPERAND(list, 1, KILN_VM_LIST_I64);
    uint32_t index = RI(3);
    LIST_INDEX(list, index);
    ((uint64_t*)list->data)[index] = RL(5);
    NEXT(LIST_SET_I64);
  }
  OP(LIST_GET_REF) {
    LIST_OPERAND(list, 3, KILN_VM_LIST_REF);
    uint32_t index = RI(5);
    LIST_INDEX(list, index);
    kiln_vm_ref_object_t* value = ((kiln_vm_ref_object_t**)list->data)[index];
    kiln_vm_ref_retain(value);
    kiln_vm_set_ref(&RR(1), value);
    NEXT(LIST_GET_REF);
  }
  OP(LIST_SET_REF) {
    LIST_OPERAND(list, 1, KILN_VM_LIST_REF);
    uint32_t index = RI(3);
    LIST_INDEX(list, index);
    kiln_vm_ref_object_t* value = RR(5);
    // Only lists hold refs, so refusing lists inside lists makes reference
    // cycles (which counting cannot free) impossible to build.
    if (KILN_UNLIKELY(value && value->type == &kiln_vm_list_type)) {
      TRAP(KILN_STATUS_FAILED_PRECONDITION,
           "a list cannot hold a vm.list (reference cycles would leak)");
    }
    kiln_vm_ref_retain(value);
    kiln_vm_set_ref(&((kiln_vm_ref_object_t**)list->data)[index], value);
    NEXT(LIST_SET_REF);
  }

  // ---- buffers ----
#define BUFFER_OPERAND(var, o)                                                 \
  kiln_vm_buffer_t* var = (kiln_vm_buffer_t*)RR(o);                            \
  if (KILN_UNLIKELY(!var || var->header.type != &kiln_vm_buffer_type)) {       \
    TRAP(KILN_STATUS_FAILED_PRECONDITION,                                      \
         "expected a vm.buffer in r%u, got %s", U16(o),                        \
         var ? var->header.type->name : "null");                               \
  }
#define BUFFER_RANGE(buffer, offset, width)                                    \
  if (KILN_UNLIKELY(!kiln_vm_buffer_fits((buffer), (offset), (width)))) {      \
    TRAP(KILN_STATUS_OUT_OF_RANGE,                                             \
         "buffer access [%llu, +%llu) outside a %llu-byte buffer",             \
         (unsigned long long)(offset), (unsigned long long)(width),            \
         (unsigned long long)(buffer)->length);                                \
  }
#define BUFFER_WRITABLE(buffer)                                                \
  if (KILN_UNLIKELY((buffer)->read_only)) {                                    \
    TRAP(KILN_STATUS_PERMISSION_DENIED, "store into a read-only buffer");      \
  }
  OP(BUFFER_RODATA) {
    uint32_t index = U32(3);
    kiln_vm_buffer_t* buffer = NULL;
    kiln_status_t wrap_status = kiln_vm_buffer_wrap_read_only(
        context->allocator, module->rodata_data[index],
        format->rodata[index].size, &module->header, &buffer);
    if (KILN_UNLIKELY(wrap_status)) {
      kiln_status_free(wrap_status);
      TRAP(KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory in buffer.rodata");
    }
    kiln_vm_set_ref(&RR(1), &buffer->header);
    NEXT(BUFFER_RODATA);
  }
  OP(BUFFER_ALLOC) {
    if (KILN_UNLIKELY(RL(3) > context->max_allocation_bytes)) {
      TRAP(KILN_STATUS_RESOURCE_EXHAUSTED,
           "buffer.alloc of %llu bytes exceeds the allocation limit of %llu",
           (unsigned long long)RL(3),
           (unsigned long long)context->max_allocation_bytes);
    }
    kiln_vm_buffer_t* buffer = NULL;
    kiln_status_t alloc_status =
        kiln_vm_buffer_allocate(context->allocator, RL(3), &buffer);
    if (KILN_UNLIKELY(alloc_status)) {
      char reason[256];  // e.g. the session's memory budget, named
      kiln_status_format(alloc_status, reason, sizeof(reason));
      kiln_status_free(alloc_status);
      TRAP(KILN_STATUS_RESOURCE_EXHAUSTED,
           "buffer.alloc of %llu bytes failed: %s", (unsigned long long)RL(3),
           reason);
    }
    kiln_vm_set_ref(&RR(1), &buffer->header);
    NEXT(BUFFER_ALLOC);
  }
  OP(BUFFER_LENGTH) {
    BUFFER_OPERAND(buffer, 3);
    set64(r32, U16(1), buffer->length);
    NEXT(BUFFER_LENGTH);
  }
#define BUFFER_LOAD(name, ctype, width, store)                 \
  OP(name) {                                                   \
    BUFFER_OPERAND(buffer, 3);                                 \
    uint64_t offset = RL(5);                                   \
    BUFFER_RANGE(buffer, offset, width);                       \
    ctype value;                                               \
    memcpy(&value, buffer->data + offset, width);              \
    store;                                                     \
    NEXT(name);                                                \
  }
  BUFFER_LOAD(BUFFER_LOAD_I8_S, int8_t, 1, RI(1) = (uint32_t)(int32_t)value)
  BUFFER_LOAD(BUFFER_LOAD_I8_U, uint8_t, 1, RI(1) = value)
  BUFFER_LOAD(BUFFER_LOAD_I16_S, int16_t, 2, RI(1) = (uint32_t)(int32_t)value)
  BUFFER_LOAD(BUFFER_LOAD_I16_U, uint16_t, 2, RI(1) = value)
  BUFFER_LOAD(BUFFER_LOAD_I32, uint32_t, 4, RI(1) = value)
  BUFFER_LOAD(BUFFER_LOAD_F32, uint32_t, 4, RI(1) = value)
  BUFFER_LOAD(BUFFER_LOAD_I64, uint64_t, 8, set64(r32, U16(1), value))
  BUFFER_LOAD(BUFFER_LOAD_F64, uint64_t, 8, set64(r32, U16(1), value))
#define BUFFER_STORE(name, ctype, width, fetch)                \
  OP(name) {                                                   \
    BUFFER_OPERAND(buffer, 1);                                 \
    BUFFER_WRITABLE(buffer);                                   \
    uint64_t offset = RL(3);                                   \
    BUFFER_RANGE(buffer, offset, width);                       \
    ctype value = (ctype)(fetch);                              \
    memcpy(buffer->data + offset, &value, width);              \
    NEXT(name);                                                \
  }
  BUFFER_STORE(BUFFER_STORE_I8, uint8_t, 1, RI(5))
  BUFFER_STORE(BUFFER_STORE_I16, uint16_t, 2, RI(5))
  BUFFER_STORE(BUFFER_STORE_I32, uint32_t, 4, RI(5))
  BUFFER_STORE(BUFFER_STORE_F32, uint32_t, 4, RI(5))
  BUFFER_STORE(BUFFER_STORE_I64, uint64_t, 8, RL(5))
  BUFFER_STORE(BUFFER_STORE_F64, uint64_t, 8, RL(5))
  OP(BUFFER_COPY) {
    BUFFER_OPERAND(source, 1);
    BUFFER_OPERAND(target, 5);
    BUFFER_WRITABLE(target);
    uint64_t source_offset = RL(3), target_offset = RL(7), length = RL(9);
    BUFFER_RANGE(source, source_offset, length);
    BUFFER_RANGE(target, target_offset, length);
    if (length) {
      memmove(target->data + target_offset, source->data + source_offset,
              (size_t)length);
    }
    NEXT(BUFFER_COPY);
  }
  OP(BUFFER_FILL) {
    BUFFER_OPERAND(buffer, 1);
    BUFFER_WRITABLE(buffer);
    uint64_t offset = RL(3), length = RL(5);
    BUFFER_RANGE(buffer, offset, length);
    if (length) memset(buffer->data + offset, (int)(RI(7) & 0xFFu), (size_t)length);
    NEXT(BUFFER_FILL);
  }

  // ---- globals ----
  OP(GLOBAL_LOAD_I32) { RI(1) = globals[U32(3)]; NEXT(GLOBAL_LOAD_I32); }
  OP(GLOBAL_STORE_I32) { globals[U32(1)] = RI(5); NEXT(GLOBAL_STORE_I32); }
  OP(GLOBAL_LOAD_F32) { RI(1) = globals[U32(3)]; NEXT(GLOBAL_LOAD_F32); }
  OP(GLOBAL_STORE_F32) { globals[U32(1)] = RI(5); NEXT(GLOBAL_STORE_F32); }
  OP(GLOBAL_LOAD_I64) { set64(r32, U16(1), get64(globals, U32(3))); NEXT(GLOBAL_LOAD_I64); }
  OP(GLOBAL_STORE_I64) { set64(globals, U32(1), RL(5)); NEXT(GLOBAL_STORE_I64); }
  OP(GLOBAL_LOAD_REF) {
    kiln_vm_ref_object_t* value = state->global_refs[U32(3)];
    kiln_vm_ref_retain(value);
    kiln_vm_set_ref(&RR(1), value);
    NEXT(GLOBAL_LOAD_REF);
  }
  OP(GLOBAL_STORE_REF) {
    kiln_vm_ref_object_t* value = RR(5);
    kiln_vm_ref_retain(value);
    kiln_vm_set_ref(&state->global_refs[U32(1)], value);
    NEXT(GLOBAL_STORE_REF);
  }
#if defined(KILN_VM_DISPATCH_SWITCH)
    default:
      break;
  }
  // Unreachable for verified code: every opcode has a case above.
  status = kiln_vm_trap(frame, pc, KILN_STATUS_INTERNAL, "bad opcode %u", *pc);
  goto trap;
#else
  }
#endif

trap:
  // Unwind every frame this invocation pushed, releasing their refs.
  while (context->depth > base_depth) kiln_vm_pop_frame(context);
  context->fuel = fuel;
  return status;
}
