// qgemm and qgemv (quantized-weight GEMM / GEMV) on the test device against a plain C
// reference: the weight packed by compiler-bridge/quant, dequantized by its
// reference dequantizer, and the product summed in double. Tolerance
// 1e-4 of max|ref| (fp32 accumulation over k terms of magnitude <= 1).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "kiln/compiler/kernels_qgemv_tuning.h"
#include "kiln/compiler/quant.h"
#include "kiln_test.h"
#include "reference/reference.h"

typedef struct qgemm_case_t {
  uint32_t batch, m, n, k;
  bool bias, residual;
  uint32_t act;
  uint32_t tm;
} qgemm_case_t;

// `f16`: the fp16-storage build (config's variant): A, bias and residual
// rounded to fp16 and passed as halves, C read back as halves; the
// reference sums the rounded values in double, and one fp16 rounding of
// the result is allowed on top of 1e-4 of max|ref| (rtol 2^-10).
static void run_qgemm_case(const char* what, kiln_quant_layout_t layout, const qgemm_case_t* c,
                           kiln_kernel_config_t config, bool f16) {
  const uint64_t row_bytes = kiln_quant_row_bytes(layout, c->k);
  KILN_ASSERT_GT(row_bytes, 0);
  const size_t a_count = (size_t)c->batch * c->m * c->k, w_count = (size_t)c->n * c->k;
  const size_t out_count = (size_t)c->batch * c->m * c->n;
  float* a = gpu_random_alloc(a_count, 11 + c->k, -1, 1);
  float* w = gpu_random_alloc(w_count, 12 + c->n, -1, 1);
  float* bias = gpu_random_alloc(c->n, 13, -1, 1);
  float* residual = gpu_random_alloc(out_count, 14, -1, 1);
  float* deq = gpu_alloc(w_count);
  float* want = gpu_alloc(out_count);
  float* got = gpu_alloc(out_count);
  uint16_t *ha = NULL, *hbias = NULL, *hresidual = NULL, *hgot = NULL;
  if (f16) {
    ha = gpu_round_to_halves(a, a_count);
    hbias = gpu_round_to_halves(bias, c->n);
    hresidual = gpu_round_to_halves(residual, out_count);
    hgot = malloc(out_count * 2 + 2);
    KILN_ASSERT_TRUE(hgot != NULL);
  }
  // The packed rows, then at least 4 bytes the kernel may read ahead.
  const size_t w_bytes = ((size_t)(c->n * row_bytes) + 4 + 3) & ~(size_t)3;
  uint8_t* packed = calloc(w_bytes, 1);
  KILN_ASSERT_TRUE(packed != NULL);
  if (layout == KILN_QUANT_Q4_ZP) {
    // MatMulNBits blocks of 16 (zero points) or 128 (none), repacked.
    const uint64_t block = c->k % 128 == 0 ? 128 : 16, k_blocks = c->k / block;
    uint8_t* codes = malloc((size_t)(c->n * c->k / 2));
    uint8_t* zps = malloc((size_t)(c->n * ((k_blocks + 1) / 2)));
    float* scales = gpu_random_alloc((size_t)(c->n * k_blocks), 15, 0.01f, 0.2f);
    KILN_ASSERT_TRUE(codes && zps);
    for (size_t i = 0; i < c->n * c->k / 2; ++i) codes[i] = (uint8_t)(i * 2654435761u >> 13);
    for (size_t i = 0; i < c->n * ((k_blocks + 1) / 2); ++i) zps[i] = (uint8_t)(i * 40503u >> 3);
    kiln_quant_q4_zp_from_nbits(codes, scales, block == 16 ? zps : NULL, c->n, c->k, block,
                                packed);
    free(codes);
    free(zps);
    free(scales);
  } else {
    KILN_ASSERT_OK(kiln_quant_pack(layout, w, c->n, c->k, packed));
  }
  KILN_ASSERT_OK(kiln_quant_unpack(layout, packed, c->n, c->k, deq));
  double max_ref = 0;
  for (uint32_t b = 0; b < c->batch; ++b) {
    for (uint32_t i = 0; i < c->m; ++i) {
      for (uint32_t j = 0; j < c->n; ++j) {
        double sum = 0;
        const float* ar = a + ((size_t)b * c->m + i) * c->k;
        for (uint32_t kk = 0; kk < c->k; ++kk) sum += (double)ar[kk] * deq[(size_t)j * c->k + kk];
        const size_t o = ((size_t)b * c->m + i) * c->n + j;
        if (c->bias) sum += bias[j];
        if (c->residual) sum += residual[o];
        want[o] = (float)ref_activation(c->act, sum, 0, 6);
        max_ref = fmax(max_ref, fabs(want[o]));
      }
    }
  }
  kiln_kernel_gemm_params_t p = {
      .m = c->m, .n = c->n, .k = c->k, .batch = c->batch,
      .a_batch_stride = c->m * c->k, .a_row_stride = c->k, .a_col_stride = 1,
      .b_batch_stride = 0, .b_row_stride = (uint32_t)row_bytes, .b_col_stride = 0,
      .c_batch_stride = c->m * c->n, .c_row_stride = c->n,
      .bias_batch_stride = 0, .bias_row_stride = 0, .bias_col_stride = 1,
      .residual_batch_stride = c->m * c->n, .residual_row_stride = c->n,
      .scale = 1.0f, .alpha = 0, .beta = 6};
  KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_QGEMM_LAYOUT, layout));
  KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_TM, c->tm));
  KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_ACTIVATION, c->act));
  KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_HAS_BIAS, c->bias));
  KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_HAS_RESIDUAL, c->residual));
  uint32_t grid[3];
  KILN_ASSERT_OK(kiln_kernel_grid_gemm(&config, &p, grid));
  const size_t fb = f16 ? 2 : 4;
  gpu_arg_t args[5] = {{f16 ? (const void*)ha : a, a_count * fb},
                       {packed, w_bytes},
                       {f16 ? (const void*)hbias : bias, (size_t)c->n * fb},
                       {f16 ? (const void*)hresidual : residual, out_count * fb},
                       {NULL, out_count * fb}};
  gpu_run(config.kernel, config.variant, &config, &p, sizeof(p), args, 5, 4,
          f16 ? (void*)hgot : got, out_count * fb, grid);
  for (size_t i = 0; f16 && i < out_count; ++i) got[i] = gpu_half_to_float(hgot[i]);
  gpu_expect_close(what, got, want, out_count, 1e-4 * max_ref, f16 ? 1.0 / 1024 : 0);
  free(ha);
  free(hbias);
  free(hresidual);
  free(hgot);
  free(a);
  free(w);
  free(bias);
  free(residual);
  free(deq);
  free(want);
  free(got);
  free(packed);
}

