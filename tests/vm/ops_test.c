// Per-op-family programs: each op runs in a one-instruction function over a
// grid of inputs and is compared with a plain C reference (integers exactly;
// floats bit-exactly, NaN matching any NaN: the VM uses the same IEEE ops).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_test.h"
#include "vm_test_util.h"

static const int32_t kI32[] = {0, 1, -1, 2, 7, -7, 31, 32, 0x12345678,
                               INT32_MAX, INT32_MIN, 1000};
static const int64_t kI64[] = {0, 1, -1, 3, -9, 63, 64,
                               INT64_C(0x123456789ABCDEF0), INT64_MAX,
                               INT64_MIN, INT64_C(-5000000000)};
static const float kF32[] = {0.0f, -0.0f, 1.0f, -2.5f, 3.25f, 1e30f, -1e-30f,
                             INFINITY, -INFINITY, NAN, 2147483648.0f, 7.9f};
static const double kF64[] = {0.0, -0.0, 1.0, -2.5, 3.25, 1e300, -1e-300,
                              INFINITY, -INFINITY, NAN, 9.3e18, -7.9};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

// One function `f` with signature `sig` whose body is `body`.
static bool kiln_ops_env(kiln_vm_test_env_t* env, const char* sig,
                         const char* body) {
  char source[1024];
  snprintf(source, sizeof(source), "func f \"%s\"\n%s\nend\nexport f\n", sig,
           body);
  kiln_status_t status = kiln_vm_test_env_init(env, source);
  if (status) {
    char* text = kiln_status_to_string(status);
    KILN_ADD_FAILURE("cannot build '%s': %s", body, text);
    free(text);
    kiln_status_free(status);
    return false;
  }
  return true;
}

static bool kiln_same_f32(float a, float b) {
  if (a != a) return b != b;
  return memcmp(&a, &b, 4) == 0;
}
static bool kiln_same_f64(double a, double b) {
  if (a != a) return b != b;
  return memcmp(&a, &b, 8) == 0;
}

typedef uint32_t (*kiln_i32_ref_t)(int32_t, int32_t);
#define I32_REF(name, expr) \
  static uint32_t ref_##name(int32_t sa, int32_t sb) { uint32_t a = (uint32_t)sa, b = (uint32_t)sb; (void)a; (void)b; return (uint32_t)(expr); }
I32_REF(add, a + b)
I32_REF(sub, a - b)
I32_REF(mul, a * b)
I32_REF(divs, sb == 0 || (sa == INT32_MIN && sb == -1) ? 0 : (uint32_t)(sa / sb))
I32_REF(divu, b == 0 ? 0 : a / b)
I32_REF(rems, sb == 0 ? 0 : (sb == -1 ? 0 : (uint32_t)(sa % sb)))
I32_REF(remu, b == 0 ? 0 : a % b)
I32_REF(and, a & b)
I32_REF(or, a | b)
I32_REF(xor, a ^ b)
I32_REF(shl, a << (b & 31))
I32_REF(shrs, (uint32_t)(sa >> (b & 31)))
I32_REF(shru, a >> (b & 31))
I32_REF(mins, sa < sb ? a : b)
I32_REF(minu, a < b ? a : b)
I32_REF(maxs, sa > sb ? a : b)
I32_REF(maxu, a > b ? a : b)
I32_REF(eq, a == b)
I32_REF(ne, a != b)
I32_REF(lts, sa < sb)
I32_REF(ltu, a < b)
I32_REF(les, sa <= sb)
I32_REF(leu, a <= b)

