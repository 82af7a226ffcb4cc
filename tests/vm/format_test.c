// The container: round trip through the disassembler, every truncation,
// random and mutated bytes, version and magic checks, executables and
// rodata (alignment in the file, zstd, size caps).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/file.h"
#include "kiln/compiler/assembler.h"
#include "kiln/base/reader.h"
#include "kiln/format/executables.h"
#include "kiln/format/module_reader.h"
#include "kiln_test.h"
#include "vm_test_util.h"

static void kiln_features_module(kiln_byte_buffer_t* out) {
  kiln_file_contents_t source;
  KILN_ASSERT_OK(kiln_file_read_all(KILN_VM_TESTDATA "/features.kasm",
                                    kiln_allocator_system(), &source));
  kiln_byte_buffer_init(out, kiln_allocator_system());
  KILN_ASSERT_OK(kiln_assembler_assemble(
      kiln_make_string_view((const char*)source.data, source.size),
      "features.kasm", kiln_allocator_system(), out));
  kiln_file_contents_deinit(&source);
}

static kiln_status_t kiln_try_load(kiln_const_byte_span_t bytes) {
  kiln_vm_instance_t* instance = NULL;
  KILN_RETURN_IF_ERROR(kiln_vm_instance_create(kiln_allocator_system(), &instance));
  kiln_vm_module_t* module = NULL;
  kiln_status_t status =
      kiln_vm_module_load_from_memory(instance, bytes, "fuzz.kiln", NULL, &module);
  kiln_vm_module_release(module);
  kiln_vm_instance_destroy(instance);
  return status;
}

KILN_TEST(ModuleFormat, DisassemblyReassemblesToIdenticalBytes) {
  kiln_byte_buffer_t original;
  kiln_features_module(&original);
  kiln_format_module_t module;
  KILN_ASSERT_OK(kiln_format_module_read(kiln_byte_buffer_span(&original), "features",
                                         NULL, kiln_allocator_system(), &module));
  char* text = NULL;
  size_t text_size = 0;
  FILE* stream = open_memstream(&text, &text_size);
  KILN_ASSERT_TRUE(stream != NULL);
  KILN_ASSERT_OK(kiln_disassembler_write(&module, true, stream));
  fclose(stream);
  KILN_EXPECT_CONTAINS(text, "call.import host.list_sum r0 -> I6");
  KILN_EXPECT_CONTAINS(text, "const.f32 i12 bits=0x7fc00001");
  KILN_EXPECT_CONTAINS(text, "rodata weights align 256 zstd hex");
  KILN_EXPECT_CONTAINS(text, "# executable 'conv': 2 variants");
  kiln_byte_buffer_t again;
  kiln_byte_buffer_init(&again, kiln_allocator_system());
  KILN_ASSERT_OK(kiln_assembler_assemble(kiln_make_string_view(text, text_size),
                                         "disassembly", kiln_allocator_system(), &again));
  KILN_ASSERT_EQ(again.size, original.size);
  KILN_EXPECT_BYTES_EQ(again.data, original.data, original.size);
  free(text);
  kiln_byte_buffer_deinit(&again);
  kiln_format_module_deinit(&module);
  kiln_byte_buffer_deinit(&original);
}

KILN_TEST(ModuleFormat, RunsTheFeaturesModule) {
  kiln_file_contents_t source;
  KILN_ASSERT_OK(kiln_file_read_all(KILN_VM_TESTDATA "/features.kasm",
                                    kiln_allocator_system(), &source));
  kiln_vm_test_env_t env;
  KILN_ASSERT_OK(kiln_vm_test_env_init(&env, (const char*)source.data));
  kiln_file_contents_deinit(&source);
  kiln_vm_value_t arg = kiln_vm_value_i32(3), r[4];
  KILN_ASSERT_OK(kiln_vm_test_call(&env, "features.main", &arg, 1, r, 4));
  KILN_EXPECT_EQ(r[0].i32, 6);   // host.add(3, 3)
  KILN_EXPECT_EQ(r[1].i64, 3);   // 0 + 1 + 2
  KILN_EXPECT_EQ(r[2].i64, 3);   // host.list_sum of [0, 1, 2]
  KILN_EXPECT_NEAR(r[3].f32, -0.5, 0);
  arg = kiln_vm_value_i32(0);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_ABORTED, "fail: first \"case\"\n",
                             kiln_vm_test_call(&env, "main", &arg, 1, r, 4));
  kiln_vm_test_env_deinit(&env);
}

