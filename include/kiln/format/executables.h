// The executables section on its own: GPU kernels in several variants. This
// reader depends only on base/, so modules/hal can turn the parsed tables
// into HAL executables without linking the interpreter.
//
// Strings and SPIR-V point into the section bytes, which must outlive the
// parsed tables. SPIR-V words are little-endian and may be unaligned in
// memory: copy them out (memcpy) before handing them to a driver.
#ifndef KILN_FORMAT_EXECUTABLES_H_
#define KILN_FORMAT_EXECUTABLES_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/base/allocator.h"
#include "kiln/base/status.h"
#include "kiln/base/views.h"
#include "kiln/format/module_format.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_format_binding_t {
  uint32_t set;
  uint32_t binding;
  uint32_t flags;  // KILN_FORMAT_BINDING_*
} kiln_format_binding_t;

typedef struct kiln_format_specialization_t {
  uint32_t id;
  uint32_t value;
} kiln_format_specialization_t;

typedef struct kiln_format_entry_point_t {
  kiln_string_view_t name;
  uint32_t workgroup_size[3];
  uint32_t push_constant_bytes;
  const kiln_format_binding_t* bindings;
  uint32_t binding_count;
  const kiln_format_specialization_t* specializations;
  uint32_t specialization_count;
} kiln_format_entry_point_t;

typedef struct kiln_format_variant_t {
  // Full or partial target triple ("ampere-rtx3080-windows", "valhall").
  kiln_string_view_t target;
  uint32_t required_features;  // KILN_FORMAT_FEATURE_*
  uint32_t min_subgroup_size;
  uint32_t min_shared_memory_bytes;
  uint32_t min_workgroup_invocations;
  const uint8_t* spirv;  // spirv_word_count little-endian words
  uint32_t spirv_word_count;
  const kiln_format_entry_point_t* entry_points;
  uint32_t entry_point_count;
} kiln_format_variant_t;

typedef struct kiln_format_executable_t {
  kiln_string_view_t name;
  const kiln_format_variant_t* variants;
  uint32_t variant_count;
} kiln_format_executable_t;

typedef struct kiln_format_executables_t {
  kiln_allocator_t allocator;
  void* storage;  // one block holding every table below
  const kiln_format_executable_t* executables;
  uint32_t executable_count;
} kiln_format_executables_t;

// Parses the section payload. `base_offset` is the section's file offset,
// used only in error messages. Every count and length is checked against the
// bytes that remain; on error *out is empty.
kiln_status_t kiln_format_executables_parse(kiln_const_byte_span_t section,
                                            size_t base_offset,
                                            kiln_allocator_t allocator,
                                            kiln_format_executables_t* out);
void kiln_format_executables_deinit(kiln_format_executables_t* executables);

// Reads SPIR-V word `index` of a variant (index < spirv_word_count).
static inline uint32_t kiln_format_variant_spirv_word(
    const kiln_format_variant_t* variant, uint32_t index) {
  const uint8_t* p = variant->spirv + 4u * (size_t)index;
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
         ((uint32_t)p[3] << 24);
}

#ifdef __cplusplus
}
#endif

#endif  // KILN_FORMAT_EXECUTABLES_H_
