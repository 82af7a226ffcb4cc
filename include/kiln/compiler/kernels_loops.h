// Loop-pass budget per kernel invocation.
//
// llvmpipe (lavapipe) ends every shader loop once an invocation has made
// 65535 loop passes in total and moves on, silently (Mesa's "loop limiter",
// LP_MAX_TGSI_LOOP_ITERATIONS). Measured on lavapipe (Mesa 22.3.6, LLVM 15,
// 8-lane SIMD) with a probe shader, see compiler-bridge/kernels/README.md:
// - one budget of 65535 passes per invocation, shared by every loop of the
//   shader: two loops in sequence or nested loops draw on the same count;
//   once it is spent every later loop runs exactly one pass;
// - a loop of T trips costs T + 1 passes (the pass that exits counts: a loop
//   of zero trips costs 1), and that exit pass runs the body once more with
//   every lane masked off, so each loop nested in it costs one more pass
//   (n x (1 x (0 trips)) cost 5 passes per outer trip, n x (2 x (0)) 7);
// - it is counted per group of 8 lanes (the SIMD width), over the lanes'
//   longest trip count; workgroups and lane groups do not share it;
// - a loop whose trip count is a compile-time or specialization constant
//   counts unless the compiler unrolls it: a 100000-trip constant loop
//   counted, 4- and 16-trip ones (and gemm's 16 x (4 + 4 x 4) nest at
//   TK=16, TM=TN=4) were unrolled.
// Every kernel the bridge dispatches must stay within this by construction:
// kiln_kernel_loop_passes bounds a dispatch's passes from its config, push
// constants and grid, and the ONNX lowering splits reductions that would
// exceed it into several dispatches (onnx-emit/lower_split.c).
#ifndef KILN_COMPILER_KERNELS_LOOPS_H_
#define KILN_COMPILER_KERNELS_LOOPS_H_

#include <stdint.h>

#include "kiln/base/status.h"
#include "kiln/compiler/kernels_target.h"

#ifdef __cplusplus
extern "C" {
#endif

// Loop passes one invocation may make (llvmpipe's limit, above).
#define KILN_KERNEL_LOOP_PASS_BUDGET 65535u

// The row and window kernels (reduce, softmax, norm, pool2d, rows_split)
// have no pass model; instead the lowering (onnx-emit/lower_rows.c) sizes
// chunks and window tiles so that each of their loops runs at most this many
// iterations per invocation. They keep at most three such loops plus
// grid-stride loops (llvmpipe, the device with the pass limit, binds at
// most 128 MiB, so at most ceil(2^25 / 65535) = 513 trips) and workgroup-reduction loops of a few
// trips: well inside the budget. It also keeps one invocation's work short
// on GPUs with a watchdog.
#define KILN_KERNEL_MAX_LOOP_ITERATIONS 4096u
_Static_assert(3 * (KILN_KERNEL_MAX_LOOP_ITERATIONS + 1) + 2 * 514 + 64 <
                   KILN_KERNEL_LOOP_PASS_BUDGET,
               "row kernels' loops fit the pass budget");

// An upper bound of the loop passes one invocation of `config`'s kernel and
// variant makes for push constants `params` (the kernel's params struct)
// dispatched over `grid`. Covers gemm, conv2d, conv2d_gemm,
// depthwise_conv2d and conv_transpose2d; UNIMPLEMENTED for other kernels.
kiln_status_t kiln_kernel_loop_passes(const kiln_kernel_config_t* config,
                                      const void* params, const uint32_t grid[3],
                                      uint64_t* out_passes);

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_KERNELS_LOOPS_H_