KILN_TEST(VmOps, I32Binary) {
  static const struct { const char* op; kiln_i32_ref_t ref; bool divides; } kOps[] = {
      {"add.i32", ref_add, false},   {"sub.i32", ref_sub, false},
      {"mul.i32", ref_mul, false},   {"div.i32.s", ref_divs, true},
      {"div.i32.u", ref_divu, true}, {"rem.i32.s", ref_rems, true},
      {"rem.i32.u", ref_remu, true}, {"and.i32", ref_and, false},
      {"or.i32", ref_or, false},     {"xor.i32", ref_xor, false},
      {"shl.i32", ref_shl, false},   {"shr.i32.s", ref_shrs, false},
      {"shr.i32.u", ref_shru, false}, {"min.i32.s", ref_mins, false},
      {"min.i32.u", ref_minu, false}, {"max.i32.s", ref_maxs, false},
      {"max.i32.u", ref_maxu, false}, {"eq.i32", ref_eq, false},
      {"ne.i32", ref_ne, false},     {"lt.i32.s", ref_lts, false},
      {"lt.i32.u", ref_ltu, false},  {"le.i32.s", ref_les, false},
      {"le.i32.u", ref_leu, false},
  };
  for (size_t o = 0; o < COUNT(kOps); ++o) {
    char body[128];
    snprintf(body, sizeof(body), "  %s i2 i0 i1\n  return i2", kOps[o].op);
    kiln_vm_test_env_t env;
    if (!kiln_ops_env(&env, "ii_i", body)) continue;
    for (size_t x = 0; x < COUNT(kI32); ++x) {
      for (size_t y = 0; y < COUNT(kI32); ++y) {
        int32_t a = kI32[x], b = kI32[y];
        if (kOps[o].divides && (b == 0 || (a == INT32_MIN && b == -1 &&
                                           strncmp(kOps[o].op, "div", 3) == 0))) {
          continue;  // traps; see trap_test.c
        }
        kiln_vm_value_t args[2] = {kiln_vm_value_i32(a), kiln_vm_value_i32(b)};
        kiln_vm_value_t result;
        KILN_ASSERT_OK(kiln_vm_test_call(&env, "f", args, 2, &result, 1));
        if ((uint32_t)result.i32 != kOps[o].ref(a, b)) {
          KILN_ADD_FAILURE("%s(%d, %d) = %d, reference %d", kOps[o].op, a, b,
                           result.i32, (int32_t)kOps[o].ref(a, b));
        }
      }
    }
    kiln_vm_test_env_deinit(&env);
  }
}

KILN_TEST(VmOps, I32UnaryImmediateAndSelect) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_TRUE(kiln_ops_env(&env, "ii_iiiiiii",
                                "  neg.i32 i2 i0\n  abs.i32 i3 i0\n  not.i32 i4 i0\n"
                                "  eqz.i32 i5 i0\n  addi.i32 i6 i0 -3\n"
                                "  select.i32 i7 i1 i0 i6\n  mov.i32 i8 i7\n"
                                "  return i2 i3 i4 i5 i6 i7 i8"));
  for (size_t x = 0; x < COUNT(kI32); ++x) {
    int32_t a = kI32[x];
    for (int32_t cond = 0; cond < 2; ++cond) {
      kiln_vm_value_t args[2] = {kiln_vm_value_i32(a), kiln_vm_value_i32(cond)};
      kiln_vm_value_t r[7];
      KILN_ASSERT_OK(kiln_vm_test_call(&env, "f", args, 2, r, 7));
      uint32_t ua = (uint32_t)a;
      KILN_EXPECT_EQ((uint32_t)r[0].i32, 0u - ua);
      KILN_EXPECT_EQ((uint32_t)r[1].i32, a < 0 ? 0u - ua : ua);
      KILN_EXPECT_EQ((uint32_t)r[2].i32, ~ua);
      KILN_EXPECT_EQ(r[3].i32, a == 0);
      KILN_EXPECT_EQ((uint32_t)r[4].i32, ua - 3u);
      KILN_EXPECT_EQ((uint32_t)r[5].i32, cond ? ua : ua - 3u);
      KILN_EXPECT_EQ(r[6].i32, r[5].i32);
    }
  }
  kiln_vm_test_env_deinit(&env);
}

typedef uint64_t (*kiln_i64_ref_t)(int64_t, int64_t);
#define I64_REF(name, expr) \
  static uint64_t ref64_##name(int64_t sa, int64_t sb) { uint64_t a = (uint64_t)sa, b = (uint64_t)sb; (void)a; (void)b; return (uint64_t)(expr); }
I64_REF(add, a + b)
I64_REF(sub, a - b)
I64_REF(mul, a * b)
I64_REF(divs, (uint64_t)(sa / sb))
I64_REF(divu, a / b)
I64_REF(rems, sb == -1 ? 0 : (uint64_t)(sa % sb))
I64_REF(remu, a % b)
I64_REF(and, a & b)
I64_REF(or, a | b)
I64_REF(xor, a ^ b)
I64_REF(shl, a << (b & 63))
I64_REF(shrs, (uint64_t)(sa >> (b & 63)))
I64_REF(shru, a >> (b & 63))
I64_REF(mins, sa < sb ? a : b)
I64_REF(minu, a < b ? a : b)
I64_REF(maxs, sa > sb ? a : b)
I64_REF(maxu, a > b ? a : b)
I64_REF(eq, a == b)
I64_REF(ne, a != b)
I64_REF(lts, sa < sb)
I64_REF(ltu, a < b)
I64_REF(les, sa <= sb)
I64_REF(leu, a <= b)

