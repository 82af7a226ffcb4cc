// Dispatch grid formulas (the "Grid:" lines of kernels_abi.h).
#include <string.h>

#include "kiln/compiler/kernels_gemm_tuning.h"
#include "kiln/compiler/kernels_target.h"

static uint64_t kiln_ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static kiln_status_t kiln_grid_store(const char* kernel, uint64_t x, uint64_t y,
                                     uint64_t z, uint32_t out_grid[3]) {
  if (x > KILN_KERNEL_MAX_GRID_X || y > KILN_KERNEL_MAX_GRID_X ||
      z > KILN_KERNEL_MAX_GRID_X) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "%s: grid %llu x %llu x %llu exceeds 65535 "
                            "workgroups in a dimension",
                            kernel, (unsigned long long)x, (unsigned long long)y,
                            (unsigned long long)z);
  }
  out_grid[0] = (uint32_t)x;
  out_grid[1] = (uint32_t)y;
  out_grid[2] = (uint32_t)z;
  return kiln_ok_status();
}

static kiln_status_t kiln_grid_check(const kiln_kernel_config_t* config,
                                     const void* params, uint32_t out_grid[3]) {
  if (out_grid) memset(out_grid, 0, 3 * sizeof(uint32_t));
  if (!config || !params || !out_grid || config->workgroup_size[0] == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "grid: NULL argument or unset config");
  }
  return kiln_ok_status();
}

kiln_status_t kiln_kernel_grid_gemm(const kiln_kernel_config_t* config,
                                    const kiln_kernel_gemm_params_t* params,
                                    uint32_t out_grid[3]) {
  KILN_RETURN_IF_ERROR(kiln_grid_check(config, params, out_grid));
  // gemm_coopmat: subgroups x 16x16 tiles along each dimension.
  if (kiln_kernel_is_gemm_coopmat(config->kernel)) {
    uint64_t block_n = 16ull * kiln_kernel_config_spec(config, KILN_SPEC_COOPMAT_WARPS_N, 0) *
                       kiln_kernel_config_spec(config, KILN_SPEC_COOPMAT_TILES_N, 0);
    uint64_t block_m = 16ull * kiln_kernel_config_spec(config, KILN_SPEC_COOPMAT_WARPS_M, 0) *
                       kiln_kernel_config_spec(config, KILN_SPEC_COOPMAT_TILES_M, 0);
    if (block_n == 0 || block_m == 0) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "gemm_coopmat: zero block size");
    }
    return kiln_grid_store("gemm_coopmat", kiln_ceil_div(params->n, block_n),
                           kiln_ceil_div(params->m, block_m), params->batch, out_grid);
  }
  uint64_t tile_n = (uint64_t)config->workgroup_size[0] *
                    kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TN, 4);
  uint64_t tile_m = (uint64_t)(config->workgroup_size[1] / kiln_kernel_gemm_config_ks(config)) *
                    kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TM, 4);
  if (tile_n == 0 || tile_m == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "gemm: zero tile size");
  }
  // qgemv: a workgroup per TN columns and TM rows; the cpu variant of
  // qgemv and qgemm (qgemv_cpu) per WG_X lanes of TN columns.
  if (config->kernel == KILN_KERNEL_QGEMV ||
      (config->kernel == KILN_KERNEL_QGEMM && config->variant == KILN_KERNEL_VARIANT_CPU)) {
    const uint64_t rows = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TM, 1);
    const uint64_t cols = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TN, 1);
    if (rows == 0 || rows > 8 || cols == 0 || cols > 8) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "qgemv: bad TM or TN");
    }
    const uint64_t lanes =
        config->variant == KILN_KERNEL_VARIANT_CPU ? config->workgroup_size[0] : 1;
    return kiln_grid_store("qgemv", kiln_ceil_div(params->n, lanes * cols),
                           kiln_ceil_div(params->m, rows), params->batch, out_grid);
  }
  // qgemm: a workgroup per WG_Y * TN columns and TM rows.
  if (config->kernel == KILN_KERNEL_QGEMM) {
    const uint64_t rows = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TM, 1);
    if (config->workgroup_size[1] == 0 || rows == 0 || rows > 8) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "qgemm: bad workgroup or TM");
    }
    const uint64_t cols = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TN, 1);
    if (cols == 0 || cols > 8) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "qgemm: bad TN");
    }
    return kiln_grid_store("qgemm",
                           kiln_ceil_div(params->n, config->workgroup_size[1] * cols),
                           kiln_ceil_div(params->m, rows), params->batch, out_grid);
  }
  // gemv: a workgroup per 4 * WG_X columns of one row.
  if (config->kernel == KILN_KERNEL_GEMV && config->variant != KILN_KERNEL_VARIANT_CPU) {
    return kiln_grid_store("gemv", kiln_ceil_div(params->n, 4ull * config->workgroup_size[0]),
                           params->m, params->batch, out_grid);
  }
  // gemm_cpu with fewer columns than a row of lanes covers and at least as
  // many rows: its lanes go down m (one column tile per workgroup).
  uint64_t lanes_x = config->workgroup_size[0];
  uint64_t tn = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TN, 4);
  uint64_t tm = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TM, 4);
  const uint32_t paths = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_CPU_PATHS, 0);
  const bool down_m = (paths & KILN_GEMM_CPU_LAYOUT_SET)
                          ? (paths & KILN_GEMM_CPU_DOWN_M) != 0
                          : params->n < lanes_x * tn && params->m >= lanes_x * tm;
  if (config->variant == KILN_KERNEL_VARIANT_CPU && config->workgroup_size[1] == 1 && down_m) {
    return kiln_grid_store("gemm", kiln_ceil_div(params->n, tn),
                           kiln_ceil_div(params->m, lanes_x * tm), params->batch,
                           out_grid);
  }
  return kiln_grid_store("gemm", kiln_ceil_div(params->n, tile_n),
                         kiln_ceil_div(params->m, tile_m), params->batch,
                         out_grid);
}

