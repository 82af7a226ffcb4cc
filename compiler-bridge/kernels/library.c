// The kernel table: each kernel's ABI as declared in kernels_abi.h, and the
// lookup of its embedded SPIR-V builds. tests/spirv checks every entry here
// against the reflection of the SPIR-V it points to.
#include <stdio.h>
#include <string.h>

#include "kiln/compiler/kernels.h"
#include "kiln/compiler/kernels_gemm_tuning.h"
#include "kiln/compiler/kernels_target.h"
#include "spirv_blobs.h"

#define RO(b, role) {b, true, role}
#define RW(b, role) {b, false, role}
#define V(v) (1u << KILN_KERNEL_VARIANT_##v)
// a/input, b/weight, bias, residual: every read-only binding.
#define KILN_CPU_TEXEL_INPUTS 0xFu

static const kiln_kernel_desc_t kKernels[KILN_KERNEL_COUNT] = {
    {KILN_KERNEL_GEMM, "gemm", "main", 5,
     {RO(0, "a"), RO(1, "b"), RO(2, "bias"), RO(3, "residual"), RW(4, "c")},
     sizeof(kiln_kernel_gemm_params_t), 2, V(FP32) | V(FP16_STORAGE) | V(CPU), 0,
     KILN_CPU_TEXEL_INPUTS},
    {KILN_KERNEL_CONV2D, "conv2d", "main", 5,
     {RO(0, "input"), RO(1, "weight"), RO(2, "bias"), RO(3, "residual"),
      RW(4, "output")},
     sizeof(kiln_kernel_conv2d_params_t), 2, V(FP32) | V(FP16_STORAGE) | V(CPU), 0,
     KILN_CPU_TEXEL_INPUTS},
    {KILN_KERNEL_DEPTHWISE_CONV2D, "depthwise_conv2d", "main", 5,
     {RO(0, "input"), RO(1, "weight"), RO(2, "bias"), RO(3, "residual"),
      RW(4, "output")},
     sizeof(kiln_kernel_conv2d_params_t), 1, V(FP32) | V(FP16_STORAGE) | V(CPU), 0,
     KILN_CPU_TEXEL_INPUTS},
    {KILN_KERNEL_CONV_TRANSPOSE2D, "conv_transpose2d", "main", 5,
     {RO(0, "input"), RO(1, "weight"), RO(2, "bias"), RO(3, "residual"),
      RW(4, "output")},
     sizeof(kiln_kernel_conv2d_params_t), 1, V(FP32) | V(FP16_STORAGE)},
    {KILN_KERNEL_BINARY, "binary", "main", 3,
     {RO(0, "a"), RO(1, "b"), RW(2, "output")},
     sizeof(kiln_kernel_binary_params_t), 1, V(FP32) | V(FP16_STORAGE)},
    {KILN_KERNEL_UNARY, "unary", "main", 2, {RO(0, "input"), RW(1, "output")},
     sizeof(kiln_kernel_unary_params_t), 1, V(FP32) | V(FP16_STORAGE)},
    {KILN_KERNEL_COPY, "copy", "main", 2, {RO(0, "input"), RW(1, "output")},
     sizeof(kiln_kernel_copy_params_t), 1, V(FP32) | V(FP16_STORAGE)},
    {KILN_KERNEL_STRIDED_COPY, "strided_copy", "main", 2,
     {RO(0, "input"), RW(1, "output")},
     sizeof(kiln_kernel_strided_copy_params_t), 1, V(FP32) | V(FP16_STORAGE)},
    {KILN_KERNEL_POOL2D, "pool2d", "main", 2, {RO(0, "input"), RW(1, "output")},
     sizeof(kiln_kernel_pool2d_params_t), 1, V(FP32) | V(FP16_STORAGE)},
    {KILN_KERNEL_REDUCE, "reduce", "main", 2, {RO(0, "input"), RW(1, "output")},
     sizeof(kiln_kernel_reduce_params_t), 1,
     V(FP32) | V(FP16_STORAGE) | V(SUBGROUP) | V(FP16_SUBGROUP)},
    {KILN_KERNEL_SOFTMAX, "softmax", "main", 2,
     {RO(0, "input"), RW(1, "output")},
     sizeof(kiln_kernel_softmax_params_t), 1,
     V(FP32) | V(FP16_STORAGE) | V(SUBGROUP) | V(FP16_SUBGROUP)},
    {KILN_KERNEL_NORM, "norm", "main", 4,
     {RO(0, "input"), RO(1, "scale"), RO(2, "bias"), RW(3, "output")},
     sizeof(kiln_kernel_norm_params_t), 1,
     V(FP32) | V(FP16_STORAGE) | V(SUBGROUP) | V(FP16_SUBGROUP)},
    {KILN_KERNEL_GATHER, "gather", "main", 3,
     {RO(0, "data"), RO(1, "indices"), RW(2, "output")},
     sizeof(kiln_kernel_gather_params_t), 1, V(FP32) | V(FP16_STORAGE)},
    {KILN_KERNEL_PAD, "pad", "main", 2, {RO(0, "input"), RW(1, "output")},
     sizeof(kiln_kernel_pad_params_t), 1, V(FP32) | V(FP16_STORAGE)},
    {KILN_KERNEL_RESIZE, "resize", "main", 2, {RO(0, "input"), RW(1, "output")},
     sizeof(kiln_kernel_resize_params_t), 1, V(FP32) | V(FP16_STORAGE)},
    // The cpu variant is conv2d_cpu (same ABI; config.c maps the epilogue
    // spec ids), see below.
    {KILN_KERNEL_CONV2D_GEMM, "conv2d_gemm", "main", 5,
     {RO(0, "input"), RO(1, "weight"), RO(2, "bias"), RO(3, "residual"),
      RW(4, "output")},
     sizeof(kiln_kernel_conv2d_params_t), 2, V(FP32) | V(FP16_STORAGE) | V(CPU), 0,
     KILN_CPU_TEXEL_INPUTS},
    {KILN_KERNEL_CAST_F32_TO_F16, "cast_f32_to_f16", "main", 2,
     {RO(0, "input"), RW(1, "output")},
     sizeof(kiln_kernel_copy_params_t), 1, V(FP32), KILN_FORMAT_FEATURE_STORAGE_16BIT},
    {KILN_KERNEL_CAST_F16_TO_F32, "cast_f16_to_f32", "main", 2,
     {RO(0, "input"), RW(1, "output")},
     sizeof(kiln_kernel_copy_params_t), 1, V(FP32), KILN_FORMAT_FEATURE_STORAGE_16BIT},
    {KILN_KERNEL_CAST_INT_TO_F32, "cast_int_to_f32", "main", 2,
     {RO(0, "input"), RW(1, "output")},
     sizeof(kiln_kernel_copy_params_t), 1, V(FP32) | V(FP16_STORAGE)},
    {KILN_KERNEL_ROWS_SPLIT, "rows_split", "main", 5,
     {RO(0, "input"), RO(1, "scale"), RO(2, "bias"), RW(3, "stats"), RW(4, "output")},
     sizeof(kiln_kernel_rows_split_params_t), 1, V(FP32) | V(FP16_STORAGE)},
    {KILN_KERNEL_ATTENTION, "attention", "main", 5,
     {RO(0, "q"), RO(1, "k"), RO(2, "v"), RO(3, "mask"), RW(4, "output")},
     sizeof(kiln_kernel_attention_params_t), 1, V(FP32) | V(FP16_STORAGE)},
    {KILN_KERNEL_NORM_RESIDUAL, "norm_residual", "main", 5,
     {RO(0, "input"), RO(1, "scale"), RO(2, "bias"), RW(3, "output"), RO(4, "residual")},
     sizeof(kiln_kernel_norm_params_t), 1,
     V(FP32) | V(FP16_STORAGE) | V(SUBGROUP) | V(FP16_SUBGROUP)},
    {KILN_KERNEL_ARGREDUCE, "argreduce", "main", 2, {RO(0, "input"), RW(1, "output")},
     sizeof(kiln_kernel_reduce_params_t), 1, V(FP32) | V(FP16_STORAGE)},
    // gemm's ABI; the cpu variant is gemm_cpu (its m == 1 path), see below.
    {KILN_KERNEL_GEMV, "gemv", "main", 5,
     {RO(0, "a"), RO(1, "b"), RO(2, "bias"), RO(3, "residual"), RW(4, "c")},
     sizeof(kiln_kernel_gemm_params_t), 2, V(FP32) | V(FP16_STORAGE) | V(CPU), 0,
     KILN_CPU_TEXEL_INPUTS},
    {KILN_KERNEL_RECURRENT, "recurrent", "main", 4,
     {RO(0, "gates_x"), RO(1, "params"), RW(2, "state"), RW(3, "y")},
     sizeof(kiln_kernel_recurrent_params_t), 1, V(FP32)},
    // gemm's blobs with the small-output tiling (see kiln_lower_gemm_kernel).
    {KILN_KERNEL_GEMM_SMALL, "gemm_small", "main", 5,
     {RO(0, "a"), RO(1, "b"), RO(2, "bias"), RO(3, "residual"), RW(4, "c")},
     sizeof(kiln_kernel_gemm_params_t), 2, V(FP32) | V(FP16_STORAGE) | V(CPU), 0,
     KILN_CPU_TEXEL_INPUTS},
    {KILN_KERNEL_QUANTIZE_DEQUANTIZE, "quantize_dequantize", "main", 4,
     {RO(0, "x"), RO(1, "scale"), RO(2, "zero_point"), RW(3, "y")},
     sizeof(kiln_kernel_quantize_params_t), 1, V(FP32) | V(FP16_STORAGE)},
    // gemm's ABI; f16 x f16 -> f32 on 16x16 cooperative matrices
    // (SPV_NV_cooperative_matrix, shaderFloat16). The fp32 build stages f32
    // A/B as f16; the fp16-storage build reads and writes f16.
    {KILN_KERNEL_GEMM_COOPMAT, "gemm_coopmat", "main", 5,
     {RO(0, "a"), RO(1, "b"), RO(2, "bias"), RO(3, "residual"), RW(4, "c")},
     sizeof(kiln_kernel_gemm_params_t), 1, V(FP32) | V(FP16_STORAGE),
     KILN_FORMAT_FEATURE_COOPERATIVE_MATRIX | KILN_FORMAT_FEATURE_FP16},
    // gemm's push constants; b is the quantized weight's words. The cpu
    // variant is qgemv_cpu (a and b through texel buffers), see below; the
    // fp16-storage build (f16 a, bias, residual, c; the weight words
    // unchanged) serves every device at f16, CPU devices included.
    {KILN_KERNEL_QGEMM, "qgemm", "main", 5,
     {RO(0, "a"), RO(1, "b"), RO(2, "bias"), RO(3, "residual"), RW(4, "c")},
     sizeof(kiln_kernel_gemm_params_t), 2, V(FP32) | V(FP16_STORAGE) | V(CPU), 0, 3u},
    // conv2d_gemm's ABI and tiling on every target (no cpu variant); the
    // weight is a quantized [C_out][C_in/groups*KH*KW] matrix.
    {KILN_KERNEL_QCONV2D_GEMM, "qconv2d_gemm", "main", 5,
     {RO(0, "input"), RO(1, "weight"), RO(2, "bias"), RO(3, "residual"),
      RW(4, "output")},
     sizeof(kiln_kernel_conv2d_params_t), 2, V(FP32) | V(FP16_STORAGE)},
    // qgemm's ABI for a few rows of A; the cpu variant (qgemv_cpu.comp)
    // reads a and b through texel buffers like qgemm_cpu. The fp16-storage
    // build (f16 a, bias, residual, c; the weight words unchanged; the
    // shared-memory tree) serves every device at f16, CPU devices included.
    {KILN_KERNEL_QGEMV, "qgemv", "main", 5,
     {RO(0, "a"), RO(1, "b"), RO(2, "bias"), RO(3, "residual"), RW(4, "c")},
     sizeof(kiln_kernel_gemm_params_t), 2, V(FP32) | V(FP16_STORAGE) | V(SUBGROUP) | V(CPU), 0,
     3u},
    // attention's ABI on 16x16 cooperative matrices (SPV_NV_cooperative_matrix,
    // shaderFloat16), fp16 storage only; one build per head-dim capacity
    // (KILN_SPEC_ATTN_DIM4: 16 -> attention_coopmat, 32 -> _d128).
    {KILN_KERNEL_ATTENTION_COOPMAT, "attention_coopmat", "main", 5,
     {RO(0, "q"), RO(1, "k"), RO(2, "v"), RO(3, "mask"), RW(4, "output")},
     sizeof(kiln_kernel_attention_params_t), 1, V(FP16_STORAGE),
     KILN_FORMAT_FEATURE_COOPERATIVE_MATRIX | KILN_FORMAT_FEATURE_FP16},
    // fp32 only: dynamic quantization runs at fp32 (lower_quant.c).
    {KILN_KERNEL_DYNAMIC_QUANTIZE_PARAMS, "dynamic_quantize_params", "main", 4,
     {RO(0, "min"), RO(1, "max"), RW(2, "scale"), RW(3, "zero_point")},
     sizeof(kiln_kernel_dynamic_quantize_params_t), 1, V(FP32)},
    // attention's ABI, 16 query rows per workgroup and 32-key tiles
    // (head dims up to KILN_ATTN_TILED_DIM); GPU targets only (the lowering).
    {KILN_KERNEL_ATTENTION_TILED, "attention_tiled", "main", 5,
     {RO(0, "q"), RO(1, "k"), RO(2, "v"), RO(3, "mask"), RW(4, "output")},
     sizeof(kiln_kernel_attention_params_t), 1, V(FP32) | V(FP16_STORAGE)},
    // LayerNorm of a split-K product's rows summed from its parts (the
    // parts' sum and the norm in one dispatch; lower_reduce.c).
    {KILN_KERNEL_NORM_PARTS, "norm_parts", "main", 5,
     {RO(0, "parts"), RO(1, "params"), RO(2, "residual"), RW(3, "output"), RW(4, "sum")},
     sizeof(kiln_kernel_norm_parts_params_t), 1,
     V(FP32) | V(FP16_STORAGE) | V(SUBGROUP) | V(FP16_SUBGROUP)},
    // conv2d's push constants; the windows of x as rows of columns padded
    // to 8 (conv_columns.comp), for gemm_coopmat (lower_linear.c).
    {KILN_KERNEL_CONV_COLUMNS, "conv_columns", "main", 2, {RO(0, "input"), RW(1, "columns")},
     sizeof(kiln_kernel_conv2d_params_t), 1, V(FP32) | V(FP16_STORAGE)},
    // conv2d's push constants; Winograd F(2x2, 3x3)'s input and output
    // transforms around a batch-16 gemm (lower_winograd.c). fp32 only.
    {KILN_KERNEL_WINOGRAD_INPUT, "winograd_input", "main", 2, {RO(0, "input"), RW(1, "patches")},
     sizeof(kiln_kernel_conv2d_params_t), 1, V(FP32)},
    {KILN_KERNEL_WINOGRAD_OUTPUT, "winograd_output", "main", 4,
     {RO(0, "products"), RO(1, "bias"), RO(2, "residual"), RW(3, "output")},
     sizeof(kiln_kernel_conv2d_params_t), 1, V(FP32)},
    // gemm_coopmat's ABI over split-K's equal parts (the batch), with their
    // sum and the epilogue in the same dispatch: f32 partials and a counter
    // per output block, zero before the call (lower_splitk.c).
    {KILN_KERNEL_GEMM_COOPMAT_SPLIT, "gemm_coopmat_split", "main", 7,
     {RO(0, "a"), RO(1, "b"), RO(2, "bias"), RO(3, "residual"), RW(4, "c"),
      RW(5, "partials"), RW(6, "counters")},
     sizeof(kiln_kernel_gemm_params_t), 1, V(FP32) | V(FP16_STORAGE),
     KILN_FORMAT_FEATURE_COOPERATIVE_MATRIX | KILN_FORMAT_FEATURE_FP16},
    // A squeeze-and-excitation block's pool and two 1x1 convs over 1x1
    // images (lower_squeeze_excite.c): f32 partial sums and a counter per
    // image, zero before the call.
    {KILN_KERNEL_SQUEEZE_EXCITE, "squeeze_excite", "main", 8,
     {RO(0, "input"), RO(1, "weight1"), RO(2, "bias1"), RO(3, "weight2"), RO(4, "bias2"),
      RW(5, "output"), RW(6, "partials"), RW(7, "counters")},
     sizeof(kiln_kernel_squeeze_excite_params_t), 1, V(FP32) | V(FP16_STORAGE)},
};