KILN_TEST(VmOps, I64Binary) {
  static const struct { const char* op; kiln_i64_ref_t ref; int kind; } kOps[] = {
      // kind: 0 arithmetic, 1 divides, 2 comparison (i32 result)
      {"add.i64", ref64_add, 0},   {"sub.i64", ref64_sub, 0},
      {"mul.i64", ref64_mul, 0},   {"div.i64.s", ref64_divs, 1},
      {"div.i64.u", ref64_divu, 1}, {"rem.i64.s", ref64_rems, 1},
      {"rem.i64.u", ref64_remu, 1}, {"and.i64", ref64_and, 0},
      {"or.i64", ref64_or, 0},     {"xor.i64", ref64_xor, 0},
      {"shl.i64", ref64_shl, 0},   {"shr.i64.s", ref64_shrs, 0},
      {"shr.i64.u", ref64_shru, 0}, {"min.i64.s", ref64_mins, 0},
      {"min.i64.u", ref64_minu, 0}, {"max.i64.s", ref64_maxs, 0},
      {"max.i64.u", ref64_maxu, 0}, {"eq.i64", ref64_eq, 2},
      {"ne.i64", ref64_ne, 2},     {"lt.i64.s", ref64_lts, 2},
      {"lt.i64.u", ref64_ltu, 2},  {"le.i64.s", ref64_les, 2},
      {"le.i64.u", ref64_leu, 2},
  };
  for (size_t o = 0; o < COUNT(kOps); ++o) {
    char body[128];
    bool compare = kOps[o].kind == 2;
    snprintf(body, sizeof(body), "  %s %s I0 I2\n  return %s", kOps[o].op,
             compare ? "i4" : "I4", compare ? "i4" : "I4");
    kiln_vm_test_env_t env;
    if (!kiln_ops_env(&env, compare ? "II_i" : "II_I", body)) continue;
    for (size_t x = 0; x < COUNT(kI64); ++x) {
      for (size_t y = 0; y < COUNT(kI64); ++y) {
        int64_t a = kI64[x], b = kI64[y];
        if (kOps[o].kind == 1 && (b == 0 || (a == INT64_MIN && b == -1))) continue;
        kiln_vm_value_t args[2] = {kiln_vm_value_i64(a), kiln_vm_value_i64(b)};
        kiln_vm_value_t result;
        KILN_ASSERT_OK(kiln_vm_test_call(&env, "f", args, 2, &result, 1));
        uint64_t got = compare ? (uint64_t)(uint32_t)result.i32 : (uint64_t)result.i64;
        if (got != kOps[o].ref(a, b)) {
          KILN_ADD_FAILURE("%s(%lld, %lld) = %llu, reference %llu", kOps[o].op,
                           (long long)a, (long long)b, (unsigned long long)got,
                           (unsigned long long)kOps[o].ref(a, b));
        }
      }
    }
    kiln_vm_test_env_deinit(&env);
  }
}

KILN_TEST(VmOps, I64UnaryConstAndSelect) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_TRUE(kiln_ops_env(&env, "Ii_IIIiIIII",
                                "  neg.i64 I4 I0\n  abs.i64 I6 I0\n  not.i64 I8 I0\n"
                                "  eqz.i64 i10 I0\n  const.i64 I12 -81985529216486896\n"
                                "  select.i64 I14 i2 I0 I12\n  mov.i64 I16 I14\n"
                                "  const.i64 I18 9223372036854775807\n"
                                "  return I4 I6 I8 i10 I12 I14 I16 I18"));
  for (size_t x = 0; x < COUNT(kI64); ++x) {
    int64_t a = kI64[x];
    for (int32_t cond = 0; cond < 2; ++cond) {
      kiln_vm_value_t args[2] = {kiln_vm_value_i64(a), kiln_vm_value_i32(cond)};
      kiln_vm_value_t r[8];
      KILN_ASSERT_OK(kiln_vm_test_call(&env, "f", args, 2, r, 8));
      uint64_t ua = (uint64_t)a;
      KILN_EXPECT_EQ_U64((uint64_t)r[0].i64, 0u - ua);
      KILN_EXPECT_EQ_U64((uint64_t)r[1].i64, a < 0 ? 0u - ua : ua);
      KILN_EXPECT_EQ_U64((uint64_t)r[2].i64, ~ua);
      KILN_EXPECT_EQ(r[3].i32, a == 0);
      KILN_EXPECT_EQ(r[4].i64, INT64_C(-81985529216486896));
      KILN_EXPECT_EQ(r[5].i64, cond ? a : INT64_C(-81985529216486896));
      KILN_EXPECT_EQ(r[6].i64, r[5].i64);
      KILN_EXPECT_EQ(r[7].i64, INT64_MAX);
    }
  }
  kiln_vm_test_env_deinit(&env);
}

