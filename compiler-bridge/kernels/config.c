// Per-target kernel configurations: variant choice and tilings.
//
// Rules of thumb behind the numbers: workgroups are whole subgroups; CPU
// devices (subgroup <= 8, e.g. llvmpipe) get few invocations with big
// per-invocation tiles since each workgroup runs on one core; GPUs get 256
// invocations (occupancy); GEMM tilings come from the tuning table
// (gemm_tuning.c).
#include <string.h>

#include "kiln/compiler/kernels_gemm_tuning.h"
#include "kiln/compiler/kernels_qgemv_tuning.h"
#include "kiln/compiler/kernels_target.h"

static uint32_t kiln_round_down_pow2(uint32_t value) {
  uint32_t p = 1;
  while (p * 2 <= value) p *= 2;
  return p;
}

static bool kiln_caps_is_cpu_like(const kiln_kernel_arch_caps_t* caps) {
  return caps->subgroup_size <= 8;
}

// Invocations of 1-D kernels: a power of two, within the device limit and
// (for row kernels) the shared scratch of one float per invocation.
static uint32_t kiln_linear_workgroup(const kiln_kernel_arch_caps_t* caps,
                                      bool uses_scratch) {
  uint32_t want = kiln_caps_is_cpu_like(caps) ? 128 : 256;
  if (want > caps->max_workgroup_invocations) want = caps->max_workgroup_invocations;
  if (uses_scratch && want * 4 > caps->max_shared_memory_bytes) {
    want = caps->max_shared_memory_bytes / 4;
  }
  return kiln_round_down_pow2(want);
}

static kiln_status_t kiln_config_set_raw(kiln_kernel_config_t* config, uint32_t id,
                                         uint32_t value);

static void kiln_config_add(kiln_kernel_config_t* config, uint32_t id,
                            uint32_t value) {
  kiln_status_ignore(kiln_config_set_raw(config, id, value));
}

// conv2d_cpu: 8 lanes, each 8 pixels x 8 channels (hard-coded); the cpu
// variant of conv2d and of conv2d_gemm.
static void kiln_config_conv2d_cpu(kiln_kernel_config_t* config) {
  config->variant = KILN_KERNEL_VARIANT_CPU;
  config->workgroup_size[0] = 8;
  config->workgroup_size[1] = 1;
  kiln_config_add(config, KILN_SPEC_CONV_CO_BLOCK, 8);
  kiln_config_add(config, KILN_SPEC_CONV_TILE_W, 8);
}

// gemm and conv2d_gemm: the tuning table's tiling (gemm_tuning.c).
static kiln_status_t kiln_config_gemm(const kiln_kernel_arch_caps_t* caps, bool small,
                                      kiln_kernel_config_t* config) {
  kiln_kernel_gemm_tiling_t tiling;
  KILN_RETURN_IF_ERROR(small ? kiln_kernel_gemm_tiling_select_small(caps, &tiling)
                             : kiln_kernel_gemm_tiling_select(caps, &tiling));
  return kiln_kernel_gemm_tiling_apply(&tiling, caps, config);
}

// The gemm_cpu variant: one 8-lane subgroup per workgroup (llvmpipe loops
// over subgroups of a bigger workgroup on one thread anyway), each lane a
// 8x8 register tile, which gemm_cpu.comp hard-codes; no shared memory.
static void kiln_config_gemm_cpu(kiln_kernel_config_t* config) {
  config->variant = KILN_KERNEL_VARIANT_CPU;
  config->workgroup_size[0] = 8;
  config->workgroup_size[1] = 1;
  config->shared_memory_bytes = 0;
  kiln_config_add(config, KILN_SPEC_GEMM_TM, 8);
  kiln_config_add(config, KILN_SPEC_GEMM_TN, 8);
}

// gemv: 8 column quads (32 columns) per workgroup and as many k slices as
// the invocation limit allows up to 32 (256 invocations; 8 on CPU-like
// devices, whose workgroups run on one core); one vec4 of shared memory
// per invocation for the slice sums.
static void kiln_config_gemv(const kiln_kernel_arch_caps_t* caps, kiln_kernel_config_t* config) {
  uint32_t threads = kiln_caps_is_cpu_like(caps) ? 64 : 256;
  if (threads > caps->max_workgroup_invocations) {
    threads = kiln_round_down_pow2(caps->max_workgroup_invocations);
  }
  while (threads > 8 && threads * 16 > caps->max_shared_memory_bytes) threads /= 2;
  config->workgroup_size[0] = threads >= 8 ? 8 : threads;
  config->workgroup_size[1] = threads / config->workgroup_size[0];
  config->shared_memory_bytes = threads * 16;
}