// Edge sizes: k of one block and of many, n not a multiple of the
// workgroup's columns, one row (GEMV) and rows not a multiple of TM,
// batches, every epilogue.
static const qgemm_case_t kCases[] = {
    {1, 1, 37, 256, false, false, KILN_ACT_NONE, 1},
    {1, 1, 64, 1024, true, false, KILN_ACT_NONE, 1},
    {1, 5, 13, 512, true, true, KILN_ACT_RELU, 4},
    {2, 3, 9, 256, false, true, KILN_ACT_CLIP, 2},
    {1, 8, 33, 768, true, false, KILN_ACT_GELU, 8},
};

// Every case at the CPU configuration (lavapipe's), the GEMV and the TM =
// 4 and 8 row cases at the GPU ones (32 slices x 8 rows; the portable target's 32 x 4):
// pipelines are built per case, and CI time is 2 cores.
KILN_TEST(GpuQgemmTest, EveryLayoutEveryArch) {
  const char* arches[] = {"cpu", "hopper", "unknown"};
  const kiln_quant_layout_t layouts[] = {KILN_QUANT_INT8, KILN_QUANT_Q8_0, KILN_QUANT_Q4_0,
                                         KILN_QUANT_Q4_K, KILN_QUANT_Q4_ZP};
  const kiln_kernel_arch_caps_t* device = kiln_vk_harness_caps(gpu_harness());
  for (size_t a = 0; a < sizeof(arches) / sizeof(arches[0]); ++a) {
    kiln_kernel_arch_caps_t caps;
    KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch(arches[a], &caps));
    kiln_kernel_config_t config;
    KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_QGEMM, &caps,
                                             KILN_KERNEL_STORAGE_FP32, &config));
    if (config.workgroup_size[0] * config.workgroup_size[1] > device->max_workgroup_invocations ||
        config.shared_memory_bytes > device->max_shared_memory_bytes) {
      continue;
    }
    for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]); ++l) {
      for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
        if (a > 0 && i != 1 && i != 2 && i != 4) continue;
        char what[96];
        snprintf(what, sizeof(what), "qgemm %s case %zu, %s config",
                 kiln_quant_layout_name(layouts[l]), i, arches[a]);
        run_qgemm_case(what, layouts[l], &kCases[i], config, false);
      }
    }
  }
}