kiln_status_t kiln_kernel_grid_conv2d(const kiln_kernel_config_t* config,
                                      const kiln_kernel_conv2d_params_t* params,
                                      uint32_t out_grid[3]) {
  KILN_RETURN_IF_ERROR(kiln_grid_check(config, params, out_grid));
  uint64_t block = kiln_kernel_config_spec(config, KILN_SPEC_CONV_CO_BLOCK, 4);
  if (block == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "conv2d: CO_BLOCK is 0");
  }
  uint64_t pixels = (uint64_t)params->out_height * params->out_width;
  // conv2d_cpu: one invocation per TILE_W pixels.
  if (config->variant == KILN_KERNEL_VARIANT_CPU) {
    uint64_t tile = kiln_kernel_config_spec(config, KILN_SPEC_CONV_TILE_W, 1);
    if (tile == 0) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "conv2d: TILE_W is 0");
    }
    pixels = kiln_ceil_div(pixels, tile);
  }
  return kiln_grid_store("conv2d", kiln_ceil_div(pixels, config->workgroup_size[0]),
                         kiln_ceil_div(params->out_channels, block),
                         params->batch, out_grid);
}

kiln_status_t kiln_kernel_grid_conv2d_gemm(const kiln_kernel_config_t* config,
                                           const kiln_kernel_conv2d_params_t* params,
                                           uint32_t out_grid[3]) {
  KILN_RETURN_IF_ERROR(kiln_grid_check(config, params, out_grid));
  // The cpu variant is conv2d_cpu.
  if (config->variant == KILN_KERNEL_VARIANT_CPU) {
    return kiln_kernel_grid_conv2d(config, params, out_grid);
  }
  uint64_t tile_n = (uint64_t)config->workgroup_size[0] *
                    kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TN, 4);
  uint64_t tile_m = (uint64_t)(config->workgroup_size[1] / kiln_kernel_gemm_config_ks(config)) *
                    kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TM, 4);
  if (tile_n == 0 || tile_m == 0 || params->groups == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "conv2d_gemm: zero tile size or groups");
  }
  uint64_t pixels = (uint64_t)params->out_height * params->out_width;
  return kiln_grid_store("conv2d_gemm", kiln_ceil_div(pixels, tile_n),
                         kiln_ceil_div(params->out_channels / params->groups, tile_m),
                         (uint64_t)params->batch * params->groups, out_grid);
}