// qgemv_cpu (qgemm's and qgemv's cpu variant): 8 lanes along x
// (llvmpipe runs x as its SIMD lanes; qgemm's 1 x 8 lanes along y filled
// one lane of 8), each walking all of k for the tuning table's cpu rows
// (A's group loaded once for them); no shared memory, no barrier.
static void kiln_config_qgemv_cpu(kiln_kernel_config_t* config) {
  const kiln_kernel_qgemv_tiling_t* cpu = kiln_kernel_qgemv_tuning("cpu");
  config->variant = KILN_KERNEL_VARIANT_CPU;
  config->workgroup_size[0] = cpu ? cpu->wg : 8;
  config->workgroup_size[1] = 1;
  config->shared_memory_bytes = 0;
  kiln_config_add(config, KILN_SPEC_GEMM_TM, 4);
  kiln_config_add(config, KILN_SPEC_GEMM_TN, cpu ? cpu->rows : 1);
}

// qgemm: lanes along k (32 slices: a warp reads consecutive blocks of one
// weight row) times columns up to 256 invocations, shared memory for the
// slice sums of up to TM = 8 rows (TN = 1 column each); CPU-like devices:
// qgemv_cpu, or at fp16 storage (qgemv_cpu reads fp32 texels) qgemm_f16
// with 8 k slices (llvmpipe's SIMD lanes along x, a 3-step tree) x 32
// columns: a q4_0 transformer encoder layer at f16 on lavapipe took 10-12
// ms a call against 12 at 1 x 32, 15 at 1 x 8, 24 at 8 x 8, 30 at 8 x 1, 72
// at the GPUs' 32 x 8 (noisy shared 2-core machine).
static void kiln_config_qgemm(const kiln_kernel_arch_caps_t* caps, kiln_kernel_config_t* config) {
  if (kiln_caps_is_cpu_like(caps) && config->variant == KILN_KERNEL_VARIANT_FP32) {
    kiln_config_qgemv_cpu(config);
    return;
  }
  if (kiln_caps_is_cpu_like(caps)) {
    config->workgroup_size[0] = 8;
    config->workgroup_size[1] = 32;
    config->shared_memory_bytes = 256 * 32;
    kiln_config_add(config, KILN_SPEC_GEMM_TM, 1);
    kiln_config_add(config, KILN_SPEC_GEMM_TN, 1);
    return;
  }
  uint32_t threads = kiln_round_down_pow2(caps->max_workgroup_invocations < 256
                                              ? caps->max_workgroup_invocations
                                              : 256);
  while (threads > 32 && threads * 32 > caps->max_shared_memory_bytes) threads /= 2;
  config->workgroup_size[0] = threads >= 32 ? 32 : threads;
  config->workgroup_size[1] = threads / config->workgroup_size[0];
  config->shared_memory_bytes = threads * 32;
  kiln_config_add(config, KILN_SPEC_GEMM_TM, 1);
  kiln_config_add(config, KILN_SPEC_GEMM_TN, 1);
}

