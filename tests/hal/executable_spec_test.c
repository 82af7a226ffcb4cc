// Executable descriptions are untrusted (they come from module files): each
// malformed one is refused with a message naming the part at fault.
#include <string.h>

#include "hal_internal.h"
#include "kiln/hal/executable.h"
#include "kiln_test.h"

// A minimal SPIR-V header followed by OpEntryPoint GLCompute %1 "main".
static const uint32_t kSpirv[] = {
    0x07230203, 0x00010300, 0, 2, 0,
    (5u << 16) | 15, 5, 1, 0x6e69616d /* "main" */, 0 /* NUL padding */,
};

static const kiln_hal_binding_layout_t kBindings[] = {{0, 0, true}, {0, 1, false}};

static kiln_hal_entry_point_spec_t entry(void) {
  kiln_hal_entry_point_spec_t e = {"main", {64, 1, 1}, 8, kBindings, 2, 0};
  return e;
}

static kiln_hal_executable_variant_spec_t variant(
    const kiln_hal_entry_point_spec_t* entries, uint32_t count) {
  kiln_hal_executable_variant_spec_t v = {
      "unknown", 0, {0}, kSpirv, sizeof(kSpirv) / 4, entries, count, NULL, 0};
  return v;
}

KILN_TEST(ExecutableSpecTest, AcceptsAWellFormedSpec) {
  kiln_hal_entry_point_spec_t e = entry();
  kiln_hal_executable_variant_spec_t v = variant(&e, 1);
  kiln_hal_executable_spec_t spec = {"ok", &v, 1};
  KILN_EXPECT_OK(kiln_hal_executable_spec_verify(&spec));
}

KILN_TEST(ExecutableSpecTest, RefusesMalformedSpecs) {
  kiln_hal_entry_point_spec_t e = entry();
  kiln_hal_executable_variant_spec_t v = variant(&e, 1);
  kiln_hal_executable_spec_t spec = {"bad", &v, 1};

  spec.variant_count = 0;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "no variants",
                             kiln_hal_executable_spec_verify(&spec));
  spec.variant_count = 1;

  v.selector = "volta";
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "unknown arch 'volta'",
                             kiln_hal_executable_spec_verify(&spec));
  v.selector = "unknown";

  uint32_t bad_magic[10];
  memcpy(bad_magic, kSpirv, sizeof(bad_magic));
  bad_magic[0] = 0x12345678;
  v.spirv_words = bad_magic;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "magic",
                             kiln_hal_executable_spec_verify(&spec));
  v.spirv_words = kSpirv;

  e.name = "missing";
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "no compute entry point 'missing'",
                             kiln_hal_executable_spec_verify(&spec));
  e.name = "main";

  e.push_constant_bytes = 6;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "push-constant size 6",
                             kiln_hal_executable_spec_verify(&spec));
  e.push_constant_bytes = 8;

  kiln_hal_binding_layout_t twice[] = {{0, 1, true}, {0, 1, false}};
  e.bindings = twice;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "set 0 binding 1 declared twice",
                             kiln_hal_executable_spec_verify(&spec));
  kiln_hal_binding_layout_t far_set[] = {{9, 0, true}, {0, 1, false}};
  e.bindings = far_set;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "out of range",
                             kiln_hal_executable_spec_verify(&spec));
  e.bindings = kBindings;

  e.workgroup_size[1] = 0;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "workgroup size",
                             kiln_hal_executable_spec_verify(&spec));
  e.workgroup_size[1] = 1;

  kiln_hal_specialization_constant_t constants[] = {{3, 1}, {3, 2}};
  v.specialization_constants = constants;
  v.specialization_constant_count = 2;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "specialization constant 3 set twice",
                             kiln_hal_executable_spec_verify(&spec));
}

KILN_TEST(ExecutableSpecTest, SpirvScanIsBoundsChecked) {
  KILN_EXPECT_TRUE(kiln_hal_spirv_has_compute_entry_point(kSpirv, 10, "main"));
  KILN_EXPECT_FALSE(kiln_hal_spirv_has_compute_entry_point(kSpirv, 10, "mai"));
  // Truncated: the instruction claims 5 words but only 4 remain.
  KILN_EXPECT_FALSE(kiln_hal_spirv_has_compute_entry_point(kSpirv, 9, "main"));
  uint32_t zero_length[10];
  memcpy(zero_length, kSpirv, sizeof(zero_length));
  zero_length[5] = 15;  // word count 0 would loop forever if accepted
  KILN_EXPECT_FALSE(kiln_hal_spirv_has_compute_entry_point(zero_length, 10, "main"));
  uint32_t unterminated[9];
  memcpy(unterminated, kSpirv, sizeof(unterminated));
  unterminated[5] = (4u << 16) | 15;  // "main" fills the words, no NUL
  KILN_EXPECT_FALSE(kiln_hal_spirv_has_compute_entry_point(unterminated, 9, "main"));
  KILN_EXPECT_FALSE(kiln_hal_spirv_has_compute_entry_point(NULL, 0, "main"));
}