KILN_TEST(ModuleFormat, EveryTruncationIsRejected) {
  kiln_byte_buffer_t bytes;
  kiln_features_module(&bytes);
  KILN_ASSERT_OK(kiln_try_load(kiln_byte_buffer_span(&bytes)));
  for (size_t length = 0; length < bytes.size; ++length) {
    // A copy of exactly `length` bytes so ASan sees any overread.
    uint8_t* copy = (uint8_t*)malloc(length ? length : 1);
    memcpy(copy, bytes.data, length);
    kiln_status_t status = kiln_try_load(kiln_make_const_byte_span(copy, length));
    if (kiln_status_is_ok(status)) KILN_ADD_FAILURE("truncation to %zu bytes loaded", length);
    kiln_status_free(status);
    free(copy);
  }
  kiln_byte_buffer_deinit(&bytes);
}

static uint32_t kiln_lcg(uint64_t* state) {
  *state = *state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
  return (uint32_t)(*state >> 33);
}

KILN_TEST(ModuleFormat, RandomAndMutatedBytesNeverCrash) {
  kiln_byte_buffer_t bytes;
  kiln_features_module(&bytes);
  uint64_t seed = 12345;
  size_t loaded = 0, rejected = 0;
  for (int round = 0; round < 3000; ++round) {
    size_t length = round < 500 ? kiln_lcg(&seed) % 600 : bytes.size;
    uint8_t* data = (uint8_t*)malloc(length ? length : 1);
    if (round < 500) {
      for (size_t i = 0; i < length; ++i) data[i] = (uint8_t)kiln_lcg(&seed);
      if (length >= 8 && round % 2) memcpy(data, bytes.data, 8);  // valid magic+version
    } else {
      memcpy(data, bytes.data, length);
      int flips = 1 + (int)(kiln_lcg(&seed) % 4);
      for (int f = 0; f < flips; ++f) {
        data[kiln_lcg(&seed) % length] = (uint8_t)kiln_lcg(&seed);
      }
    }
    kiln_status_t status = kiln_try_load(kiln_make_const_byte_span(data, length));
    if (status) {
      ++rejected;
      kiln_status_free(status);
    } else {
      ++loaded;  // a mutation in data that the format does not constrain
    }
    free(data);
  }
  KILN_EXPECT_GT(rejected, 1000);
  KILN_EXPECT_EQ(loaded + rejected, 3000);
  kiln_byte_buffer_deinit(&bytes);
}

KILN_TEST(ModuleFormat, RejectsNewerVersionAndBadMagic) {
  kiln_byte_buffer_t bytes;
  kiln_features_module(&bytes);
  uint8_t version = bytes.data[4];
  bytes.data[4] = 3;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INCOMPATIBLE,
                             "module format version 3 is not supported: this reader "
                             "handles versions 1 to 2; while reading module 'fuzz.kiln'",
                             kiln_try_load(kiln_byte_buffer_span(&bytes)));
  bytes.data[4] = version;
  bytes.data[0] = 'X';
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "not a kiln module",
                             kiln_try_load(kiln_byte_buffer_span(&bytes)));
  kiln_byte_buffer_deinit(&bytes);
}