static float kiln_ref_minf(float a, float b) { return (a != a || b != b) ? NAN : (a < b ? a : b); }
static float kiln_ref_maxf(float a, float b) { return (a != a || b != b) ? NAN : (a > b ? a : b); }

KILN_TEST(VmOps, F32Arithmetic) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_TRUE(kiln_ops_env(
      &env, "ff_ffffffiiiifff",
      "  add.f32 i2 i0 i1\n  sub.f32 i3 i0 i1\n  mul.f32 i4 i0 i1\n"
      "  div.f32 i5 i0 i1\n  min.f32 i6 i0 i1\n  max.f32 i7 i0 i1\n"
      "  eq.f32 i8 i0 i1\n  ne.f32 i9 i0 i1\n  lt.f32 i10 i0 i1\n  le.f32 i11 i0 i1\n"
      "  neg.f32 i12 i0\n  abs.f32 i13 i0\n  sqrt.f32 i14 i0\n"
      "  return i2 i3 i4 i5 i6 i7 i8 i9 i10 i11 i12 i13 i14"));
  for (size_t x = 0; x < COUNT(kF32); ++x) {
    for (size_t y = 0; y < COUNT(kF32); ++y) {
      float a = kF32[x], b = kF32[y];
      kiln_vm_value_t args[2] = {kiln_vm_value_f32(a), kiln_vm_value_f32(b)};
      kiln_vm_value_t r[13];
      KILN_ASSERT_OK(kiln_vm_test_call(&env, "f", args, 2, r, 13));
      float expected[] = {a + b, a - b, a * b, a / b, kiln_ref_minf(a, b),
                          kiln_ref_maxf(a, b)};
      for (int i = 0; i < 6; ++i) {
        if (!kiln_same_f32(r[i].f32, expected[i])) {
          KILN_ADD_FAILURE("f32 op %d (%g, %g) = %g, reference %g", i, a, b,
                           r[i].f32, expected[i]);
        }
      }
      KILN_EXPECT_EQ(r[6].i32, a == b);
      KILN_EXPECT_EQ(r[7].i32, a != b);
      KILN_EXPECT_EQ(r[8].i32, a < b);
      KILN_EXPECT_EQ(r[9].i32, a <= b);
      KILN_EXPECT_TRUE(kiln_same_f32(r[10].f32, -a));
      KILN_EXPECT_TRUE(kiln_same_f32(r[11].f32, fabsf(a)));
      KILN_EXPECT_TRUE(kiln_same_f32(r[12].f32, sqrtf(a)));
    }
  }
  kiln_vm_test_env_deinit(&env);
}

static double kiln_ref_min(double a, double b) { return (a != a || b != b) ? NAN : (a < b ? a : b); }
static double kiln_ref_max(double a, double b) { return (a != a || b != b) ? NAN : (a > b ? a : b); }

KILN_TEST(VmOps, F64Arithmetic) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_TRUE(kiln_ops_env(
      &env, "FF_FFFFFFiiiiFFFF",
      "  add.f64 I4 I0 I2\n  sub.f64 I6 I0 I2\n  mul.f64 I8 I0 I2\n"
      "  div.f64 I10 I0 I2\n  min.f64 I12 I0 I2\n  max.f64 I14 I0 I2\n"
      "  eq.f64 i16 I0 I2\n  ne.f64 i17 I0 I2\n  lt.f64 i18 I0 I2\n  le.f64 i19 I0 I2\n"
      "  neg.f64 I20 I0\n  abs.f64 I22 I0\n  sqrt.f64 I24 I0\n  const.f64 I26 -1.25e-7\n"
      "  return I4 I6 I8 I10 I12 I14 i16 i17 i18 i19 I20 I22 I24 I26"));
  for (size_t x = 0; x < COUNT(kF64); ++x) {
    for (size_t y = 0; y < COUNT(kF64); ++y) {
      double a = kF64[x], b = kF64[y];
      kiln_vm_value_t args[2] = {kiln_vm_value_f64(a), kiln_vm_value_f64(b)};
      kiln_vm_value_t r[14];
      KILN_ASSERT_OK(kiln_vm_test_call(&env, "f", args, 2, r, 14));
      double expected[] = {a + b, a - b, a * b, a / b, kiln_ref_min(a, b),
                           kiln_ref_max(a, b)};
      for (int i = 0; i < 6; ++i) {
        if (!kiln_same_f64(r[i].f64, expected[i])) {
          KILN_ADD_FAILURE("f64 op %d (%g, %g) = %g, reference %g", i, a, b,
                           r[i].f64, expected[i]);
        }
      }
      KILN_EXPECT_EQ(r[6].i32, a == b);
      KILN_EXPECT_EQ(r[7].i32, a != b);
      KILN_EXPECT_EQ(r[8].i32, a < b);
      KILN_EXPECT_EQ(r[9].i32, a <= b);
      KILN_EXPECT_TRUE(kiln_same_f64(r[10].f64, -a));
      KILN_EXPECT_TRUE(kiln_same_f64(r[11].f64, fabs(a)));
      KILN_EXPECT_TRUE(kiln_same_f64(r[12].f64, sqrt(a)));
      KILN_EXPECT_TRUE(kiln_same_f64(r[13].f64, -1.25e-7));
    }
  }
  kiln_vm_test_env_deinit(&env);
}

