// Loop passes per invocation of the reduction kernels (kernels_loops.h):
// each formula follows its kernel's loops (kiln_loops_loop: T + 1 passes,
// and the exit pass runs the body masked, a pass per nested loop);
// branches no lane of an invocation takes cost a pass per loop
// (KILN_LOOPS_MASKED).
// Loops with a constant trip count are counted too, except where the
// measurement in kernels_loops.h saw them unrolled.
#include <string.h>

#include "kiln/compiler/kernels_gemm_tuning.h"
#include "kiln/compiler/kernels_loops.h"
#include "kiln/compiler/kernels_target.h"

// The fixed loops of an epilogue (stores, activation of vec4s, per-row
// bias): gemm_cpu's are about 240 passes, conv2d_cpu's about 330.
#define KILN_LOOPS_EPILOGUE 512u
// Branches the lanes of an invocation do not take: llvmpipe still enters
// their loops, for one pass each.
#define KILN_LOOPS_MASKED 16u

static uint64_t kiln_loops_ceil_div(uint64_t a, uint64_t b) { return b ? (a + b - 1) / b : a; }

// One run of a loop of `trips` trips whose body costs `body` passes and
// holds `nested` loop statements: trips + 1 passes of its own, and on the
// exit pass the body runs once more, masked, each nested loop for a pass.
static uint64_t kiln_loops_loop(uint64_t trips, uint64_t body, uint64_t nested) {
  return trips + 1 + trips * body + nested;
}

// gemm_cpu: one of four vec4 k loops (k / 4 trips) and the scalar k tail,
// none with a loop inside.
static uint64_t kiln_loops_gemm_cpu(const kiln_kernel_gemm_params_t* p) {
  const uint64_t k4_end = kiln_kernel_gemm_cpu_k4_end(p);
  return 9 /* column bases */ + 4 + k4_end / 4 + kiln_loops_loop(p->k - k4_end, 0, 0) +
         KILN_LOOPS_EPILOGUE;
}

// gemm and conv2d_gemm on gemm_tile.glsl, every loop counted (none is
// assumed unrolled): the 16-trip accumulator reset; the first fetch and
// stage (an A and a B slot loop each); per step of TK the fetch and stage
// slot loops (also on the last step, where llvmpipe enters them masked)
// and the TK / 4 compute loop; the epilogue's loop over (up to) 16 quads
// holding 3 four-trip loops (residual, activation, stores).
static uint64_t kiln_loops_tiled(const kiln_kernel_config_t* config, uint64_t k) {
  const uint64_t tm = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TM, 8);
  const uint64_t tn = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TN, 8);
  const uint64_t tk = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TK, 8);
  // KSPLIT: WG_Y rows per k slice, each slice ceil(steps / KSPLIT) steps,
  // then the slices' tiles written (16 quads) and summed (KSPLIT - 1 per
  // quad inside the epilogue loop).
  const uint64_t ks = kiln_kernel_gemm_config_ks(config);
  const uint64_t wg_x = config->workgroup_size[0], wg_y = config->workgroup_size[1] / ks;
  const uint64_t threads = wg_x * wg_y > 0 ? wg_x * wg_y : 1;
  const uint64_t a_slots = kiln_loops_ceil_div(wg_y * tm * tk / 4, threads);
  const uint64_t b_slots = kiln_loops_ceil_div(wg_x * tn * tk / 4, threads);
  const uint64_t slots = kiln_loops_loop(a_slots, 0, 0) + kiln_loops_loop(b_slots, 0, 0);
  const uint64_t step = 2 * slots + kiln_loops_loop(tk / 4, 0, 0);
  const uint64_t steps = kiln_loops_ceil_div(kiln_loops_ceil_div(k, tk ? tk : 1), ks);
  const uint64_t reduce = ks > 1 ? kiln_loops_loop(16, 0, 0) : 0;
  return kiln_loops_loop(16, 0, 0) + 2 * slots + kiln_loops_loop(steps, step, 5) + reduce +
         kiln_loops_loop(16, 3 * kiln_loops_loop(4, 0, 0) + kiln_loops_loop(ks - 1, 0, 0), 3) +
         KILN_LOOPS_MASKED + KILN_LOOPS_EPILOGUE;
}

