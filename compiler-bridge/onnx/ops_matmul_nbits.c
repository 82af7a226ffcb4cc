// com.microsoft::MatMulNBits (onnxruntime's int4 weight form): Y = A x
// dequant(B)^T (+ bias), B [N][k_blocks][block_size / 2] bytes of 4-bit
// codes (element e of a block in byte e / 2, low nibble first), one scale
// per (n, block), zero points packed two per byte per row (default 8);
// value = (code - zero_point) * scale. bits = 4, block_size a power of two
// in 16..256; B, scales and zero points must be constants (the compiler
// repacks them); g_idx is refused. Every malformed parameter is refused
// here, at import, naming the tensor.
#include <math.h>
#include <string.h>

#include "ops.h"

#ifndef KILN_OP_U8  // ops.h has it once the activation-side quantization is merged
#define KILN_OP_U8 (1u << KILN_GRAPH_DTYPE_U8)
#endif

static kiln_status_t kiln_nbits_constant(const kiln_op_infer_args_t* args, size_t index,
                                         unsigned mask, uint64_t count,
                                         const kiln_graph_value_t** out) {
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, index, mask, out));
  if (!(*out)->data) {
    return kiln_op_unsupported(args, "'%s' must be a constant initializer", (*out)->name);
  }
  size_t have = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&(*out)->shape, &have));
  if ((uint64_t)have != count) {
    return kiln_op_invalid(args, "'%s' has %llu elements; K, N and block_size need %llu",
                           (*out)->name, (unsigned long long)have,
                           (unsigned long long)count);
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_matmul_nbits(const kiln_op_infer_args_t* args) {
  int64_t k = 0, n = 0, bits = 4, block = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "K", 0, &k));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "N", 0, &n));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "bits", 4, &bits));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "block_size", 0, &block));
  if (bits != 4) return kiln_op_unsupported(args, "bits = %lld (only 4)", (long long)bits);
  if (block < 16 || block > 256 || (block & (block - 1)) != 0) {
    return kiln_op_invalid(args, "block_size %lld is not a power of two in 16..256",
                           (long long)block);
  }
  if (k <= 0 || n <= 0 || k > (1ll << 30) || n > (1ll << 30)) {
    return kiln_op_invalid(args, "K = %lld, N = %lld", (long long)k, (long long)n);
  }
  const kiln_graph_value_t* a = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &a));
  if (a->shape.rank < 1 || a->shape.dims[a->shape.rank - 1] != k) {
    return kiln_op_invalid(args, "A's last dim is not K = %lld", (long long)k);
  }
  const uint64_t k_blocks = (uint64_t)(k + block - 1) / (uint64_t)block;
  const kiln_graph_value_t *b = NULL, *scales = NULL, *zp = NULL, *bias = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_nbits_constant(args, 1, KILN_OP_U8, (uint64_t)n * k_blocks * (uint64_t)block / 2, &b));
  if (b->shape.rank != 3 || b->shape.dims[0] != n || (uint64_t)b->shape.dims[1] != k_blocks) {
    return kiln_op_invalid(args, "'%s' is not [N, k_blocks, block_size / 2] = [%lld, %llu, %lld]",
                           b->name, (long long)n, (unsigned long long)k_blocks,
                           (long long)block / 2);
  }
  KILN_RETURN_IF_ERROR(kiln_nbits_constant(args, 2, KILN_OP_F32, (uint64_t)n * k_blocks, &scales));
  for (uint64_t i = 0; i < (uint64_t)n * k_blocks; ++i) {
    const float s = ((const float*)scales->data)[i];
    if (!isfinite(s) || s == 0.0f) {
      return kiln_op_invalid(args, "'%s' element %llu is %g: scales must be finite and non-zero",
                             scales->name, (unsigned long long)i, (double)s);
    }
  }
  if (kiln_op_input(args, 3)) {
    if (kiln_op_input(args, 3)->dtype != KILN_GRAPH_DTYPE_U8) {
      return kiln_op_unsupported(args, "zero points '%s' of dtype %s (only packed uint8)",
                                 kiln_op_input(args, 3)->name,
                                 kiln_graph_dtype_name(kiln_op_input(args, 3)->dtype));
    }
    KILN_RETURN_IF_ERROR(
        kiln_nbits_constant(args, 3, KILN_OP_U8, (uint64_t)n * ((k_blocks + 1) / 2), &zp));
  }
  if (kiln_op_input(args, 4)) {
    return kiln_op_unsupported(args, "g_idx '%s' (act-order) is not supported",
                               kiln_op_input(args, 4)->name);
  }
  if (kiln_op_input(args, 5)) {
    KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 5, KILN_OP_F32, &bias));
    if (bias->shape.rank != 1 || bias->shape.dims[0] != n) {
      return kiln_op_invalid(args, "bias '%s' is not [N]", bias->name);
    }
  }
  kiln_graph_shape_t shape = a->shape;
  shape.dims[shape.rank - 1] = n;
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &shape);
}

static kiln_status_t kiln_run_matmul_nbits(const kiln_op_run_args_t* args) {
  int64_t k = 0, n = 0, block = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "K", 0, &k));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "N", 0, &n));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "block_size", 0, &block));
  const int64_t k_blocks = (k + block - 1) / block, zp_row = (k_blocks + 1) / 2;
  const uint8_t* b = (const uint8_t*)args->inputs[1].data;
  const float* scales = (const float*)args->inputs[2].data;
  const uint8_t* zp = args->input_count > 3 ? (const uint8_t*)args->inputs[3].data : NULL;
  const float* bias = args->input_count > 5 ? (const float*)args->inputs[5].data : NULL;
  const float* a = (const float*)args->inputs[0].data;
  float* y = (float*)args->outputs[0].data;
  const size_t rows = args->inputs[0].count / (size_t)k;
  for (int64_t j = 0; j < n; ++j) {
    for (size_t i = 0; i < rows; ++i) {
      double sum = bias ? bias[j] : 0.0;
      for (int64_t e = 0; e < k; ++e) {
        const int64_t bi = e / block, off = e % block;
        const int code = (b[(j * k_blocks + bi) * (block / 2) + off / 2] >> (4 * (off & 1))) & 15;
        const int z = zp ? (zp[j * zp_row + bi / 2] >> (4 * (bi & 1))) & 15 : 8;
        const float w = (float)(code - z) * scales[j * k_blocks + bi];
        sum += (double)a[i * (size_t)k + (size_t)e] * w;
      }
      y[i * (size_t)n + (size_t)j] = (float)sum;
    }
  }
  return kiln_ok_status();
}

const kiln_op_def_t kiln_ops_matmul_nbits[] = {
    {"MatMulNBits", "K,N,bits,block_size,accuracy_level", 3, 6, 1, 1, kiln_infer_matmul_nbits,
     kiln_run_matmul_nbits},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
