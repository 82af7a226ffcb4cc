// Target triples: parsing of full and partial forms, errors that list the
// known tokens, and derivation from what devices report.
#include <string.h>

#include "kiln/hal/target_triple.h"
#include "kiln_test.h"

static kiln_target_triple_t parse_ok(const char* text) {
  kiln_target_triple_t triple;
  KILN_EXPECT_OK(kiln_target_triple_parse(kiln_make_cstring_view(text), &triple));
  return triple;
}

static void expect_triple(const kiln_target_triple_t* t, const char* arch,
                          const char* product, const char* os) {
  KILN_EXPECT_STREQ(t->arch, arch);
  KILN_EXPECT_STREQ(t->product, product);
  KILN_EXPECT_STREQ(t->os, os);
}

KILN_TEST(TargetTripleTest, ParsesTheDesignExamples) {
  kiln_target_triple_t t = parse_ok("valhall-g78-android30");
  expect_triple(&t, "valhall", "g78", "android30");
  t = parse_ok("adreno-unknown-android30");
  expect_triple(&t, "adreno", "unknown", "android30");
  t = parse_ok("ampere-rtx3080-windows");
  expect_triple(&t, "ampere", "rtx3080", "windows");
  t = parse_ok("rdna1-5700xt-linux");
  expect_triple(&t, "rdna1", "5700xt", "linux");
  t = parse_ok("cpu-swiftshader-unknown");
  expect_triple(&t, "cpu", "swiftshader", "unknown");
  t = parse_ok("hopper-h100-linux");
  expect_triple(&t, "hopper", "h100", "linux");
  t = parse_ok("cpu-llvmpipe-linux");
  expect_triple(&t, "cpu", "llvmpipe", "linux");
  t = parse_ok("unknown-unknown-unknown");
  expect_triple(&t, "unknown", "unknown", "unknown");
}

KILN_TEST(TargetTripleTest, ParsesPartialTriples) {
  kiln_target_triple_t t = parse_ok("valhall-g78");
  expect_triple(&t, "valhall", "g78", "unknown");
  t = parse_ok("adreno-android30");
  expect_triple(&t, "adreno", "unknown", "android30");
  t = parse_ok("ampere");
  expect_triple(&t, "ampere", "unknown", "unknown");
  t = parse_ok("valhall-android33");  // any API level 24..40
  expect_triple(&t, "valhall", "unknown", "android33");
}