// qgemv at edge sizes: n of 1, 7, 31, 32, 33 and 4097 weight rows (not
// multiples of any tiling's rows), k of one block, of several and long (512
// groups: more than one pass of every lane quad), m = 1..8 rows of A (TM =
// m, and TM 4 over 8 rows), a batch of 2, every epilogue.
typedef struct qgemv_case_t {
  uint32_t batch, m, n, blocks;  // k = blocks x the layout's block (32; q4_K 256)
  bool bias, residual;
  uint32_t act;
  uint32_t tm;
} qgemv_case_t;

static const qgemv_case_t kGemvCases[] = {
    {1, 1, 1, 1, false, false, KILN_ACT_NONE, 1},
    {1, 1, 7, 3, true, false, KILN_ACT_RELU, 1},
    {1, 1, 31, 1, false, true, KILN_ACT_NONE, 1},
    {1, 2, 32, 3, true, true, KILN_ACT_CLIP, 2},
    {1, 3, 33, 2, true, false, KILN_ACT_GELU, 3},
    {1, 1, 4097, 1, true, false, KILN_ACT_NONE, 1},
    {1, 5, 7, 512, false, false, KILN_ACT_NONE, 5},
    {2, 4, 9, 3, true, true, KILN_ACT_NONE, 4},
    {1, 6, 3, 2, false, false, KILN_ACT_NONE, 6},
    {1, 7, 5, 3, true, false, KILN_ACT_NONE, 7},
    {1, 8, 33, 2, false, true, KILN_ACT_RELU, 8},
    {1, 8, 13, 3, true, false, KILN_ACT_NONE, 4},
};

// The cases at `base` (its variant's storage); `few`: the cases 4 and 7
// (epilogues, 3 and 4 rows of A) and the long k (6).
static void run_qgemv_cases(const char* arch, const kiln_kernel_config_t* base, bool few) {
  const kiln_quant_layout_t layouts[] = {KILN_QUANT_INT8, KILN_QUANT_Q8_0, KILN_QUANT_Q4_0,
                                         KILN_QUANT_Q4_K, KILN_QUANT_Q4_ZP};
  for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]); ++l) {
    const uint32_t block = layouts[l] == KILN_QUANT_Q4_K ? 256 : 32;
    for (size_t i = 0; i < sizeof(kGemvCases) / sizeof(kGemvCases[0]); ++i) {
      if (few && i != 4 && i != 6 && i != 7) continue;
      const qgemv_case_t* g = &kGemvCases[i];
      // Long k: 512 groups of 32 (q4_K: 64 superblocks).
      const uint32_t blocks = g->blocks == 512 && block == 256 ? 64 : g->blocks;
      const qgemm_case_t c = {g->batch, g->m, g->n, blocks * block, g->bias, g->residual,
                              g->act, g->tm};
      char what[128];
      snprintf(what, sizeof(what), "qgemv %s case %zu (m %u n %u k %u), %s config",
               kiln_quant_layout_name(layouts[l]), i, c.m, c.n, c.k, arch);
      run_qgemm_case(what, layouts[l], &c, *base,
                     base->variant == KILN_KERNEL_VARIANT_FP16_STORAGE);
    }
  }
}

