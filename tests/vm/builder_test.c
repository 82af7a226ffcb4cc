// The module builder (kiln/compiler/module_builder.h): a program built
// through the API is byte-identical to the same program assembled from text
// (the assembler is a parser over the same calls), and misuse is
// refused with a message naming what is wrong.
#include <string.h>

#include "kiln/compiler/assembler.h"
#include "kiln/compiler/module_builder.h"
#include "kiln_test.h"
#include "vm_test_util.h"

static const char kSumSource[] =
    "module sum\n"
    "import host.twice \"i_i\"\n"
    "rodata table align 8 raw hex \"0100000002000000\"\n"
    "executable k\n"
    "  variant \"cpu\" features 0x4 shared 64 invocations 8\n"
    "    spirv 0x07230203 0x00010000\n"
    "    entry main workgroup 8 1 1 push 16\n"
    "      binding 0 0 readonly texel\n"
    "      binding 0 1\n"
    "      spec 3 7\n"
    "end\n"
    "func loop \"i_i\"\n"
    "  const.i32 i1 0\n"
    "top:\n"
    "  cond_br i0 body done\n"
    "body:\n"
    "  add.i32 i1 i1 i0\n"
    "  addi.i32 i0 i0 -1\n"
    "  br top\n"
    "done:\n"
    "  call.import host.twice i1 -> i1\n"
    "  return i1\n"
    "end\n"
    "export loop as sum\n";

// The same program through the builder calls.
static kiln_status_t kiln_build_sum(kiln_byte_buffer_t* out) {
  kiln_module_writer_t* writer = NULL;
  kiln_function_builder_t* body = NULL;
  kiln_executable_builder_t* exe = NULL;
  KILN_RETURN_IF_ERROR(kiln_module_writer_create(kiln_allocator_system(), &writer));
  kiln_status_t status = kiln_function_builder_create(writer, kiln_allocator_system(), &body);
  if (!status) status = kiln_executable_builder_create(kiln_allocator_system(), &exe);
  uint32_t import = 0, rodata = 0, function = 0, top = 0, loop_body = 0, done = 0;
  static const uint8_t kTable[] = {1, 0, 0, 0, 2, 0, 0, 0};
  static const uint8_t kSpirv[] = {3, 2, 0x23, 7, 0, 0, 1, 0};
  const uint32_t workgroup[3] = {8, 1, 1};
  kiln_executable_variant_desc_t variant = {kiln_make_cstring_view("cpu"),
                                            KILN_FORMAT_FEATURE_STORAGE_16BIT, 0, 64, 8};
  if (!status) status = kiln_module_writer_set_name(writer, kiln_make_cstring_view("sum"));
  if (!status) {
    status = kiln_module_writer_add_import(writer, kiln_make_cstring_view("host.twice"),
                                           kiln_make_cstring_view("i_i"), 0, &import);
  }
  if (!status) {
    status = kiln_module_writer_add_rodata(writer, kiln_make_cstring_view("table"),
                                           kiln_make_const_byte_span(kTable, sizeof(kTable)), 8,
                                           KILN_MODULE_WRITER_COMPRESSION_NONE, &rodata);
  }
  if (!status) status = kiln_executable_builder_begin(exe, kiln_make_cstring_view("k"));
  if (!status) status = kiln_executable_builder_add_variant(exe, &variant);
  if (!status) {
    status = kiln_executable_builder_append_spirv(
        exe, kiln_make_const_byte_span(kSpirv, sizeof(kSpirv)));
  }
  if (!status) {
    status = kiln_executable_builder_add_entry(exe, kiln_make_cstring_view("main"), workgroup, 16);
  }
  if (!status) {
    status = kiln_executable_builder_add_binding(
        exe, 0, 0, KILN_FORMAT_BINDING_READ_ONLY | KILN_FORMAT_BINDING_TEXEL_VEC4F32);
  }
  if (!status) status = kiln_executable_builder_add_binding(exe, 0, 1, 0);
  if (!status) status = kiln_executable_builder_add_spec(exe, 3, 7);
  if (!status) status = kiln_executable_builder_finish(exe, writer);
  if (!status) {
    status = kiln_module_writer_declare_function(writer, kiln_make_cstring_view("loop"),
                                                 kiln_make_cstring_view("i_i"), &function);
  }
  if (!status) status = kiln_module_writer_add_export(writer, kiln_make_cstring_view("sum"), function);
  if (!status) status = kiln_function_builder_begin(body, function);
  if (!status) status = kiln_function_builder_new_label(body, &top);
  if (!status) status = kiln_function_builder_new_label(body, &loop_body);
  if (!status) status = kiln_function_builder_new_label(body, &done);
  if (!status) status = KILN_FB_OP(body, KILN_VM_OP_CONST_I32, 1, 0);
  if (!status) status = kiln_function_builder_bind_label(body, top);
  if (!status) status = KILN_FB_OP(body, KILN_VM_OP_COND_BR, 0, loop_body, done);
  if (!status) status = kiln_function_builder_bind_label(body, loop_body);
  if (!status) status = KILN_FB_OP(body, KILN_VM_OP_ADD_I32, 1, 1, 0);
  if (!status) status = KILN_FB_OP(body, KILN_VM_OP_ADDI_I32, 0, 0, (uint64_t)-1);
  if (!status) status = KILN_FB_OP(body, KILN_VM_OP_BR, top);
  if (!status) status = kiln_function_builder_bind_label(body, done);
  const uint16_t one = 1;
  if (!status) {
    status = kiln_function_builder_call(body, KILN_VM_OP_CALL_IMPORT, import, &one, 1, &one, 1);
  }
  if (!status) status = KILN_FB_OP(body, KILN_VM_OP_RETURN, 1);
  if (!status) {
    status = kiln_function_builder_end(body, KILN_FUNCTION_BUILDER_AUTO, KILN_FUNCTION_BUILDER_AUTO);
  }
  if (!status) status = kiln_module_writer_finish(writer, out);
  kiln_executable_builder_destroy(exe);
  kiln_function_builder_destroy(body);
  kiln_module_writer_destroy(writer);
  return status;
}