kiln_status_t kiln_kernel_config_select(kiln_kernel_id_t kernel,
                                        const kiln_kernel_arch_caps_t* caps,
                                        kiln_kernel_storage_t storage,
                                        kiln_kernel_config_t* out_config) {
  if (out_config) memset(out_config, 0, sizeof(*out_config));
  const kiln_kernel_desc_t* desc = kiln_kernel_desc(kernel);
  if (!desc || !caps || !out_config) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_kernel_config_select: bad kernel id %d or "
                            "NULL argument",
                            (int)kernel);
  }
  if (caps->subgroup_size == 0 || caps->max_workgroup_invocations == 0 ||
      caps->max_shared_memory_bytes < 1024) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kernel '%s': arch caps need a subgroup size, "
                            "invocation limit and >= 1 KiB shared memory "
                            "(got %u, %u, %u)",
                            desc->name, caps->subgroup_size,
                            caps->max_workgroup_invocations,
                            caps->max_shared_memory_bytes);
  }
  kiln_kernel_config_t config;
  memset(&config, 0, sizeof(config));
  config.kernel = kernel;
  config.variant = KILN_KERNEL_VARIANT_FP32;
  if (storage == KILN_KERNEL_STORAGE_FP16) {
    if (!(desc->variant_mask & (1u << KILN_KERNEL_VARIANT_FP16_STORAGE))) {
      return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                              "kernel '%s' has no fp16-storage variant",
                              desc->name);
    }
    if (!caps->fp16_storage) {
      return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                              "kernel '%s': fp16 storage requested but the "
                              "arch lacks 16-bit storage",
                              desc->name);
    }
    config.variant = KILN_KERNEL_VARIANT_FP16_STORAGE;
    if (caps->subgroup_arithmetic &&
        (desc->variant_mask & (1u << KILN_KERNEL_VARIANT_FP16_SUBGROUP))) {
      config.variant = KILN_KERNEL_VARIANT_FP16_SUBGROUP;
    }
  } else if (storage != KILN_KERNEL_STORAGE_FP32) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kernel '%s': unknown storage %d", desc->name,
                            (int)storage);
  } else if (caps->subgroup_arithmetic &&
             (desc->variant_mask & (1u << KILN_KERNEL_VARIANT_SUBGROUP))) {
    config.variant = KILN_KERNEL_VARIANT_SUBGROUP;
  }
  if (!(desc->variant_mask & (1u << config.variant))) {
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED, "kernel '%s' has no %s variant",
                            desc->name, kiln_kernel_variant_name(config.variant));
  }
  config.required_features =
      desc->base_features | kiln_kernel_variant_features(config.variant);
  if ((desc->base_features & KILN_FORMAT_FEATURE_STORAGE_16BIT) && !caps->fp16_storage) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                            "kernel '%s' needs 16-bit storage, which the arch lacks",
                            desc->name);
  }
  config.workgroup_size[0] = config.workgroup_size[1] =
      config.workgroup_size[2] = 1;

  switch (kernel) {
    case KILN_KERNEL_GEMM:
    case KILN_KERNEL_GEMM_SMALL:
      if (kiln_caps_is_cpu_like(caps) && config.variant == KILN_KERNEL_VARIANT_FP32) {
        kiln_config_gemm_cpu(&config);
        break;
      }
      KILN_RETURN_IF_ERROR_ANNOTATE(
          kiln_config_gemm(caps, kernel == KILN_KERNEL_GEMM_SMALL, &config),
          "selecting a %s tiling", desc->name);
      break;
    case KILN_KERNEL_GEMV:
      if (kiln_caps_is_cpu_like(caps) && config.variant == KILN_KERNEL_VARIANT_FP32) {
        kiln_config_gemm_cpu(&config);
        break;
      }
      kiln_config_gemv(caps, &config);
      break;
    case KILN_KERNEL_GEMM_COOPMAT:
    case KILN_KERNEL_GEMM_COOPMAT_SPLIT: {
      // Never on devices without cooperative matrix (lavapipe): refused
      // with the missing feature named; callers fall back to gemm.
      kiln_kernel_coopmat_tiling_t tiling;
      KILN_RETURN_IF_ERROR(kiln_kernel_coopmat_tiling_select(caps, false, &tiling));
      KILN_RETURN_IF_ERROR(kiln_kernel_coopmat_tiling_apply(&tiling, caps, &config));
      break;
    }
    case KILN_KERNEL_QGEMM:
      kiln_config_qgemm(caps, &config);
      break;
    case KILN_KERNEL_QGEMV: {
      // CPU devices: qgemv_cpu, also where the device has subgroup
      // arithmetic (lavapipe: the subgroup build is the GPU kernel, and
      // at 8 rows of A it ran 1.6x slower than the fp32 gemm_cpu); at
      // fp16 storage (qgemv_cpu reads fp32 texels) qgemv_f16 under the
      // table's cpu tiling (8 lanes, a group each).
      if (kiln_caps_is_cpu_like(caps) && config.variant != KILN_KERNEL_VARIANT_FP16_STORAGE) {
        kiln_config_qgemv_cpu(&config);
        config.required_features =
            desc->base_features | kiln_kernel_variant_features(config.variant);
        kiln_config_add(&config, KILN_SPEC_GEMM_TM, 1);
        break;
      }
      kiln_kernel_qgemv_tiling_t tiling;
      KILN_RETURN_IF_ERROR(kiln_kernel_qgemv_tiling_select(caps, &tiling));
      KILN_RETURN_IF_ERROR(kiln_kernel_qgemv_tiling_apply(&tiling, caps, &config));
      break;
    }
    case KILN_KERNEL_CONV2D_GEMM:
      // CPU devices: conv2d_cpu (several times faster there than the tiled
      // core, which leans on shared memory and barriers); see
      // kiln_kernel_config_set_spec for its epilogue ids.
      if (kiln_caps_is_cpu_like(caps) && config.variant == KILN_KERNEL_VARIANT_FP32) {
        kiln_config_conv2d_cpu(&config);
        break;
      }
      KILN_RETURN_IF_ERROR_ANNOTATE(kiln_config_gemm(caps, true, &config),
                                    "selecting a %s tiling", desc->name);
      break;
    case KILN_KERNEL_QCONV2D_GEMM:
      // The tiled core on CPU devices too (a quantized conv2d_cpu is not
      // written; the tiled core is slower there but correct).
      KILN_RETURN_IF_ERROR_ANNOTATE(kiln_config_gemm(caps, true, &config),
                                    "selecting a %s tiling", desc->name);
      break;
    case KILN_KERNEL_CONV2D: {
      // Desktop GPUs have the registers for 8 accumulators per invocation.
      bool big = caps->subgroup_size >= 32 && caps->max_workgroup_invocations >= 1024;
      config.workgroup_size[0] = kiln_linear_workgroup(caps, false);
      kiln_config_add(&config, KILN_SPEC_CONV_CO_BLOCK, big ? 8 : 4);
      if (kiln_caps_is_cpu_like(caps) && config.variant == KILN_KERNEL_VARIANT_FP32) {
        kiln_config_conv2d_cpu(&config);
      }
      break;
    }
    case KILN_KERNEL_DEPTHWISE_CONV2D:
      config.workgroup_size[0] = kiln_linear_workgroup(caps, false);
      if (kiln_caps_is_cpu_like(caps) && config.variant == KILN_KERNEL_VARIANT_FP32) {
        // One invocation per 8 outputs of a row; 32 lanes (4 subgroups).
        config.variant = KILN_KERNEL_VARIANT_CPU;
        config.workgroup_size[0] = 32;
        kiln_config_add(&config, KILN_SPEC_CONV_TILE_W, 8);
      }
      break;
    case KILN_KERNEL_REDUCE:
    case KILN_KERNEL_SOFTMAX:
    case KILN_KERNEL_NORM:
    case KILN_KERNEL_NORM_RESIDUAL:
    case KILN_KERNEL_ROWS_SPLIT:
      config.workgroup_size[0] = kiln_linear_workgroup(caps, true);
      // CPU devices: one subgroup per row; llvmpipe splits bigger
      // workgroups at every barrier of the reduction.
      if (kiln_caps_is_cpu_like(caps) && caps->subgroup_size <= config.workgroup_size[0]) {
        config.workgroup_size[0] = caps->subgroup_size;
      }
      config.shared_memory_bytes = config.workgroup_size[0] * 4;
      break;
    case KILN_KERNEL_SQUEEZE_EXCITE: {
      // A power of two: KILN_SE_GROUP_CHANNELS teams of at least
      // KILN_SE_MIN_TEAM invocations; the channels and hidden units staged
      // beside the teams' sums.
      const uint32_t wg = kiln_linear_workgroup(caps, true);
      config.workgroup_size[0] = wg;
      config.shared_memory_bytes =
          (wg + KILN_SE_MAX_CHANNELS + KILN_SE_MAX_HIDDEN) * 4 + 4;
      if (wg < KILN_SE_GROUP_CHANNELS * KILN_SE_MIN_TEAM ||
          config.shared_memory_bytes > caps->max_shared_memory_bytes) {
        return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                                "squeeze_excite: a workgroup of %u and %u bytes of shared "
                                "memory do not fit the arch (%u bytes)",
                                wg, config.shared_memory_bytes, caps->max_shared_memory_bytes);
      }
      break;
    }
    case KILN_KERNEL_NORM_PARTS: {
      // Up to 1024 invocations a row (one value each at BERT-base's 768),
      // plus the row staged in shared memory: its latency is the chain
      // of each invocation's loads of the parts.
      uint32_t wg = caps->max_workgroup_invocations < 1024 ? caps->max_workgroup_invocations
                                                            : 1024;
      if (kiln_caps_is_cpu_like(caps)) wg = kiln_linear_workgroup(caps, true);
      config.workgroup_size[0] = kiln_round_down_pow2(wg);
      config.shared_memory_bytes = config.workgroup_size[0] * 4 + KILN_NORM_PARTS_ROW_CAP * 4;
      if (config.shared_memory_bytes > caps->max_shared_memory_bytes) {
        return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                                "norm_parts: %u bytes of shared memory, more than the "
                                "arch's %u",
                                config.shared_memory_bytes, caps->max_shared_memory_bytes);
      }
      break;
    }
    case KILN_KERNEL_ATTENTION: {
      // One query row per invocation: a subgroup per workgroup (GPUs: at
      // least 32 rows, so a 128-token sequence still spreads over 4
      // workgroups per head). K and V tiles of TILE rows of up to KILN_ATTN_MAX_DIM floats.
      // At least 8 rows: the K/V tile loads are shared by the workgroup's
      // rows (the portable target's subgroup of 1 would load per row).
      uint32_t floor = kiln_caps_is_cpu_like(caps) ? 8 : 32;
      uint32_t wg = caps->subgroup_size > floor ? caps->subgroup_size : floor;
      if (wg > caps->max_workgroup_invocations) {
        wg = kiln_round_down_pow2(caps->max_workgroup_invocations);
      }
      uint32_t tile = 16;
      while (tile > 1 && 2 * tile * KILN_ATTN_MAX_DIM * 4 > caps->max_shared_memory_bytes) {
        tile /= 2;
      }
      config.workgroup_size[0] = wg ? wg : 1;
      config.shared_memory_bytes = 2 * tile * KILN_ATTN_MAX_DIM * 4;
      kiln_config_add(&config, KILN_SPEC_ATTN_KEY_TILE, tile);
      // Desktop GPUs: 4 invocations per query row (a 128-token head was 4
      // workgroups of 32 rows, 48 for all of BERT's heads on 132 SMs: 60 us
      // per layer on an H100; 8 or 16 lanes: BERT-base fp32 3.44 -> 3.43 /
      // 3.41 ms a call, ViT-B/16 4.71 -> 4.66 / 5.04, within the noise or
      // worse, 2026-11-24). The lanes' states meet in the tile memory,
      // whose 2 * TILE rows hold rows * 3 records.
      const uint32_t lanes = 4;
      if (kiln_kernel_gemm_occupancy_enabled(caps) && config.workgroup_size[0] % lanes == 0 &&
          config.workgroup_size[0] / lanes * (lanes - 1) <= 2 * tile) {
        kiln_config_add(&config, KILN_SPEC_ATTN_KEY_LANES, lanes);
      }
      break;
    }
    case KILN_KERNEL_ATTENTION_TILED:
      if (caps->max_workgroup_invocations < KILN_ATTN_TILED_THREADS ||
          caps->max_shared_memory_bytes < KILN_ATTN_TILED_SHARED_BYTES) {
        return kiln_make_status(
            KILN_STATUS_FAILED_PRECONDITION,
            "kernel '%s' needs %u invocations and %u bytes of shared memory; the %s has %u "
            "and %u",
            desc->name, KILN_ATTN_TILED_THREADS, KILN_ATTN_TILED_SHARED_BYTES,
            caps->arch ? caps->arch : "device", caps->max_workgroup_invocations,
            caps->max_shared_memory_bytes);
      }
      config.workgroup_size[0] = KILN_ATTN_TILED_THREADS;
      config.shared_memory_bytes = KILN_ATTN_TILED_SHARED_BYTES;
      kiln_config_add(&config, KILN_SPEC_ATTN_DIM4, KILN_ATTN_TILED_DIM / 4);
      break;
    case KILN_KERNEL_ATTENTION_COOPMAT:
      // Never on devices without cooperative matrix (lavapipe): refused with
      // what is missing named; the lowering then keeps attention.
      if (!caps->cooperative_matrix || !caps->fp16_arithmetic || caps->subgroup_size != 32 ||
          caps->max_workgroup_invocations < KILN_ATTN_COOPMAT_THREADS ||
          caps->max_shared_memory_bytes < KILN_ATTN_COOPMAT_SHARED_BYTES) {
        return kiln_make_status(
            KILN_STATUS_FAILED_PRECONDITION,
            "kernel '%s' needs cooperative matrix, fp16 arithmetic, subgroups of 32, %u "
            "invocations and %u bytes of shared memory; the %s has%s%s subgroups of %u, %u "
            "invocations and %u bytes",
            desc->name, KILN_ATTN_COOPMAT_THREADS, KILN_ATTN_COOPMAT_SHARED_BYTES,
            caps->arch ? caps->arch : "device",
            caps->cooperative_matrix ? "" : " no cooperative matrix,",
            caps->fp16_arithmetic ? "" : " no fp16 arithmetic,", caps->subgroup_size,
            caps->max_workgroup_invocations, caps->max_shared_memory_bytes);
      }
      config.workgroup_size[0] = KILN_ATTN_COOPMAT_THREADS;
      config.shared_memory_bytes = KILN_ATTN_COOPMAT_SHARED_BYTES;
      kiln_config_add(&config, KILN_SPEC_ATTN_DIM4, KILN_ATTN_COOPMAT_DIM_SMALL / 4);
      break;
    case KILN_KERNEL_RECURRENT:
      if (caps->max_shared_memory_bytes < 4 * KILN_RNN_MAX_HIDDEN * 4) {
        return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                                "kernel '%s' needs %u bytes of shared memory, the arch has %u",
                                desc->name, 4u * KILN_RNN_MAX_HIDDEN * 4,
                                caps->max_shared_memory_bytes);
      }
      // One workgroup per (direction, batch) row; on CPU devices a few
      // subgroups, since llvmpipe switches between them at every step's
      // barrier.
      config.workgroup_size[0] = kiln_linear_workgroup(caps, false);
      if (kiln_caps_is_cpu_like(caps) && config.workgroup_size[0] > 32) {
        config.workgroup_size[0] = 32;
      }
      config.shared_memory_bytes = 4 * KILN_RNN_MAX_HIDDEN * 4;
      break;
    default:
      config.workgroup_size[0] = kiln_linear_workgroup(caps, false);
      break;
  }
  kiln_config_add(&config, KILN_SPEC_WORKGROUP_X, config.workgroup_size[0]);
  if (desc->workgroup_dims >= 2) {
    kiln_config_add(&config, KILN_SPEC_WORKGROUP_Y, config.workgroup_size[1]);
  }
  *out_config = config;
  return kiln_ok_status();
}

