// Op codes and specialization-constant ids shared by the C side and the GLSL
// kernels. The GLSL sources #include this very file, so the two can never
// disagree: keep it to #defines and comments (no C syntax).
#ifndef KILN_COMPILER_KERNELS_CODES_H_
#define KILN_COMPILER_KERNELS_CODES_H_

// Activation / unary op codes: the fused epilogue of GEMM and conv kernels
// and the op of the unary kernel. alpha/beta are push constants.
#define KILN_ACT_NONE 0
#define KILN_ACT_RELU 1
#define KILN_ACT_LEAKY_RELU 2    // x < 0 ? alpha * x : x
#define KILN_ACT_CLIP 3          // min(max(x, alpha), beta)   (Relu6: 0, 6)
#define KILN_ACT_SIGMOID 4
#define KILN_ACT_HARD_SIGMOID 5  // clamp(alpha * x + beta, 0, 1)
#define KILN_ACT_HARD_SWISH 6    // x * clamp(x / 6 + 0.5, 0, 1)
#define KILN_ACT_TANH 7
#define KILN_ACT_GELU 8          // 0.5 x (1 + erf(x / sqrt 2))
#define KILN_ACT_ERF 9
#define KILN_ACT_ELU 10          // x < 0 ? alpha * (exp(x) - 1) : x
#define KILN_ACT_SOFTPLUS 11     // log(1 + exp(x))
#define KILN_ACT_SQRT 12
#define KILN_ACT_EXP 13
#define KILN_ACT_LOG 14
#define KILN_ACT_NEG 15
#define KILN_ACT_ABS 16
#define KILN_ACT_RECIPROCAL 17
#define KILN_ACT_MISH 18         // x * tanh(softplus(x))
#define KILN_ACT_SOFTSIGN 19     // x / (1 + |x|)
#define KILN_ACT_SELU 20         // beta * (x > 0 ? x : alpha * (exp(x) - 1))
#define KILN_ACT_CELU 21         // x > 0 ? x : alpha * (exp(x / alpha) - 1)
#define KILN_ACT_THRESHOLDED_RELU 22  // x > alpha ? x : 0
#define KILN_ACT_SHRINK 23       // x < -alpha ? x + beta : x > alpha ? x - beta : 0
#define KILN_ACT_SIN 24
#define KILN_ACT_COS 25
#define KILN_ACT_TAN 26
#define KILN_ACT_ASIN 27
#define KILN_ACT_ACOS 28
#define KILN_ACT_ATAN 29
#define KILN_ACT_SINH 30
#define KILN_ACT_COSH 31
#define KILN_ACT_ASINH 32
#define KILN_ACT_ACOSH 33
#define KILN_ACT_ATANH 34
#define KILN_ACT_FLOOR 35
#define KILN_ACT_CEIL 36
#define KILN_ACT_ROUND 37        // half to even
#define KILN_ACT_SIGN 38
#define KILN_ACT_SILU 39         // x * sigmoid(x) (pass_fuse_silu.c's kiln.Silu)
#define KILN_ACT_COUNT 40

// Elementwise binary ops.
#define KILN_BINARY_ADD 0
#define KILN_BINARY_SUB 1
#define KILN_BINARY_MUL 2
#define KILN_BINARY_DIV 3
#define KILN_BINARY_POW 4
#define KILN_BINARY_MAX 5
#define KILN_BINARY_MIN 6
// b, except where b holds KILN_SELECT_KEEP_BITS: a there (Where with one
// constant branch; exact for NaN/inf a, unlike a * keep + fill).
#define KILN_BINARY_SELECT 7
#define KILN_BINARY_COUNT 8
// A quiet NaN whose payload no arithmetic produces.
#define KILN_SELECT_KEEP_BITS 0x7fc5a5a5u

// Reductions (reduce kernel and global pooling).
#define KILN_REDUCE_SUM 0
#define KILN_REDUCE_MEAN 1
#define KILN_REDUCE_MAX 2
#define KILN_REDUCE_MIN 3
// The sum family (ReduceL1/L2/SumSquare/LogSum/LogSumExp): what each value
// contributes and what the sum becomes. A long axis reduced in chunk
// partials applies the element transform in the first dispatch and the
// final one in the last (SUM in between; L2 = SUM_SQUARE ... SQRT_SUM).
#define KILN_REDUCE_SUM_ABS 4      // sum |x|
#define KILN_REDUCE_SUM_SQUARE 5   // sum x^2
#define KILN_REDUCE_L2 6           // sqrt(sum x^2)
#define KILN_REDUCE_SQRT_SUM 7     // sqrt(sum x)
#define KILN_REDUCE_LOG_SUM 8      // log(sum x)
#define KILN_REDUCE_LOG_SUM_EXP 9  // m + log(sum exp(x - m)), m = max: composes
#define KILN_REDUCE_PROD 10
#define KILN_REDUCE_COUNT 11

