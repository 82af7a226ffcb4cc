// The GLSL compute-kernel library, compiled to SPIR-V at build time (glslc,
// checked by spirv-val) and embedded. Each kernel has an fp32 build and may
// have variants (fp16 storage, subgroup arithmetic) compiled separately; a
// variant names the device features it needs, and the runtime runs it only
// on a device that reports them. The per-kernel ABI is in kernels_abi.h;
// per-target tilings are in kernels_target.h.
#ifndef KILN_COMPILER_KERNELS_H_
#define KILN_COMPILER_KERNELS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/base/status.h"
#include "kiln/compiler/kernels_abi.h"
#include "kiln/format/module_format.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_kernel_id_e {
  KILN_KERNEL_GEMM = 0,
  KILN_KERNEL_CONV2D,
  KILN_KERNEL_DEPTHWISE_CONV2D,
  KILN_KERNEL_CONV_TRANSPOSE2D,
  KILN_KERNEL_BINARY,
  KILN_KERNEL_UNARY,
  KILN_KERNEL_COPY,
  KILN_KERNEL_STRIDED_COPY,
  KILN_KERNEL_POOL2D,
  KILN_KERNEL_REDUCE,
  KILN_KERNEL_SOFTMAX,
  KILN_KERNEL_NORM,
  KILN_KERNEL_GATHER,
  KILN_KERNEL_PAD,
  KILN_KERNEL_RESIZE,
  KILN_KERNEL_CONV2D_GEMM,  // conv as implicit GEMM (gemm tiling)
  KILN_KERNEL_CAST_F32_TO_F16,
  KILN_KERNEL_CAST_F16_TO_F32,
  KILN_KERNEL_CAST_INT_TO_F32,  // int32/int64 (mask) inputs -> fp32
  KILN_KERNEL_ROWS_SPLIT,       // softmax / norms over long rows, 3 phases
  KILN_KERNEL_ATTENTION,        // fused softmax(Q K^T) V, flash style
  KILN_KERNEL_NORM_RESIDUAL,    // norm of x + residual (binding 4)
  KILN_KERNEL_ARGREDUCE,        // ArgMax / ArgMin -> int64 (lo, hi words)
  KILN_KERNEL_GEMV,             // gemm's ABI for one-row products (linear layers)
  KILN_KERNEL_RECURRENT,        // LSTM / GRU / RNN steps in one dispatch
  KILN_KERNEL_GEMM_SMALL,       // gemm's blobs and ABI, tiled for few output tiles
  KILN_KERNEL_QUANTIZE_DEQUANTIZE,  // fp32 QDQ pair (kiln.QuantizeDequantize)
  KILN_KERNEL_GEMM_COOPMAT,     // gemm's ABI on cooperative matrices (f16 products)
  KILN_KERNEL_QGEMM,            // gemm's ABI, B a quantized weight (quant.h layouts)
  KILN_KERNEL_QCONV2D_GEMM,     // conv2d_gemm, the weight quantized (quant.h layouts)
  KILN_KERNEL_QGEMV,            // qgemm's ABI for M <= KILN_QGEMV_MAX_ROWS (bandwidth-bound)
  KILN_KERNEL_ATTENTION_COOPMAT,  // attention's ABI on cooperative matrices (fp16 storage)
  KILN_KERNEL_DYNAMIC_QUANTIZE_PARAMS,  // DynamicQuantizeLinear's scale / zero point
  KILN_KERNEL_ATTENTION_TILED,  // attention's ABI, tiled for GPUs (head dims <= 64)
  KILN_KERNEL_NORM_PARTS,       // LayerNorm of a split-K product's summed parts
  KILN_KERNEL_CONV_COLUMNS,     // a conv's windows as gemm_coopmat's columns (im2col)
  KILN_KERNEL_WINOGRAD_INPUT,   // Winograd F(2x2, 3x3): input patches transformed
  KILN_KERNEL_WINOGRAD_OUTPUT,  // Winograd F(2x2, 3x3): products back to outputs + epilogue
  KILN_KERNEL_GEMM_COOPMAT_SPLIT,  // gemm_coopmat over split-K's parts, their sum in it too
  KILN_KERNEL_SQUEEZE_EXCITE,   // squeeze-and-excitation: pool and two 1x1 convs in one
  KILN_KERNEL_COUNT,
} kiln_kernel_id_t;