KILN_TEST(ModuleBuilder, BuiltModuleMatchesAssembledText) {
  kiln_byte_buffer_t built, assembled;
  kiln_byte_buffer_init(&built, kiln_allocator_system());
  KILN_ASSERT_OK(kiln_build_sum(&built));
  KILN_ASSERT_OK(kiln_vm_test_assemble(kSumSource, &assembled));
  KILN_ASSERT_EQ(built.size, assembled.size);
  KILN_EXPECT_BYTES_EQ(built.data, assembled.data, built.size);
  // Registers were counted from use: i0 (argument) and i1.
  kiln_format_module_t module;
  KILN_ASSERT_OK(kiln_format_module_read(kiln_byte_buffer_span(&built), "built", NULL,
                                         kiln_allocator_system(), &module));
  KILN_EXPECT_EQ(module.function_count, 1u);
  KILN_EXPECT_EQ(module.functions[0].i32_register_count, 2u);
  kiln_format_module_deinit(&module);
  kiln_byte_buffer_deinit(&built);
  kiln_byte_buffer_deinit(&assembled);
}

// Misuse is refused where it happens, not as a bad module later.
KILN_TEST(ModuleBuilder, MisuseIsRefused) {
  kiln_module_writer_t* writer = NULL;
  KILN_ASSERT_OK(kiln_module_writer_create(kiln_allocator_system(), &writer));
  kiln_function_builder_t* body = NULL;
  KILN_ASSERT_OK(kiln_function_builder_create(writer, kiln_allocator_system(), &body));
  uint32_t function = 0, import = 0, label = 0;
  KILN_ASSERT_OK(kiln_module_writer_add_import(writer, kiln_make_cstring_view("h.f"),
                                               kiln_make_cstring_view("ii_i"), 0, &import));
  KILN_ASSERT_OK(kiln_module_writer_declare_function(writer, kiln_make_cstring_view("f"),
                                                     kiln_make_cstring_view("v_i"), &function));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION, "no function begun",
                             KILN_FB_OP(body, KILN_VM_OP_CONST_I32, 0, 1));
  KILN_ASSERT_OK(kiln_function_builder_begin(body, function));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "add.i32: 2 operands for kinds \"iii\"",
                             KILN_FB_OP(body, KILN_VM_OP_ADD_I32, 0, 1));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE, "register 65536 exceeds 65535",
                             KILN_FB_OP(body, KILN_VM_OP_MOV_I32, 65536, 0));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "use kiln_function_builder_call",
                             KILN_FB_OP(body, KILN_VM_OP_CALL, 0));
  const uint16_t regs[2] = {0, 1};
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "call argument list has 1 registers, the signature needs 2",
      kiln_function_builder_call(body, KILN_VM_OP_CALL_IMPORT, import, regs, 1, regs, 1));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "return list has 0 registers, the signature needs 1",
      kiln_function_builder_op(body, KILN_VM_OP_RETURN, NULL, 0));
  // Failed ops leave no bytes behind.
  KILN_EXPECT_EQ(kiln_function_builder_offset(body), 0u);
  KILN_ASSERT_OK(kiln_function_builder_new_label(body, &label));
  KILN_ASSERT_OK(KILN_FB_OP(body, KILN_VM_OP_BR, label));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "label 7 was not made",
                             KILN_FB_OP(body, KILN_VM_OP_BR, 7));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "label 0 is used but never bound",
                             kiln_function_builder_end(body, KILN_FUNCTION_BUILDER_AUTO,
                                                       KILN_FUNCTION_BUILDER_AUTO));
  kiln_function_builder_destroy(body);

  kiln_executable_builder_t* exe = NULL;
  KILN_ASSERT_OK(kiln_executable_builder_create(kiln_allocator_system(), &exe));
  KILN_ASSERT_OK(kiln_executable_builder_begin(exe, kiln_make_cstring_view("k")));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "'binding' before any 'variant'",
                             kiln_executable_builder_add_binding(exe, 0, 0, 0));
  kiln_executable_variant_desc_t variant = {kiln_make_cstring_view("cpu"), 0x40, 0, 0, 0};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "unknown feature bits 0x40",
                             kiln_executable_builder_add_variant(exe, &variant));
  variant.required_features = KILN_FORMAT_FEATURE_SUBGROUP_OPS;
  KILN_ASSERT_OK(kiln_executable_builder_add_variant(exe, &variant));
  const uint32_t workgroup[3] = {1, 1, 1};
  KILN_ASSERT_OK(kiln_executable_builder_add_entry(exe, kiln_make_cstring_view("main"),
                                                   workgroup, 0));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "'texel' needs 'readonly'",
                             kiln_executable_builder_add_binding(
                                 exe, 0, 0, KILN_FORMAT_BINDING_TEXEL_VEC4F32));
  static const uint8_t kOdd[6] = {0};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "is not whole words",
                             kiln_executable_builder_append_spirv(
                                 exe, kiln_make_const_byte_span(kOdd, sizeof(kOdd))));
  kiln_executable_builder_destroy(exe);
  kiln_module_writer_destroy(writer);
}