static const char* const kVariantSuffix[KILN_KERNEL_VARIANT_COUNT] = {
    "", "_f16", "_subgroup", "_cpu", "_f16_subgroup"};

const kiln_kernel_desc_t* kiln_kernel_desc(kiln_kernel_id_t id) {
  if ((unsigned)id >= KILN_KERNEL_COUNT) return NULL;
  return &kKernels[id];
}

kiln_status_t kiln_kernel_lookup(const char* name, kiln_kernel_id_t* out_id) {
  if (out_id) *out_id = KILN_KERNEL_COUNT;
  if (!name || !out_id) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_kernel_lookup: NULL argument");
  }
  for (unsigned i = 0; i < KILN_KERNEL_COUNT; ++i) {
    if (strcmp(kKernels[i].name, name) == 0) {
      *out_id = (kiln_kernel_id_t)i;
      return kiln_ok_status();
    }
  }
  char known[512];
  size_t used = 0;
  known[0] = '\0';
  for (unsigned i = 0; i < KILN_KERNEL_COUNT && used < sizeof(known); ++i) {
    int n = snprintf(known + used, sizeof(known) - used, "%s%s",
                     i ? ", " : "", kKernels[i].name);
    if (n < 0) break;
    used += (size_t)n;
  }
  return kiln_make_status(KILN_STATUS_NOT_FOUND,
                          "no kernel named '%s' (known: %s)", name, known);
}