// gemm_coopmat (never run on llvmpipe, whose devices lack cooperative
// matrix; modelled so the lowering's split treats it like gemm): the
// accumulator reset, the first fetch and stage, per step of BK the fetch
// and stage slot loops and the BK / 16 compute loop holding the A-load,
// B and MMA loops; the epilogue's tile loops, each tile's quad loop
// holding the epilogue's 3 four-trip loops. Every loop counted.
static uint64_t kiln_loops_coopmat(const kiln_kernel_config_t* config, uint64_t k) {
  const uint64_t warps_m = kiln_kernel_config_spec(config, KILN_SPEC_COOPMAT_WARPS_M, 2);
  const uint64_t warps_n = kiln_kernel_config_spec(config, KILN_SPEC_COOPMAT_WARPS_N, 2);
  const uint64_t tiles_m = kiln_kernel_config_spec(config, KILN_SPEC_COOPMAT_TILES_M, 4);
  const uint64_t tiles_n = kiln_kernel_config_spec(config, KILN_SPEC_COOPMAT_TILES_N, 4);
  const uint64_t bk = kiln_kernel_config_spec(config, KILN_SPEC_COOPMAT_BK, 32);
  const uint64_t threads = config->workgroup_size[0] ? config->workgroup_size[0] : 1;
  const uint64_t sg = kiln_loops_ceil_div(threads, warps_m * warps_n);
  const uint64_t a_slots = kiln_loops_ceil_div(warps_m * tiles_m * 16 * bk / 8, threads);
  const uint64_t b_slots = kiln_loops_ceil_div(warps_n * tiles_n * 16 * bk / 8, threads);
  const uint64_t slots = kiln_loops_loop(a_slots, 0, 0) + kiln_loops_loop(b_slots, 0, 0);
  const uint64_t inner = kiln_loops_loop(tiles_m, 0, 0) +
                         kiln_loops_loop(tiles_n, kiln_loops_loop(tiles_m, 0, 0), 1);
  const uint64_t step = 2 * slots + kiln_loops_loop(bk / 16, inner, 2);
  const uint64_t steps = kiln_loops_ceil_div(k, bk ? bk : 1);
  const uint64_t tile = kiln_loops_loop(kiln_loops_ceil_div(64, sg ? sg : 1),
                                        3 * kiln_loops_loop(4, 0, 0), 3);
  return kiln_loops_loop(tiles_m * tiles_n, 0, 0) + 2 * slots + kiln_loops_loop(steps, step, 5) +
         kiln_loops_loop(tiles_m, kiln_loops_loop(tiles_n, tile, 1), 1) + KILN_LOOPS_MASKED +
         KILN_LOOPS_EPILOGUE;
}

// qgemm: the group loop (k / 32 over WG_X slices) whose body holds TN
// decodes (their constant loops counted, up to 9 trips each) and the TM x
// TN dot loops; the setup loops, the log2(WG_X) slice reduction and the
// epilogue's TM x TN loops.
static uint64_t kiln_loops_qgemm(const kiln_kernel_config_t* config,
                                 const kiln_kernel_gemm_params_t* p) {
  const uint64_t slices = config->workgroup_size[0] ? config->workgroup_size[0] : 1;
  const uint64_t tm = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TM, 1);
  const uint64_t per_slice = kiln_loops_ceil_div(p->k / 32, slices);
  uint64_t halvings = 0;
  for (uint64_t h = slices / 2; h > 0; h /= 2) ++halvings;
  const uint64_t tn = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TN, 1);
  const uint64_t body = kiln_loops_loop(tn, 3 * kiln_loops_loop(9, 0, 0), 3) +
                        kiln_loops_loop(tm, kiln_loops_loop(tn, 0, 0), 1);
  const uint64_t tile = kiln_loops_loop(tm * tn, 0, 0);
  return kiln_loops_loop(tn, 0, 0) + kiln_loops_loop(tm, 0, 0) + tile +
         kiln_loops_loop(per_slice, body, 2) + kiln_loops_loop(halvings, tile, 1) + 2 * tile +
         kiln_loops_loop(tm, kiln_loops_loop(tn, 0, 0), 1) + KILN_LOOPS_MASKED +
         KILN_LOOPS_EPILOGUE;
}

