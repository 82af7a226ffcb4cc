// The texel binding flag in the module format: the assembler's `texel`
// keyword sets KILN_FORMAT_BINDING_TEXEL_VEC4F32, the reader returns it, the
// disassembler writes it back (reassembling to identical bytes), and the
// reader rejects unknown flag bits and a texel binding that is not
// read-only; the assembler rejects `texel` without `readonly`.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/assembler.h"
#include "kiln/format/executables.h"
#include "kiln/format/module_reader.h"
#include "kiln_test.h"

static const char kSource[] =
    "executable k\n"
    "  variant \"cpu\" features 0x0 shared 0 invocations 8\n"
    "    spirv 0x07230203 0x00010000\n"
    "    entry main workgroup 8 1 1 push 0\n"
    "      binding 0 0 readonly texel\n"
    "      binding 0 1 texel readonly\n"
    "      binding 0 2 readonly\n"
    "      binding 0 3\n"
    "end\n";

static kiln_status_t assemble(const char* source, kiln_byte_buffer_t* out) {
  kiln_byte_buffer_init(out, kiln_allocator_system());
  return kiln_assembler_assemble(kiln_make_string_view(source, strlen(source)), "texel.kasm",
                                 kiln_allocator_system(), out);
}

KILN_TEST(TexelFormatTest, FlagRoundTripsThroughReaderAndDisassembler) {
  kiln_byte_buffer_t bytes;
  KILN_ASSERT_OK(assemble(kSource, &bytes));
  kiln_format_module_t module;
  KILN_ASSERT_OK(kiln_format_module_read(kiln_byte_buffer_span(&bytes), "texel", NULL,
                                         kiln_allocator_system(), &module));
  kiln_format_executables_t exes;
  KILN_ASSERT_OK(kiln_format_executables_parse(module.executables_section,
                                               (size_t)module.executables_section_offset,
                                               kiln_allocator_system(), &exes));
  KILN_ASSERT_EQ(exes.executable_count, 1);
  KILN_ASSERT_EQ(exes.executables[0].variant_count, 1);
  const kiln_format_entry_point_t* entry = &exes.executables[0].variants[0].entry_points[0];
  KILN_ASSERT_EQ(entry->binding_count, 4);
  const uint32_t texel_ro = KILN_FORMAT_BINDING_READ_ONLY | KILN_FORMAT_BINDING_TEXEL_VEC4F32;
  KILN_EXPECT_EQ(entry->bindings[0].flags, texel_ro);
  KILN_EXPECT_EQ(entry->bindings[1].flags, texel_ro);
  KILN_EXPECT_EQ(entry->bindings[2].flags, KILN_FORMAT_BINDING_READ_ONLY);
  KILN_EXPECT_EQ(entry->bindings[3].flags, 0);
  kiln_format_executables_deinit(&exes);

  char* text = NULL;
  size_t text_size = 0;
  FILE* stream = open_memstream(&text, &text_size);
  KILN_ASSERT_TRUE(stream != NULL);
  KILN_ASSERT_OK(kiln_disassembler_write(&module, false, stream));
  fclose(stream);
  KILN_EXPECT_CONTAINS(text, "binding 0 0 readonly texel\n");
  KILN_EXPECT_CONTAINS(text, "binding 0 1 readonly texel\n");
  KILN_EXPECT_CONTAINS(text, "binding 0 2 readonly\n");
  kiln_byte_buffer_t again;
  KILN_ASSERT_OK(assemble(text, &again));
  KILN_ASSERT_EQ(again.size, bytes.size);
  KILN_EXPECT_BYTES_EQ(again.data, bytes.data, bytes.size);
  free(text);
  kiln_byte_buffer_deinit(&again);
  kiln_format_module_deinit(&module);
  kiln_byte_buffer_deinit(&bytes);
}

// Rewrites the flags word of binding (0, 0) and parses the section again.
static kiln_status_t parse_with_flags(kiln_const_byte_span_t section, uint32_t flags) {
  uint8_t* copy = malloc(section.size);
  if (!copy) return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "copy");
  memcpy(copy, section.data, section.size);
  // The first binding is u32 set 0, u32 binding 0, u32 flags 3.
  const uint8_t pattern[12] = {0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0};
  size_t at = SIZE_MAX;
  for (size_t i = 0; i + sizeof(pattern) <= section.size; i += 4) {
    if (memcmp(copy + i, pattern, sizeof(pattern)) == 0) {
      at = i + 8;
      break;
    }
  }
  kiln_status_t status;
  if (at == SIZE_MAX) {
    status = kiln_make_status(KILN_STATUS_NOT_FOUND, "binding (0, 0) not found");
  } else {
    for (int b = 0; b < 4; ++b) copy[at + b] = (uint8_t)(flags >> (8 * b));
    kiln_format_executables_t exes;
    status = kiln_format_executables_parse(kiln_make_const_byte_span(copy, section.size), 0,
                                           kiln_allocator_system(), &exes);
    kiln_format_executables_deinit(&exes);
  }
  free(copy);
  return status;
}

KILN_TEST(TexelFormatTest, MalformedFlagsAreRejected) {
  kiln_byte_buffer_t bytes;
  KILN_ASSERT_OK(assemble(kSource, &bytes));
  kiln_format_module_t module;
  KILN_ASSERT_OK(kiln_format_module_read(kiln_byte_buffer_span(&bytes), "texel", NULL,
                                         kiln_allocator_system(), &module));
  KILN_EXPECT_OK(parse_with_flags(module.executables_section, 3));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "a texel binding must be read-only",
                             parse_with_flags(module.executables_section, 2));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "unknown bits 0x4",
                             parse_with_flags(module.executables_section, 7));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "unknown bits 0x80000000",
                             parse_with_flags(module.executables_section, 0x80000001u));
  kiln_format_module_deinit(&module);
  kiln_byte_buffer_deinit(&bytes);
}

KILN_TEST(TexelFormatTest, AssemblerRejectsBadBindingFlags) {
  kiln_byte_buffer_t bytes;
  static const char kWritable[] =
      "executable k\n  variant \"cpu\" features 0x0 shared 0 invocations 8\n"
      "    spirv 0x07230203 0x00010000\n    entry main workgroup 8 1 1 push 0\n"
      "      binding 0 0 texel\nend\n";
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "texel.kasm:5: binding: 'texel' needs 'readonly'",
                             assemble(kWritable, &bytes));
  kiln_byte_buffer_deinit(&bytes);
  static const char kUnknown[] =
      "executable k\n  variant \"cpu\" features 0x0 shared 0 invocations 8\n"
      "    spirv 0x07230203 0x00010000\n    entry main workgroup 8 1 1 push 0\n"
      "      binding 0 0 readonly sampled\nend\n";
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "unknown flag 'sampled'",
                             assemble(kUnknown, &bytes));
  kiln_byte_buffer_deinit(&bytes);
}