const char* kiln_kernel_variant_name(kiln_kernel_variant_t variant) {
  switch (variant) {
    case KILN_KERNEL_VARIANT_FP32: return "fp32";
    case KILN_KERNEL_VARIANT_FP16_STORAGE: return "fp16-storage";
    case KILN_KERNEL_VARIANT_SUBGROUP: return "subgroup";
    case KILN_KERNEL_VARIANT_CPU: return "cpu";
    case KILN_KERNEL_VARIANT_FP16_SUBGROUP: return "fp16-subgroup";
    default: return "unknown";
  }
}

uint32_t kiln_kernel_variant_features(kiln_kernel_variant_t variant) {
  switch (variant) {
    case KILN_KERNEL_VARIANT_FP16_STORAGE:
      return KILN_FORMAT_FEATURE_STORAGE_16BIT;
    case KILN_KERNEL_VARIANT_SUBGROUP:
      return KILN_FORMAT_FEATURE_SUBGROUP_OPS;
    case KILN_KERNEL_VARIANT_FP16_SUBGROUP:
      return KILN_FORMAT_FEATURE_STORAGE_16BIT | KILN_FORMAT_FEATURE_SUBGROUP_OPS;
    default: return 0;
  }
}

// The blob `base` + the variant's suffix, with the kernel's features.
static kiln_status_t kiln_kernel_find_blob(const kiln_kernel_desc_t* desc, const char* base,
                                           kiln_kernel_variant_t variant,
                                           kiln_kernel_spirv_t* out_spirv) {
  char blob_name[64];
  snprintf(blob_name, sizeof(blob_name), "%s%s", base, kVariantSuffix[variant]);
  for (size_t i = 0; i < kiln_kernel_spirv_blob_count; ++i) {
    if (strcmp(kiln_kernel_spirv_blobs[i].name, blob_name) == 0) {
      out_spirv->blob_name = kiln_kernel_spirv_blobs[i].name;
      out_spirv->words = kiln_kernel_spirv_blobs[i].words;
      out_spirv->word_count = kiln_kernel_spirv_blobs[i].word_count;
      out_spirv->required_features =
          desc->base_features | kiln_kernel_variant_features(variant);
      out_spirv->texel_bindings =
          variant == KILN_KERNEL_VARIANT_CPU ? desc->cpu_texel_bindings : 0;
      return kiln_ok_status();
    }
  }
  return kiln_make_status(KILN_STATUS_INTERNAL,
                          "kernel '%s': SPIR-V blob '%s' was not embedded",
                          desc->name, blob_name);
}