// Saturating references (NaN -> 0), written independently of the VM's.
static int32_t kiln_ref_f_to_i32(double x) {
  if (isnan(x)) return 0;
  if (x < -2147483648.0) return INT32_MIN;
  if (x > 2147483647.0) return INT32_MAX;
  return (int32_t)trunc(x);
}
static uint32_t kiln_ref_f_to_u32(double x) {
  if (isnan(x) || x <= -1.0) return 0;
  if (x > 4294967295.0) return UINT32_MAX;
  return (uint32_t)trunc(x);
}
static int64_t kiln_ref_f_to_i64(double x) {
  if (isnan(x)) return 0;
  if (x < -9223372036854775808.0) return INT64_MIN;
  if (x >= 9223372036854775808.0) return INT64_MAX;
  return (int64_t)trunc(x);
}

KILN_TEST(VmOps, Conversions) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_TRUE(kiln_ops_env(
      &env, "ifIF_IIiffiiFIFiFf",
      // args: i0 (i32), i1 (f32), I2 (i64), I4 (f64)
      "  sext.i32.i64 I6 i0\n  zext.i32.i64 I8 i0\n  trunc.i64.i32 i10 I2\n"
      "  cvt.i32.f32.s i11 i0\n  cvt.i32.f32.u i12 i0\n  cvt.f32.i32.s i13 i1\n"
      "  cvt.f32.i32.u i14 i1\n  cvt.i64.f64.s I16 I2\n  cvt.f64.i64.s I18 I4\n"
      "  cvt.i32.f64.s I20 i0\n  cvt.f64.i32.s i22 I4\n  cvt.f32.f64 I24 i1\n"
      "  cvt.f64.f32 i26 I4\n"
      "  return I6 I8 i10 i11 i12 i13 i14 I16 I18 I20 i22 I24 i26"));
  for (size_t x = 0; x < COUNT(kI32); ++x) {
    for (size_t y = 0; y < COUNT(kF32); ++y) {
      int32_t i = kI32[x];
      float f = kF32[y];
      int64_t l = kI64[x % COUNT(kI64)];
      double d = kF64[y % COUNT(kF64)];
      kiln_vm_value_t args[4] = {kiln_vm_value_i32(i), kiln_vm_value_f32(f),
                                 kiln_vm_value_i64(l), kiln_vm_value_f64(d)};
      kiln_vm_value_t r[13];
      KILN_ASSERT_OK(kiln_vm_test_call(&env, "f", args, 4, r, 13));
      KILN_EXPECT_EQ(r[0].i64, (int64_t)i);
      KILN_EXPECT_EQ(r[1].i64, (int64_t)(uint32_t)i);
      KILN_EXPECT_EQ(r[2].i32, (int32_t)(uint32_t)(uint64_t)l);
      KILN_EXPECT_TRUE(kiln_same_f32(r[3].f32, (float)i));
      KILN_EXPECT_TRUE(kiln_same_f32(r[4].f32, (float)(uint32_t)i));
      KILN_EXPECT_EQ(r[5].i32, kiln_ref_f_to_i32(f));
      KILN_EXPECT_EQ((uint32_t)r[6].i32, kiln_ref_f_to_u32(f));
      KILN_EXPECT_TRUE(kiln_same_f64(r[7].f64, (double)l));
      KILN_EXPECT_EQ(r[8].i64, kiln_ref_f_to_i64(d));
      KILN_EXPECT_TRUE(kiln_same_f64(r[9].f64, (double)i));
      KILN_EXPECT_EQ(r[10].i32, kiln_ref_f_to_i32(d));
      KILN_EXPECT_TRUE(kiln_same_f64(r[11].f64, (double)f));
      KILN_EXPECT_TRUE(kiln_same_f32(r[12].f32, (float)d));
    }
  }
  kiln_vm_test_env_deinit(&env);
}

