// kiln_spirv_reflect on real kernels against hand-stated expectations.
#include <stdlib.h>
#include <string.h>

#include "fixture_util.h"
#include "kiln/compiler/kernels.h"
#include "kiln/compiler/spirv.h"
#include "kiln_test.h"

static void reflect_kernel(kiln_kernel_id_t id, kiln_kernel_variant_t variant,
                           kiln_spirv_reflection_t* reflection) {
  kiln_kernel_spirv_t spirv;
  KILN_ASSERT_OK(kiln_kernel_get_spirv(id, variant, &spirv));
  KILN_ASSERT_OK(kiln_spirv_reflect(spirv.blob_name, spirv.words,
                                    spirv.word_count, reflection));
}

static void expect_spec(const kiln_spirv_reflection_t* reflection, uint32_t id,
                        kiln_spirv_scalar_type_t type, uint32_t bits) {
  const kiln_spirv_spec_constant_t* constant = NULL;
  KILN_ASSERT_OK(kiln_spirv_reflection_find_spec_constant(reflection, id, &constant));
  KILN_EXPECT_EQ(constant->type, type);
  KILN_EXPECT_EQ(constant->default_bits, bits);
}

KILN_TEST(SpirvReflectTest, Gemm) {
  kiln_spirv_reflection_t r;
  reflect_kernel(KILN_KERNEL_GEMM, KILN_KERNEL_VARIANT_FP32, &r);
  KILN_ASSERT_EQ(r.entry_point_count, 1);
  KILN_EXPECT_STREQ(r.entry_points[0], "main");
  // local_size_x_id = 0, local_size_y_id = 1, local_size_z = 1.
  KILN_EXPECT_TRUE(r.workgroup_size[0].is_spec_constant);
  KILN_EXPECT_EQ(r.workgroup_size[0].spec_id, 0);
  KILN_EXPECT_EQ(r.workgroup_size[0].size, 1);
  KILN_EXPECT_TRUE(r.workgroup_size[1].is_spec_constant);
  KILN_EXPECT_EQ(r.workgroup_size[1].spec_id, 1);
  KILN_EXPECT_FALSE(r.workgroup_size[2].is_spec_constant);
  KILN_EXPECT_EQ(r.workgroup_size[2].size, 1);
  KILN_ASSERT_EQ(r.binding_count, 5);
  const bool read_only[5] = {true, true, true, true, false};
  for (uint32_t i = 0; i < 5; ++i) {
    KILN_EXPECT_EQ(r.bindings[i].set, 0);
    KILN_EXPECT_EQ(r.bindings[i].binding, i);
    KILN_EXPECT_EQ(r.bindings[i].read_only, read_only[i]);
  }
  KILN_EXPECT_STREQ(r.bindings[0].name, "");  // glslc -O strips names
  KILN_EXPECT_EQ(r.push_constant_size, 80);
  // Ids 0..8: workgroup x, y, then TM=8, TN=8, TK=8, ACTIVATION=0,
  // HAS_BIAS=false, HAS_RESIDUAL=false; and the k slices (KSPLIT=1).
  KILN_ASSERT_EQ(r.spec_constant_count, 9);
  KILN_EXPECT_EQ(r.spec_constants[0].id, 0);
  KILN_EXPECT_EQ(r.spec_constants[1].id, 1);
  expect_spec(&r, KILN_SPEC_GEMM_TM, KILN_SPIRV_SCALAR_UINT32, 8);
  expect_spec(&r, KILN_SPEC_GEMM_TN, KILN_SPIRV_SCALAR_UINT32, 8);
  expect_spec(&r, KILN_SPEC_GEMM_TK, KILN_SPIRV_SCALAR_UINT32, 8);
  expect_spec(&r, KILN_SPEC_GEMM_ACTIVATION, KILN_SPIRV_SCALAR_UINT32, 0);
  expect_spec(&r, KILN_SPEC_GEMM_HAS_BIAS, KILN_SPIRV_SCALAR_BOOL, 0);
  expect_spec(&r, KILN_SPEC_GEMM_HAS_RESIDUAL, KILN_SPIRV_SCALAR_BOOL, 0);
  expect_spec(&r, KILN_SPEC_GEMM_KSPLIT, KILN_SPIRV_SCALAR_UINT32, 1);
  const kiln_spirv_spec_constant_t* tm = NULL;
  KILN_EXPECT_STATUS(KILN_STATUS_NOT_FOUND,
                     kiln_spirv_reflection_find_spec_constant(&r, 2, &tm));
  KILN_EXPECT_TRUE(tm == NULL);
}