static uint64_t kiln_round_up(uint64_t value, uint64_t step) {
  return step ? (value + step - 1) / step * step : value;
}

// gemm_cpu.comp's operand layouts for `p` (its conditions, in the same
// 32-bit arithmetic): A along k by quads; B along k by quads, along n by
// quads, or along n with rows off 16 bytes but ending on a quad; and the k
// range its vec4 loops take.
typedef struct kiln_gemm_cpu_layout_t {
  bool a_k4, b_k4, b_n4, b_n1;
  uint32_t k4_end;
} kiln_gemm_cpu_layout_t;

static kiln_gemm_cpu_layout_t kiln_gemm_cpu_layout(const kiln_kernel_gemm_params_t* p) {
  kiln_gemm_cpu_layout_t l;
  l.a_k4 = p->a_col_stride == 1 && (p->a_row_stride & 3) == 0 && (p->a_batch_stride & 3) == 0;
  l.b_k4 = p->b_row_stride == 1 && (p->b_col_stride & 3) == 0 && (p->b_batch_stride & 3) == 0;
  l.b_n4 = p->b_col_stride == 1 && (p->b_row_stride & 3) == 0 &&
           (p->b_batch_stride & 3) == 0 && (p->n & 3) == 0;
  const uint32_t b_end = (p->batch - 1) * p->b_batch_stride + (p->k - 1) * p->b_row_stride + p->n;
  l.b_n1 = p->b_col_stride == 1 && !l.b_n4 && !l.b_k4 && (b_end & 3) == 0;
  l.k4_end = (l.a_k4 && (l.b_k4 || l.b_n4 || l.b_n1)) ? (p->k & ~3u) : 0;
  return l;
}