KILN_TEST(TargetTripleTest, UnknownTokensListTheKnownOnes) {
  kiln_target_triple_t t;
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "unknown arch 'volta' (known: unknown, cpu",
      kiln_target_triple_parse(kiln_make_cstring_view("volta-v100-linux"), &t));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "unknown hopper product 'rtx3080' (known: h100",
      kiln_target_triple_parse(kiln_make_cstring_view("hopper-rtx3080-linux"),
                               &t));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "unknown OS 'beos' (known: unknown, linux",
      kiln_target_triple_parse(kiln_make_cstring_view("ampere-rtx3080-beos"),
                               &t));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "neither a ampere product",
      kiln_target_triple_parse(kiln_make_cstring_view("ampere-foo"), &t));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "more than 3 tokens",
      kiln_target_triple_parse(kiln_make_cstring_view("a-b-c-d"), &t));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "empty",
      kiln_target_triple_parse(kiln_make_cstring_view(""), &t));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "empty product token",
      kiln_target_triple_parse(kiln_make_cstring_view("ampere--linux"), &t));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "longer than",
      kiln_target_triple_parse(
          kiln_make_cstring_view("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), &t));
  KILN_EXPECT_STATUS(
      KILN_STATUS_INVALID_ARGUMENT,
      kiln_target_triple_parse(kiln_make_cstring_view("valhall-android99"), &t));
  // A failed parse leaves the portable fallback, never garbage.
  expect_triple(&t, "unknown", "unknown", "unknown");
}

KILN_TEST(TargetTripleTest, FormatsRoundTrip) {
  kiln_target_triple_t t = parse_ok("rdna2-6800xt-linux");
  char text[KILN_TARGET_TRIPLE_TEXT_CAPACITY];
  KILN_EXPECT_EQ(kiln_target_triple_format(&t, text, sizeof(text)),
                 strlen("rdna2-6800xt-linux"));
  KILN_EXPECT_STREQ(text, "rdna2-6800xt-linux");
  kiln_target_triple_t again = parse_ok(text);
  KILN_EXPECT_TRUE(kiln_target_triple_equal(&t, &again));
}

KILN_TEST(TargetTripleTest, ArchTableHasEveryDesignArch) {
  const char* archs[] = {"unknown", "cpu",    "valhall", "adreno", "rdna1",
                         "rdna2",   "rdna3",  "pascal",  "turing", "ampere",
                         "ada",     "hopper", "arc",     "m1"};
  for (size_t i = 0; i < sizeof(archs) / sizeof(archs[0]); ++i) {
    KILN_EXPECT_TRUE(kiln_target_arch_lookup(archs[i]) != NULL);
  }
  const kiln_target_arch_info_t* hopper = kiln_target_arch_lookup("hopper");
  KILN_EXPECT_EQ(hopper->subgroup_size, 32);
  KILN_EXPECT_TRUE(hopper->features & KILN_TARGET_FEATURE_COOPERATIVE_MATRIX);
  KILN_EXPECT_STREQ(hopper->vendor, "nvidia");
  KILN_EXPECT_FALSE(kiln_target_arch_lookup("adreno")->features &
                    KILN_TARGET_FEATURE_INT8_DOT);
  KILN_EXPECT_TRUE(kiln_target_arch_lookup("volta") == NULL);
}

typedef struct derive_case_t {
  uint32_t vendor_id;
  const char* name;
  uint32_t driver_id;
  const char* os;
  const char* expected;
} derive_case_t;

KILN_TEST(TargetTripleTest, DerivesFromDeviceReports) {
  static const derive_case_t cases[] = {
      {0x10DE, "NVIDIA H100 80GB HBM3", 4, "linux", "hopper-h100-linux"},
      {0x10DE, "NVIDIA H200", 4, "linux", "hopper-h200-linux"},
      {0x10DE, "NVIDIA GeForce RTX 3080", 4, "windows", "ampere-rtx3080-windows"},
      {0x10DE, "NVIDIA GeForce RTX 4090", 4, "linux", "ada-rtx4090-linux"},
      {0x10DE, "Tesla T4", 4, "linux", "turing-t4-linux"},
      {0x10DE, "NVIDIA Mystery 9000", 4, "linux", "unknown-unknown-linux"},
      {0x1002, "AMD Radeon RX 5700 XT (RADV NAVI10)", 3, "linux",
       "rdna1-5700xt-linux"},
      {0x1002, "AMD Radeon RX 7900 XTX", 1, "linux", "rdna3-7900xtx-linux"},
      {0x13B5, "Mali-G78", 9, "android30", "valhall-g78-android30"},
      {0x5143, "Adreno (TM) 650", 8, "android31", "adreno-a650-android31"},
      {0x10005, "llvmpipe (LLVM 15.0.6, 256 bits)", 13, "linux",
       "cpu-llvmpipe-linux"},
      {0x1AE0, "SwiftShader Device (Subzero)", 10, "unknown",
       "cpu-swiftshader-unknown"},
      {0x8086, "Intel(R) Arc(tm) A770 Graphics (DG2)", 6, "linux",
       "arc-a770-linux"},
      {0x1234, "Some GPU", 99, "linux", "unknown-unknown-linux"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    kiln_target_device_facts_t facts = {cases[i].vendor_id, 0, cases[i].name,
                                        cases[i].driver_id, cases[i].os};
    kiln_target_triple_t triple;
    char reason[512];
    kiln_target_triple_derive(&facts, &triple, reason, sizeof(reason));
    char text[KILN_TARGET_TRIPLE_TEXT_CAPACITY];
    kiln_target_triple_format(&triple, text, sizeof(text));
    KILN_EXPECT_STREQ(text, cases[i].expected);
    KILN_EXPECT_CONTAINS(reason, cases[i].name);
  }
}

KILN_TEST(TargetTripleTest, DerivedTriplesParse) {
  kiln_target_device_facts_t facts = {0x10DE, 0x2330, "NVIDIA H100 PCIe", 4,
                                      NULL};
  kiln_target_triple_t triple, parsed;
  kiln_target_triple_derive(&facts, &triple, NULL, 0);
  KILN_EXPECT_STREQ(triple.os, kiln_target_host_os());
  char text[KILN_TARGET_TRIPLE_TEXT_CAPACITY];
  kiln_target_triple_format(&triple, text, sizeof(text));
  KILN_EXPECT_OK(kiln_target_triple_parse(kiln_make_cstring_view(text), &parsed));
  KILN_EXPECT_TRUE(kiln_target_triple_equal(&triple, &parsed));
}

KILN_TEST(TargetTripleTest, FormatsFeatureNames) {
  char text[256];
  kiln_target_features_format(KILN_TARGET_FEATURE_FP16 |
                                  KILN_TARGET_FEATURE_COOPERATIVE_MATRIX,
                              text, sizeof(text));
  KILN_EXPECT_STREQ(text, "fp16|cooperative_matrix");
  kiln_target_features_format(0, text, sizeof(text));
  KILN_EXPECT_STREQ(text, "none");
}
