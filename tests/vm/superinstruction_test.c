// Load-time superinstructions (vm/superinstructions.c): every module here is
// loaded twice, with superinstructions (the default) and without, and both
// must give the same results, register writes, traps and fuel use as each
// other and as a C reference. Built against both dispatch kinds.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_test.h"
#include "../../vm/internal.h"
#include "../../vm/superinstructions.h"
#include "vm_test_util.h"

typedef struct kiln_pair_t {
  kiln_vm_test_env_t fused;
  kiln_vm_test_env_t plain;
} kiln_pair_t;

static kiln_status_t kiln_pair_init(kiln_pair_t* pair, const char* source) {
  kiln_vm_module_load_options_t options = kiln_vm_module_load_options_default();
  KILN_RETURN_IF_ERROR(
      kiln_vm_test_env_init_with_options(&pair->fused, source, &options));
  options.disable_superinstructions = true;
  kiln_status_t status =
      kiln_vm_test_env_init_with_options(&pair->plain, source, &options);
  if (status) kiln_vm_test_env_deinit(&pair->fused);
  return status;
}

static void kiln_pair_deinit(kiln_pair_t* pair) {
  kiln_vm_test_env_deinit(&pair->fused);
  kiln_vm_test_env_deinit(&pair->plain);
}

// The status as text ("" when OK); frees the status.
static void kiln_status_text(kiln_status_t status, char* out, size_t size) {
  out[0] = 0;
  if (!status) return;
  char* text = kiln_status_to_string(status);
  snprintf(out, size, "%s", text);
  free(text);
  kiln_status_free(status);
}

// Opcode byte the interpreter runs at `offset` of function `name`, and the
// byte the module file holds there.
static void kiln_code_bytes(const kiln_vm_module_t* module, const char* name,
                            uint32_t offset, uint8_t* out_run,
                            uint8_t* out_file) {
  const kiln_format_module_t* format = kiln_vm_module_format(module);
  for (uint32_t i = 0; i < format->function_count; ++i) {
    if (strcmp(module->function_display_names[i], name) == 0) {
      *out_run = module->function_code[i][offset];
      *out_file = format->functions[i].bytecode[offset];
      return;
    }
  }
  *out_run = *out_file = 0xFF;
}

// ---- compare + cond_br, every fusable compare ----

typedef struct kiln_compare_case_t {
  const char* mnemonic;
  kiln_vm_opcode_t opcode;
  uint32_t fused;  // its superinstruction with a following cond_br
  char kind;  // i: i32 pair, z: i32 unary, l: i64 pair, Z: i64 unary, f, d
  int (*reference)(const kiln_vm_value_t* v);
} kiln_compare_case_t;

#define KILN_REF(name, ctype, field, expr)              \
  static int name(const kiln_vm_value_t* v) {           \
    ctype a = (ctype)v[0].field, b = (ctype)v[1].field; \
    (void)b;                                            \
    return (expr);                                      \
  }
KILN_REF(ref_eq_i32, int32_t, i32, a == b)
KILN_REF(ref_ne_i32, int32_t, i32, a != b)
KILN_REF(ref_lt_i32_s, int32_t, i32, a < b)
KILN_REF(ref_lt_i32_u, uint32_t, i32, a < b)
KILN_REF(ref_le_i32_s, int32_t, i32, a <= b)
KILN_REF(ref_le_i32_u, uint32_t, i32, a <= b)
KILN_REF(ref_eqz_i32, int32_t, i32, a == 0)
KILN_REF(ref_eq_i64, int64_t, i64, a == b)
KILN_REF(ref_ne_i64, int64_t, i64, a != b)
KILN_REF(ref_lt_i64_s, int64_t, i64, a < b)
KILN_REF(ref_lt_i64_u, uint64_t, i64, a < b)
KILN_REF(ref_le_i64_s, int64_t, i64, a <= b)
KILN_REF(ref_le_i64_u, uint64_t, i64, a <= b)
KILN_REF(ref_eqz_i64, int64_t, i64, a == 0)
KILN_REF(ref_eq_f32, float, f32, a == b)
KILN_REF(ref_ne_f32, float, f32, a != b)
KILN_REF(ref_lt_f32, float, f32, a < b)
KILN_REF(ref_le_f32, float, f32, a <= b)
KILN_REF(ref_eq_f64, double, f64, a == b)
KILN_REF(ref_ne_f64, double, f64, a != b)
KILN_REF(ref_lt_f64, double, f64, a < b)
KILN_REF(ref_le_f64, double, f64, a <= b)