uint32_t kiln_kernel_gemm_cpu_k4_end(const kiln_kernel_gemm_params_t* p) {
  return kiln_gemm_cpu_layout(p).k4_end;
}

// The paths gemm_cpu.comp's main() takes for `p`. The epilogue bits do not
// know the op spec constants, so they assume a residual and a bias may be
// read (a superset is safe; a missing path makes the kernel write NaN).
static uint32_t kiln_gemm_cpu_paths(const kiln_kernel_gemm_params_t* p) {
  const kiln_gemm_cpu_layout_t l = kiln_gemm_cpu_layout(p);
  const bool a_k4 = l.a_k4, b_k4 = l.b_k4, b_n4 = l.b_n4, b_n1 = l.b_n1;
  const uint32_t k4_end = l.k4_end;
  const bool gemv = p->m == 1;
  const bool c_n4 = (p->c_row_stride & 3) == 0 && (p->c_batch_stride & 3) == 0 &&
                    (p->n & 3) == 0 && (p->residual_row_stride & 3) == 0 &&
                    (p->residual_batch_stride & 3) == 0;
  uint32_t paths = 0;
  if (b_k4 && gemv && k4_end > 0) paths |= KILN_GEMM_CPU_GEMV;
  if (b_k4 && !gemv && k4_end > 0) paths |= KILN_GEMM_CPU_KN;
  if (b_n4 && !b_k4 && k4_end > 0) paths |= KILN_GEMM_CPU_NN;
  if (a_k4 && b_n1 && (p->k & ~3u) > 0) paths |= KILN_GEMM_CPU_NU;
  if (k4_end < p->k) paths |= KILN_GEMM_CPU_SCALAR_K;
  if (!c_n4) paths |= KILN_GEMM_CPU_SCALAR_STORE;
  if (p->bias_col_stride != 0) paths |= KILN_GEMM_CPU_BIAS_COLS;
  return paths;
}

