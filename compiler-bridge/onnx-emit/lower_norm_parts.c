// A LayerNorm of a split-K gemm's output, lowered right after it: the
// gemv that summed the parts is taken out and one norm_parts dispatch sums
// them (with the gemm's bias and residual), stores the sum and normalizes
// it (issue 16: BERT-base's out-projection and FFN-down, 24 dispatches a
// call). Only where nothing came between the sum and the norm (views
// may: the norm reads the bytes the sum wrote), the norm's
// output overlaps none of what the dispatch reads, rows fit the kernel's
// shared memory (KILN_NORM_PARTS_ROW_CAP), and the norm's scale
// and beta and the gemm's bias are constants one binding of the weights
// can span (offsets in the push constants).
#include <string.h>

#include "lower_rows.h"
#include "lower_util.h"

static bool kiln_norm_parts_overlap(const kiln_emit_range_t* a, const kiln_emit_range_t* b) {
  return a->space == b->space && a->index == b->index && a->offset < b->offset + b->length &&
         b->offset < a->offset + a->length;
}

// Removes the program's last dispatch (the sum), and its executable when it
// was the last one made and nothing else runs it.
static void kiln_norm_parts_drop_sum(kiln_emit_program_t* program) {
  const uint32_t exe = program->dispatches[--program->dispatch_count].executable;
  if (exe + 1 != program->executable_count) return;
  for (size_t k = 0; k < program->dispatch_count; ++k) {
    if (program->dispatches[k].executable == exe) return;
  }
  --program->executable_count;
}

kiln_status_t kiln_lower_norm_parts(const kiln_lower_t* l, uint64_t rows, uint64_t size,
                                    float epsilon, bool* out_done) {
  *out_done = false;
  kiln_emit_program_t* program = l->program;
  kiln_emit_split_sum_t* rec = &program->split_sum;
  const kiln_graph_value_t* x = kiln_lower_in(l, 0);
  if (!rec->valid || rec->dispatch + 1 != program->dispatch_count ||
      rec->host_ops != program->host_op_count || rec->rows != rows || rec->cols != size ||
      !kiln_lower_in(l, 1) || !kiln_lower_in(l, 2) || x->data) {
    return kiln_ok_status();
  }
  // The norm reads the sum's bytes: its output value or a view of it
  // (views keep the element order; no dispatch came between).
  kiln_emit_range_t in;
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &in));
  if (!kiln_emit_same_range(&in, &rec->out)) return kiln_ok_status();
  // Rows the kernel stages whole, within norm's loop budget, on targets
  // whose config takes its shared memory.
  uint64_t chunk = 0;
  KILN_RETURN_IF_ERROR(kiln_lower_row_chunk(l, KILN_KERNEL_NORM, rows, size, &chunk));
  if (size > chunk || size > KILN_NORM_PARTS_ROW_CAP) return kiln_ok_status();
  for (size_t t = 0; t < program->target_count; ++t) {
    kiln_kernel_config_t config;
    kiln_status_t status = kiln_kernel_config_select(
        KILN_KERNEL_NORM_PARTS, &program->caps[t],
        kiln_emit_node_is_f16(program) ? KILN_KERNEL_STORAGE_FP16 : KILN_KERNEL_STORAGE_FP32,
        &config);
    if (status) {
      kiln_status_ignore(status);  // that target keeps the sum and the norm
      return kiln_ok_status();
    }
  }
  kiln_emit_range_t scale, beta, y;
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &scale));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 2, &beta));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &y));
  // One weights binding over the bias, scale and beta.
  const kiln_emit_range_t* params[3] = {&scale, &beta, rec->has_bias ? &rec->bias : &scale};
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < 3; ++i) {
    if (params[i]->space != KILN_EMIT_SPACE_WEIGHTS) return kiln_ok_status();
    if (params[i]->offset < lo) lo = params[i]->offset;
    if (params[i]->offset + params[i]->length > hi) hi = params[i]->offset + params[i]->length;
  }
  const uint64_t elem = kiln_emit_float_bytes(program);
  const kiln_emit_range_t span = {KILN_EMIT_SPACE_WEIGHTS, 0, lo, hi - lo};
  if (hi - lo > kiln_emit_range_limit(program) || (hi - lo) / elem > UINT32_MAX) {
    return kiln_ok_status();
  }
  // y may take the residual's place exactly (the plan reuses a value read
  // last by the gemm): a row's residual is read into shared memory before
  // a barrier, and only that row's y, written after it, lands on it. The
  // sum's output may not overlap the residual (kept simple: refused).
  const kiln_emit_range_t* read[4] = {&rec->partials, &rec->residual, &rec->out, &span};
  for (int i = 0; i < 4; ++i) {
    if (i == 1 && !rec->has_residual) continue;
    const bool same_place = i == 1 && y.space == rec->residual.space &&
                            y.index == rec->residual.index && y.offset == rec->residual.offset;
    if (!same_place && kiln_norm_parts_overlap(&y, read[i])) return kiln_ok_status();
  }
  if (rec->has_residual && kiln_norm_parts_overlap(&rec->out, &rec->residual)) {
    return kiln_ok_status();
  }
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, rows * size));
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, rec->part_stride * rec->parts));
  kiln_kernel_norm_parts_params_t p = {
      (uint32_t)rows, (uint32_t)size, rec->parts, (uint32_t)rec->part_stride,
      (uint32_t)((params[2]->offset - lo) / elem), (uint32_t)((scale.offset - lo) / elem),
      (uint32_t)((beta.offset - lo) / elem), epsilon};
  // The part count as a spec constant where the kernel unrolls it.
  const uint32_t count = rec->parts <= KILN_NORM_PARTS_MAX_COUNT ? rec->parts : 0;
  kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_NORM_PARTS_BIAS, rec->has_bias},
                                    {KILN_SPEC_NORM_PARTS_RESIDUAL, rec->has_residual},
                                    {KILN_SPEC_NORM_PARTS_COUNT, count}};
  kiln_emit_dispatch_desc_t desc = {
      .kernel = KILN_KERNEL_NORM_PARTS, .ops = ops, .op_count = 3, .push = &p,
      .binding_count = 5,
      .bindings = {rec->partials, span, rec->has_residual ? rec->residual : span, y, rec->out},
      .written_mask = (1u << 3) | (1u << 4), .grid = KILN_EMIT_GRID_ROWS, .grid_count = rows};
  rec->valid = false;
  kiln_norm_parts_drop_sum(program);
  KILN_RETURN_IF_ERROR(kiln_emit_add_dispatch(program, &desc));
  *out_done = true;
  return kiln_ok_status();
}