// Control flow: a loop summing 0..n-1 (reference: n*(n-1)/2), br_table and
// internal calls with 64-bit and ref arguments.
KILN_TEST(VmOps, ControlFlowAndCalls) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_OK(kiln_vm_test_env_init(&env,
      "func sum \"i_I\"\n"
      "  const.i64 I2 0\n  const.i32 i4 0\n"
      "loop:\n  lt.i32.s i5 i4 i0\n  cond_br i5 body done\n"
      "body:\n  sext.i32.i64 I6 i4\n  add.i64 I2 I2 I6\n  addi.i32 i4 i4 1\n  br loop\n"
      "done:\n  return I2\nend\n"
      "func pick \"i_i\"\n  br_table i0 zero one two default other\n"
      "zero:\n  const.i32 i1 100\n  return i1\n"
      "one:\n  const.i32 i1 101\n  return i1\n"
      "two:\n  const.i32 i1 102\n  return i1\n"
      "other:\n  const.i32 i1 -1\n  return i1\nend\n"
      "func twice \"Ir_Ir\"\n  add.i64 I0 I0 I0\n  return I0 r0\nend\n"
      "func outer \"i_Ii\"\n  call sum i0 -> I2\n  list.alloc r0 i32 i0\n"
      "  call twice I2 r0 -> I4 r1\n  ref.eq i6 r0 r1\n  return I4 i6\nend\n"
      "func fact \"I_I\"\n  const.i64 I2 1\n  le.i64.s i4 I0 I2\n  cond_br i4 base rec\n"
      "base:\n  return I2\nrec:\n  sub.i64 I6 I0 I2\n  call fact I6 -> I8\n"
      "  mul.i64 I8 I8 I0\n  return I8\nend\n"
      "export sum\nexport pick\nexport outer\nexport fact\n"));
  for (int32_t n = 0; n < 300; n += 37) {
    kiln_vm_value_t arg = kiln_vm_value_i32(n), result;
    KILN_ASSERT_OK(kiln_vm_test_call(&env, "sum", &arg, 1, &result, 1));
    KILN_EXPECT_EQ(result.i64, (int64_t)n * (n - 1) / 2);
  }
  for (int32_t i = -2; i < 6; ++i) {
    kiln_vm_value_t arg = kiln_vm_value_i32(i), result;
    KILN_ASSERT_OK(kiln_vm_test_call(&env, "pick", &arg, 1, &result, 1));
    KILN_EXPECT_EQ(result.i32, (i >= 0 && i <= 2) ? 100 + i : -1);
  }
  kiln_vm_value_t arg = kiln_vm_value_i32(10), results[2];
  KILN_ASSERT_OK(kiln_vm_test_call(&env, "outer", &arg, 1, results, 2));
  KILN_EXPECT_EQ(results[0].i64, 90);
  KILN_EXPECT_EQ(results[1].i32, 1);
  kiln_vm_value_t n = kiln_vm_value_i64(20), fact;
  KILN_ASSERT_OK(kiln_vm_test_call(&env, "fact", &n, 1, &fact, 1));
  int64_t expected = 1;
  for (int i = 2; i <= 20; ++i) expected *= i;
  KILN_EXPECT_EQ(fact.i64, expected);
  kiln_vm_test_env_deinit(&env);
}

KILN_TEST(VmOps, ListsOfValuesAndRefs) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_OK(kiln_vm_test_env_init(&env,
      "func f \"i_iIir\"\n"
      "  list.alloc r0 i32 i0\n  list.resize r0 i0\n  const.i32 i1 0\n"
      "fill:\n  lt.i32.u i2 i1 i0\n  cond_br i2 body next\n"
      "body:\n  mul.i32 i3 i1 i1\n  list.set.i32 r0 i1 i3\n  addi.i32 i1 i1 1\n  br fill\n"
      "next:\n  addi.i32 i4 i0 -1\n  list.get.i32 i5 r0 i4\n"
      "  list.alloc r1 i64 i0\n  const.i32 i6 1\n  list.resize r1 i6\n"
      "  const.i64 I8 -77\n  const.i32 i7 0\n  list.set.i64 r1 i7 I8\n  list.get.i64 I10 r1 i7\n"
      "  list.alloc r2 ref i7\n  const.i32 i12 2\n  list.resize r2 i12\n"
      "  const.i64 I14 24\n  buffer.alloc r5 I14\n"
      "  list.set.ref r2 i6 r5\n  list.get.ref r3 r2 i6\n  buffer.length I16 r3\n"
      "  trunc.i64.i32 i13 I16\n  move.ref r4 r2\n  return i5 I10 i13 r4\nend\n"
      "func cycle \"v_v\"\n  const.i32 i0 1\n  list.alloc r0 ref i0\n  list.resize r0 i0\n"
      "  const.i32 i1 0\n  list.set.ref r0 i1 r0\n  return\nend\n"
      "export f\nexport cycle\n"));
  kiln_vm_value_t arg = kiln_vm_value_i32(9), r[4];
  KILN_ASSERT_OK(kiln_vm_test_call(&env, "f", &arg, 1, r, 4));
  KILN_EXPECT_EQ(r[0].i32, 64);
  KILN_EXPECT_EQ(r[1].i64, -77);
  KILN_EXPECT_EQ(r[2].i32, 24);
  KILN_ASSERT_OK(kiln_vm_ref_check(r[3].ref, &kiln_vm_list_type, "result"));
  const kiln_vm_list_t* outer = (const kiln_vm_list_t*)r[3].ref;
  KILN_EXPECT_EQ(outer->size, 2);
  KILN_EXPECT_TRUE(((kiln_vm_ref_object_t**)outer->data)[0] == NULL);
  KILN_EXPECT_OK(kiln_vm_ref_check(((kiln_vm_ref_object_t**)outer->data)[1],
                                   &kiln_vm_buffer_type, "element 1"));
  kiln_vm_ref_release(r[3].ref);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION,
                             "a list cannot hold a vm.list",
                             kiln_vm_test_call(&env, "cycle", NULL, 0, NULL, 0));
  kiln_vm_test_env_deinit(&env);
}