static const kiln_compare_case_t kCompares[] = {
    {"eq.i32", KILN_VM_OP_EQ_I32, KILN_VM_OP_EQ_I32_BR, 'i', ref_eq_i32},
    {"ne.i32", KILN_VM_OP_NE_I32, KILN_VM_OP_NE_I32_BR, 'i', ref_ne_i32},
    {"lt.i32.s", KILN_VM_OP_LT_I32_S, KILN_VM_OP_LT_I32_S_BR, 'i', ref_lt_i32_s},
    {"lt.i32.u", KILN_VM_OP_LT_I32_U, KILN_VM_OP_LT_I32_U_BR, 'i', ref_lt_i32_u},
    {"le.i32.s", KILN_VM_OP_LE_I32_S, KILN_VM_OP_LE_I32_S_BR, 'i', ref_le_i32_s},
    {"le.i32.u", KILN_VM_OP_LE_I32_U, KILN_VM_OP_LE_I32_U_BR, 'i', ref_le_i32_u},
    {"eqz.i32", KILN_VM_OP_EQZ_I32, KILN_VM_OP_EQZ_I32_BR, 'z', ref_eqz_i32},
    {"eq.i64", KILN_VM_OP_EQ_I64, KILN_VM_OP_EQ_I64_BR, 'l', ref_eq_i64},
    {"ne.i64", KILN_VM_OP_NE_I64, KILN_VM_OP_NE_I64_BR, 'l', ref_ne_i64},
    {"lt.i64.s", KILN_VM_OP_LT_I64_S, KILN_VM_OP_LT_I64_S_BR, 'l', ref_lt_i64_s},
    {"lt.i64.u", KILN_VM_OP_LT_I64_U, KILN_VM_OP_LT_I64_U_BR, 'l', ref_lt_i64_u},
    {"le.i64.s", KILN_VM_OP_LE_I64_S, KILN_VM_OP_LE_I64_S_BR, 'l', ref_le_i64_s},
    {"le.i64.u", KILN_VM_OP_LE_I64_U, KILN_VM_OP_LE_I64_U_BR, 'l', ref_le_i64_u},
    {"eqz.i64", KILN_VM_OP_EQZ_I64, KILN_VM_OP_EQZ_I64_BR, 'Z', ref_eqz_i64},
    {"eq.f32", KILN_VM_OP_EQ_F32, KILN_VM_OP_EQ_F32_BR, 'f', ref_eq_f32},
    {"ne.f32", KILN_VM_OP_NE_F32, KILN_VM_OP_NE_F32_BR, 'f', ref_ne_f32},
    {"lt.f32", KILN_VM_OP_LT_F32, KILN_VM_OP_LT_F32_BR, 'f', ref_lt_f32},
    {"le.f32", KILN_VM_OP_LE_F32, KILN_VM_OP_LE_F32_BR, 'f', ref_le_f32},
    {"eq.f64", KILN_VM_OP_EQ_F64, KILN_VM_OP_EQ_F64_BR, 'd', ref_eq_f64},
    {"ne.f64", KILN_VM_OP_NE_F64, KILN_VM_OP_NE_F64_BR, 'd', ref_ne_f64},
    {"lt.f64", KILN_VM_OP_LT_F64, KILN_VM_OP_LT_F64_BR, 'd', ref_lt_f64},
    {"le.f64", KILN_VM_OP_LE_F64, KILN_VM_OP_LE_F64_BR, 'd', ref_le_f64},
};
#define KILN_COMPARE_COUNT (sizeof(kCompares) / sizeof(kCompares[0]))