// Windowed pooling.
#define KILN_POOL_MAX 0
#define KILN_POOL_AVG 1

// Normalization kinds: which scale/bias element a row uses.
#define KILN_NORM_LAYER 0     // scale[r]: normalized over the last axes
#define KILN_NORM_INSTANCE 1  // scale[row % channels]: over H*W per (n, c)

// rows_split: what a long row is normalized as, and the dispatch's phase.
#define KILN_ROWS_SOFTMAX 0
#define KILN_ROWS_LOG_SOFTMAX 1
#define KILN_ROWS_LAYER_NORM 2
#define KILN_ROWS_INSTANCE_NORM 3
#define KILN_ROWS_PHASE_PARTIAL 0  // per (row, chunk) statistics
#define KILN_ROWS_PHASE_COMBINE 1  // per row, merged
#define KILN_ROWS_PHASE_APPLY 2    // per (row, chunk) outputs

// attention: how the mask binding enters the scores, and the phase.
#define KILN_ATTN_MASK_NONE 0
#define KILN_ATTN_MASK_ADD 1     // s += mask
#define KILN_ATTN_MASK_SELECT 2  // s = mask unless it holds KILN_SELECT_KEEP_BITS
#define KILN_ATTN_PHASE_FULL 0     // one key range: writes O
#define KILN_ATTN_PHASE_PARTIAL 1  // one key chunk: writes (m, l, acc) scratch
#define KILN_ATTN_PHASE_MERGE 2    // combines the chunks' scratch into O

// Pad modes (ONNX Pad).
#define KILN_PAD_CONSTANT 0
#define KILN_PAD_REFLECT 1
#define KILN_PAD_EDGE 2

// Resize modes (ONNX Resize, 2-D spatial on NCHW).
#define KILN_RESIZE_NEAREST 0
#define KILN_RESIZE_LINEAR 1
#define KILN_RESIZE_CUBIC 2  // ONNX cubic convolution, 4x4 taps
#define KILN_RESIZE_COORD_HALF_PIXEL 0
#define KILN_RESIZE_COORD_ASYMMETRIC 1
#define KILN_RESIZE_COORD_ALIGN_CORNERS 2
#define KILN_RESIZE_COORD_PYTORCH_HALF_PIXEL 3
#define KILN_RESIZE_COORD_TF_HALF_PIXEL_FOR_NN 4  // (x + 0.5) / scale
#define KILN_RESIZE_NEAREST_ROUND_PREFER_FLOOR 0
#define KILN_RESIZE_NEAREST_ROUND_PREFER_CEIL 1
#define KILN_RESIZE_NEAREST_FLOOR 2
#define KILN_RESIZE_NEAREST_CEIL 3

