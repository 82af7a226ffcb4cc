// Constants of the .kiln module container (docs/module-format.md describes
// every byte). Shared by the reader (vm/format), the VM loader and the writer
// (compiler-bridge/assembler); nothing here allocates.
#ifndef KILN_FORMAT_MODULE_FORMAT_H_
#define KILN_FORMAT_MODULE_FORMAT_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// "KILN" in file order.
#define KILN_FORMAT_MAGIC 0x4E4C494Bu
// The newest version this build reads. The writer emits version 1 unless
// the module shares a SPIR-V blob between variants (version 2, which adds
// KILN_FORMAT_SPIRV_SHARED), so older readers refuse such a module by its
// version instead of misreading it.
#define KILN_FORMAT_VERSION 2u
#define KILN_FORMAT_VERSION_BASE 1u
#define KILN_FORMAT_VERSION_SHARED_SPIRV 2u
// In a variant's spirv_word_count: no words follow but a u32 index of an
// earlier variant in the section (counted over all executables) whose
// SPIR-V this variant uses.
#define KILN_FORMAT_SPIRV_SHARED 0xFFFFFFFFu
#define KILN_FORMAT_HEADER_SIZE 24u
#define KILN_FORMAT_SECTION_ENTRY_SIZE 24u
// Sections start at file offsets that are multiples of this.
#define KILN_FORMAT_SECTION_ALIGNMENT 8u
// "no string" in fields that hold a string ordinal.
#define KILN_FORMAT_NO_STRING 0xFFFFFFFFu

typedef enum kiln_format_section_id_e {
  KILN_FORMAT_SECTION_STRINGS = 1,
  KILN_FORMAT_SECTION_SIGNATURES = 2,
  KILN_FORMAT_SECTION_IMPORTS = 3,
  KILN_FORMAT_SECTION_EXPORTS = 4,
  KILN_FORMAT_SECTION_FUNCTIONS = 5,
  KILN_FORMAT_SECTION_BYTECODE = 6,
  KILN_FORMAT_SECTION_GLOBALS = 7,
  KILN_FORMAT_SECTION_RODATA = 8,
  KILN_FORMAT_SECTION_EXECUTABLES = 9,
  KILN_FORMAT_SECTION_DEBUG = 10,
  KILN_FORMAT_SECTION_ID_MAX = 10,
} kiln_format_section_id_t;

// Import flags.
#define KILN_FORMAT_IMPORT_OPTIONAL 0x1u
// Rodata flags.
#define KILN_FORMAT_RODATA_ZSTD 0x1u
#define KILN_FORMAT_RODATA_MAX_ALIGNMENT 4096u

// Executable variant feature bits.
#define KILN_FORMAT_FEATURE_FP16 0x01u
#define KILN_FORMAT_FEATURE_INT8_DOT_PRODUCT 0x02u
#define KILN_FORMAT_FEATURE_STORAGE_16BIT 0x04u
#define KILN_FORMAT_FEATURE_STORAGE_8BIT 0x08u
#define KILN_FORMAT_FEATURE_SUBGROUP_OPS 0x10u
#define KILN_FORMAT_FEATURE_COOPERATIVE_MATRIX 0x20u
#define KILN_FORMAT_FEATURE_ALL 0x3Fu
// Binding flags.
#define KILN_FORMAT_BINDING_READ_ONLY 0x1u
// Bound as a uniform texel buffer of vec4 f32 (R32G32B32A32_SFLOAT) rather
// than a storage buffer: CPU Vulkan devices (llvmpipe) gather texel loads
// without a per-lane loop. Needs READ_ONLY; offsets 16-byte aligned.
#define KILN_FORMAT_BINDING_TEXEL_VEC4F32 0x2u
#define KILN_FORMAT_BINDING_ALL 0x3u

// Limits the reader enforces on untrusted counts (each is far above what a
// real module needs and small enough that tables cannot exhaust memory).
#define KILN_FORMAT_MAX_SECTIONS 32u
#define KILN_FORMAT_MAX_SIGNATURE_VALUES 32u
#define KILN_FORMAT_MAX_I32_REGISTERS 8192u
#define KILN_FORMAT_MAX_REF_REGISTERS 2048u
#define KILN_FORMAT_MAX_GLOBAL_WORDS (1u << 20)
#define KILN_FORMAT_MAX_GLOBAL_REFS (1u << 16)

#ifdef __cplusplus
}
#endif

#endif  // KILN_FORMAT_MODULE_FORMAT_H_