kiln_status_t kiln_kernel_config_gemm_cpu_paths(kiln_kernel_config_t* config,
                                                const kiln_kernel_gemm_params_t* params) {
  if (!config || !params) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_kernel_config_gemm_cpu_paths: NULL argument");
  }
  const bool gemm = config->kernel == KILN_KERNEL_GEMM || config->kernel == KILN_KERNEL_GEMM_SMALL ||
                    config->kernel == KILN_KERNEL_GEMV;
  if (!gemm || config->variant != KILN_KERNEL_VARIANT_CPU) return kiln_ok_status();
  // Lanes down m (grid.c and the kernel read the bit) where a workgroup's
  // 8 x 64 outputs along m (lanes x TM rows, one TN tile) pad less than
  // the usual TM rows x lanes x TN columns.
  const uint64_t lanes = config->workgroup_size[0];
  const uint64_t tm = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TM, 8);
  const uint64_t tn = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TN, 8);
  const uint64_t m = params->m, n = params->n;
  const uint64_t down = kiln_round_up(m, lanes * tm) * kiln_round_up(n, tn);
  const uint64_t across = kiln_round_up(m, tm) * kiln_round_up(n, lanes * tn);
  uint32_t paths = kiln_gemm_cpu_paths(params) | KILN_GEMM_CPU_LAYOUT_SET;
  if (config->workgroup_size[1] == 1 && down < across) paths |= KILN_GEMM_CPU_DOWN_M;
  return kiln_config_set_raw(config, KILN_SPEC_GEMM_CPU_PATHS, paths);
}