// `config` under `tiling` (hopper caps): workgroup size, rows, unroll, span.
static void apply_qgemv_tiling(const kiln_kernel_qgemv_tiling_t* tiling,
                               kiln_kernel_config_t* config) {
  kiln_kernel_arch_caps_t caps;
  KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch("hopper", &caps));
  KILN_ASSERT_OK(kiln_kernel_qgemv_tiling_apply(tiling, &caps, config));
  KILN_ASSERT_OK(kiln_kernel_config_set_spec(config, KILN_SPEC_WORKGROUP_X, tiling->wg));
}

// Every case at the hopper tiling (the subgroup build where the device has
// subgroup arithmetic) and on the CPU configuration (qgemv_cpu), a few and
// the long k through the shared-memory tree and at each span (quarters of a
// group per lane) the table does not use, and a candidate per distinct
// span, unroll and accumulators-outnumber-lanes (8 rows of A): CI time is
// 2 cores, and pipelines are built per case.
KILN_TEST(GpuQgemmTest, QgemvEveryLayoutEdgeSizes) {
  const kiln_kernel_arch_caps_t* device = kiln_vk_harness_caps(gpu_harness());
  const char* arches[] = {"hopper", "cpu"};
  for (size_t a = 0; a < sizeof(arches) / sizeof(arches[0]); ++a) {
    kiln_kernel_arch_caps_t caps;
    KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch(arches[a], &caps));
    caps.subgroup_arithmetic = device->subgroup_arithmetic;
    kiln_kernel_config_t config;
    KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_QGEMV, &caps,
                                             KILN_KERNEL_STORAGE_FP32, &config));
    KILN_ASSERT_EQ(config.kernel, KILN_KERNEL_QGEMV);
    if (config.workgroup_size[0] * config.workgroup_size[1] > device->max_workgroup_invocations) {
      continue;
    }
    run_qgemv_cases(arches[a], &config, false);
    if (config.variant == KILN_KERNEL_VARIANT_SUBGROUP) {
      kiln_kernel_config_t tree = config;
      tree.variant = KILN_KERNEL_VARIANT_FP32;
      tree.required_features &= ~(uint32_t)KILN_FORMAT_FEATURE_SUBGROUP_OPS;
      run_qgemv_cases("hopper tree", &tree, true);
    }
    if (a == 0) {
      const kiln_kernel_qgemv_tiling_t* table = kiln_kernel_qgemv_tuning("hopper");
      KILN_ASSERT_TRUE(table != NULL);
      for (uint32_t span = 1; span <= 4; span *= 2) {
        if (span == table->span) continue;
        kiln_kernel_qgemv_tiling_t t = *table;
        t.span = span;
        kiln_kernel_config_t spanned = config;
        apply_qgemv_tiling(&t, &spanned);
        char what[32];
        snprintf(what, sizeof(what), "hopper span %u", span);
        run_qgemv_cases(what, &spanned, true);
      }
    }
  }
  kiln_kernel_arch_caps_t caps;
  KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch("hopper", &caps));
  caps.subgroup_arithmetic = device->subgroup_arithmetic;
  uint32_t seen[3][5][2] = {{{0}}};  // span 1/2/4, unroll 1..4, 8 x rows > wg
  for (size_t t = 0; t < kiln_kernel_qgemv_candidate_count(); ++t) {
    const kiln_kernel_qgemv_tiling_t* tiling = kiln_kernel_qgemv_candidate(t);
    if (tiling->wg > device->max_workgroup_invocations) continue;
    const bool crowded = 8 * tiling->rows > tiling->wg;
    uint32_t* mark = &seen[tiling->span == 4 ? 2 : tiling->span - 1][tiling->unroll][crowded];
    if ((*mark)++) continue;
    kiln_kernel_config_t config;
    KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_QGEMV, &caps,
                                             KILN_KERNEL_STORAGE_FP32, &config));
    apply_qgemv_tiling(tiling, &config);
    char what[48];
    snprintf(what, sizeof(what), "candidate %u x %u u%u s%u", tiling->wg, tiling->rows,
             tiling->unroll, tiling->span);
    // m 3, n 33 under the tiling (q4_0), and 8 rows of A (more
    // accumulators than lanes at 32 x 8; q8_0).
    const qgemm_case_t c = {1, 3, 33, 64, true, false, KILN_ACT_GELU, 3};
    run_qgemm_case(what, KILN_QUANT_Q4_0, &c, config, false);
    const qgemm_case_t c8 = {1, 8, 17, 96, false, true, KILN_ACT_NONE, 8};
    if (crowded) run_qgemm_case(what, KILN_QUANT_Q8_0, &c8, config, false);
  }
}