// AUTO compression of large rodata: the level-1 trial (counted through a
// small block) still keeps compressible data compressed and stores
// incompressible data as it is, byte for byte.
KILN_TEST(ModuleBuilder, AutoCompressionOfLargeRodata) {
  const size_t size = 6u << 20;  // above the writer's 4 MiB sampling floor
  uint8_t* compressible = NULL;
  uint8_t* noise = NULL;
  KILN_ASSERT_OK(kiln_allocator_malloc(kiln_allocator_system(), size, (void**)&compressible));
  KILN_ASSERT_OK(kiln_allocator_malloc(kiln_allocator_system(), size, (void**)&noise));
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < size; ++i) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    noise[i] = (uint8_t)(state >> 24);
    compressible[i] = (uint8_t)((i / 64) % 7 + (noise[i] & 1));  // mostly runs
  }
  kiln_module_writer_t* writer = NULL;
  KILN_ASSERT_OK(kiln_module_writer_create(kiln_allocator_system(), &writer));
  uint32_t ordinal = 0;
  KILN_ASSERT_OK(kiln_module_writer_add_rodata_reference(
      writer, kiln_make_cstring_view("compressible"), kiln_make_const_byte_span(compressible, size),
      64, KILN_MODULE_WRITER_COMPRESSION_AUTO, &ordinal));
  KILN_ASSERT_OK(kiln_module_writer_add_rodata_reference(
      writer, kiln_make_cstring_view("noise"), kiln_make_const_byte_span(noise, size), 64,
      KILN_MODULE_WRITER_COMPRESSION_AUTO, &ordinal));
  kiln_byte_buffer_t bytes;
  kiln_byte_buffer_init(&bytes, kiln_allocator_system());
  KILN_ASSERT_OK(kiln_module_writer_finish(writer, &bytes));
  kiln_module_writer_destroy(writer);
  kiln_format_module_t module;
  KILN_ASSERT_OK(kiln_format_module_read(kiln_byte_buffer_span(&bytes), "rodata", NULL,
                                         kiln_allocator_system(), &module));
  KILN_ASSERT_EQ(module.rodata_count, 2u);
  KILN_EXPECT_EQ(module.rodata[0].flags, KILN_FORMAT_RODATA_ZSTD);
  KILN_EXPECT_LT(module.rodata[0].stored_size, size / 4);
  KILN_EXPECT_EQ(module.rodata[1].flags, 0u);
  KILN_EXPECT_EQ(module.rodata[1].stored_size, size);
  uint8_t* unpacked = NULL;
  KILN_ASSERT_OK(kiln_allocator_malloc(kiln_allocator_system(), size, (void**)&unpacked));
  KILN_ASSERT_OK(kiln_format_rodata_unpack(&module.rodata[0], 1, kiln_make_byte_span(unpacked, size)));
  KILN_EXPECT_EQ(memcmp(unpacked, compressible, size), 0);
  KILN_ASSERT_OK(kiln_format_rodata_unpack(&module.rodata[1], 1, kiln_make_byte_span(unpacked, size)));
  KILN_EXPECT_EQ(memcmp(unpacked, noise, size), 0);
  kiln_allocator_free(kiln_allocator_system(), unpacked);
  kiln_format_module_deinit(&module);
  kiln_byte_buffer_deinit(&bytes);
  kiln_allocator_free(kiln_allocator_system(), compressible);
  kiln_allocator_free(kiln_allocator_system(), noise);
}