// Function c<k>: dst = compare(args); cond_br dst -> returns (dst, 10) on
// the true edge and (dst, 20) on the false one.
static void kiln_compare_source(char* out, size_t size) {
  size_t used = 0;
  for (size_t k = 0; k < KILN_COMPARE_COUNT; ++k) {
    const kiln_compare_case_t* c = &kCompares[k];
    const char* signature = "ii_ii";
    const char* operands = "i2 i0 i1";
    const char* dst = "i2";
    const char* tag = "i3";
    switch (c->kind) {
      case 'z': signature = "i_ii"; operands = "i2 i0"; break;
      case 'l': signature = "II_ii"; operands = "i4 I0 I2"; dst = "i4"; tag = "i5"; break;
      case 'Z': signature = "I_ii"; operands = "i2 I0"; break;
      case 'f': signature = "ff_ii"; break;
      case 'd': signature = "FF_ii"; operands = "i4 I0 I2"; dst = "i4"; tag = "i5"; break;
      default: break;
    }
    used += (size_t)snprintf(out + used, size - used,
                             "func c%zu \"%s\"\n  %s %s\n  cond_br %s yes no\n"
                             "yes:\n  const.i32 %s 10\n  return %s %s\n"
                             "no:\n  const.i32 %s 20\n  return %s %s\nend\n"
                             "export c%zu\n",
                             k, signature, c->mnemonic, operands, dst, tag, dst, tag,
                             tag, dst, tag, k);
  }
}

// Argument pairs for a compare kind: every pair of a small set of edge
// values (signed/unsigned boundaries, zero, NaN, infinities, signed zero).
static size_t kiln_compare_inputs(char kind, kiln_vm_value_t (*pairs)[2],
                                  size_t capacity) {
  static const int32_t i32s[] = {0, 1, -1, 7, INT32_MIN, INT32_MAX};
  static const int64_t i64s[] = {0, 1, -1, INT64_MIN, INT64_MAX,
                                 INT64_C(0x100000000)};
  const float f32s[] = {0.0f, -0.0f, 1.0f, -1.5f, NAN, INFINITY};
  const double f64s[] = {0.0, -0.0, 1.0, -1.5, NAN, -INFINITY};
  size_t count = 0;
  for (int x = 0; x < 6; ++x) {
    for (int y = 0; y < 6 && count < capacity; ++y) {
      switch (kind) {
        case 'i': case 'z':
          pairs[count][0] = kiln_vm_value_i32(i32s[x]);
          pairs[count][1] = kiln_vm_value_i32(i32s[y]);
          break;
        case 'l': case 'Z':
          pairs[count][0] = kiln_vm_value_i64(i64s[x]);
          pairs[count][1] = kiln_vm_value_i64(i64s[y]);
          break;
        case 'f':
          pairs[count][0] = kiln_vm_value_f32(f32s[x]);
          pairs[count][1] = kiln_vm_value_f32(f32s[y]);
          break;
        default:
          pairs[count][0] = kiln_vm_value_f64(f64s[x]);
          pairs[count][1] = kiln_vm_value_f64(f64s[y]);
          break;
      }
      ++count;
    }
  }
  return count;
}

KILN_TEST(Superinstructions, CompareBranchMatchesReferenceAndPlainPath) {
  char source[16384];
  kiln_compare_source(source, sizeof(source));
  kiln_pair_t pair;
  KILN_ASSERT_OK(kiln_pair_init(&pair, source));
  // Every compare+cond_br pair was fused, none with the option set.
  KILN_EXPECT_EQ(kiln_vm_module_superinstruction_count(pair.fused.module),
                 (uint32_t)KILN_COMPARE_COUNT);
  KILN_EXPECT_EQ(kiln_vm_module_superinstruction_count(pair.plain.module), 0u);
  // Every function's code starts on a cache line, whatever malloc returned.
  for (uint32_t i = 0; i < kiln_vm_module_format(pair.fused.module)->function_count; ++i) {
    KILN_EXPECT_EQ((uintptr_t)pair.fused.module->function_code[i] % 64u, 0u);
    KILN_EXPECT_EQ((uintptr_t)pair.plain.module->function_code[i] % 64u, 0u);
  }
  for (size_t k = 0; k < KILN_COMPARE_COUNT; ++k) {
    const kiln_compare_case_t* c = &kCompares[k];
    char name[16];
    snprintf(name, sizeof(name), "c%zu", k);
    // The interpreter runs the internal opcode; the file keeps the public one.
    uint8_t run = 0, file = 0;
    kiln_code_bytes(pair.fused.module, name, 0, &run, &file);
    KILN_EXPECT_EQ(file, (uint8_t)c->opcode);
    KILN_EXPECT_EQ(run, (uint8_t)c->fused);
    kiln_code_bytes(pair.plain.module, name, 0, &run, &file);
    KILN_EXPECT_EQ(run, (uint8_t)c->opcode);

    kiln_vm_value_t pairs[36][2];
    size_t count = kiln_compare_inputs(c->kind, pairs, 36);
    size_t arg_count = (c->kind == 'z' || c->kind == 'Z') ? 1 : 2;
    for (size_t p = 0; p < count; ++p) {
      kiln_vm_value_t fused[2], plain[2];
      KILN_ASSERT_OK(kiln_vm_test_call(&pair.fused, name, pairs[p], arg_count, fused, 2));
      KILN_ASSERT_OK(kiln_vm_test_call(&pair.plain, name, pairs[p], arg_count, plain, 2));
      int expected = c->reference(pairs[p]);
      if (fused[0].i32 != expected || fused[1].i32 != (expected ? 10 : 20) ||
          plain[0].i32 != fused[0].i32 || plain[1].i32 != fused[1].i32) {
        KILN_ADD_FAILURE("%s input %zu: fused (%d, %d), plain (%d, %d), reference %d",
                         c->mnemonic, p, fused[0].i32, fused[1].i32, plain[0].i32,
                         plain[1].i32, expected);
      }
    }
  }
  kiln_pair_deinit(&pair);
}