// qgemv_cpu's row blocks (TM = 2..8 rows of A sharing each decoded weight
// group; the edge sizes above cover TM 2..8 at the table's TN): TN = 4
// (the table's) on 17 rows at TM 8 in every layout, and TN = 1, 8 and 3
// on the layouts that differ there (int8's per-row scales past row 4,
// q4_K's and q4_zp's per-group scales over 512 groups); m not a multiple
// of TM (the last block's rows past m are clamped and not stored), n not a
// multiple of the lanes' columns, k of one group, several and 512 (q4_K:
// 64 superblocks), a batch of 2, epilogues. Pipelines are built per case
// (about a second each on lavapipe): 10 of them.
KILN_TEST(GpuQgemmTest, QgemvCpuRowBlocks) {
  typedef struct {
    uint32_t tn;
    qgemv_case_t c;
    uint32_t layouts;  // bits 1 << kiln_quant_layout_t
  } block_case_t;
  const uint32_t all = ~0u;
  const uint32_t int8 = 1u << KILN_QUANT_INT8, q4_0 = 1u << KILN_QUANT_Q4_0;
  const uint32_t q4_k = 1u << KILN_QUANT_Q4_K, q4_zp = 1u << KILN_QUANT_Q4_ZP;
  const block_case_t kBlockCases[] = {
      {4, {1, 17, 37, 3, true, true, KILN_ACT_GELU, 8}, all},
      {1, {1, 7, 9, 1, false, false, KILN_ACT_RELU, 3}, q4_0},
      {8, {2, 5, 70, 2, true, false, KILN_ACT_NONE, 5}, int8 | q4_0},
      {3, {1, 3, 50, 512, false, true, KILN_ACT_NONE, 2}, q4_k | q4_zp},
  };
  const kiln_quant_layout_t layouts[] = {KILN_QUANT_INT8, KILN_QUANT_Q8_0, KILN_QUANT_Q4_0,
                                         KILN_QUANT_Q4_K, KILN_QUANT_Q4_ZP};
  kiln_kernel_arch_caps_t caps;
  KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch("cpu", &caps));
  for (size_t i = 0; i < sizeof(kBlockCases) / sizeof(kBlockCases[0]); ++i) {
    kiln_kernel_config_t config;
    KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_QGEMM, &caps,
                                             KILN_KERNEL_STORAGE_FP32, &config));
    KILN_ASSERT_EQ(config.variant, KILN_KERNEL_VARIANT_CPU);
    KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_TN, kBlockCases[i].tn));
    const qgemv_case_t* g = &kBlockCases[i].c;
    for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]); ++l) {
      if (!(kBlockCases[i].layouts & (1u << layouts[l]))) continue;
      const uint32_t block = layouts[l] == KILN_QUANT_Q4_K ? 256 : 32;
      const uint32_t blocks = g->blocks == 512 && block == 256 ? 64 : g->blocks;
      const qgemm_case_t c = {g->batch, g->m, g->n, blocks * block, g->bias, g->residual,
                              g->act, g->tm};
      char what[128];
      snprintf(what, sizeof(what), "qgemv_cpu %s TM %u TN %u (m %u n %u k %u)",
               kiln_quant_layout_name(layouts[l]), c.tm, kBlockCases[i].tn, c.m, c.n, c.k);
      run_qgemm_case(what, layouts[l], &c, config, false);
    }
  }
}

