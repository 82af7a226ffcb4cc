// Looks ops up across the families.
#include <string.h>

#include "ops.h"

static const kiln_op_def_t* const kiln_op_families[] = {
    kiln_ops_elementwise, kiln_ops_shape, kiln_ops_copy, kiln_ops_conv,
    kiln_ops_pool,
    kiln_ops_matmul,      kiln_ops_norm,  kiln_ops_reduce, kiln_ops_resize,
};

const kiln_op_def_t* kiln_op_find(const char* op_type) {
  for (size_t f = 0; f < sizeof(kiln_op_families) / sizeof(*kiln_op_families);
       ++f) {
    for (const kiln_op_def_t* op = kiln_op_families[f]; op->op_type; ++op) {
      if (strcmp(op->op_type, op_type) == 0) return op;
    }
  }
  return NULL;
}

const char* kiln_op_supported_list(void) {
  return "Abs, Add, AveragePool, BatchNormalization, Cast, Clip, Concat, "
         "Constant, Conv, ConvTranspose, Div, Dropout, Elu, Erf, Exp, Expand, "
         "Flatten, Gather, Gelu, Gemm, GlobalAveragePool, GlobalMaxPool, "
         "HardSigmoid, HardSwish, Identity, InstanceNormalization, "
         "LayerNormalization, LeakyRelu, Log, LogSoftmax, MatMul, MaxPool, Mul, "
         "Neg, Pad, Pow, Reciprocal, ReduceMax, ReduceMean, ReduceMin, "
         "ReduceSum, Relu, Reshape, Resize, Shape, Sigmoid, Slice, Softmax, "
         "Softplus, Split, Sqrt, Squeeze, Sub, Tanh, Transpose, Unsqueeze";
}
