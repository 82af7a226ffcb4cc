// qgemv's tuning table (kernels_qgemv_tuning.h): workgroup size and weight
// rows per workgroup per arch. CPU-like devices run qgemv_cpu (config.c:
// `wg` lanes along x), each lane the cpu row's `rows` weight rows.
//
// Why these numbers: H100 (`kiln-kernels-bench --quant-sweep --arch=hopper`,
// in-stream timing, 2026-11-24 session 7, two rounds): 2 weight rows per
// workgroup beat 4 and 8 on every shape and layout (more workgroups, fewer
// registers); a span of 2 code words was best or within ~3% for the 4-bit
// layouts (q4_0, q4_K) and 1 quarter (the 2-word span of an 8-bit layout)
// for q8_0 / int8 (int8 83-85% of copy against 70-74% at 2 quarters); 128
// invocations within ~5% of the best of 64 / 256 everywhere; unroll 2 gave
// 0-3%, unroll 1 kept. 4 rows of A (M = 4) preferred 1 quarter (0.019
// against 0.028 ms), so the kernel halves the span above 2 rows. The other GPU rows are hopper's
// unmeasured; 64 x 2 x span 1 where registers and subgroups are smaller.
// cpu: qgemv_cpu's 8 lanes x 4 rows (lavapipe, 4096 x 4096: 1 / 2 / 4 / 8
// rows per lane within noise for q4_0, 4 best for q4_k and int8); qgemv_f16
// on CPU devices takes it with a whole group per lane (span 4).
#include <string.h>

#include "kiln/compiler/kernels_qgemv_tuning.h"

typedef struct kiln_qgemv_tuning_row_t {
  const char* arch;
  kiln_kernel_qgemv_tiling_t tiling;
} kiln_qgemv_tuning_row_t;

// "cpu" (llvmpipe): qgemv_cpu's 8 lanes, each `rows` weight rows over all
// of k, one load of A's group serving them all.
static const kiln_qgemv_tuning_row_t kQgemvTuning[] = {
    {"cpu", {8, 4, 1, 4}},      {"unknown", {64, 2, 1, 1}},  {"valhall", {64, 2, 1, 1}},
    {"adreno", {64, 2, 1, 1}},  {"rdna1", {128, 2, 1, 2}},   {"rdna2", {128, 2, 1, 2}},
    {"rdna3", {128, 2, 1, 2}},  {"pascal", {128, 2, 1, 2}},  {"turing", {128, 2, 1, 2}},
    {"ampere", {128, 2, 1, 2}}, {"ada", {128, 2, 1, 2}},     {"hopper", {128, 2, 1, 2}},
    {"arc", {64, 2, 1, 1}},     {"m1", {64, 2, 1, 1}},
};

// wg x rows x unroll x span: round 1 (2026-11-24) tried 64-256 x 2-8 rows
// x unroll 1-4 x span 1-4; 2 rows at span 1-2 won every shape, 8 rows and
// span 4 lost everywhere (registers), so the list keeps the neighbourhood.
static const kiln_kernel_qgemv_tiling_t kQgemvCandidates[] = {
    {64, 2, 1, 1},  {64, 2, 1, 2},  {64, 4, 1, 1},  {128, 2, 1, 1}, {128, 2, 1, 2},
    {128, 2, 2, 2}, {128, 2, 4, 1}, {128, 4, 1, 2}, {128, 4, 2, 2}, {128, 2, 1, 4},
    {256, 2, 1, 1}, {256, 2, 1, 2}, {256, 4, 1, 2}, {32, 4, 2, 4},
};

const kiln_kernel_qgemv_tiling_t* kiln_kernel_qgemv_tuning(const char* arch) {
  if (!arch) return NULL;
  for (size_t i = 0; i < sizeof(kQgemvTuning) / sizeof(kQgemvTuning[0]); ++i) {
    if (strcmp(kQgemvTuning[i].arch, arch) == 0) return &kQgemvTuning[i].tiling;
  }
  return NULL;
}

