// SPIR-V tooling for the compiler bridge: validation (SPIRV-Tools) and
// reflection (SPIRV-Cross) of compute kernels. The reflected facts are what
// the module writer records per executable variant, so the runtime never has
// to parse SPIR-V itself.
#ifndef KILN_COMPILER_SPIRV_H_
#define KILN_COMPILER_SPIRV_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/base/allocator.h"
#include "kiln/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_spirv_target_env_e {
  KILN_SPIRV_TARGET_VULKAN_1_1 = 0,  // SPIR-V 1.3 (Android baseline)
  KILN_SPIRV_TARGET_VULKAN_1_3 = 1,  // SPIR-V 1.6 (desktop)
} kiln_spirv_target_env_t;

// Validates `word_count` words of SPIR-V for `env`. On failure the status is
// INVALID_ARGUMENT and names `kernel_name` plus the validator's message (with
// its word index when the validator reports one).
kiln_status_t kiln_spirv_validate(const char* kernel_name,
                                  const uint32_t* words, size_t word_count,
                                  kiln_spirv_target_env_t env);

// Limits that keep reflection records fixed-size; kernels beyond them are
// rejected (RESOURCE_EXHAUSTED) rather than truncated.
#define KILN_SPIRV_MAX_ENTRY_POINTS 4
#define KILN_SPIRV_MAX_BINDINGS 16
#define KILN_SPIRV_MAX_SPEC_CONSTANTS 32
#define KILN_SPIRV_MAX_NAME_LENGTH 63

// A workgroup dimension is either a literal or a specialization constant
// (local_size_x_id): then `spec_id` names it and `size` holds its default.
typedef struct kiln_spirv_workgroup_dim_t {
  uint32_t size;
  bool is_spec_constant;
  uint32_t spec_id;
} kiln_spirv_workgroup_dim_t;

typedef struct kiln_spirv_binding_t {
  uint32_t set;
  uint32_t binding;
  bool read_only;  // NonWritable on the variable or on every block member
  bool texel;      // a uniform texel buffer (samplerBuffer); read-only
  // Variable or block name; empty when the SPIR-V was stripped (glslc -O).
  char name[KILN_SPIRV_MAX_NAME_LENGTH + 1];
} kiln_spirv_binding_t;

typedef enum kiln_spirv_scalar_type_e {
  KILN_SPIRV_SCALAR_BOOL = 0,
  KILN_SPIRV_SCALAR_INT32,
  KILN_SPIRV_SCALAR_UINT32,
  KILN_SPIRV_SCALAR_FLOAT32,
} kiln_spirv_scalar_type_t;

typedef struct kiln_spirv_spec_constant_t {
  uint32_t id;             // the constant_id the pipeline specializes
  kiln_spirv_scalar_type_t type;
  uint32_t default_bits;   // default value as 32 raw bits (bool: 0/1)
  char name[KILN_SPIRV_MAX_NAME_LENGTH + 1];
} kiln_spirv_spec_constant_t;

typedef struct kiln_spirv_reflection_t {
  size_t entry_point_count;  // compute entry points only
  char entry_points[KILN_SPIRV_MAX_ENTRY_POINTS][KILN_SPIRV_MAX_NAME_LENGTH + 1];
  kiln_spirv_workgroup_dim_t workgroup_size[3];
  size_t binding_count;  // storage and texel buffers, sorted by (set, binding)
  kiln_spirv_binding_t bindings[KILN_SPIRV_MAX_BINDINGS];
  uint32_t push_constant_size;  // declared size of the block; 0 if none
  size_t spec_constant_count;   // sorted by id; includes workgroup ones
  kiln_spirv_spec_constant_t spec_constants[KILN_SPIRV_MAX_SPEC_CONSTANTS];
} kiln_spirv_reflection_t;

// Reflects a compute kernel. Only storage buffers, uniform texel buffers
// (samplerBuffer) and push constants are accepted as resources: a kernel
// with uniform buffers, images or samplers does not fit the HAL's binding
// model and is rejected (UNIMPLEMENTED).
// Errors name `kernel_name`. `out_reflection` is cleared on entry.
kiln_status_t kiln_spirv_reflect(const char* kernel_name,
                                 const uint32_t* words, size_t word_count,
                                 kiln_spirv_reflection_t* out_reflection);

// The reflected default of spec constant `id`, or NOT_FOUND.
kiln_status_t kiln_spirv_reflection_find_spec_constant(
    const kiln_spirv_reflection_t* reflection, uint32_t id,
    const kiln_spirv_spec_constant_t** out_constant);

// Checks specialization values against the module (every id declared,
// bools 0 or 1) and returns the workgroup size they produce, as a pipeline
// built with them would run: what an executable variant records. Errors
// name the id at fault.
kiln_status_t kiln_spirv_reflection_specialize(
    const kiln_spirv_reflection_t* reflection, const uint32_t* spec_ids,
    const uint32_t* spec_values, size_t spec_count, uint32_t out_workgroup_size[3]);

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_SPIRV_H_