// qgemv: the group loop (k / 32 over WG * SPAN / 4 lane groups, U groups a step)
// holding the U x TN rows' TM dot loops; the setup loops, the accumulator reduction (log2(WG)
// halvings of the TM x TN loop, or the subgroup build's loops) and the epilogue.
static uint64_t kiln_loops_qgemv(const kiln_kernel_config_t* config,
                                 const kiln_kernel_gemm_params_t* p) {
  const uint64_t tm = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TM, 1);
  // Quarters per lane: SPAN, halved (at least 1) for the 8-bit layouts and
  // more than 2 rows of A, and for an unset layout (the conservative count).
  const uint64_t words = kiln_kernel_config_spec(config, KILN_SPEC_QGEMV_SPAN, 1);
  const uint32_t layout = kiln_kernel_config_spec(config, KILN_SPEC_QGEMM_LAYOUT, 0);
  const bool four_bit = layout == KILN_QGEMM_Q4_0 || layout == KILN_QGEMM_Q4_K ||
                        layout == KILN_QGEMM_Q4_ZP;
  const uint64_t span = (four_bit && tm <= 2) || words <= 1 ? words : words / 2;
  const uint64_t lanes = span >= 1 && span <= 4 ? 4 / span : 4;  // per group
  const uint64_t quads =
      config->workgroup_size[0] >= lanes ? config->workgroup_size[0] / lanes : 1;
  const uint64_t tn = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TN, 1);
  const uint64_t unroll = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TK, 1);
  const uint64_t per_lane = kiln_loops_ceil_div(p->k / 32, quads * (unroll ? unroll : 1));
  uint64_t halvings = 0;
  for (uint64_t h = config->workgroup_size[0] / 2; h > 0; h /= 2) ++halvings;
  const uint64_t acc = kiln_loops_loop(tm * tn, 0, 0);
  // Per weight row: the span's up to three decode loops (2 SPAN + 1 trips
  // at most), then per row of A its 2 SPAN dot loop.
  const uint64_t spans = kiln_loops_loop(2 * span + 1, 0, 0);
  const uint64_t body = kiln_loops_loop(
      unroll, kiln_loops_loop(tn, 3 * spans + kiln_loops_loop(tm, spans, 1), 4), 1);
  return kiln_loops_loop(tn, 0, 0) + kiln_loops_loop(tm, 0, 0) + 3 * acc +
         kiln_loops_loop(per_lane, body, 1) + kiln_loops_loop(halvings, acc, 1) +
         kiln_loops_loop(config->workgroup_size[0], 0, 0) + KILN_LOOPS_MASKED +
         KILN_LOOPS_EPILOGUE;
}

// qgemv_cpu: one row of A (TM = 1): the loop over the k / 32 groups
// holding the TN-row loop, then the TN-row store loop; TM = 2..8 rows
// (main_rows): per pass of 4 weight rows (ceil(TN / 4)), the group loop,
// its 8 quads (written out; counted as a loop all the same), then the TM x
// 4 store loops; and the epilogue.
static uint64_t kiln_loops_qgemv_cpu(const kiln_kernel_config_t* config,
                                     const kiln_kernel_gemm_params_t* p) {
  const uint64_t tm = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TM, 1);
  const uint64_t tn = kiln_kernel_config_spec(config, KILN_SPEC_GEMM_TN, 1);
  const uint64_t pass = kiln_loops_loop(p->k / 32, kiln_loops_loop(8, 0, 0), 1) +
                        kiln_loops_loop(tm, kiln_loops_loop(4, 0, 0), 1);
  const uint64_t body =
      tm == 1 ? kiln_loops_loop(p->k / 32, kiln_loops_loop(tn, 0, 0), 1) + kiln_loops_loop(tn, 0, 0)
              : kiln_loops_loop((tn + 3) / 4, pass, 2);
  return body + KILN_LOOPS_MASKED + KILN_LOOPS_EPILOGUE;
}