// The paths conv2d_cpu.comp (`depthwise` false) or depthwise_conv2d_cpu.comp
// take for `p`; a superset where a path depends on the output block.
static uint32_t kiln_conv_cpu_paths(const kiln_kernel_conv2d_params_t* p, bool depthwise) {
  const uint32_t kh_end = p->kh_end == 0 || p->kh_end > p->kernel_h ? p->kernel_h : p->kh_end;
  if (depthwise) {
    const uint32_t plane = p->in_height * p->in_width;
    const bool wide3 = p->kernel_w == 3 && p->kernel_h == 3 && p->dilation_w == 1 &&
                       p->dilation_h == 1 && (p->stride_w == 1 || p->stride_w == 2) &&
                       (p->stride_h == 1 || p->stride_h == 2) &&
                       ((p->batch * p->in_channels * plane) & 3) == 0 && p->kh_begin == 0 &&
                       kh_end == 3;
    if (!wide3) return KILN_CONV_CPU_TAPS;
    return KILN_CONV_CPU_WIDE3 |
           (p->stride_w == 1 || p->stride_h == 1 ? KILN_CONV_CPU_STRIDE1 : 0) |
           (p->stride_w == 2 || p->stride_h == 2 ? KILN_CONV_CPU_STRIDE2 : 0);
  }
  const bool row8 = p->kernel_w == 3 && p->dilation_w == 1 &&
                    (p->stride_w == 1 || p->stride_w == 2) && (p->out_width & 7) == 0;
  // Blocks of 8 output channels straddle groups unless groups are whole blocks.
  const uint32_t cog = p->groups ? p->out_channels / p->groups : 0;
  const bool straddle = p->groups > 1 && (cog & 7) != 0;
  const uint32_t pixels = p->out_height * p->out_width;
  return (row8 ? KILN_CONV_CPU_ROW8 : KILN_CONV_CPU_TAPS) | (straddle ? KILN_CONV_CPU_OWN : 0) |
         ((pixels & 3) == 0 ? 0 : KILN_CONV_CPU_SCALAR_STORE);
}