// ---- add + compare + cond_br: the counted-loop step ----

typedef struct kiln_step_case_t {
  const char* add;  // "add.i32" (step in i2) or "addi.i32" (step 3)
  int compare;      // index into kCompares (an i32 pair compare)
} kiln_step_case_t;

// C reference of `do { n++; x += step; c = cmp(x, limit); use fuel } while
// (c)`; returns false when fuel runs out at the cond_br.
static bool kiln_step_reference(int compare, int32_t x, int32_t limit,
                                int32_t step, uint64_t* fuel, int32_t* out_x,
                                int32_t* out_n) {
  int32_t n = 0;
  for (;;) {
    n = (int32_t)((uint32_t)n + 1u);
    x = (int32_t)((uint32_t)x + (uint32_t)step);
    kiln_vm_value_t v[2] = {kiln_vm_value_i32(x), kiln_vm_value_i32(limit)};
    int c = kCompares[compare].reference(v);
    if (*fuel == 0) return false;
    --*fuel;
    if (!c) break;
  }
  *out_x = x;
  *out_n = n;
  return true;
}

KILN_TEST(Superinstructions, CountedLoopsMatchReferenceAndPlainPath) {
  // Function s<k>(x, limit, step) -> (x, iterations, sum of the compare's
  // results seen at the top of the loop: iterations - 1, which observes the
  // fused compare's register write).
  char source[8192];
  size_t used = 0;
  kiln_step_case_t steps[12];
  for (int k = 0; k < 12; ++k) {
    steps[k].add = k < 6 ? "add.i32 i0 i0 i2" : "addi.i32 i0 i0 3";
    steps[k].compare = k % 6;
    used += (size_t)snprintf(source + used, sizeof(source) - used,
                             "func s%d \"iii_iii\"\n  const.i32 i3 0\n  const.i32 i5 1\n"
                             "  const.i32 i4 0\n  const.i32 i6 0\n"
                             "top:\n  add.i32 i3 i3 i5\n  add.i32 i6 i6 i4\n  %s\n  %s i4 i0 i1\n"
                             "  cond_br i4 top done\ndone:\n  return i0 i3 i6\nend\n"
                             "export s%d\n",
                             k, steps[k].add, kCompares[steps[k].compare].mnemonic, k);
  }
  kiln_pair_t pair;
  KILN_ASSERT_OK(kiln_pair_init(&pair, source));
  // Each function has one step triple; its compare+cond_br also fuses (a
  // branch may enter there).
  KILN_EXPECT_EQ(kiln_vm_module_superinstruction_count(pair.fused.module), 24u);
  static const int32_t kInputs[][3] = {
      {0, 10, 1},          {0, 10, 3},     {-5, 5, 2},         {10, 0, -1},
      {INT32_MAX - 3, INT32_MAX, 1},       {-1, 2, 1},         {0, 0, 0},
      {INT32_MIN, INT32_MIN + 4, 1},       {-7, -7, 0},        {3, 9, 3},
  };
  for (int k = 0; k < 12; ++k) {
    char name[16];
    snprintf(name, sizeof(name), "s%d", k);
    uint8_t run = 0, file = 0;
    kiln_code_bytes(pair.fused.module, name, 42, &run, &file);  // the step's add
    KILN_EXPECT_GE(run, (uint8_t)KILN_VM_OP_COUNT);
    KILN_EXPECT_EQ(file, (uint8_t)(k < 6 ? KILN_VM_OP_ADD_I32 : KILN_VM_OP_ADDI_I32));
    for (size_t i = 0; i < sizeof(kInputs) / sizeof(kInputs[0]); ++i) {
      int32_t step = k < 6 ? kInputs[i][2] : 3;
      kiln_vm_value_t args[3] = {kiln_vm_value_i32(kInputs[i][0]),
                                 kiln_vm_value_i32(kInputs[i][1]),
                                 kiln_vm_value_i32(kInputs[i][2])};
      // A fuel budget bounds loops that would wrap around for long.
      const uint64_t kFuel = 5000;
      uint64_t ref_fuel = kFuel;
      int32_t ref_x = 0, ref_n = 0;
      bool ref_ok = kiln_step_reference(steps[k].compare, kInputs[i][0], kInputs[i][1],
                                        step, &ref_fuel, &ref_x, &ref_n);
      kiln_vm_value_t fused[3] = {{0}}, plain[3] = {{0}};
      char fused_error[512], plain_error[512];
      kiln_vm_context_set_fuel(pair.fused.context, kFuel);
      kiln_vm_context_set_fuel(pair.plain.context, kFuel);
      kiln_status_text(kiln_vm_test_call(&pair.fused, name, args, 3, fused, 3),
                       fused_error, sizeof(fused_error));
      kiln_status_text(kiln_vm_test_call(&pair.plain, name, args, 3, plain, 3),
                       plain_error, sizeof(plain_error));
      KILN_EXPECT_STREQ(fused_error, plain_error);
      KILN_EXPECT_EQ_U64(kiln_vm_context_fuel(pair.fused.context), ref_fuel);
      KILN_EXPECT_EQ_U64(kiln_vm_context_fuel(pair.plain.context), ref_fuel);
      if (ref_ok) {
        KILN_EXPECT_STREQ(fused_error, "");
        if (fused[0].i32 != ref_x || fused[1].i32 != ref_n || fused[2].i32 != ref_n - 1 ||
            plain[0].i32 != ref_x || plain[1].i32 != ref_n || plain[2].i32 != ref_n - 1) {
          KILN_ADD_FAILURE("%s input %zu: fused (%d, %d, %d), plain (%d, %d, %d), "
                           "reference (%d, %d, %d)",
                           name, i, fused[0].i32, fused[1].i32, fused[2].i32, plain[0].i32,
                           plain[1].i32, plain[2].i32, ref_x, ref_n, ref_n - 1);
        }
      } else {
        // The trap names the cond_br, where the unfused code uses fuel.
        KILN_EXPECT_CONTAINS(fused_error, k < 6 ? "at bytecode offset 56: fuel exhausted"
                                                : "at bytecode offset 58: fuel exhausted");
      }
    }
  }
  kiln_pair_deinit(&pair);
}