KILN_TEST(ModuleFormat, ExecutablesReadStandalone) {
  kiln_byte_buffer_t bytes;
  kiln_features_module(&bytes);
  kiln_format_module_t module;
  KILN_ASSERT_OK(kiln_format_module_read(kiln_byte_buffer_span(&bytes), "features", NULL,
                                         kiln_allocator_system(), &module));
  kiln_format_executables_t exes;
  KILN_ASSERT_OK(kiln_format_executables_parse(module.executables_section,
                                               (size_t)module.executables_section_offset,
                                               kiln_allocator_system(), &exes));
  KILN_ASSERT_EQ(exes.executable_count, 2);
  const kiln_format_executable_t* conv = &exes.executables[0];
  KILN_EXPECT_TRUE(kiln_string_view_equal_cstring(conv->name, "conv"));
  KILN_ASSERT_EQ(conv->variant_count, 2);
  const kiln_format_variant_t* v = &conv->variants[0];
  KILN_EXPECT_TRUE(kiln_string_view_equal_cstring(v->target, "ampere-rtx3080-windows"));
  KILN_EXPECT_EQ(v->required_features,
                 KILN_FORMAT_FEATURE_FP16 | KILN_FORMAT_FEATURE_INT8_DOT_PRODUCT);
  KILN_EXPECT_EQ(v->min_subgroup_size, 32);
  KILN_EXPECT_EQ(v->min_shared_memory_bytes, 16384);
  KILN_EXPECT_EQ(v->min_workgroup_invocations, 128);
  KILN_ASSERT_EQ(v->spirv_word_count, 5);
  KILN_EXPECT_EQ(kiln_format_variant_spirv_word(v, 0), 0x07230203u);
  KILN_ASSERT_EQ(v->entry_point_count, 1);
  const kiln_format_entry_point_t* e = &v->entry_points[0];
  KILN_EXPECT_TRUE(kiln_string_view_equal_cstring(e->name, "main"));
  KILN_EXPECT_EQ(e->workgroup_size[0], 64);
  KILN_EXPECT_EQ(e->push_constant_bytes, 16);
  KILN_ASSERT_EQ(e->binding_count, 2);
  KILN_EXPECT_EQ(e->bindings[0].flags, KILN_FORMAT_BINDING_READ_ONLY);
  KILN_EXPECT_EQ(e->bindings[1].binding, 1);
  KILN_ASSERT_EQ(e->specialization_count, 2);
  KILN_EXPECT_EQ(e->specializations[1].id, 1);
  KILN_EXPECT_EQ(conv->variants[1].entry_points[0].workgroup_size[1], 8);
  KILN_EXPECT_EQ(exes.executables[1].variant_count, 0);
  // Every truncation of the section alone is rejected too.
  for (size_t length = 0; length < module.executables_section.size; ++length) {
    kiln_format_executables_t partial;
    kiln_status_t status = kiln_format_executables_parse(
        kiln_make_const_byte_span(module.executables_section.data, length), 0,
        kiln_allocator_system(), &partial);
    if (length && kiln_status_is_ok(status)) KILN_ADD_FAILURE("section prefix %zu parsed", length);
    kiln_status_free(status);
    kiln_format_executables_deinit(&partial);
  }
  kiln_format_executables_deinit(&exes);
  kiln_format_module_deinit(&module);
  kiln_byte_buffer_deinit(&bytes);
}

KILN_TEST(ModuleFormat, RodataAlignmentCompressionAndLimits) {
  kiln_byte_buffer_t bytes;
  kiln_features_module(&bytes);
  kiln_format_module_t module;
  KILN_ASSERT_OK(kiln_format_module_read(kiln_byte_buffer_span(&bytes), "features", NULL,
                                         kiln_allocator_system(), &module));
  KILN_ASSERT_EQ(module.rodata_count, 3);
  for (uint32_t i = 0; i < module.rodata_count; ++i) {
    KILN_EXPECT_EQ(module.rodata[i].file_offset % module.rodata[i].alignment, 0);
  }
  const kiln_format_rodata_t* weights = &module.rodata[1];
  KILN_EXPECT_EQ(weights->flags, KILN_FORMAT_RODATA_ZSTD);
  KILN_EXPECT_EQ(weights->size, 2048);
  KILN_EXPECT_LT(weights->stored_size, 2048);
  uint8_t unpacked[2048];
  KILN_ASSERT_OK(kiln_format_rodata_unpack(weights, 1, kiln_make_byte_span(unpacked, 2048)));
  for (int i = 0; i < 2048; ++i) {
    if (unpacked[i] != (uint8_t)((i * 7) % 13)) {
      KILN_FAIL("rodata byte %d is %u, reference %u", i, unpacked[i], (i * 7) % 13);
    }
  }
  kiln_format_read_options_t options = kiln_format_read_options_default();
  options.max_rodata_bytes = 1000;
  kiln_format_module_t capped;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_RESOURCE_EXHAUSTED, "exceeds the limit of 1000 bytes",
                             kiln_format_module_read(kiln_byte_buffer_span(&bytes), "features",
                                                     &options, kiln_allocator_system(),
                                                     &capped));
  // A corrupt zstd frame is DATA_LOSS at load.
  size_t frame = (size_t)weights->file_offset;
  kiln_format_module_deinit(&module);
  bytes.data[frame + 6] ^= 0xFF;
  bytes.data[frame + 7] ^= 0xFF;
  bytes.data[frame + 12] ^= 0x5A;
  kiln_status_t status = kiln_try_load(kiln_byte_buffer_span(&bytes));
  KILN_EXPECT_TRUE(!kiln_status_is_ok(status));
  kiln_status_free(status);
  kiln_byte_buffer_deinit(&bytes);
}