// qgemv_f16 (--precision=f16 GEMVs): the hopper tiling's fp16-storage build
// (shared-memory tree) and the one CPU devices get at f16 (the table's cpu
// tiling: 8 lanes, a whole group each) on a few cases and the long k.
KILN_TEST(GpuQgemmTest, QgemvF16EdgeSizes) {
  const kiln_kernel_arch_caps_t* device = kiln_vk_harness_caps(gpu_harness());
  if (!device->fp16_storage) return;  // the f16 builds need 16-bit storage
  const char* arches[] = {"hopper", "cpu"};
  for (size_t a = 0; a < sizeof(arches) / sizeof(arches[0]); ++a) {
    kiln_kernel_arch_caps_t caps;
    KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch(arches[a], &caps));
    caps.fp16_storage = true;
    kiln_kernel_config_t config;
    KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_QGEMV, &caps,
                                             KILN_KERNEL_STORAGE_FP16, &config));
    KILN_ASSERT_EQ(config.variant, KILN_KERNEL_VARIANT_FP16_STORAGE);
    if (config.workgroup_size[0] > device->max_workgroup_invocations) continue;
    char what[32];
    snprintf(what, sizeof(what), "qgemv_f16 %s", arches[a]);
    run_qgemv_cases(what, &config, true);
  }
}

// qgemm_f16 (--precision=f16 products of more rows than qgemv takes): the CPU configuration lavapipe
// gets at f16 (8 k slices x 32 columns) on every qgemm case and three of
// the GEMV edge sizes, and the GPU tilings (hopper 32 x 8, portable 32 x 4)
// on the GEMV and the 4- and 8-row cases in q4_0.
KILN_TEST(GpuQgemmTest, F16EveryLayoutEdgeSizes) {
  const kiln_kernel_arch_caps_t* device = kiln_vk_harness_caps(gpu_harness());
  if (!device->fp16_storage) return;  // the f16 builds need 16-bit storage
  const char* arches[] = {"cpu", "hopper", "unknown"};
  const kiln_quant_layout_t layouts[] = {KILN_QUANT_INT8, KILN_QUANT_Q8_0, KILN_QUANT_Q4_0,
                                         KILN_QUANT_Q4_K, KILN_QUANT_Q4_ZP};
  for (size_t a = 0; a < sizeof(arches) / sizeof(arches[0]); ++a) {
    kiln_kernel_arch_caps_t caps;
    KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch(arches[a], &caps));
    caps.fp16_storage = true;
    kiln_kernel_config_t config;
    KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_QGEMM, &caps,
                                             KILN_KERNEL_STORAGE_FP16, &config));
    KILN_ASSERT_EQ(config.variant, KILN_KERNEL_VARIANT_FP16_STORAGE);
    if (config.workgroup_size[0] * config.workgroup_size[1] > device->max_workgroup_invocations ||
        config.shared_memory_bytes > device->max_shared_memory_bytes) {
      continue;
    }
    for (size_t l = 0; l < sizeof(layouts) / sizeof(layouts[0]); ++l) {
      // The GPU tilings on q4_0 only: the f16 build differs from qgemm in
      // A, bias, residual and C, not in the decoders (every layout above).
      if (a > 0 && layouts[l] != KILN_QUANT_Q4_0) continue;
      for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
        if (a > 0 && i != 1 && i != 2 && i != 4) continue;
        char what[96];
        snprintf(what, sizeof(what), "qgemm_f16 %s case %zu, %s config",
                 kiln_quant_layout_name(layouts[l]), i, arches[a]);
        run_qgemm_case(what, layouts[l], &kCases[i], config, true);
      }
    }
    if (a == 0) run_qgemv_cases("qgemm_f16 cpu", &config, true);
  }
}