kiln_status_t kiln_kernel_config_conv_cpu_paths(kiln_kernel_config_t* config,
                                                const kiln_kernel_conv2d_params_t* params) {
  if (!config || !params) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_kernel_config_conv_cpu_paths: NULL argument");
  }
  if (config->variant != KILN_KERNEL_VARIANT_CPU) return kiln_ok_status();
  const bool depthwise = config->kernel == KILN_KERNEL_DEPTHWISE_CONV2D;
  if (!depthwise && config->kernel != KILN_KERNEL_CONV2D &&
      config->kernel != KILN_KERNEL_CONV2D_GEMM) {
    return kiln_ok_status();
  }
  return kiln_config_set_raw(config, KILN_SPEC_CONV_CPU_PATHS,
                             kiln_conv_cpu_paths(params, depthwise));
}

kiln_status_t kiln_kernel_config_set_spec(kiln_kernel_config_t* config,
                                          uint32_t id, uint32_t value) {
  if (!config) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_kernel_config_set_spec: NULL config");
  }
  // conv2d_gemm takes gemm's epilogue ids on every variant (one executable
  // serves all targets of a module); its cpu variant is conv2d_cpu's blob,
  // which has them at conv's ids.
  if (config->kernel == KILN_KERNEL_CONV2D_GEMM && config->variant == KILN_KERNEL_VARIANT_CPU) {
    if (id == KILN_SPEC_GEMM_ACTIVATION) id = KILN_SPEC_CONV_ACTIVATION;
    else if (id == KILN_SPEC_GEMM_HAS_BIAS) id = KILN_SPEC_CONV_HAS_BIAS;
    else if (id == KILN_SPEC_GEMM_HAS_RESIDUAL) id = KILN_SPEC_CONV_HAS_RESIDUAL;
  }
  return kiln_config_set_raw(config, id, value);
}

static kiln_status_t kiln_config_set_raw(kiln_kernel_config_t* config, uint32_t id,
                                         uint32_t value) {
  size_t at = 0;
  while (at < config->spec_count && config->spec[at].id < id) ++at;
  if (at < config->spec_count && config->spec[at].id == id) {
    config->spec[at].value = value;
    return kiln_ok_status();
  }
  if (config->spec_count == KILN_KERNEL_MAX_SPEC_VALUES) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "spec constant %u: config already holds %d",
                            id, KILN_KERNEL_MAX_SPEC_VALUES);
  }
  memmove(&config->spec[at + 1], &config->spec[at],
          (config->spec_count - at) * sizeof(config->spec[0]));
  config->spec[at].id = id;
  config->spec[at].value = value;
  ++config->spec_count;
  return kiln_ok_status();
}

uint32_t kiln_kernel_config_spec(const kiln_kernel_config_t* config,
                                 uint32_t id, uint32_t fallback) {
  if (!config) return fallback;
  for (size_t i = 0; i < config->spec_count; ++i) {
    if (config->spec[i].id == id) return config->spec[i].value;
  }
  return fallback;
}