// ---- fuel and traps at every budget ----

static const char kCountSource[] =
    "func count \"i_i\"\n"
    "  const.i32 i1 0\n"          // 0
    "  const.i32 i2 1\n"          // 7
    "top:\n"
    "  add.i32 i1 i1 i2\n"        // 14, fused: add; lt; cond_br
    "  lt.i32.s i3 i1 i0\n"       // 21, fused: lt; cond_br
    "  cond_br i3 top done\n"     // 28
    "done:\n"
    "  return i1\n"
    "end\n"
    "export count\n";

KILN_TEST(Superinstructions, FuelRunsOutAtTheSameCountAndOffset) {
  kiln_pair_t pair;
  KILN_ASSERT_OK(kiln_pair_init(&pair, kCountSource));
  KILN_EXPECT_EQ(kiln_vm_module_superinstruction_count(pair.fused.module), 2u);
  kiln_vm_value_t arg = kiln_vm_value_i32(10);
  for (uint64_t fuel = 0; fuel <= 12; ++fuel) {
    kiln_vm_value_t fused = {0}, plain = {0};
    char fused_error[512], plain_error[512];
    kiln_vm_context_set_fuel(pair.fused.context, fuel);
    kiln_vm_context_set_fuel(pair.plain.context, fuel);
    kiln_status_text(kiln_vm_test_call(&pair.fused, "count", &arg, 1, &fused, 1),
                     fused_error, sizeof(fused_error));
    kiln_status_text(kiln_vm_test_call(&pair.plain, "count", &arg, 1, &plain, 1),
                     plain_error, sizeof(plain_error));
    KILN_EXPECT_STREQ(fused_error, plain_error);
    KILN_EXPECT_EQ_U64(kiln_vm_context_fuel(pair.fused.context),
                       kiln_vm_context_fuel(pair.plain.context));
    // Ten iterations, one cond_br each: ten units of fuel.
    if (fuel < 10) {
      KILN_EXPECT_STREQ(fused_error,
                        "RESOURCE_EXHAUSTED: trap in function 'count' of module '' at "
                        "bytecode offset 28: fuel exhausted");
      KILN_EXPECT_EQ_U64(kiln_vm_context_fuel(pair.fused.context), 0);
    } else {
      KILN_EXPECT_STREQ(fused_error, "");
      KILN_EXPECT_EQ(fused.i32, 10);
      KILN_EXPECT_EQ(plain.i32, 10);
      KILN_EXPECT_EQ_U64(kiln_vm_context_fuel(pair.fused.context), fuel - 10);
    }
  }
  kiln_pair_deinit(&pair);
}

