// The GEMM tuning table: per arch, the tiling of gemm and conv2d_gemm
// (gemm_tile.glsl) as spec constants, recorded in each module's variant.
// One table for all targets (compiler-bridge/kernels/gemm_tuning.c); the
// candidate list is what kiln-kernels-bench sweeps to refill it.
#ifndef KILN_COMPILER_KERNELS_GEMM_TUNING_H_
#define KILN_COMPILER_KERNELS_GEMM_TUNING_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/base/status.h"
#include "kiln/compiler/kernels_target.h"

#ifdef __cplusplus
extern "C" {
#endif

// Workgroup wg_x x wg_y; each invocation a tm x tn register tile (4 or 8
// each); k staged tk at a time (a multiple of 4, 4..32); ks k slices in
// one workgroup (gemm_tile.glsl's KSPLIT: the workgroup is wg_x x (wg_y *
// ks), the block still (wg_y * tm) x (wg_x * tn); 0 or 1 = no split).
typedef struct kiln_kernel_gemm_tiling_t {
  uint32_t wg_x, wg_y, tm, tn, tk, ks;
} kiln_kernel_gemm_tiling_t;

// The k slices of `tiling` (ks, with 0 read as 1).
uint32_t kiln_kernel_gemm_tiling_ks(const kiln_kernel_gemm_tiling_t* tiling);
// KSPLIT of a gemm / conv2d_gemm config (1 where unset).
uint32_t kiln_kernel_gemm_config_ks(const kiln_kernel_config_t* config);

// The table's tiling for `arch`, or NULL when it has no row.
const kiln_kernel_gemm_tiling_t* kiln_kernel_gemm_tuning(const char* arch);
// Table rows, in order (for tests and the sweep): arch name and tiling.
size_t kiln_kernel_gemm_tuning_count(void);
const char* kiln_kernel_gemm_tuning_arch(size_t index);
// Tilings the sweep tries besides the table's.
size_t kiln_kernel_gemm_candidate_count(void);
const kiln_kernel_gemm_tiling_t* kiln_kernel_gemm_candidate(size_t index);

// Shared memory of the core at `tiling` (two buffers of TK rows of A and B,
// rows padded by one vec4).
uint32_t kiln_kernel_gemm_shared_bytes(const kiln_kernel_gemm_tiling_t* tiling);

// Checks `tiling` against the kernel's rules and `caps` (invocations,
// shared memory) and writes workgroup size, shared use and the TM/TN/TK
// spec constants into `config`. INVALID_ARGUMENT / OUT_OF_RANGE name the
// field at fault.
kiln_status_t kiln_kernel_gemm_tiling_apply(const kiln_kernel_gemm_tiling_t* tiling,
                                            const kiln_kernel_arch_caps_t* caps,
                                            kiln_kernel_config_t* config);

// The tiling for `caps`: the table's row for caps->arch when it fits,
// else one derived from the caps (subgroup, invocations, shared memory).
kiln_status_t kiln_kernel_gemm_tiling_select(const kiln_kernel_arch_caps_t* caps,
                                             kiln_kernel_gemm_tiling_t* out_tiling);

// The tiling for products with few output tiles (gemm_small, and the
// implicit-GEMM convs of batch-1 CNNs): where the arch's row has 8-wide
// register tiles, 16x16 invocations of 4x4 (64x64 blocks) at TK 16 when
// they fit, else the row. On the H100 that tiling ran 2-3x faster than the
// 128x128 row on ResNet-50's 1x1 convs and 128-token linear layers, which
// give too few 128x128 blocks to fill the GPU (kiln-kernels-bench --sweep).
kiln_status_t kiln_kernel_gemm_tiling_select_small(const kiln_kernel_arch_caps_t* caps,
                                                   kiln_kernel_gemm_tiling_t* out_tiling);

// Occupancy-aware tiling (gemm_occupancy.c): for arches with at least
// KILN_GEMM_OCCUPANCY_MIN_UNITS compute units (desktop GPUs), gemm_small
// and conv2d_gemm take, per product, the first candidate (fewer k slices
// first, then bigger blocks) whose blocks put at least
// KILN_GEMM_OCCUPANCY_INVOCATIONS_PER_UNIT invocations per unit to work,
// else the one with the most; k split inside the workgroup only with at
// least kiln_kernel_gemm_occupancy_min_k(slices) k (16 a slice in 2 or 4,
// 32 in 8). Fitted to an H100 sweep (kiln-kernels-bench --shapes=models,
// 2026-11-24): its fastest tilings put 20-45 thousand invocations to work
// on BERT's and ViT's linear layers, and as many as they can on 7x7
// layers. Other arches (CPU-like, mobile, unknown): the small tiling.
// 16 k a slice (was 32 for every split) from an H200 A/B of the f16
// models (2026-11-26): MobileNetV2's 1x1 convs with k 64 and 96 at 14x14
// (k in 4 slices of 16 and 24, 32x32 blocks) went 9 -> 6.5 us and 11 ->
// 7; the same bound for 8 slices ran EfficientNet-B0's 1152 x 49, k 192
// in 16-row blocks at 14 us against 10.5.
#define KILN_GEMM_OCCUPANCY_MIN_UNITS 32u
#define KILN_GEMM_OCCUPANCY_INVOCATIONS_PER_UNIT 155u
#define KILN_GEMM_OCCUPANCY_MIN_K_PER_SLICE 16u
#define KILN_GEMM_OCCUPANCY_MIN_K_PER_SLICE8 32u
// The least k a split into `slices` k slices takes (0 for one slice).
uint64_t kiln_kernel_gemm_occupancy_min_k(uint32_t slices);
bool kiln_kernel_gemm_occupancy_enabled(const kiln_kernel_arch_caps_t* caps);
size_t kiln_kernel_gemm_occupancy_candidate_count(void);
const kiln_kernel_gemm_tiling_t* kiln_kernel_gemm_occupancy_candidate(size_t index);
// Output blocks of `tiling` on a batch x m x n product.
uint64_t kiln_kernel_gemm_tiling_blocks(const kiln_kernel_gemm_tiling_t* tiling, uint64_t m,
                                        uint64_t n, uint64_t batch);
// The tiling for one product (m x n, reduction k, batch) under `caps`.
kiln_status_t kiln_kernel_gemm_tiling_select_shape(const kiln_kernel_arch_caps_t* caps,
                                                   uint64_t m, uint64_t n, uint64_t k,
                                                   uint64_t batch,
                                                   kiln_kernel_gemm_tiling_t* out_tiling);
// kiln_kernel_config_select for one product: gemm_small and conv2d_gemm
// (not their cpu variants) get kiln_kernel_gemm_tiling_select_shape's
// tiling, gemm_coopmat kiln_kernel_coopmat_tiling_select_shape's, gemv
// with k <= KILN_GEMV_SHORT_K one k slice of KILN_GEMV_SHORT_K_LANES
// column quads, gemv with a longer k its k slices and column quads by k
// and n (b_along_k: B is [n][k], a transposed weight) (both on targets
// that tile per product); every other kernel, or m == 0, the plain
// selection.
#define KILN_GEMV_SHORT_K 16u
#define KILN_GEMV_SHORT_K_LANES 64u
kiln_status_t kiln_kernel_config_select_shape(kiln_kernel_id_t kernel,
                                              const kiln_kernel_arch_caps_t* caps,
                                              kiln_kernel_storage_t storage, uint64_t m,
                                              uint64_t n, uint64_t k, uint64_t batch,
                                              bool b_along_k, kiln_kernel_config_t* out_config);

// gemm_coopmat (glsl/gemm_coopmat.comp): warps_m x warps_n subgroups, each
// tiles_m x tiles_n 16x16 f32 accumulators; k staged bk at a time (16, 32
// or 64). The block is (warps_m * tiles_m * 16) x (warps_n * tiles_n * 16).
typedef struct kiln_kernel_coopmat_tiling_t {
  uint32_t warps_m, warps_n, tiles_m, tiles_n, bk;
} kiln_kernel_coopmat_tiling_t;

// The table's tiling for `arch` (cooperative-matrix arches only), or NULL.
const kiln_kernel_coopmat_tiling_t* kiln_kernel_coopmat_tuning(const char* arch);
// The tilings gemm_coopmat is built for (the table's among them).
size_t kiln_kernel_coopmat_candidate_count(void);
const kiln_kernel_coopmat_tiling_t* kiln_kernel_coopmat_candidate(size_t index);
// The blob base name of `tiling`'s build ("gemm_coopmat" for the small
// products' tiling, else "gemm_coopmat_WMxWN_TMxTN_kBK"); NOT_FOUND when
// it has none.
kiln_status_t kiln_kernel_coopmat_build_name(const kiln_kernel_coopmat_tiling_t* tiling,
                                             char* out, size_t capacity);
// Shared memory gemm_coopmat uses at `tiling` (two staged A and B buffers of
// uvec4 rows padded by one, reused for 16 rows of each subgroup's
// accumulators); at most KILN_COOPMAT_SHARED_VEC4 * 16, the array the
// kernel declares.
uint32_t kiln_kernel_coopmat_shared_bytes(const kiln_kernel_coopmat_tiling_t* tiling);
// Checks `tiling` against the kernel's rules and `caps` (cooperative matrix,
// fp16, invocations = subgroups x subgroup size, shared memory) and writes
// workgroup size, shared use and spec constants into `config`.
// FAILED_PRECONDITION when the caps lack cooperative matrix or fp16.
kiln_status_t kiln_kernel_coopmat_tiling_apply(const kiln_kernel_coopmat_tiling_t* tiling,
                                               const kiln_kernel_arch_caps_t* caps,
                                               kiln_kernel_config_t* config);
// The arch's row, or for caps without one (or `small`: products with few
// blocks, as gemm_small) 64x64 blocks (2x4 subgroups of 2x1 tiles, BK 32).
kiln_status_t kiln_kernel_coopmat_tiling_select(const kiln_kernel_arch_caps_t* caps, bool small,
                                                kiln_kernel_coopmat_tiling_t* out_tiling);
// The tiling for an m x n x batch product of reduction k: on arches with a
// row and a compute-unit count, the candidate with the least modelled
// time (coopmat_tuning.c: a fixed cost plus a cost per k step and wave of
// blocks, fitted per tiling on an H200); a row without a unit count keeps
// the row's tiling, arches without a row the small products' 64x64.
kiln_status_t kiln_kernel_coopmat_tiling_select_shape(const kiln_kernel_arch_caps_t* caps,
                                                      uint64_t m, uint64_t n, uint64_t k,
                                                      uint64_t batch,
                                                      kiln_kernel_coopmat_tiling_t* out_tiling);
// Split-K parts for gemm_coopmat (1: none): on arches with a row, where the
// whole product's blocks leave compute units idle, the equal parts whose
// modelled time plus their sum's dispatch beats the whole product's;
// elsewhere as kiln_kernel_gemm_split_k_parts by the 64x64 tiling's blocks.
uint32_t kiln_kernel_coopmat_split_k_parts(const kiln_kernel_arch_caps_t* caps, uint64_t m,
                                           uint64_t n, uint64_t k, uint64_t batch);
// Split-K (issue 16). A product whose output blocks (the small tiling's:
// batch x ceil(m / TILE_M) x ceil(n / TILE_N)) are few against the arch's
// compute units leaves most of the GPU idle however long k is; its k is
// then summed in parts, each part a dispatch of its own into scratch, and
// a reduction adds the parts (onnx-emit/lower_splitk.c). Only where the
// blocks fill at most half of the arch's blocks per unit
// (kiln_kernel_gemm_split_k_blocks_per_unit: 4 on NVIDIA, else 1) times
// its units; the parts: enough for that many blocks, each at least
// KILN_GEMM_SPLIT_K_MIN_K long, at most
// KILN_GEMM_SPLIT_K_MAX_PARTS (a dispatch each, unless the parts are
// equal: then one dispatch, the parts as its batch); 1 (no split)
// where the arch has no compute-unit count (CPU devices, most mobile,
// unknown). Conservative first numbers: the sweep's split-K rows on a
// device say where to move them.
#define KILN_GEMM_SPLIT_K_MIN_K 256u
#define KILN_GEMM_SPLIT_K_MAX_PARTS 8u
// Parts down to KILN_GEMM_SPLIT_K_SHORT_MIN_K long in products of at least
// KILN_GEMM_SPLIT_K_SHORT_MIN_MACS multiply-adds where the parts' tiling
// (kiln_kernel_gemm_tiling_select_shape) still gives each workgroup
// KILN_GEMM_SPLIT_K_MIN_BLOCK_MACS: a 64x64 block of 128 k. H100, fp32,
// alternating A/B runs (2026-11-25, ms a call): BERT-base 2.16 -> 1.97
// (its 128-row linears in 6 parts, not 3), ResNet-50 1.42 -> 1.29,
// ResNet-18 0.64 -> 0.62; without the two conditions ViT-B/16 (32-row
// blocks) ran 4% slower and MobileNetV2 and EfficientNet-B0 (1x1 convs
// under 2^25) 2-3% slower.
#define KILN_GEMM_SPLIT_K_SHORT_MIN_K 128u
#define KILN_GEMM_SPLIT_K_MIN_BLOCK_MACS (64u * 64u * 128u)
#define KILN_GEMM_SPLIT_K_SHORT_MIN_MACS (1ull << 25)
// The most parts kiln_kernel_coopmat_split_k_parts gives (equal parts run
// as one dispatch, lower_splitk.c), each at least KILN_GEMM_SPLIT_K_MIN_K
// long.
#define KILN_COOPMAT_SPLIT_K_MAX_PARTS 16u
// Compute units (SMs, CUs, Xe cores, GPU cores) of the arch's common large
// part, or 0 where the table keeps none.
uint32_t kiln_kernel_gemm_compute_units(const char* arch);
// Output blocks per compute unit a k split aims at (1 where none is kept).
uint32_t kiln_kernel_gemm_split_k_blocks_per_unit(const char* arch);
// Whether the emitter splits products for `arch` at all: wherever a unit
// count is kept (gemm_tuning.c says what the H100 measured).
bool kiln_kernel_gemm_split_k_enabled(const char* arch);
uint32_t kiln_kernel_gemm_split_k_parts(const kiln_kernel_arch_caps_t* caps, uint64_t m,
                                        uint64_t n, uint64_t k, uint64_t batch);

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_KERNELS_GEMM_TUNING_H_