// Specialization-constant ids. Every kernel takes its workgroup size from
// ids 0..2 (local_size_x_id etc.); kernel-specific ones start at 3.
#define KILN_SPEC_WORKGROUP_X 0
#define KILN_SPEC_WORKGROUP_Y 1
#define KILN_SPEC_WORKGROUP_Z 2
// gemm: per-thread tile TM x TN, K step TK; tile = (WG_Y*TM) x (WG_X*TN).
#define KILN_SPEC_GEMM_TM 3
#define KILN_SPEC_GEMM_TN 4
#define KILN_SPEC_GEMM_TK 5
#define KILN_SPEC_GEMM_ACTIVATION 6
#define KILN_SPEC_GEMM_HAS_BIAS 7
#define KILN_SPEC_GEMM_HAS_RESIDUAL 8
// gemm / conv2d_gemm: k slices inside one workgroup (gemm_tile.glsl); the
// workgroup's y size is WG_Y * KSPLIT. 1 (unset) = no split.
#define KILN_SPEC_GEMM_KSPLIT 14
// gemm_coopmat (same ids 6..8 for the epilogue): WARPS_M x WARPS_N
// subgroups, each TILES_M x TILES_N 16x16 accumulator tiles; k staged BK
// (a multiple of 16) at a time. Block = (WARPS_M*TILES_M*16) x (WARPS_N*TILES_N*16).
#define KILN_SPEC_COOPMAT_WARPS_M 9
#define KILN_SPEC_COOPMAT_WARPS_N 10
#define KILN_SPEC_COOPMAT_TILES_M 11
#define KILN_SPEC_COOPMAT_TILES_N 12
#define KILN_SPEC_COOPMAT_BK 13
// gemm_coopmat: B staged k-major ([n][k], a transposed weight's layout)
// rather than n-major; either stages any B, this picks the fast path.
#define KILN_SPEC_COOPMAT_B_KMAJOR 15
// gemm_coopmat_split: its parts (the batch), 2..KILN_COOPMAT_SPLIT_PARTS_MAX;
// a spec constant so that the sum issues every part's load before the adds.
#define KILN_SPEC_COOPMAT_PARTS 17
// gemm_coopmat (fp16): B n-major with runs that start 4-aligned but not 8
// (a 14x14 image's rows of 196) loads each run of 8 as two 8-byte quads.
#define KILN_SPEC_COOPMAT_B_QUADS 18
// gemm_coopmat: B is a 2-D conv's windows read from its input image
// (implicit GEMM: B[k = c * KH * KW + i * KW + j][n = oh * OW + ow] =
// x[c][oh * SH + i * DH - PT][ow * SW + j * DW - PL], zero outside x), the
// geometry packed in these four constants; IN 0: B is a matrix. Batch z
// of B starts z * b_batch_stride values on (an image, or a split-K part of
// whole channels).
#define KILN_SPEC_COOPMAT_CONV_IN 19  // in_h | in_w << 16
// kernel_h | kernel_w << 8 | stride_h << 16 | stride_w << 24
#define KILN_SPEC_COOPMAT_CONV_KERNEL 20
#define KILN_SPEC_COOPMAT_CONV_PAD 21  // pad_top | pad_left << 16
#define KILN_SPEC_COOPMAT_CONV_OUT 22  // dilation_h | dilation_w << 8 | out_w << 16
#define KILN_COOPMAT_SPLIT_PARTS_MAX 16
// gemm_cpu: the code paths its pipeline is built with, a KILN_GEMM_CPU_*
// bit set (llvmpipe runs every loop body at least once, masked, so each
// unused path costs a pass of fetches per workgroup). Default: all; the
// bridge sets the ones a dispatch's layout takes
// (kiln_kernel_config_gemm_cpu_paths).
#define KILN_SPEC_GEMM_CPU_PATHS 16
#define KILN_GEMM_CPU_GEMV 0x01u         // m == 1, A and B contiguous in k
#define KILN_GEMM_CPU_KN 0x02u           // A and B contiguous in k
#define KILN_GEMM_CPU_NN 0x04u           // A in k, B in n (16-byte rows)
#define KILN_GEMM_CPU_NU 0x08u           // A in k, B in n (unaligned rows)
#define KILN_GEMM_CPU_SCALAR_K 0x10u     // other layouts and k tails
#define KILN_GEMM_CPU_SCALAR_STORE 0x20u // C rows not in whole vec4s
#define KILN_GEMM_CPU_BIAS_COLS 0x40u    // bias varying along n
#define KILN_GEMM_CPU_ALL 0x7Fu
// Not paths: set per layout (never in ALL), lanes down m (one 8-column tile
// per workgroup) where that pads the product less than lanes along n.
#define KILN_GEMM_CPU_LAYOUT_SET 0x100u
#define KILN_GEMM_CPU_DOWN_M 0x200u
// gemm_coopmat's one shared array, in uvec4s (41 KiB: a 128x128 block at BK
// 32, double-buffered, fits; NVIDIA gives Vulkan 48 KiB).
#define KILN_COOPMAT_SHARED_VEC4 2624
// gemm_coopmat's staging buffers at step depth BK: one at BK 64 (the next
// step waits in registers; two would pass 48 KiB for 128-row blocks), else
// two. The kernel and the shared-memory rule (coopmat_tuning.c) both use it.
#define KILN_COOPMAT_STAGES(bk) ((bk) == 64u ? 1u : 2u)
// conv2d / depthwise / conv_transpose.
// qgemm: gemm's TM (rows of A per invocation), activation, bias and
// residual ids, and the weight layout (KILN_QGEMM_*, = kiln_quant_layout_t).
#define KILN_SPEC_QGEMM_LAYOUT 9
// qgemv: quarters of a 32-element group per lane (1, 2 or 4).
#define KILN_SPEC_QGEMV_SPAN 10
#define KILN_QGEMM_INT8 1
#define KILN_QGEMM_Q8_0 2
#define KILN_QGEMM_Q4_0 3
#define KILN_QGEMM_Q4_K 4
#define KILN_QGEMM_Q4_ZP 5
#define KILN_SPEC_CONV_CO_BLOCK 3  // output channels per invocation (conv2d)
#define KILN_SPEC_CONV_ACTIVATION 4
#define KILN_SPEC_CONV_HAS_BIAS 5
#define KILN_SPEC_CONV_HAS_RESIDUAL 6
#define KILN_SPEC_CONV_TILE_W 7  // outputs per invocation along W (depthwise cpu)
// conv2d_cpu and depthwise_conv2d_cpu: the code paths built in (as
// KILN_SPEC_GEMM_CPU_PATHS; kiln_kernel_config_conv_cpu_paths).
#define KILN_SPEC_CONV_CPU_PATHS 16
#define KILN_CONV_CPU_ROW8 0x01u          // conv2d_cpu: 3-wide rows of 8 pixels
#define KILN_CONV_CPU_TAPS 0x02u          // conv2d_cpu: any window; depthwise: not 3x3
#define KILN_CONV_CPU_OWN 0x04u           // conv2d_cpu: blocks straddling groups
#define KILN_CONV_CPU_SCALAR_STORE 0x08u  // outputs not in whole vec4s
#define KILN_CONV_CPU_WIDE3 0x10u         // depthwise: 3x3 column segments
#define KILN_CONV_CPU_STRIDE1 0x20u       // depthwise 3x3: a stride of 1
#define KILN_CONV_CPU_STRIDE2 0x40u       // depthwise 3x3: a stride of 2
#define KILN_CONV_CPU_ALL 0x7Fu
// binary / unary.
#define KILN_SPEC_BINARY_OP 3
#define KILN_SPEC_BINARY_ACTIVATION 4
#define KILN_SPEC_UNARY_OP 3
// pool / reduce / softmax / norm.
#define KILN_SPEC_POOL_OP 3
#define KILN_SPEC_REDUCE_OP 3
#define KILN_SPEC_SOFTMAX_LOG 3
#define KILN_SPEC_NORM_KIND 3
// norm_parts: the longest row it stages in shared memory (hidden sizes up
// to 2048), and spec ids of the product's bias and residual.
#define KILN_NORM_PARTS_ROW_CAP 2048
// norm_parts: the product's bias and residual, and the number of parts
// (0: read from the push constants; else at most
// KILN_NORM_PARTS_MAX_COUNT, every part's load issued at once).
#define KILN_SPEC_NORM_PARTS_BIAS 3
#define KILN_SPEC_NORM_PARTS_RESIDUAL 4
#define KILN_SPEC_NORM_PARTS_COUNT 5
#define KILN_NORM_PARTS_MAX_COUNT 16
// squeeze_excite: its two activations (KILN_ACT_*) and biases; channels a
// workgroup pools (a team of invocations each, at least
// KILN_SE_MIN_TEAM); the most channels and hidden units it stages in
// shared memory, pixels a part (at most 64 trips of a team's loop) and
// parts an image (every loop bounded for llvmpipe's loop cap).
#define KILN_SPEC_SE_ACTIVATION_1 3
#define KILN_SPEC_SE_ACTIVATION_2 4
#define KILN_SPEC_SE_HAS_BIAS_1 5
#define KILN_SPEC_SE_HAS_BIAS_2 6
#define KILN_SE_GROUP_CHANNELS 8
#define KILN_SE_MAX_CHANNELS 2048
#define KILN_SE_MAX_HIDDEN 512
#define KILN_SE_MIN_TEAM 8
#define KILN_SE_PART_PIXELS 512
#define KILN_SE_MAX_PARTS 1024
// The lowering fuses blocks of at most this many hidden units x channels
// (lower_squeeze_excite.c says why).
#define KILN_SE_MAX_PRODUCT 10240
#define KILN_SPEC_ROWS_KIND 3
#define KILN_SPEC_ROWS_PHASE 4
// pad / resize.
#define KILN_SPEC_PAD_MODE 3
#define KILN_SPEC_RESIZE_MODE 3
#define KILN_SPEC_RESIZE_COORD 4
#define KILN_SPEC_RESIZE_NEAREST 5
#define KILN_SPEC_RESIZE_CUBIC_A 6          // cubic_coeff_a as float bits
#define KILN_SPEC_RESIZE_EXCLUDE_OUTSIDE 7  // cubic: taps outside get weight 0
// gather: 32-bit words per index (1: int32, 2: int64 read as lo/hi words).
#define KILN_SPEC_GATHER_INDEX_WORDS 3
// attention: q/k/v row capacity in vec4s, keys per shared tile, mask
// kind, causal, phase, invocations per query row.
#define KILN_SPEC_ATTN_DIM4 3
#define KILN_SPEC_ATTN_KEY_TILE 4
#define KILN_SPEC_ATTN_MASK 5
#define KILN_SPEC_ATTN_CAUSAL 6
#define KILN_SPEC_ATTN_PHASE 7
#define KILN_SPEC_ATTN_KEY_LANES 8
// attention_coopmat: its builds' head-dim capacities (KILN_SPEC_ATTN_DIM4
// picks one), its workgroup (8 subgroups of 32) and the shared memory of
// the larger build (D 128: Q's 16 x 17 uvec4s and 8 x 304 per subgroup).
#define KILN_ATTN_COOPMAT_DIM_SMALL 64
#define KILN_ATTN_COOPMAT_DIM_MAX 128
#define KILN_ATTN_COOPMAT_SHARED_BYTES 43264
#define KILN_ATTN_COOPMAT_ROWS 16  // query rows per workgroup
#define KILN_ATTN_COOPMAT_THREADS 256
// attention_tiled (GPUs, SIMT): head dims up to 64, 16 query rows per
// workgroup of 128 (8 invocations a row), key tiles of 32; shared memory:
// K tile 32 x 17 vec4s, V tile 32 x 16, P 16 x 33 floats, two 128-float
// reduction rows, Q 16 x 17 vec4s (24384 bytes).
#define KILN_ATTN_TILED_DIM 64
#define KILN_ATTN_TILED_ROWS 16
#define KILN_ATTN_TILED_THREADS 128
#define KILN_ATTN_TILED_KEYS 32
#define KILN_ATTN_TILED_SHARED_BYTES 24384
// cast_int_to_f32: 32-bit words per value (1: int32, 2: int64).
#define KILN_SPEC_CAST_INT_WORDS 3
// quantize_dequantize: what it computes (KILN_QUANT_*).
#define KILN_SPEC_QUANT_MODE 3
#define KILN_QUANT_QDQ 0         // fp32 -> quantize -> dequantize -> fp32
#define KILN_QUANT_QUANTIZE 1    // fp32 -> integer values (as fp32)
#define KILN_QUANT_DEQUANTIZE 2  // integer values (as fp32) -> fp32
#define KILN_QUANT_REQUANTIZE 3  // exact integer sums * multiplier -> integer values
// argreduce: ArgMin instead of ArgMax; ties to the last index.
#define KILN_SPEC_ARG_MIN 3
#define KILN_SPEC_ARG_SELECT_LAST 4
// recurrent: cell kind, GRU's linear_before_reset, activations f, g, h.
#define KILN_SPEC_RNN_KIND 3
#define KILN_SPEC_RNN_LBR 4
#define KILN_SPEC_RNN_ACT_F 5
#define KILN_SPEC_RNN_ACT_G 6
#define KILN_SPEC_RNN_ACT_H 7

