// Loop bounds of the row kernels (reduce, softmax, norm, rows_split) and of
// pool2d, from KILN_KERNEL_MAX_LOOP_ITERATIONS (kernels_loops.h says why), and
// the three-pass rows_split lowering of softmax and norms over long rows.
#include "lower_rows.h"

// Window tiles past this many dispatches are refused (compile time and
// command-buffer size grow with them).
#define KILN_LOWER_MAX_WINDOW_TILES 1024u

static uint64_t kiln_ceil_div_u64(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// The smallest workgroup `kernel` gets on any of the program's targets:
// a strided loop runs the most iterations there.
static kiln_status_t kiln_lower_min_workgroup(const kiln_lower_t* l, kiln_kernel_id_t kernel,
                                              uint64_t* out) {
  uint64_t smallest = UINT32_MAX;
  for (size_t t = 0; t < l->program->target_count; ++t) {
    kiln_kernel_config_t config;
    KILN_RETURN_IF_ERROR(kiln_kernel_config_select(kernel, &l->program->caps[t],
                                                   KILN_KERNEL_STORAGE_FP32, &config));
    if (config.workgroup_size[0] < smallest) smallest = config.workgroup_size[0];
  }
  *out = smallest ? smallest : 1;
  return kiln_ok_status();
}

kiln_status_t kiln_lower_row_chunk(const kiln_lower_t* l, kiln_kernel_id_t kernel,
                                   uint64_t rows, uint64_t size, uint64_t* out_chunk) {
  uint64_t wg = 1;
  KILN_RETURN_IF_ERROR(kiln_lower_min_workgroup(l, kernel, &wg));
  // One workgroup per (row, chunk) item, grid-stride over 65535 workgroups:
  // `passes` items per workgroup, each a loop of ceil(chunk / wg).
  uint64_t passes = kiln_ceil_div_u64(rows ? rows : 1, KILN_KERNEL_MAX_GRID_X), chunk = 0;
  for (int round = 0; round < 16; ++round) {
    uint64_t per_item = KILN_KERNEL_MAX_LOOP_ITERATIONS / passes;
    if (per_item == 0) {
      return kiln_lower_refuse(l, "%llu rows need %llu grid-stride passes, more than the "
                               "%u loop iterations an invocation may run",
                               (unsigned long long)rows, (unsigned long long)passes,
                               KILN_KERNEL_MAX_LOOP_ITERATIONS);
    }
    chunk = per_item * wg;
    uint64_t items = rows * kiln_ceil_div_u64(size, chunk);
    uint64_t need = kiln_ceil_div_u64(items, KILN_KERNEL_MAX_GRID_X);
    if (need <= passes) break;
    passes = need;
  }
  *out_chunk = chunk;
  return kiln_ok_status();
}

kiln_status_t kiln_lower_window_tile(const kiln_lower_t* l, uint64_t outputs,
                                     uint64_t kernel_h, uint64_t kernel_w,
                                     uint32_t* out_tile_h, uint32_t* out_tile_w) {
  *out_tile_h = *out_tile_w = 0;
  uint64_t wg = 1;
  KILN_RETURN_IF_ERROR(kiln_lower_min_workgroup(l, KILN_KERNEL_POOL2D, &wg));
  uint64_t passes = kiln_ceil_div_u64(outputs ? outputs : 1, KILN_KERNEL_MAX_GRID_X * wg);
  // Loop passes per output: kh * (kw + 1) (a row's exit counts too).
  uint64_t budget = KILN_KERNEL_MAX_LOOP_ITERATIONS / passes;
  if (kernel_h * (kernel_w + 1) <= budget) return kiln_ok_status();
  if (budget < 3) {
    return kiln_lower_refuse(l, "%llu outputs leave no loop budget for the window",
                             (unsigned long long)outputs);
  }
  uint64_t tile_w = kernel_w < budget / 2 ? kernel_w : budget / 2;
  uint64_t tile_h = budget / (tile_w + 1);
  if (tile_h > kernel_h) tile_h = kernel_h;
  uint64_t tiles = kiln_ceil_div_u64(kernel_h, tile_h) * kiln_ceil_div_u64(kernel_w, tile_w);
  if (tiles > KILN_LOWER_MAX_WINDOW_TILES) {
    return kiln_lower_refuse(l, "a %llux%llu window needs %llu tiles of %llux%llu "
                             "(at most %u loop iterations per invocation); more than %u",
                             (unsigned long long)kernel_h, (unsigned long long)kernel_w,
                             (unsigned long long)tiles, (unsigned long long)tile_h,
                             (unsigned long long)tile_w, KILN_KERNEL_MAX_LOOP_ITERATIONS,
                             KILN_LOWER_MAX_WINDOW_TILES);
  }
  *out_tile_h = (uint32_t)tile_h;
  *out_tile_w = (uint32_t)tile_w;
  return kiln_ok_status();
}

kiln_status_t kiln_lower_rows_split(const kiln_lower_t* l, uint32_t kind,
                                    const kiln_rows_split_t* rows_split) {
  const kiln_rows_split_t* s = rows_split;
  uint64_t rows = s->outer * s->inner, chunks = kiln_ceil_div_u64(s->size, s->chunk);
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, 3 * rows * chunks + 2 * rows));
  // The combine pass loops over a row's chunks: no longer than a chunk.
  if (chunks > s->chunk) {
    return kiln_lower_refuse(l, "rows of %llu values split into %llu chunks of %llu; the "
                             "merge would loop past %u iterations",
                             (unsigned long long)s->size, (unsigned long long)chunks,
                             (unsigned long long)s->chunk, KILN_KERNEL_MAX_LOOP_ITERATIONS);
  }
  kiln_kernel_rows_split_params_t p = {(uint32_t)s->outer, (uint32_t)s->size,
                                       (uint32_t)s->inner, (uint32_t)s->chunk,
                                       (uint32_t)s->channels, s->epsilon};
  kiln_emit_range_t stats;
  KILN_RETURN_IF_ERROR(
      kiln_emit_scratch(l->program, (3 * rows * chunks + 2 * rows) * sizeof(float), &stats));
  if (s->out_stats) *s->out_stats = stats;
  if (s->out_final_at) *s->out_final_at = 3 * rows * chunks;
  const uint32_t phases[] = {KILN_ROWS_PHASE_PARTIAL, KILN_ROWS_PHASE_COMBINE,
                             KILN_ROWS_PHASE_APPLY};
  for (size_t i = 0; i < 3; ++i) {
    bool combine = phases[i] == KILN_ROWS_PHASE_COMBINE;
    kiln_emit_dispatch_desc_t desc = {
        .kernel = KILN_KERNEL_ROWS_SPLIT, .push = &p, .binding_count = 5,
        .written_mask = phases[i] == KILN_ROWS_PHASE_APPLY ? 16u : 8u,
        .grid = KILN_EMIT_GRID_ROWS, .grid_count = combine ? rows : rows * chunks};
    desc.bindings[0] = s->x;
    desc.bindings[1] = s->scale;
    desc.bindings[2] = s->bias;
    desc.bindings[3] = stats;
    desc.bindings[4] = s->y;
    kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_ROWS_KIND, kind},
                                      {KILN_SPEC_ROWS_PHASE, phases[i]}};
    desc.ops = ops;
    desc.op_count = 2;
    KILN_RETURN_IF_ERROR(kiln_emit_add_dispatch(l->program, &desc));
  }
  return kiln_ok_status();
}
