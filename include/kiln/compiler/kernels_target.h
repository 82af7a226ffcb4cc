// Per-target kernel configurations: from a small record of what an arch can
// do, pick each kernel's variant, workgroup size and tile sizes (as
// specialization constants), and compute dispatch grids. The record is
// deliberately plain: the HAL's target-triple table fills it.
#ifndef KILN_COMPILER_KERNELS_TARGET_H_
#define KILN_COMPILER_KERNELS_TARGET_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/base/status.h"
#include "kiln/compiler/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_kernel_arch_caps_t {
  uint32_t subgroup_size;
  uint32_t max_workgroup_invocations;
  uint32_t max_shared_memory_bytes;
  bool fp16_storage;        // 16-bit storage buffer access
  bool fp16_arithmetic;     // shaderFloat16 (gemm_coopmat)
  bool subgroup_arithmetic; // subgroup add/min/max in compute
  bool cooperative_matrix;  // VK_NV_cooperative_matrix 16x16x16 f16 (gemm_coopmat)
  // Largest storage-buffer binding in bytes (0: Vulkan's 128 MiB minimum).
  uint64_t max_storage_buffer_range;
  // The arch's name in the target table (keys gemm_tuning.c), or NULL for
  // caps read off a device: tilings then follow the caps rule. Last, so
  // positional initializers of the fields above stay valid.
  const char* arch;
} kiln_kernel_arch_caps_t;

// The capabilities of a named arch, read from the HAL's target table
// (kiln_target_arch_lookup; hal/target/arch_table.c). NOT_FOUND lists the
// known arches.
kiln_status_t kiln_kernel_arch_caps_for_arch(const char* arch,
                                             kiln_kernel_arch_caps_t* out_caps);
// One table row as the kernels see it (16-bit storage, fp16, subgroup ops,
// cooperative matrix feature bits become the booleans).
struct kiln_target_arch_info_t;
kiln_kernel_arch_caps_t kiln_kernel_arch_caps_from_info(
    const struct kiln_target_arch_info_t* info);

typedef enum kiln_kernel_storage_e {
  KILN_KERNEL_STORAGE_FP32 = 0,
  KILN_KERNEL_STORAGE_FP16 = 1,  // the caller stores this tensor in fp16
} kiln_kernel_storage_t;

#define KILN_KERNEL_MAX_SPEC_VALUES 16

typedef struct kiln_kernel_spec_value_t {
  uint32_t id;     // constant_id (kernels_codes.h KILN_SPEC_*)
  uint32_t value;  // raw 32 bits (bools are 0/1)
} kiln_kernel_spec_value_t;

typedef struct kiln_kernel_config_t {
  kiln_kernel_id_t kernel;
  kiln_kernel_variant_t variant;
  uint32_t required_features;  // of the variant (KILN_FORMAT_FEATURE_*)
  uint32_t workgroup_size[3];
  uint32_t shared_memory_bytes;  // the kernel's shared use at this config
  size_t spec_count;             // sorted by id
  kiln_kernel_spec_value_t spec[KILN_KERNEL_MAX_SPEC_VALUES];
} kiln_kernel_config_t;

// Picks the variant and tiling of `kernel` for `caps`. fp16 storage needs a
// kernel with an fp16 variant (UNIMPLEMENTED otherwise) and caps that allow
// it (FAILED_PRECONDITION otherwise). The subgroup variant is chosen when
// the caps have subgroup arithmetic. The config holds the tiling spec
// constants; the caller adds op constants with kiln_kernel_config_set_spec.
kiln_status_t kiln_kernel_config_select(kiln_kernel_id_t kernel,
                                        const kiln_kernel_arch_caps_t* caps,
                                        kiln_kernel_storage_t storage,
                                        kiln_kernel_config_t* out_config);

// Adds or replaces one spec constant (keeps the list sorted).
kiln_status_t kiln_kernel_config_set_spec(kiln_kernel_config_t* config,
                                          uint32_t id, uint32_t value);
// The SPIR-V that runs `config`: kiln_kernel_get_spirv's, except for
// kernels built once per tiling (gemm_coopmat), where the config's tiling
// names the build; NOT_FOUND when that tiling has none.
kiln_status_t kiln_kernel_get_config_spirv(const kiln_kernel_config_t* config,
                                           kiln_kernel_spirv_t* out_spirv);
// The value of spec constant `id`, or `fallback` when the config lacks it.
uint32_t kiln_kernel_config_spec(const kiln_kernel_config_t* config,
                                 uint32_t id, uint32_t fallback);

// gemm_cpu (the cpu variant of gemm, gemm_small and gemv): builds in only
// the code paths (KILN_SPEC_GEMM_CPU_PATHS) that `params`' layout takes;
// other kernels and variants are left as they are.
// The k range [0, end) gemm_cpu.comp runs in its vec4 loops for `p` (a
// multiple of 4; the scalar loop takes the rest): the kernel's own rule,
// shared by its path bits and the loop model.
uint32_t kiln_kernel_gemm_cpu_k4_end(const kiln_kernel_gemm_params_t* p);

kiln_status_t kiln_kernel_config_gemm_cpu_paths(kiln_kernel_config_t* config,
                                                const kiln_kernel_gemm_params_t* params);

// conv2d_cpu (the cpu variant of conv2d and conv2d_gemm) and
// depthwise_conv2d_cpu: the same for KILN_SPEC_CONV_CPU_PATHS.
kiln_status_t kiln_kernel_config_conv_cpu_paths(kiln_kernel_config_t* config,
                                                const kiln_kernel_conv2d_params_t* params);

// Dispatch grids (workgroup counts). OUT_OF_RANGE when a count exceeds the
// 65535 every Vulkan device allows.
kiln_status_t kiln_kernel_grid_gemm(const kiln_kernel_config_t* config,
                                    const kiln_kernel_gemm_params_t* params,
                                    uint32_t out_grid[3]);
kiln_status_t kiln_kernel_grid_conv2d(const kiln_kernel_config_t* config,
                                      const kiln_kernel_conv2d_params_t* params,
                                      uint32_t out_grid[3]);
// conv2d_gemm: (ceil(OH*OW / TILE_N), ceil((C_out/groups) / TILE_M), N*groups).
kiln_status_t kiln_kernel_grid_conv2d_gemm(const kiln_kernel_config_t* config,
                                           const kiln_kernel_conv2d_params_t* params,
                                           uint32_t out_grid[3]);
// Grid-stride kernels over `count` values (binary, unary, copy, ...).
kiln_status_t kiln_kernel_grid_linear(const kiln_kernel_config_t* config,
                                      uint64_t count, uint32_t out_grid[3]);
// One workgroup per row (reduce, softmax, norm), workgroup-stride.
// attention: (ceil(sq / WG_X), heads, batch * chunks); `merge`: chunks 1.
kiln_status_t kiln_kernel_grid_attention(const kiln_kernel_config_t* config,
                                         const kiln_kernel_attention_params_t* params,
                                         bool merge, uint32_t out_grid[3]);
// The largest head dim (q/k and v rows) the attention kernel takes.
#define KILN_ATTN_MAX_DIM 256u
kiln_status_t kiln_kernel_grid_rows(const kiln_kernel_config_t* config,
                                    uint64_t rows, uint32_t out_grid[3]);

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_KERNELS_TARGET_H_