// gemv: its three k loops (vec4 quads, their scalar tail, the n-contiguous
// path) all counted in full, the log2(WG_Y) slice reduction, and the
// epilogue's loops.
static uint64_t kiln_loops_gemv(const kiln_kernel_config_t* config,
                                const kiln_kernel_gemm_params_t* p) {
  const uint64_t slices = config->workgroup_size[1] ? config->workgroup_size[1] : 1;
  const uint64_t per_slice = kiln_loops_ceil_div(p->k, slices);
  uint64_t halvings = 0;
  for (uint64_t h = slices / 2; h > 0; h /= 2) ++halvings;
  return kiln_loops_loop(kiln_loops_ceil_div(per_slice, 4), 0, 0) +
         2 * kiln_loops_loop(per_slice, 0, 0) + kiln_loops_loop(halvings, 0, 0) +
         2 * kiln_loops_loop(4, 0, 0) + KILN_LOOPS_MASKED + KILN_LOOPS_EPILOGUE;
}

// The part of a conv reduction one dispatch covers (kernels_abi.h).
typedef struct kiln_loops_conv_range_t {
  uint64_t channels;  // input channels of the group in [ci_begin, ci_end)
  uint64_t rows;      // kernel rows in [kh_begin, kh_end)
} kiln_loops_conv_range_t;

static kiln_loops_conv_range_t kiln_loops_range(const kiln_kernel_conv2d_params_t* p) {
  const uint64_t cig = p->groups ? p->in_channels / p->groups : p->in_channels;
  uint64_t ci_end = p->ci_end == 0 || p->ci_end > cig ? cig : p->ci_end;
  uint64_t kh_end = p->kh_end == 0 || p->kh_end > p->kernel_h ? p->kernel_h : p->kh_end;
  kiln_loops_conv_range_t r = {ci_end > p->ci_begin ? ci_end - p->ci_begin : 0,
                               kh_end > p->kh_begin ? kh_end - p->kh_begin : 0};
  return r;
}

// The kh loop over `rows` rows of a kw loop whose taps cost `tap` passes
// and hold `tap_loops` loops.
static uint64_t kiln_loops_window(uint64_t rows, uint64_t kernel_w, uint64_t tap,
                                  uint64_t tap_loops) {
  return kiln_loops_loop(rows, kiln_loops_loop(kernel_w, tap, tap_loops), 1 + tap_loops);
}

// Grid-stride kernels: items each invocation walks.
static uint64_t kiln_loops_items(const kiln_kernel_config_t* config, const uint32_t grid[3],
                                 uint64_t items) {
  return kiln_loops_ceil_div(items, (uint64_t)grid[0] * config->workgroup_size[0]);
}

static uint64_t kiln_loops_conv2d(const kiln_kernel_config_t* config,
                                  const kiln_kernel_conv2d_params_t* p) {
  const kiln_loops_conv_range_t r = kiln_loops_range(p);
  const uint64_t cog = p->groups ? p->out_channels / p->groups : p->out_channels;
  // The channel loop around the window (ci, kh, kw: 3 loops).
  const uint64_t channels =
      kiln_loops_loop(r.channels, kiln_loops_window(r.rows, p->kernel_w, 0, 0), 2);
  if (config->variant == KILN_KERNEL_VARIANT_CPU) {
    // 8-channel blocks: the 3-wide row path (cheaper) or the general path,
    // or, where a block straddles groups, one channel at a time.
    const bool straddle = p->groups > 1 && cog % 8 != 0;
    return (straddle ? kiln_loops_loop(8, channels, 3) : channels) + KILN_LOOPS_MASKED +
           KILN_LOOPS_EPILOGUE;
  }
  // The CO_BLOCK loop per tap is unrolled up to 16 (measured).
  const uint64_t block = kiln_kernel_config_spec(config, KILN_SPEC_CONV_CO_BLOCK, 4);
  const uint64_t tap = block <= 16 ? 0 : block + 1;
  const uint64_t tap_loops = block <= 16 ? 0 : 1;
  const uint64_t shared = kiln_loops_loop(
      r.channels, kiln_loops_window(r.rows, p->kernel_w, tap, tap_loops), 2 + tap_loops);
  const uint64_t own = kiln_loops_loop(block, channels, 3);
  const bool straddle = p->groups > 1 && cog % block != 0;
  return (straddle && own > shared ? own : shared) + 3 * (block + 1) + KILN_LOOPS_MASKED +
         KILN_LOOPS_EPILOGUE;
}

