// Looks ops up across the families.
#include <string.h>

#include "ops.h"

static const kiln_op_def_t* const kiln_op_families[] = {
    kiln_ops_elementwise, kiln_ops_shape, kiln_ops_copy, kiln_ops_conv,
    kiln_ops_pool,        kiln_ops_logic,
    kiln_ops_matmul,      kiln_ops_norm,  kiln_ops_reduce, kiln_ops_resize, kiln_ops_scatter,
    kiln_ops_einsum, kiln_ops_rnn, kiln_ops_space_depth,
    kiln_ops_trilu,
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
  return "Abs, Add, And, AveragePool, BatchNormalization, Cast, Clip, "
         "Concat, Constant, ConstantOfShape, Conv, ConvTranspose, DepthToSpace, Div, "
         "Dropout, Einsum, Elu, Equal, Erf, Exp, Expand, Flatten, Gather, Gelu, Gemm, "
         "GlobalAveragePool, GlobalMaxPool, Greater, GreaterOrEqual, GRU, "
         "HardSigmoid, HardSwish, Identity, InstanceNormalization, "
         "LayerNormalization, LeakyRelu, Less, LessOrEqual, Log, LogSoftmax, LSTM, "
         "MatMul, Max, MaxPool, Mean, Min, Mod, Mul, Neg, Not, Or, Pad, Pow, Range, "
         "Reciprocal, ReduceMax, ReduceMean, ReduceMin, ReduceProd, ReduceSum, Relu, "
         "Reshape, Resize, RNN, ScatterND, Shape, Sigmoid, Slice, Softmax, Softplus, "
         "SpaceToDepth, Split, "
         "Sqrt, Squeeze, Sub, Sum, Tanh, Transpose, Trilu, Unsqueeze, Where, Xor";
}