// Inputs that once made a fuzzer report a crash or undefined behaviour must
// be rejected with a status (testdata/fuzz_regressions/).
KILN_TEST(ModuleFormat, FuzzRegressionsAreRejected) {
  static const char* const kFiles[] = {"no_bytecode_section.kiln"};
  for (size_t i = 0; i < sizeof(kFiles) / sizeof(kFiles[0]); ++i) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/fuzz_regressions/%s", KILN_VM_TESTDATA,
             kFiles[i]);
    kiln_vm_instance_t* instance = NULL;
    KILN_ASSERT_OK(kiln_vm_instance_create(kiln_allocator_system(), &instance));
    kiln_vm_module_t* module = NULL;
    kiln_status_t status =
        kiln_vm_module_load_from_file(instance, path, NULL, &module);
    KILN_EXPECT_NE(kiln_status_code(status), KILN_STATUS_OK);
    kiln_status_free(status);
    kiln_vm_module_release(module);
    kiln_vm_instance_destroy(instance);
  }
}

static void kiln_store_test_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = (uint8_t)(v >> (8 * i));
}

// Identical SPIR-V is stored once: later variants refer to the first copy
// (format version 2), read back as the same words; a reference to a variant
// that is not earlier is refused.
KILN_TEST(ModuleFormat, SharedSpirvIsStoredOnceAndResolved) {
  kiln_file_contents_t source;
  KILN_ASSERT_OK(kiln_file_read_all(KILN_VM_TESTDATA "/shared_spirv.kasm",
                                    kiln_allocator_system(), &source));
  kiln_byte_buffer_t bytes;
  kiln_byte_buffer_init(&bytes, kiln_allocator_system());
  KILN_ASSERT_OK(kiln_assembler_assemble(
      kiln_make_string_view((const char*)source.data, source.size), "shared_spirv.kasm",
      kiln_allocator_system(), &bytes));
  kiln_file_contents_deinit(&source);
  KILN_EXPECT_EQ(kiln_load_le_u32(bytes.data + 4), KILN_FORMAT_VERSION_SHARED_SPIRV);
  kiln_format_module_t module;
  KILN_ASSERT_OK(kiln_format_module_read(kiln_byte_buffer_span(&bytes), "shared", NULL,
                                         kiln_allocator_system(), &module));
  const kiln_format_section_t* section =
      kiln_format_module_find_section(&module, KILN_FORMAT_SECTION_EXECUTABLES);
  KILN_ASSERT_TRUE(section != NULL);
  kiln_format_executables_t executables;
  KILN_ASSERT_OK(kiln_format_executables_parse(
      kiln_make_const_byte_span(bytes.data + section->offset, section->size), section->offset,
      kiln_allocator_system(), &executables));
  KILN_ASSERT_EQ(executables.executable_count, 2u);
  const kiln_format_variant_t* first = &executables.executables[0].variants[0];
  const kiln_format_variant_t* shared[2] = {&executables.executables[0].variants[1],
                                            &executables.executables[1].variants[0]};
  for (int i = 0; i < 2; ++i) {
    KILN_EXPECT_EQ(shared[i]->spirv_word_count, 5u);
    KILN_EXPECT_TRUE(shared[i]->spirv == first->spirv);  // the one stored copy
  }
  KILN_EXPECT_EQ(executables.executables[1].variants[1].spirv_word_count, 2u);
  KILN_EXPECT_EQ(kiln_format_variant_spirv_word(shared[1], 4), 0u);
  // The section holds the 5 words once, plus the 2-word blob.
  size_t markers = 0;
  for (size_t at = section->offset; at + 4 <= section->offset + section->size; at += 4) {
    if (kiln_load_le_u32(bytes.data + at) == KILN_FORMAT_SPIRV_SHARED) {
      KILN_EXPECT_EQ(kiln_load_le_u32(bytes.data + at + 4), 0u);  // variant 0
      // Point the second reference at itself: not an earlier variant.
      if (++markers == 2) kiln_store_test_u32(bytes.data + at + 4, 2);
    }
  }
  KILN_EXPECT_EQ(markers, 2u);
  kiln_format_executables_deinit(&executables);
  kiln_format_module_deinit(&module);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "shares the SPIR-V of variant 2, which is not an earlier variant",
                             kiln_try_load(kiln_byte_buffer_span(&bytes)));
  kiln_byte_buffer_deinit(&bytes);
}