size_t kiln_kernel_qgemv_candidate_count(void) {
  return sizeof(kQgemvCandidates) / sizeof(kQgemvCandidates[0]);
}

const kiln_kernel_qgemv_tiling_t* kiln_kernel_qgemv_candidate(size_t index) {
  return index < kiln_kernel_qgemv_candidate_count() ? &kQgemvCandidates[index] : NULL;
}

uint32_t kiln_kernel_qgemv_shared_bytes(const kiln_kernel_qgemv_tiling_t* t, uint32_t tm) {
  return t->wg * t->rows * tm * 4u;  // qgemv.comp: partial[WG * TM * TN]
}

kiln_status_t kiln_kernel_qgemv_tiling_apply(const kiln_kernel_qgemv_tiling_t* t,
                                             const kiln_kernel_arch_caps_t* caps,
                                             kiln_kernel_config_t* config) {
  if (!t || !caps || !config) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "qgemv tiling: NULL argument");
  }
  // The tree halves a power of two; 4 / span lanes share a group.
  if (t->wg < 8 || t->wg > 256 || (t->wg & (t->wg - 1)) != 0 || t->rows == 0 || t->rows > 8 ||
      t->unroll == 0 || t->unroll > 4 || (t->span != 1 && t->span != 2 && t->span != 4)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "qgemv tiling: %u invocations (a power of two in 8..256) x %u "
                            "rows (1..8), unroll %u (1..4), span %u (1, 2 or 4)",
                            t->wg, t->rows, t->unroll, t->span);
  }
  if (t->wg > caps->max_workgroup_invocations) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "qgemv tiling: %u invocations exceed the arch's %u", t->wg,
                            caps->max_workgroup_invocations);
  }
  const uint32_t shared = kiln_kernel_qgemv_shared_bytes(t, KILN_QGEMV_MAX_ROWS);
  if (shared > caps->max_shared_memory_bytes) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "qgemv tiling %u x %u: %u bytes of shared memory exceed the "
                            "arch's %u",
                            t->wg, t->rows, shared, caps->max_shared_memory_bytes);
  }
  config->workgroup_size[0] = t->wg;
  config->workgroup_size[1] = 1;
  config->shared_memory_bytes = shared;
  KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(config, KILN_SPEC_GEMM_TK, t->unroll));
  KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(config, KILN_SPEC_QGEMV_SPAN, t->span));
  return kiln_kernel_config_set_spec(config, KILN_SPEC_GEMM_TN, t->rows);
}

kiln_status_t kiln_kernel_qgemv_tiling_select(const kiln_kernel_arch_caps_t* caps,
                                              kiln_kernel_qgemv_tiling_t* out_tiling) {
  if (!caps || !out_tiling) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "qgemv tiling: NULL argument");
  }
  const kiln_kernel_qgemv_tiling_t* row = kiln_kernel_qgemv_tuning(caps->arch);
  const kiln_kernel_qgemv_tiling_t fallbacks[] = {
      {128, 2, 1, 1}, {64, 2, 1, 1}, {32, 2, 1, 1}, {32, 1, 1, 1}};
  if (row && row->wg <= caps->max_workgroup_invocations &&
      kiln_kernel_qgemv_shared_bytes(row, KILN_QGEMV_MAX_ROWS) <= caps->max_shared_memory_bytes) {
    *out_tiling = *row;
    return kiln_ok_status();
  }
  for (size_t i = 0; i < sizeof(fallbacks) / sizeof(fallbacks[0]); ++i) {
    if (fallbacks[i].wg <= caps->max_workgroup_invocations &&
        kiln_kernel_qgemv_shared_bytes(&fallbacks[i], KILN_QGEMV_MAX_ROWS) <=
            caps->max_shared_memory_bytes) {
      *out_tiling = fallbacks[i];
      return kiln_ok_status();
    }
  }
  return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                          "qgemv: the arch '%s' allows neither 32 invocations nor 1 KiB of "
                          "shared memory",
                          caps->arch ? caps->arch : "?");
}