static uint64_t kiln_loops_depthwise(const kiln_kernel_config_t* config,
                                     const kiln_kernel_conv2d_params_t* p,
                                     const uint32_t grid[3]) {
  const kiln_loops_conv_range_t r = kiln_loops_range(p);
  const uint64_t window = kiln_loops_window(r.rows, p->kernel_w, 0, 0);
  const uint64_t planes = (uint64_t)p->batch * p->out_channels;
  if (config->variant == KILN_KERNEL_VARIANT_CPU) {
    // 3x3 items: 8 rows of a 16- (8-) wide column, at most 40 passes a
    // row; other items: 8 outputs of one row (t, kh, kw: 3 loops).
    const uint64_t tile3 = p->stride_w == 1 ? 16 : 8;
    const uint64_t items3 = planes * kiln_loops_ceil_div(p->out_width, tile3) *
                            kiln_loops_ceil_div(p->out_height, 8);
    const uint64_t items = planes * p->out_height * kiln_loops_ceil_div(p->out_width, 8);
    const bool may_be_3x3 = p->kernel_h == 3 && p->kernel_w == 3;
    const uint64_t path3 =
        may_be_3x3 ? kiln_loops_loop(kiln_loops_items(config, grid, items3), 9 + 8 * 40, 8) : 1;
    const uint64_t item = kiln_loops_loop(8, window, 2) + 8 * 8;  // + stores
    return path3 + kiln_loops_loop(kiln_loops_items(config, grid, items), item, 4) +
           KILN_LOOPS_MASKED + KILN_LOOPS_EPILOGUE;
  }
  const uint64_t outputs = planes * p->out_height * p->out_width;
  return kiln_loops_loop(kiln_loops_items(config, grid, outputs), window, 2) +
         KILN_LOOPS_MASKED + KILN_LOOPS_EPILOGUE;
}

// Per output: the kh loop, the kw loop of each row, the channel loop of
// each tap.
static uint64_t kiln_loops_transpose(const kiln_kernel_config_t* config,
                                     const kiln_kernel_conv2d_params_t* p,
                                     const uint32_t grid[3]) {
  const kiln_loops_conv_range_t r = kiln_loops_range(p);
  const uint64_t window =
      kiln_loops_window(r.rows, p->kernel_w, kiln_loops_loop(r.channels, 0, 0), 1);
  const uint64_t outputs = (uint64_t)p->batch * p->out_channels * p->out_height * p->out_width;
  return kiln_loops_loop(kiln_loops_items(config, grid, outputs), window, 3) +
         KILN_LOOPS_MASKED + KILN_LOOPS_EPILOGUE;
}

// recurrent.comp: the load and store loops over hidden4 / WG units, and
// per step a units loop (hidden / WG trips) holding the k loop of the dot
// product (hidden4 / 4 trips), twice for GRU with the reset before the
// product; plus the zero-Y loop of steps past a length.
static uint64_t kiln_loops_recurrent(const kiln_kernel_config_t* config,
                                     const kiln_kernel_recurrent_params_t* p) {
  const uint64_t wg = config->workgroup_size[0] ? config->workgroup_size[0] : 1;
  const uint64_t units = kiln_loops_ceil_div(p->hidden, wg);
  const uint64_t units4 = kiln_loops_ceil_div(p->hidden4, wg);
  const uint64_t steps = p->step_end > p->step_begin ? p->step_end - p->step_begin : 0;
  const bool two_phases =
      kiln_kernel_config_spec(config, KILN_SPEC_RNN_KIND, KILN_RNN_CELL_LSTM) == KILN_RNN_CELL_GRU &&
      kiln_kernel_config_spec(config, KILN_SPEC_RNN_LBR, 0) == 0;
  const uint64_t phase = kiln_loops_loop(units, kiln_loops_loop(p->hidden4 / 4, 0, 0), 1);
  const uint64_t step = kiln_loops_loop(units, 0, 0) + (two_phases ? 2 : 1) * phase;
  return 2 * kiln_loops_loop(units4, 0, 0) + kiln_loops_loop(steps, step, 3) +
         KILN_LOOPS_MASKED;
}