// ---- branches into the middle of a fused sequence ----

static const char kEntrySource[] =
    // `check` is the cond_br of a fused lt+cond_br; `side` jumps straight to
    // it with the condition register set elsewhere.
    "func direct \"ii_i\"\n"
    "  cond_br i0 side main\n"
    "main:\n  const.i32 i2 5\n  lt.i32.s i3 i1 i2\n"
    "check:\n  cond_br i3 small big\n"
    "side:\n  const.i32 i3 0\n  br check\n"
    "small:\n  const.i32 i4 100\n  return i4\n"
    "big:\n  const.i32 i4 200\n  return i4\n"
    "end\n"
    // `enter` is the compare of a fused add+lt+cond_br step.
    "func middle \"ii_i\"\n"
    "  const.i32 i2 1\n  const.i32 i5 10\n  cond_br i0 enter top\n"
    "top:\n  add.i32 i1 i1 i2\n"
    "enter:\n  lt.i32.s i3 i1 i5\n  cond_br i3 top done\n"
    "done:\n  return i1\n"
    "end\n"
    "export direct\nexport middle\n";

KILN_TEST(Superinstructions, BranchesIntoAFusedSequence) {
  kiln_pair_t pair;
  KILN_ASSERT_OK(kiln_pair_init(&pair, kEntrySource));
  // direct: lt+cond_br; middle: add+lt+cond_br and lt+cond_br.
  KILN_EXPECT_EQ(kiln_vm_module_superinstruction_count(pair.fused.module), 3u);
  static const struct {
    const char* name;
    int32_t a, b, expected;
  } kCases[] = {
      {"direct", 0, 3, 100},  // through the fused pair, true edge
      {"direct", 0, 9, 200},  // through the fused pair, false edge
      {"direct", 1, 3, 200},  // straight to the cond_br: its own condition
      {"middle", 0, 3, 10},   {"middle", 1, 3, 10},
      {"middle", 0, 20, 21},  // add first: 21
      {"middle", 1, 20, 20},  // enters at the compare: no add
  };
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
    kiln_vm_value_t args[2] = {kiln_vm_value_i32(kCases[i].a), kiln_vm_value_i32(kCases[i].b)};
    kiln_vm_value_t fused = {0}, plain = {0};
    KILN_ASSERT_OK(kiln_vm_test_call(&pair.fused, kCases[i].name, args, 2, &fused, 1));
    KILN_ASSERT_OK(kiln_vm_test_call(&pair.plain, kCases[i].name, args, 2, &plain, 1));
    if (fused.i32 != kCases[i].expected || plain.i32 != kCases[i].expected) {
      KILN_ADD_FAILURE("%s(%d, %d): fused %d, plain %d, expected %d", kCases[i].name,
                       kCases[i].a, kCases[i].b, fused.i32, plain.i32,
                       kCases[i].expected);
    }
  }
  kiln_pair_deinit(&pair);
}