// depthwise_conv2d: one spec workgroup dim; conv2d two (y is 1, the ABI
// it shares with conv2d_gemm, whose cpu variant is conv2d_cpu).
KILN_TEST(SpirvReflectTest, DepthwiseHasOneSpecWorkgroupDim) {
  kiln_spirv_reflection_t r;
  reflect_kernel(KILN_KERNEL_DEPTHWISE_CONV2D, KILN_KERNEL_VARIANT_FP32, &r);
  KILN_EXPECT_TRUE(r.workgroup_size[0].is_spec_constant);
  KILN_EXPECT_EQ(r.workgroup_size[0].spec_id, 0);
  KILN_EXPECT_FALSE(r.workgroup_size[1].is_spec_constant);
  KILN_EXPECT_EQ(r.workgroup_size[1].size, 1);
  KILN_EXPECT_EQ(r.push_constant_size, 88);
  KILN_EXPECT_EQ(r.binding_count, 5);
  reflect_kernel(KILN_KERNEL_CONV2D, KILN_KERNEL_VARIANT_FP32, &r);
  KILN_EXPECT_TRUE(r.workgroup_size[1].is_spec_constant);
  KILN_EXPECT_EQ(r.workgroup_size[1].spec_id, 1);
  expect_spec(&r, KILN_SPEC_CONV_CO_BLOCK, KILN_SPIRV_SCALAR_UINT32, 4);
}

KILN_TEST(SpirvReflectTest, GatherAndNorm) {
  kiln_spirv_reflection_t r;
  reflect_kernel(KILN_KERNEL_GATHER, KILN_KERNEL_VARIANT_FP32, &r);
  KILN_ASSERT_EQ(r.binding_count, 3);
  KILN_EXPECT_TRUE(r.bindings[1].read_only);
  KILN_EXPECT_FALSE(r.bindings[2].read_only);
  KILN_EXPECT_EQ(r.push_constant_size, sizeof(kiln_kernel_gather_params_t));
  reflect_kernel(KILN_KERNEL_NORM, KILN_KERNEL_VARIANT_SUBGROUP, &r);
  KILN_ASSERT_EQ(r.binding_count, 4);
  KILN_EXPECT_EQ(r.push_constant_size, 16);
  expect_spec(&r, KILN_SPEC_NORM_KIND, KILN_SPIRV_SCALAR_UINT32, KILN_NORM_LAYER);
}

KILN_TEST(SpirvReflectTest, LiteralWorkgroupSetsAndTypedSpecConstants) {
  kiln_file_contents_t contents;
  const uint32_t* words = NULL;
  size_t count = 0;
  KILN_ASSERT_OK(kiln_test_load_fixture("fixture_literal", &contents, &words, &count));
  kiln_spirv_reflection_t r;
  KILN_ASSERT_OK(kiln_spirv_reflect("fixture_literal", words, count, &r));
  for (int i = 0; i < 3; ++i) KILN_EXPECT_FALSE(r.workgroup_size[i].is_spec_constant);
  KILN_EXPECT_EQ(r.workgroup_size[0].size, 8);
  KILN_EXPECT_EQ(r.workgroup_size[1].size, 4);
  KILN_EXPECT_EQ(r.workgroup_size[2].size, 2);
  // Sorted by binding although declared out of order.
  KILN_ASSERT_EQ(r.binding_count, 2);
  KILN_EXPECT_EQ(r.bindings[0].set, 1);
  KILN_EXPECT_EQ(r.bindings[0].binding, 1);
  KILN_EXPECT_TRUE(r.bindings[0].read_only);
  KILN_EXPECT_EQ(r.bindings[1].binding, 3);
  KILN_EXPECT_FALSE(r.bindings[1].read_only);
  // uint, float, vec2 (8-aligned), float: 4 + 4 + 8 + 4.
  KILN_EXPECT_EQ(r.push_constant_size, 20);
  KILN_ASSERT_EQ(r.spec_constant_count, 3);
  float scale = 1.5f;
  uint32_t scale_bits;
  memcpy(&scale_bits, &scale, 4);
  expect_spec(&r, 5, KILN_SPIRV_SCALAR_FLOAT32, scale_bits);
  expect_spec(&r, 7, KILN_SPIRV_SCALAR_INT32, (uint32_t)-3);
  expect_spec(&r, 9, KILN_SPIRV_SCALAR_BOOL, 1);
  KILN_EXPECT_STREQ(r.spec_constants[0].name, "kScale");
  KILN_EXPECT_STREQ(r.bindings[0].name, "In");  // block name (no instance name)
  KILN_EXPECT_STREQ(r.bindings[1].name, "Out");
  kiln_file_contents_deinit(&contents);
}

