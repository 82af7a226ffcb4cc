// Target triples `<arch>-<product>-<os>` (docs/architecture.md): parsing of full and
// partial triples, the per-arch capability table, derivation of a device's
// triple from what Vulkan reports, and the choice among an executable's
// variants. No Vulkan dependency: the compiler bridge links this too.
#ifndef KILN_HAL_TARGET_TRIPLE_H_
#define KILN_HAL_TARGET_TRIPLE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/base/status.h"
#include "kiln/base/views.h"

#ifdef __cplusplus
extern "C" {
#endif

// Feature bits a device reports and a variant may require.
typedef enum kiln_target_feature_bits_e {
  KILN_TARGET_FEATURE_FP16 = 1u << 0,            // fp16 arithmetic
  KILN_TARGET_FEATURE_FP64 = 1u << 1,
  KILN_TARGET_FEATURE_INT64 = 1u << 2,
  KILN_TARGET_FEATURE_STORAGE_16BIT = 1u << 3,
  KILN_TARGET_FEATURE_STORAGE_8BIT = 1u << 4,
  KILN_TARGET_FEATURE_INT8_DOT = 1u << 5,         // integer dot product
  KILN_TARGET_FEATURE_SUBGROUP_OPS = 1u << 6,     // arithmetic+shuffle
  KILN_TARGET_FEATURE_SUBGROUP_SIZE_CONTROL = 1u << 7,
  KILN_TARGET_FEATURE_COOPERATIVE_MATRIX = 1u << 8,
  KILN_TARGET_FEATURE_TIMELINE_SEMAPHORE = 1u << 9,
  KILN_TARGET_FEATURE_PUSH_DESCRIPTORS = 1u << 10,
  KILN_TARGET_FEATURE_INT8_ARITHMETIC = 1u << 11,
  KILN_TARGET_FEATURE_INT16 = 1u << 12,
} kiln_target_feature_bits_t;
typedef uint32_t kiln_target_features_t;

// Writes "fp16|int8_dot|..." (or "none"); returns the length needed.
size_t kiln_target_features_format(kiln_target_features_t features,
                                   char* buffer, size_t buffer_size);

// Limits a device has and a variant may need (0 = no requirement).
typedef struct kiln_target_limits_t {
  uint32_t subgroup_size;                // device: default; variant: required
  uint32_t max_workgroup_invocations;
  uint32_t max_shared_memory_bytes;
  uint32_t max_push_constant_bytes;
  uint64_t max_storage_buffer_range;
} kiln_target_limits_t;

enum {
  KILN_TARGET_TOKEN_CAPACITY = 24,
  KILN_TARGET_TRIPLE_TEXT_CAPACITY = 3 * KILN_TARGET_TOKEN_CAPACITY,
};

typedef struct kiln_target_triple_t {
  char arch[KILN_TARGET_TOKEN_CAPACITY];
  char product[KILN_TARGET_TOKEN_CAPACITY];
  char os[KILN_TARGET_TOKEN_CAPACITY];
} kiln_target_triple_t;

// The portable fallback: unknown-unknown-unknown.
kiln_target_triple_t kiln_target_triple_unknown(void);

// Parses `arch`, `arch-product`, `arch-os` or `arch-product-os`; missing
// tokens become "unknown". An unrecognised token is INVALID_ARGUMENT naming it
// and listing the tokens known in its position.
kiln_status_t kiln_target_triple_parse(kiln_string_view_t text,
                                       kiln_target_triple_t* out_triple);

// "arch-product-os"; returns the length needed (like snprintf).
size_t kiln_target_triple_format(const kiln_target_triple_t* triple,
                                 char* buffer, size_t buffer_size);

bool kiln_target_triple_equal(const kiln_target_triple_t* a,
                              const kiln_target_triple_t* b);

// One row of the arch capability table (hal/target/arch_table.c;
// approximate values).
typedef struct kiln_target_arch_info_t {
  const char* name;
  const char* vendor;      // vendor family: "nvidia", "amd", ... or "any"
  uint32_t subgroup_size;  // the size kernels are planned for (RDNA: wave64,
                           // Arc: its smallest, 8)
  uint32_t max_workgroup_invocations;
  uint32_t max_shared_memory_bytes;
  kiln_target_features_t features;
  const char* cooperative_matrix_shapes;  // "16x16x16 f16" or ""
  const char* const* products;            // NULL-terminated known products
  // maxStorageBufferRange the compiler plans bindings for: a larger tensor
  // is split into several ranges (compiler-bridge/onnx-emit/lower_big.c).
  uint64_t max_storage_buffer_range;
} kiln_target_arch_info_t;

// NULL when the arch is not in the table.
const kiln_target_arch_info_t* kiln_target_arch_lookup(const char* arch);
size_t kiln_target_arch_count(void);
const kiln_target_arch_info_t* kiln_target_arch_at(size_t index);

// What a device says about itself, in plain numbers (VkDriverId values).
typedef struct kiln_target_device_facts_t {
  uint32_t vendor_id;
  uint32_t device_id;
  const char* device_name;
  uint32_t driver_id;
  const char* os;  // an OS token such as "linux"; NULL = this build's OS
} kiln_target_device_facts_t;

// Derives the triple and writes a one-line reason ("vendor 0x10de (nvidia),
// name 'NVIDIA H100' matches h100 -> hopper"). Never fails: what cannot be
// recognised is "unknown".
void kiln_target_triple_derive(const kiln_target_device_facts_t* facts,
                               kiln_target_triple_t* out_triple,
                               char* reason, size_t reason_size);

// The OS token of the running build ("linux", "android30", ...).
const char* kiln_target_host_os(void);

// A variant as the selector sees it.
typedef struct kiln_target_variant_desc_t {
  const char* selector;  // a full or partial triple
  kiln_target_features_t required_features;
  kiln_target_limits_t min_limits;
} kiln_target_variant_desc_t;

// What the selector knows of the device.
typedef struct kiln_target_device_caps_t {
  kiln_target_triple_t triple;
  kiln_target_features_t features;
  kiln_target_limits_t limits;
  uint32_t min_subgroup_size;  // range a required subgroup size may take
  uint32_t max_subgroup_size;
} kiln_target_device_caps_t;

// Match ranks, best first: same arch and product, same arch, same vendor
// family, portable fallback.
typedef enum kiln_target_match_e {
  KILN_TARGET_MATCH_NONE = 0,
  KILN_TARGET_MATCH_PORTABLE = 1,
  KILN_TARGET_MATCH_VENDOR = 2,
  KILN_TARGET_MATCH_ARCH = 3,
  KILN_TARGET_MATCH_EXACT = 4,
} kiln_target_match_t;

const char* kiln_target_match_name(kiln_target_match_t match);

// Ranks one variant; on NONE writes why it was refused into `reason`.
kiln_target_match_t kiln_target_variant_rank(
    const kiln_target_variant_desc_t* variant,
    const kiln_target_device_caps_t* device, char* reason, size_t reason_size);

// Picks the best variant (first one among equals). When none fits:
// NOT_FOUND whose message lists every variant and why it was refused.
kiln_status_t kiln_target_variant_select(
    const kiln_target_variant_desc_t* variants, size_t variant_count,
    const kiln_target_device_caps_t* device, size_t* out_index,
    kiln_target_match_t* out_match);

#ifdef __cplusplus
}
#endif

#endif  // KILN_HAL_TARGET_TRIPLE_H_
