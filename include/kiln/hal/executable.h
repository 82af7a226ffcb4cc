// Executables: a plain C description (filled from a module's executables
// section, or by hand in tests) of variants per target, each with SPIR-V and
// its entry points. The device picks the variant by target triple, features
// and limits, and builds one pipeline per entry point.
#ifndef KILN_HAL_EXECUTABLE_H_
#define KILN_HAL_EXECUTABLE_H_

#include "kiln/hal/target_triple.h"
#include "kiln/hal/types.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
  KILN_HAL_MAX_DESCRIPTOR_SETS = 4,
  KILN_HAL_MAX_BINDINGS_PER_DISPATCH = 32,
  KILN_HAL_MAX_PUSH_CONSTANT_BYTES = 256,
};

// How a binding reaches the shader. Either way the dispatch binds a buffer
// range; a texel binding is viewed as vec4 f32 texels (offset a multiple of
// the device's texel offset alignment, length rounded up to 16 bytes within
// the buffer), which CPU devices load far faster than storage buffers.
typedef enum kiln_hal_binding_type_e {
  KILN_HAL_BINDING_STORAGE_BUFFER = 0,
  KILN_HAL_BINDING_UNIFORM_TEXEL_BUFFER_VEC4F32 = 1,  // read-only
} kiln_hal_binding_type_t;

typedef struct kiln_hal_binding_layout_t {
  uint32_t set;
  uint32_t binding;
  bool read_only;
  kiln_hal_binding_type_t type;
} kiln_hal_binding_layout_t;

// A 32-bit specialization constant (int, uint, float bits or bool 0/1).
typedef struct kiln_hal_specialization_constant_t {
  uint32_t id;
  uint32_t value;
} kiln_hal_specialization_constant_t;

typedef struct kiln_hal_entry_point_spec_t {
  const char* name;
  uint32_t workgroup_size[3];    // as in the SPIR-V (checked vs the device)
  uint32_t push_constant_bytes;  // multiple of 4, <= the device's limit
  const kiln_hal_binding_layout_t* bindings;
  uint32_t binding_count;
  uint32_t required_subgroup_size;  // 0 = whatever the device picks
} kiln_hal_entry_point_spec_t;

typedef struct kiln_hal_executable_variant_spec_t {
  const char* selector;  // full or partial triple; "unknown" = portable
  kiln_target_features_t required_features;
  kiln_target_limits_t min_limits;
  const uint32_t* spirv_words;
  size_t spirv_word_count;
  const kiln_hal_entry_point_spec_t* entry_points;
  uint32_t entry_point_count;
  const kiln_hal_specialization_constant_t* specialization_constants;
  uint32_t specialization_constant_count;
} kiln_hal_executable_variant_spec_t;

typedef struct kiln_hal_executable_spec_t {
  const char* name;  // for error messages
  const kiln_hal_executable_variant_spec_t* variants;
  uint32_t variant_count;
} kiln_hal_executable_spec_t;

// Checks the description (names, counts, duplicate bindings, SPIR-V magic)
// without a device. Errors name the variant and entry point at fault.
kiln_status_t kiln_hal_executable_spec_verify(
    const kiln_hal_executable_spec_t* spec);

// Chooses the variant for `device`; NOT_FOUND lists every variant and why it
// was refused.
kiln_status_t kiln_hal_executable_select_variant(
    const kiln_hal_device_t* device, const kiln_hal_executable_spec_t* spec,
    uint32_t* out_variant_index, kiln_target_match_t* out_match);

// Selects a variant and builds its pipelines. The spec is copied; the
// caller's memory may go away afterwards.
kiln_status_t kiln_hal_executable_create(kiln_hal_device_t* device,
                                         const kiln_hal_executable_spec_t* spec,
                                         kiln_hal_executable_t** out_executable);
void kiln_hal_executable_retain(kiln_hal_executable_t* executable);
void kiln_hal_executable_release(kiln_hal_executable_t* executable);

uint32_t kiln_hal_executable_variant_index(
    const kiln_hal_executable_t* executable);
kiln_target_match_t kiln_hal_executable_match(
    const kiln_hal_executable_t* executable);
uint32_t kiln_hal_executable_entry_point_count(
    const kiln_hal_executable_t* executable);
const kiln_hal_entry_point_spec_t* kiln_hal_executable_entry_point(
    const kiln_hal_executable_t* executable, uint32_t ordinal);
kiln_status_t kiln_hal_executable_lookup_entry_point(
    const kiln_hal_executable_t* executable, const char* name,
    uint32_t* out_ordinal);

#ifdef __cplusplus
}
#endif

#endif  // KILN_HAL_EXECUTABLE_H_