kiln_status_t kiln_kernel_loop_passes(const kiln_kernel_config_t* config,
                                      const void* params, const uint32_t grid[3],
                                      uint64_t* out_passes) {
  if (out_passes) *out_passes = 0;
  if (!config || !params || !grid || !out_passes) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "loop passes: NULL argument");
  }
  const kiln_kernel_gemm_params_t* gemm = params;
  const kiln_kernel_conv2d_params_t* conv = params;
  switch (config->kernel) {
    case KILN_KERNEL_GEMM:
    case KILN_KERNEL_GEMM_SMALL:
      *out_passes = config->variant == KILN_KERNEL_VARIANT_CPU ? kiln_loops_gemm_cpu(gemm)
                                                               : kiln_loops_tiled(config, gemm->k);
      return kiln_ok_status();
    case KILN_KERNEL_GEMM_COOPMAT:
    case KILN_KERNEL_GEMM_COOPMAT_SPLIT:
      *out_passes = kiln_loops_coopmat(config, gemm->k);
      return kiln_ok_status();
    case KILN_KERNEL_GEMV:
      *out_passes = config->variant == KILN_KERNEL_VARIANT_CPU ? kiln_loops_gemm_cpu(gemm)
                                                               : kiln_loops_gemv(config, gemm);
      return kiln_ok_status();
    case KILN_KERNEL_QGEMM:
    case KILN_KERNEL_QGEMV:  // both run qgemv_cpu on CPU devices
      *out_passes = config->kernel == KILN_KERNEL_QGEMM && config->variant != KILN_KERNEL_VARIANT_CPU
                        ? kiln_loops_qgemm(config, gemm)
                        : config->variant == KILN_KERNEL_VARIANT_CPU
                        ? kiln_loops_qgemv_cpu(config, gemm)
                        : kiln_loops_qgemv(config, gemm);
      return kiln_ok_status();
    case KILN_KERNEL_CONV2D_GEMM:
    case KILN_KERNEL_QCONV2D_GEMM: {  // its weight loader adds no loop
      if (config->variant == KILN_KERNEL_VARIANT_CPU) {  // conv2d_cpu
        *out_passes = kiln_loops_conv2d(config, conv);
        return kiln_ok_status();
      }
      // k spans the channels' windows; a kernel-row range only ever comes
      // with one channel (lower_split.c), so k = channels x rows x kw.
      const kiln_loops_conv_range_t r = kiln_loops_range(conv);
      *out_passes = kiln_loops_tiled(config, r.channels * r.rows * conv->kernel_w);
      return kiln_ok_status();
    }
    case KILN_KERNEL_CONV2D:
      *out_passes = kiln_loops_conv2d(config, conv);
      return kiln_ok_status();
    case KILN_KERNEL_DEPTHWISE_CONV2D:
      *out_passes = kiln_loops_depthwise(config, conv, grid);
      return kiln_ok_status();
    case KILN_KERNEL_CONV_TRANSPOSE2D:
      *out_passes = kiln_loops_transpose(config, conv, grid);
      return kiln_ok_status();
    case KILN_KERNEL_RECURRENT:
      *out_passes = kiln_loops_recurrent(config, params);
      return kiln_ok_status();
    default:
      return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                              "loop passes of kernel '%s' are not modelled",
                              kiln_kernel_desc(config->kernel)
                                  ? kiln_kernel_desc(config->kernel)->name
                                  : "?");
  }
}