kiln_status_t kiln_kernel_grid_linear(const kiln_kernel_config_t* config,
                                      uint64_t count, uint32_t out_grid[3]) {
  KILN_RETURN_IF_ERROR(kiln_grid_check(config, &count, out_grid));
  if (count > UINT32_MAX) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "%llu values exceed the kernels' 32-bit indexing",
                            (unsigned long long)count);
  }
  // depthwise_conv2d_cpu: one invocation per 16 x TILE_W outputs (its 3x3
  // path walks 8 rows of 16 outputs; other kernels take TILE_W outputs of a
  // row per item). The count only sizes the grid: the kernel grid-strides.
  if (config->kernel == KILN_KERNEL_DEPTHWISE_CONV2D &&
      config->variant == KILN_KERNEL_VARIANT_CPU) {
    uint64_t tile = kiln_kernel_config_spec(config, KILN_SPEC_CONV_TILE_W, 1);
    if (tile == 0) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "depthwise: TILE_W is 0");
    }
    count = kiln_ceil_div(count, tile * 16);
  }
  uint64_t groups = kiln_ceil_div(count, config->workgroup_size[0]);
  if (groups > KILN_KERNEL_MAX_GRID_X) groups = KILN_KERNEL_MAX_GRID_X;
  if (groups == 0) groups = 1;
  return kiln_grid_store("linear", groups, 1, 1, out_grid);
}

kiln_status_t kiln_kernel_grid_rows(const kiln_kernel_config_t* config,
                                    uint64_t rows, uint32_t out_grid[3]) {
  KILN_RETURN_IF_ERROR(kiln_grid_check(config, &rows, out_grid));
  if (rows > UINT32_MAX) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "%llu rows exceed the kernels' 32-bit indexing",
                            (unsigned long long)rows);
  }
  uint64_t groups = rows > KILN_KERNEL_MAX_GRID_X ? KILN_KERNEL_MAX_GRID_X : rows;
  if (groups == 0) groups = 1;
  return kiln_grid_store("rows", groups, 1, 1, out_grid);
}

kiln_status_t kiln_kernel_grid_attention(const kiln_kernel_config_t* config,
                                         const kiln_kernel_attention_params_t* params,
                                         bool merge, uint32_t out_grid[3]) {
  KILN_RETURN_IF_ERROR(kiln_grid_check(config, params, out_grid));
  uint64_t chunks = merge ? 1 : params->chunks;
  if (config->kernel == KILN_KERNEL_ATTENTION_COOPMAT) {  // 16 rows, every key
    return kiln_grid_store("attention", kiln_ceil_div(params->sq, KILN_ATTN_COOPMAT_ROWS),
                           params->heads, params->batch, out_grid);
  }
  if (config->kernel == KILN_KERNEL_ATTENTION_TILED) {
    return kiln_grid_store("attention", kiln_ceil_div(params->sq, KILN_ATTN_TILED_ROWS),
                           params->heads, params->batch, out_grid);
  }
  // KEY_LANES invocations per query row.
  const uint64_t lanes = kiln_kernel_config_spec(config, KILN_SPEC_ATTN_KEY_LANES, 1);
  const uint64_t rows = lanes && config->workgroup_size[0] >= lanes
                            ? config->workgroup_size[0] / lanes
                            : config->workgroup_size[0];
  return kiln_grid_store("attention", kiln_ceil_div(params->sq, rows),
                         params->heads, (uint64_t)params->batch * chunks, out_grid);
}
