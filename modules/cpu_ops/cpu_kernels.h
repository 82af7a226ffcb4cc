// Host implementations of the ops the GPU path does not take (TopK,
// NonZero, NonMaxSuppression): plain loops over host arrays that the
// cpu_ops module has already read back and bounds-checked.
#ifndef KILN_MODULES_CPU_OPS_CPU_KERNELS_H_
#define KILN_MODULES_CPU_OPS_CPU_KERNELS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/base/status.h"

// TopK along the middle axis of x[outer][n][inner]: values[outer][k][inner]
// and int64 indices. Sorted (largest first unless !largest); equal values
// keep the lower index first (onnxruntime's order); NaN counts as larger
// than any number. `scratch` holds n indices.
void kiln_cpu_topk(const float* x, size_t outer, size_t n, size_t inner, size_t k,
                   bool largest, float* values, int64_t* indices, int64_t* scratch);

// Element kinds NonZero reads (the `element` argument of cpu.nonzero).
typedef enum kiln_cpu_element_e {
  KILN_CPU_ELEMENT_F32 = 0,
  KILN_CPU_ELEMENT_I64 = 1,
  KILN_CPU_ELEMENT_I32 = 2,
  KILN_CPU_ELEMENT_U8 = 3,  // bool
  KILN_CPU_ELEMENT_COUNT,
} kiln_cpu_element_t;
size_t kiln_cpu_element_size(kiln_cpu_element_t element);

// Number of nonzero elements of x (count elements).
size_t kiln_cpu_nonzero_count(const void* x, kiln_cpu_element_t element, size_t count);
// Writes their coordinates as int64 [rank][found] (row-major order of x).
void kiln_cpu_nonzero(const void* x, kiln_cpu_element_t element, const int64_t* dims,
                      size_t rank, size_t found, int64_t* out);

// NonMaxSuppression (ONNX): boxes[batches][spatial][4], scores
// [batches][classes][spatial]; writes up to `capacity` rows of
// (batch, class, box) int64 to out and returns how many. `order` holds
// spatial indices, `selected` spatial indices too.
size_t kiln_cpu_nms(const float* boxes, const float* scores, size_t batches, size_t spatial,
                    size_t classes, size_t max_per_class, float iou_threshold,
                    bool has_score_threshold, float score_threshold, bool center_point_box,
                    int64_t* out, size_t capacity, int64_t* order, int64_t* selected);

// Comparisons, logic and selection with numpy broadcasting (the `op`
// argument of cpu.elementwise): compare ops read two operands of one
// element kind and write bool bytes; Not/And/Or/Xor read and write bool
// bytes; Where reads a bool condition and two operands of the output's kind.
typedef enum kiln_cpu_elementwise_e {
  KILN_CPU_EQUAL = 0,
  KILN_CPU_LESS,
  KILN_CPU_GREATER,
  KILN_CPU_LESS_OR_EQUAL,
  KILN_CPU_GREATER_OR_EQUAL,
  KILN_CPU_NOT,
  KILN_CPU_AND,
  KILN_CPU_OR,
  KILN_CPU_XOR,
  KILN_CPU_WHERE,
  KILN_CPU_COPY,  // operand a as is (a bool Reshape, by out's strides)
  KILN_CPU_ELEMENTWISE_COUNT,
} kiln_cpu_elementwise_t;
// Operands of `op` (1 to 3).
size_t kiln_cpu_elementwise_arity(kiln_cpu_elementwise_t op);

// One pass over out's `dims` (rank <= 8); operand k's element at out
// coordinate c is at sum(c[d] * strides[k][d]) (0 on broadcast dims).
typedef struct kiln_cpu_broadcast_t {
  size_t rank;
  int64_t dims[8];
  int64_t strides[3][8];
} kiln_cpu_broadcast_t;
void kiln_cpu_elementwise(kiln_cpu_elementwise_t op, const kiln_cpu_broadcast_t* shape,
                          kiln_cpu_element_t element, const void* const operands[3],
                          void* out);

#endif  // KILN_MODULES_CPU_OPS_CPU_KERNELS_H_