kiln_status_t kiln_kernel_get_spirv(kiln_kernel_id_t id,
                                    kiln_kernel_variant_t variant,
                                    kiln_kernel_spirv_t* out_spirv) {
  if (out_spirv) memset(out_spirv, 0, sizeof(*out_spirv));
  const kiln_kernel_desc_t* desc = kiln_kernel_desc(id);
  if (!desc || !out_spirv || (unsigned)variant >= KILN_KERNEL_VARIANT_COUNT) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_kernel_get_spirv: bad kernel id %d, variant "
                            "%d or NULL output",
                            (int)id, (int)variant);
  }
  if (!(desc->variant_mask & (1u << variant))) {
    return kiln_make_status(KILN_STATUS_NOT_FOUND,
                            "kernel '%s' has no %s variant", desc->name,
                            kiln_kernel_variant_name(variant));
  }
  // gemv shares gemm's ABI; on CPU devices gemm_cpu (which has its own
  // one-row loop) serves both, so its blob is not embedded twice.
  // gemm_small is gemm's blobs under another tiling. conv2d_gemm's cpu
  // variant is conv2d_cpu.
  const char* base = (id == KILN_KERNEL_GEMV && variant == KILN_KERNEL_VARIANT_CPU) ||
                             id == KILN_KERNEL_GEMM_SMALL
                         ? kKernels[KILN_KERNEL_GEMM].name
                         : desc->name;
  if (id == KILN_KERNEL_CONV2D_GEMM && variant == KILN_KERNEL_VARIANT_CPU) {
    base = kKernels[KILN_KERNEL_CONV2D].name;
  }
  // qgemm on CPU devices is qgemv_cpu (TM rows of A one after the other).
  if (id == KILN_KERNEL_QGEMM && variant == KILN_KERNEL_VARIANT_CPU) {
    base = kKernels[KILN_KERNEL_QGEMV].name;
  }
  return kiln_kernel_find_blob(desc, base, variant, out_spirv);
}