KILN_TEST(VmOps, BuffersAndRodata) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_OK(kiln_vm_test_env_init(&env,
      "rodata table align 64 raw hex \"80ff0102 78563412 efcdab8967452301\"\n"
      "func f \"v_iiiiiIIiiIi\"\n"
      "  buffer.rodata r0 table\n  const.i64 I0 0\n  const.i64 I2 1\n  const.i64 I4 4\n"
      "  const.i64 I6 8\n  buffer.load.i8.s i8 r0 I0\n  buffer.load.i8.u i9 r0 I0\n"
      "  buffer.load.i16.s i10 r0 I2\n  buffer.load.i16.u i11 r0 I2\n"
      "  buffer.load.i32 i12 r0 I4\n  buffer.load.i64 I14 r0 I6\n"
      "  buffer.length I16 r0\n"
      "  const.i64 I18 32\n  buffer.alloc r1 I18\n  buffer.copy r0 I0 r1 I6 I18\n"
      "  const.i64 I20 16\n  buffer.copy r0 I0 r1 I6 I20\n"
      "  const.i32 i22 171\n  buffer.fill r1 I0 I6 i22\n  buffer.load.i32 i23 r1 I4\n"
      "  const.f32 i24 -1.5\n  buffer.store.f32 r1 I0 i24\n  buffer.load.f32 i25 r1 I0\n"
      "  const.f64 I26 6.5\n  buffer.store.f64 r1 I20 I26\n  buffer.load.f64 I28 r1 I20\n"
      "  buffer.store.i8 r1 I2 i22\n  buffer.store.i16 r1 I4 i22\n"
      "  buffer.store.i32 r1 I6 i22\n  buffer.store.i64 r1 I18 I26\n"
      "  buffer.load.i8.u i30 r1 I2\n  buffer.load.i64 I32 r1 I6\n"
      "  return i8 i9 i10 i11 i12 I14 I16 i23 i25 I28 i30\nend\nexport f\n"));
  kiln_vm_value_t r[11];
  // 16-byte rodata, so copying 32 bytes traps; see the trap tests. Here the
  // 32-byte copy is expected to fail, so the program is split below.
  kiln_status_t status = kiln_vm_test_call(&env, "f", NULL, 0, r, 11);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE,
                             "buffer access [0, +32) outside a 16-byte buffer",
                             status);
  kiln_vm_test_env_deinit(&env);

  KILN_ASSERT_OK(kiln_vm_test_env_init(&env,
      "rodata table align 64 raw hex \"80ff0102 78563412 efcdab8967452301\"\n"
      "func f \"v_iiiiiIIiiFiI\"\n"
      "  buffer.rodata r0 table\n  const.i64 I0 0\n  const.i64 I2 1\n  const.i64 I4 4\n"
      "  const.i64 I6 8\n  buffer.load.i8.s i8 r0 I0\n  buffer.load.i8.u i9 r0 I0\n"
      "  buffer.load.i16.s i10 r0 I2\n  buffer.load.i16.u i11 r0 I2\n"
      "  buffer.load.i32 i12 r0 I4\n  buffer.load.i64 I14 r0 I6\n"
      "  buffer.length I16 r0\n"
      "  const.i64 I18 32\n  buffer.alloc r1 I18\n"
      "  const.i64 I20 16\n  buffer.copy r0 I0 r1 I6 I20\n"
      "  const.i32 i22 171\n  buffer.fill r1 I0 I6 i22\n  buffer.load.i32 i23 r1 I4\n"
      "  const.f32 i24 -1.5\n  buffer.store.f32 r1 I0 i24\n  buffer.load.f32 i25 r1 I0\n"
      "  const.f64 I26 6.5\n  buffer.store.f64 r1 I20 I26\n  buffer.load.f64 I28 r1 I20\n"
      "  buffer.store.i8 r1 I2 i22\n  buffer.store.i16 r1 I4 i22\n"
      "  buffer.store.i64 r1 I6 I14\n"
      "  buffer.load.i8.u i30 r1 I2\n  buffer.load.i64 I32 r1 I6\n"
      "  return i8 i9 i10 i11 i12 I14 I16 i23 i25 I28 i30 I32\nend\nexport f\n"));
  kiln_vm_value_t q[12];
  KILN_ASSERT_OK(kiln_vm_test_call(&env, "f", NULL, 0, q, 12));
  KILN_EXPECT_EQ(q[0].i32, -128);
  KILN_EXPECT_EQ(q[1].i32, 128);
  KILN_EXPECT_EQ(q[2].i32, 0x1FF);  // bytes ff 01 -> 0x01ff
  KILN_EXPECT_EQ(q[3].i32, 0x1FF);
  KILN_EXPECT_EQ(q[4].i32, 0x12345678);
  KILN_EXPECT_EQ_U64((uint64_t)q[5].i64, UINT64_C(0x0123456789ABCDEF));
  KILN_EXPECT_EQ(q[6].i64, 16);
  KILN_EXPECT_EQ((uint32_t)q[7].i32, 0xABABABABu);
  KILN_EXPECT_NEAR(q[8].f32, -1.5, 0);
  KILN_EXPECT_NEAR(q[9].f64, 6.5, 0);
  KILN_EXPECT_EQ(q[10].i32, 171);
  KILN_EXPECT_EQ_U64((uint64_t)q[11].i64, UINT64_C(0x0123456789ABCDEF));
  kiln_vm_test_env_deinit(&env);
}