KILN_TEST(Superinstructions, OnlyAdjacentSequencesOnTheSameRegisterFuse) {
  // The cond_br tests another register, or a mov sits between: nothing
  // fuses; a step whose compare reads another register first keeps only the
  // compare+cond_br pair. Everything still runs.
  static const char kSource[] =
      "func other \"ii_i\"\n  lt.i32.s i2 i0 i1\n  cond_br i0 a b\n"
      "a:\n  return i2\nb:\n  return i1\nend\n"
      "func gap \"ii_i\"\n  lt.i32.s i2 i0 i1\n  mov.i32 i3 i2\n  cond_br i2 a b\n"
      "a:\n  return i3\nb:\n  return i1\nend\n"
      "func step_other \"ii_i\"\n  add.i32 i0 i0 i1\n  lt.i32.s i2 i0 i1\n  cond_br i1 a b\n"
      "a:\n  return i0\nb:\n  return i2\nend\n"
      // The compare does not read the add's result first: only the
      // compare+cond_br pair fuses.
      "func step_swapped \"ii_i\"\n  add.i32 i0 i0 i1\n  lt.i32.s i2 i1 i0\n  cond_br i2 a b\n"
      "a:\n  return i0\nb:\n  return i2\nend\n"
      "export other\nexport gap\nexport step_other\nexport step_swapped\n";
  kiln_pair_t pair;
  KILN_ASSERT_OK(kiln_pair_init(&pair, kSource));
  KILN_EXPECT_EQ(kiln_vm_module_superinstruction_count(pair.fused.module), 1u);
  kiln_vm_value_t args[2] = {kiln_vm_value_i32(1), kiln_vm_value_i32(4)}, r = {0};
  KILN_ASSERT_OK(kiln_vm_test_call(&pair.fused, "other", args, 2, &r, 1));
  KILN_EXPECT_EQ(r.i32, 1);
  KILN_ASSERT_OK(kiln_vm_test_call(&pair.fused, "gap", args, 2, &r, 1));
  KILN_EXPECT_EQ(r.i32, 1);
  KILN_ASSERT_OK(kiln_vm_test_call(&pair.fused, "step_other", args, 2, &r, 1));
  KILN_EXPECT_EQ(r.i32, 5);
  KILN_ASSERT_OK(kiln_vm_test_call(&pair.fused, "step_swapped", args, 2, &r, 1));
  KILN_EXPECT_EQ(r.i32, 5);  // 4 < 5: the true edge returns i0
  uint8_t run = 0, file = 0;
  kiln_code_bytes(pair.fused.module, "step_swapped", 0, &run, &file);
  KILN_EXPECT_EQ(run, (uint8_t)KILN_VM_OP_ADD_I32);
  kiln_code_bytes(pair.fused.module, "step_swapped", 7, &run, &file);
  KILN_EXPECT_EQ(run, (uint8_t)KILN_VM_OP_LT_I32_S_BR);
  kiln_pair_deinit(&pair);
}

// ---- random programs: fused and plain must agree on everything ----

static uint32_t kiln_rand(uint64_t* state) {
  // xorshift64*: a fixed seed keeps the test reproducible.
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return (uint32_t)((*state * UINT64_C(2685821657736338717)) >> 32);
}