kiln_status_t kiln_kernel_get_config_spirv(const kiln_kernel_config_t* config,
                                           kiln_kernel_spirv_t* out_spirv) {
  if (out_spirv) memset(out_spirv, 0, sizeof(*out_spirv));
  if (!config || !out_spirv) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_kernel_get_config_spirv: NULL argument");
  }
  if (config->kernel == KILN_KERNEL_ATTENTION_COOPMAT) {
    KILN_RETURN_IF_ERROR(kiln_kernel_get_spirv(config->kernel, config->variant, out_spirv));
    const uint32_t dim4 = kiln_kernel_config_spec(config, KILN_SPEC_ATTN_DIM4, 0);
    if (dim4 == KILN_ATTN_COOPMAT_DIM_SMALL / 4) return kiln_ok_status();
    if (dim4 != KILN_ATTN_COOPMAT_DIM_MAX / 4) {
      return kiln_make_status(KILN_STATUS_NOT_FOUND,
                              "attention_coopmat has no build for head dims up to %u "
                              "(builds: %u, %u)",
                              dim4 * 4, KILN_ATTN_COOPMAT_DIM_SMALL, KILN_ATTN_COOPMAT_DIM_MAX);
    }
    return kiln_kernel_find_blob(kiln_kernel_desc(config->kernel), "attention_coopmat_d128",
                                 config->variant, out_spirv);
  }
  if (!kiln_kernel_is_gemm_coopmat(config->kernel)) {
    return kiln_kernel_get_spirv(config->kernel, config->variant, out_spirv);
  }
  // gemm_coopmat(_split): one build per tiling, named by it (kernels meson).
  KILN_RETURN_IF_ERROR(kiln_kernel_get_spirv(config->kernel, config->variant, out_spirv));
  kiln_kernel_coopmat_tiling_t tiling = {
      kiln_kernel_config_spec(config, KILN_SPEC_COOPMAT_WARPS_M, 0),
      kiln_kernel_config_spec(config, KILN_SPEC_COOPMAT_WARPS_N, 0),
      kiln_kernel_config_spec(config, KILN_SPEC_COOPMAT_TILES_M, 0),
      kiln_kernel_config_spec(config, KILN_SPEC_COOPMAT_TILES_N, 0),
      kiln_kernel_config_spec(config, KILN_SPEC_COOPMAT_BK, 0)};
  char base[64], name[80];
  KILN_RETURN_IF_ERROR(kiln_kernel_coopmat_build_name(&tiling, base, sizeof(base)));
  const kiln_kernel_desc_t* desc = kiln_kernel_desc(config->kernel);
  // "gemm_coopmat<tiling>" -> "<the kernel's name><tiling>"
  snprintf(name, sizeof(name), "%s%s", desc->name, base + strlen("gemm_coopmat"));
  return kiln_kernel_find_blob(desc, name, config->variant, out_spirv);
}