KILN_TEST(VmOps, GlobalsAndRefs) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_OK(kiln_vm_test_env_init(&env,
      "globals 4 1\n"
      "func bump \"i_iIf\"\n"
      "  global.load.i32 i1 0\n  add.i32 i1 i1 i0\n  global.store.i32 0 i1\n"
      "  global.load.i64 I2 2\n  sext.i32.i64 I4 i0\n  add.i64 I2 I2 I4\n  global.store.i64 2 I2\n"
      "  cvt.i32.f32.s i6 i1\n  global.store.f32 1 i6\n  global.load.f32 i7 1\n"
      "  return i1 I2 i7\nend\n"
      "func keep \"r_ii\"\n  global.load.ref r1 0\n  ref.is_null i0 r1\n"
      "  global.store.ref 0 r0\n  global.load.ref r2 0\n  ref.eq i1 r2 r0\n"
      "  ref.null r2\n  mov.ref r3 r0\n  select.ref r2 i1 r3 r1\n  return i0 i1\nend\n"
      "export bump\nexport keep\n"));
  int32_t total = 0;
  for (int32_t i = 1; i <= 5; ++i) {
    total += i;
    kiln_vm_value_t arg = kiln_vm_value_i32(i), r[3];
    KILN_ASSERT_OK(kiln_vm_test_call(&env, "bump", &arg, 1, r, 3));
    KILN_EXPECT_EQ(r[0].i32, total);
    KILN_EXPECT_EQ(r[1].i64, total);
    KILN_EXPECT_NEAR(r[2].f32, total, 0);
  }
  kiln_vm_list_t* list = NULL;
  KILN_ASSERT_OK(kiln_vm_list_create(kiln_allocator_system(), KILN_VM_LIST_I32, 1, &list));
  kiln_vm_value_t arg = kiln_vm_value_ref(&list->header), r[2];
  KILN_ASSERT_OK(kiln_vm_test_call(&env, "keep", &arg, 1, r, 2));
  KILN_EXPECT_EQ(r[0].i32, 1);  // global was null
  KILN_EXPECT_EQ(r[1].i32, 1);
  KILN_ASSERT_OK(kiln_vm_test_call(&env, "keep", &arg, 1, r, 2));
  KILN_EXPECT_EQ(r[0].i32, 0);
  KILN_EXPECT_EQ(list->header.ref_count, 2);  // ours + the global's
  kiln_vm_ref_release(&list->header);
  kiln_vm_test_env_deinit(&env);  // releases the global's reference
}