// A random straight-line-and-branches function over i0..i7 whose
// instructions are mostly fusable sequences, with division (traps), back
// edges (loops bounded by fuel) and branches to any instruction, including
// the middle of fused sequences. Every instruction gets a label L<n>.
static void kiln_random_program(uint64_t* rng, char* out, size_t size) {
  static const char* const kCmp[] = {"eq.i32", "ne.i32", "lt.i32.s",
                                     "lt.i32.u", "le.i32.s", "le.i32.u"};
  enum { kInstructions = 24 };
  size_t used = (size_t)snprintf(out, size, "func f \"iii_iiii\"\n");
  for (int n = 0; n < kInstructions; ++n) {
    uint32_t r = kiln_rand(rng);
    unsigned d = r % 8, a = (r >> 3) % 8, b = (r >> 6) % 8;
    int t = (int)(kiln_rand(rng) % (kInstructions + 1));
    int f = (int)(kiln_rand(rng) % (kInstructions + 1));
    const char* cmp = kCmp[(r >> 9) % 6];
    int k = (int)((r >> 12) % 7) - 3;
    used += (size_t)snprintf(out + used, size - used, "L%d:\n", n);
    switch ((r >> 16) % 8) {
      case 0:
        used += (size_t)snprintf(out + used, size - used, "  const.i32 i%u %d\n", d, k);
        break;
      case 1:
        used += (size_t)snprintf(out + used, size - used, "  add.i32 i%u i%u i%u\n", d, a, b);
        break;
      case 2:
        used += (size_t)snprintf(out + used, size - used, "  addi.i32 i%u i%u %d\n", d, a, k);
        break;
      case 3:
        used += (size_t)snprintf(out + used, size - used, "  div.i32.s i%u i%u i%u\n", d, a, b);
        break;
      case 4:
      case 5:
        // compare; cond_br on its result (fusable), or on another register.
        used += (size_t)snprintf(out + used, size - used, "  %s i%u i%u i%u\n", cmp, d, a, b);
        if (++n < kInstructions) {
          used += (size_t)snprintf(out + used, size - used, "L%d:\n  cond_br i%u L%d L%d\n",
                                   n, (r >> 20) % 4 ? d : a, t, f);
        }
        break;
      case 6:
        used += (size_t)snprintf(out + used, size - used, "  cond_br i%u L%d L%d\n", a, t, f);
        break;
      default:
        used += (size_t)snprintf(out + used, size - used, "  br L%d\n", t);
        break;
    }
  }
  snprintf(out + used, size - used, "L%d:\n  return i0 i1 i2 i3\nend\nexport f\n",
           kInstructions);
}

KILN_TEST(Superinstructions, RandomProgramsAgreeWithThePlainPath) {
  uint64_t rng = UINT64_C(0x9E3779B97F4A7C15);
  uint32_t fused_total = 0, traps = 0, runs = 0;
  for (int program = 0; program < 300; ++program) {
    char source[8192];
    kiln_random_program(&rng, source, sizeof(source));
    kiln_pair_t pair;
    KILN_ASSERT_OK(kiln_pair_init(&pair, source));
    fused_total += kiln_vm_module_superinstruction_count(pair.fused.module);
    static const int32_t kArgs[][3] = {{0, 0, 0}, {5, -2, 7}, {INT32_MIN, -1, 3}};
    for (int i = 0; i < 3; ++i) {
      kiln_vm_value_t args[3] = {kiln_vm_value_i32(kArgs[i][0]), kiln_vm_value_i32(kArgs[i][1]),
                                 kiln_vm_value_i32(kArgs[i][2])};
      kiln_vm_value_t fused[4] = {{0}}, plain[4] = {{0}};
      char fused_error[512], plain_error[512];
      kiln_vm_context_set_fuel(pair.fused.context, 200);
      kiln_vm_context_set_fuel(pair.plain.context, 200);
      kiln_status_text(kiln_vm_test_call(&pair.fused, "f", args, 3, fused, 4), fused_error,
                       sizeof(fused_error));
      kiln_status_text(kiln_vm_test_call(&pair.plain, "f", args, 3, plain, 4), plain_error,
                       sizeof(plain_error));
      ++runs;
      traps += fused_error[0] != 0;
      KILN_EXPECT_STREQ(fused_error, plain_error);
      KILN_EXPECT_EQ_U64(kiln_vm_context_fuel(pair.fused.context),
                         kiln_vm_context_fuel(pair.plain.context));
      if (!fused_error[0]) {
        for (int v = 0; v < 4; ++v) KILN_EXPECT_EQ(fused[v].i32, plain[v].i32);
      }
    }
    kiln_pair_deinit(&pair);
  }
  // The generator really produces fused code, traps and clean returns.
  KILN_EXPECT_GT(fused_total, 300u);
  KILN_EXPECT_GT(traps, 10u);
  KILN_EXPECT_LT(traps, runs - 10u);
}
