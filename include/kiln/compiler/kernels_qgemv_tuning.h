// qgemv's tuning table (compiler-bridge/kernels/qgemv_tuning.c): per arch,
// the workgroup size and the weight rows each workgroup owns, refilled from
// `kiln-kernels-bench --quant-sweep` on each device.
#ifndef KILN_COMPILER_KERNELS_QGEMV_TUNING_H_
#define KILN_COMPILER_KERNELS_QGEMV_TUNING_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/base/status.h"
#include "kiln/compiler/kernels_target.h"

#ifdef __cplusplus
extern "C" {
#endif

// Rows of A one qgemv dispatch row covers (its TM spec constant, 1..8):
// products of at most this many rows (per batch) use qgemv, larger ones qgemm.
#define KILN_QGEMV_MAX_ROWS 8u

// wg invocations (a power of two, 8..256) own `rows` weight rows (TN, 1..8)
// of the output; each lane reads `span` (1, 2 or 4) 4-byte code words of a
// group per row (that many quarters of a 4-bit group; half as many, at
// least one, of an 8-bit one or above 2 rows of A) and steps `unroll`
// (1..4) groups at a time (their loads in flight together).
typedef struct kiln_kernel_qgemv_tiling_t {
  uint32_t wg, rows, unroll, span;
} kiln_kernel_qgemv_tiling_t;

// The table's tiling for `arch`, or NULL when it has no row.
const kiln_kernel_qgemv_tiling_t* kiln_kernel_qgemv_tuning(const char* arch);
// Tilings the sweep tries (the table's among them).
size_t kiln_kernel_qgemv_candidate_count(void);
const kiln_kernel_qgemv_tiling_t* kiln_kernel_qgemv_candidate(size_t index);

// Shared memory qgemv declares at `tiling` for `tm` rows of A (one float
// per invocation and accumulator).
uint32_t kiln_kernel_qgemv_shared_bytes(const kiln_kernel_qgemv_tiling_t* tiling, uint32_t tm);

// Checks `tiling` against the kernel's rules and `caps` (invocations, and
// the shared memory of KILN_QGEMV_MAX_ROWS rows of A) and writes the
// workgroup size, shared use, TN and the unroll (KILN_SPEC_GEMM_TK) into `config`.
kiln_status_t kiln_kernel_qgemv_tiling_apply(const kiln_kernel_qgemv_tiling_t* tiling,
                                             const kiln_kernel_arch_caps_t* caps,
                                             kiln_kernel_config_t* config);

// The table's row for caps->arch when it fits, else the largest of 128 /
// 64 / 32 invocations x 2 rows that does.
kiln_status_t kiln_kernel_qgemv_tiling_select(const kiln_kernel_arch_caps_t* caps,
                                              kiln_kernel_qgemv_tiling_t* out_tiling);

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_KERNELS_QGEMV_TUNING_H_