typedef enum kiln_kernel_variant_e {
  KILN_KERNEL_VARIANT_FP32 = 0,
  KILN_KERNEL_VARIANT_FP16_STORAGE = 1,  // fp16 buffers, fp32 arithmetic
  KILN_KERNEL_VARIANT_SUBGROUP = 2,      // fp32 ABI, subgroup arithmetic
  KILN_KERNEL_VARIANT_CPU = 3,  // fp32 ABI, tuned for CPU devices (llvmpipe)
  // fp16 buffers with subgroup arithmetic (the row reductions: without it
  // an f16 LayerNorm of 1024 invocations reduced through 10 barriers).
  KILN_KERNEL_VARIANT_FP16_SUBGROUP = 4,
  KILN_KERNEL_VARIANT_COUNT,
} kiln_kernel_variant_t;

// Device features a variant needs, in the module format's vocabulary
// (KILN_FORMAT_FEATURE_*, kiln/format/module_format.h), so a config's
// required_features go into a module's variant unchanged. The two names
// below are aliases kept for existing callers; new code uses the format names.
#define KILN_KERNEL_FEATURE_FP16_STORAGE KILN_FORMAT_FEATURE_STORAGE_16BIT
#define KILN_KERNEL_FEATURE_SUBGROUP_ARITHMETIC KILN_FORMAT_FEATURE_SUBGROUP_OPS

#define KILN_KERNEL_MAX_BINDINGS 8

typedef struct kiln_kernel_binding_desc_t {
  uint32_t binding;  // set 0
  bool read_only;
  const char* role;  // "input", "weight", ... for messages
} kiln_kernel_binding_desc_t;

// What the bridge needs to emit an executable for a kernel.
typedef struct kiln_kernel_desc_t {
  kiln_kernel_id_t id;
  const char* name;         // "gemm"; variant blobs are name + "_f16" etc.
  const char* entry_point;  // "main"
  uint32_t binding_count;
  kiln_kernel_binding_desc_t bindings[KILN_KERNEL_MAX_BINDINGS];
  uint32_t push_constant_size;  // sizeof the params struct in kernels_abi.h
  uint32_t workgroup_dims;      // 1: only local_size_x_id; 2: x and y
  uint32_t variant_mask;        // bit (1 << variant) per variant built
  uint32_t base_features;       // needed by every build (casts: fp16 storage)
  // Bindings (bit per binding number) that the cpu variant reads as
  // uniform texel buffers of vec4 f32 (samplerBuffer) instead of storage
  // buffers: llvmpipe gathers texels without its per-lane SSBO load loop.
  uint32_t cpu_texel_bindings;
} kiln_kernel_desc_t;

// NULL for an id out of range.
const kiln_kernel_desc_t* kiln_kernel_desc(kiln_kernel_id_t id);
// By name ("gemm"); NOT_FOUND lists the known names.
kiln_status_t kiln_kernel_lookup(const char* name, kiln_kernel_id_t* out_id);
// gemm_coopmat and gemm_coopmat_split: one tiling, grid and build per tiling.
static inline bool kiln_kernel_is_gemm_coopmat(kiln_kernel_id_t id) {
  return id == KILN_KERNEL_GEMM_COOPMAT || id == KILN_KERNEL_GEMM_COOPMAT_SPLIT;
}

const char* kiln_kernel_variant_name(kiln_kernel_variant_t variant);
uint32_t kiln_kernel_variant_features(kiln_kernel_variant_t variant);

typedef struct kiln_kernel_spirv_t {
  const char* blob_name;  // "gemm_f16"
  const uint32_t* words;  // static storage
  size_t word_count;
  uint32_t required_features;  // KILN_FORMAT_FEATURE_* bits (base | variant)
  uint32_t texel_bindings;     // bit per binding bound as a uniform texel buffer
} kiln_kernel_spirv_t;

// The SPIR-V of one kernel variant; NOT_FOUND if that variant is not built.
kiln_status_t kiln_kernel_get_spirv(kiln_kernel_id_t id,
                                    kiln_kernel_variant_t variant,
                                    kiln_kernel_spirv_t* out_spirv);

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_KERNELS_H_