// recurrent (ONNX LSTM / GRU / RNN time loop): cell kinds, flag bits of
// its params, and the largest hidden size its shared arrays hold (4 arrays
// of this many floats: 16 KiB, Vulkan's minimum shared memory).
#define KILN_RNN_CELL_SIMPLE 0
#define KILN_RNN_CELL_GRU 1
#define KILN_RNN_CELL_LSTM 2
#define KILN_RNN_MAX_HIDDEN 1024
#define KILN_RNN_FLAG_REVERSE 1       // direction 0 runs backwards
#define KILN_RNN_FLAG_HAS_Y 2         // write Y
#define KILN_RNN_FLAG_ZERO_H 4        // start from h = 0 (not the state)
#define KILN_RNN_FLAG_ZERO_C 8        // start from c = 0
#define KILN_RNN_FLAG_INPUT_FORGET 16 // LSTM: f = 1 - i
#define KILN_RNN_FLAG_CLIP 32         // clip gate inputs to [-clip, clip]
#define KILN_RNN_FLAG_LENS 64         // per-batch lengths in the params blob
#define KILN_RNN_FLAG_PEEPHOLE 128    // LSTM: P . c terms on i, f (c_{t-1}) and o (c_t)
#define KILN_RNN_FLAG_LENS_FLOAT 256  // lengths are float values (run-time), clamped to [0, seq]

#endif  // KILN_COMPILER_KERNELS_CODES_H_