KILN_TEST(SpirvReflectTest, UniformBufferIsUnsupported) {
  kiln_file_contents_t contents;
  const uint32_t* words = NULL;
  size_t count = 0;
  KILN_ASSERT_OK(kiln_test_load_fixture("fixture_uniform", &contents, &words, &count));
  kiln_spirv_reflection_t r;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_UNIMPLEMENTED,
                             "kernel 'fixture_uniform': uses a uniform buffer",
                             kiln_spirv_reflect("fixture_uniform", words, count, &r));
  kiln_file_contents_deinit(&contents);
}

KILN_TEST(SpirvReflectTest, CorruptSpirvNeverReachesSpirvCross) {
  kiln_kernel_spirv_t spirv;
  KILN_ASSERT_OK(kiln_kernel_get_spirv(KILN_KERNEL_SOFTMAX,
                                       KILN_KERNEL_VARIANT_FP32, &spirv));
  uint32_t* copy = malloc(spirv.word_count * 4);
  KILN_ASSERT_TRUE(copy != NULL);
  // Flip every word after the header in turn would be slow; instead cut
  // the module at several points and corrupt a few instruction headers.
  kiln_spirv_reflection_t r;
  for (size_t cut = 5; cut < spirv.word_count; cut += spirv.word_count / 7 + 1) {
    kiln_status_t status = kiln_spirv_reflect("cut", spirv.words, cut, &r);
    KILN_EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INVALID_ARGUMENT);
    kiln_status_free(status);
    KILN_EXPECT_EQ(r.binding_count, 0);  // cleared on failure
  }
  for (size_t at = 5; at < spirv.word_count; at += 37) {
    memcpy(copy, spirv.words, spirv.word_count * 4);
    copy[at] ^= 0x00ff00ffu;
    kiln_status_t status = kiln_spirv_reflect("flipped", copy, spirv.word_count, &r);
    // Some flips keep the module valid (e.g. in a literal); none may crash.
    if (status) {
      KILN_EXPECT_CONTAINS(kiln_status_message(status), "kernel 'flipped'");
      kiln_status_free(status);
    }
  }
  free(copy);
}

KILN_TEST(SpirvReflectTest, NullArguments) {
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_spirv_reflect("x", NULL, 0, NULL));
  kiln_spirv_reflection_t r;
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_spirv_reflect("x", NULL, 0, &r));
}

// Seeded random word mutations of every kernel build: reflection either
// succeeds or fails with a status naming the kernel; never crashes, hangs
// or leaks (this binary runs under ASan/LSan).
KILN_TEST(SpirvReflectTest, RandomMutationsOfEveryKernel) {
  uint32_t state = 12345;
  size_t rejected = 0, total = 0;
  for (unsigned id = 0; id < KILN_KERNEL_COUNT; ++id) {
    kiln_kernel_spirv_t spirv;
    // The fp32 build, or the fp16-storage one of a kernel built only so.
    const bool fp32 = kiln_kernel_desc((kiln_kernel_id_t)id)->variant_mask & 1u;
    KILN_ASSERT_OK(kiln_kernel_get_spirv(
        (kiln_kernel_id_t)id,
        fp32 ? KILN_KERNEL_VARIANT_FP32 : KILN_KERNEL_VARIANT_FP16_STORAGE, &spirv));
    uint32_t* copy = malloc(spirv.word_count * 4);
    KILN_ASSERT_TRUE(copy != NULL);
    for (int round = 0; round < 40; ++round) {
      memcpy(copy, spirv.words, spirv.word_count * 4);
      for (int flips = 0; flips < 1 + round % 3; ++flips) {
        state = state * 1664525u + 1013904223u;
        size_t at = state % spirv.word_count;
        state = state * 1664525u + 1013904223u;
        copy[at] ^= state;
      }
      kiln_spirv_reflection_t r;
      kiln_status_t status = kiln_spirv_reflect("mutant", copy, spirv.word_count, &r);
      ++total;
      if (status) {
        ++rejected;
        KILN_EXPECT_CONTAINS(kiln_status_message(status), "kernel 'mutant'");
        kiln_status_free(status);
      }
    }
    free(copy);
  }
  // Random 32-bit xors almost always break something the validator checks.
  KILN_EXPECT_GT(rejected, total / 2);
}
