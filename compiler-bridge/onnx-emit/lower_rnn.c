// LSTM, GRU and RNN on the GPU: one gemm for the input projection of every
// step and direction (X.W^T + Wb into scratch), then the time-loop kernel
// recurrent.comp, one workgroup per (direction, batch) row, in as few
// dispatches over parts of the sequence as llvmpipe's loop budget allows
// (kernels_loops.h); h and c are carried in scratch between them. Initial
// states come in and Y_h / Y_c go out by plain copies. W may be a run-time
// tensor (the gemm reads it); run-time R and B are copied into the kernel's
// params layout first.
#include <string.h>

#include "kiln/compiler/kernels_loops.h"
#include "lower_util.h"
#include "rnn.h"

typedef struct kiln_rnn_plan_t {
  kiln_rnn_info_t info;
  uint32_t kind, hidden4, gh;
  kiln_emit_range_t gx, state, params;
  kiln_emit_range_t runtime;  // scratch for the params blob with run-time R, B, P or lengths
  kiln_emit_range_t lens;     // scratch for run-time lengths cast to float
} kiln_rnn_plan_t;


// Floats of the params blob below.
static uint64_t kiln_rnn_params_count(const kiln_rnn_plan_t* plan) {
  const kiln_rnn_info_t* info = &plan->info;
  const uint64_t D = (uint64_t)info->directions;
  return D * plan->hidden4 * plan->gh + D * plan->gh + (uint64_t)info->batch +
         (info->peephole ? D * 3 * (uint64_t)info->hidden : 0);
}

// Whether R, B, P or the lengths are run-time tensors (the blob is then
// built in scratch).
static bool kiln_rnn_params_runtime(const kiln_lower_t* l, const kiln_rnn_info_t* info) {
  if (info->runtime_lens) return true;
  for (size_t i = 2; i < 8; ++i) {
    if (i != 2 && i != 3 && i != 7) continue;
    const kiln_graph_value_t* v = kiln_lower_in(l, i);
    if (v && !v->data && (i != 7 || info->peephole)) return true;
  }
  return false;
}

// The params blob of recurrent.comp: R per direction as [GH][hidden4]
// (zero columns past hidden), Rb per direction (zeros without B), lengths,
// LSTM peepholes P per direction [3 * hidden].
// Constant R and B go into the weights as such; run-time ones are copied
// into `plan->runtime` (scratch) over a constant blob holding the rest.
static kiln_status_t kiln_rnn_params(const kiln_lower_t* l, kiln_rnn_plan_t* plan,
                                     kiln_kernel_recurrent_params_t* p) {
  const kiln_rnn_info_t* info = &plan->info;
  const kiln_graph_value_t* r = kiln_lower_in(l, 2);
  const kiln_graph_value_t* bias = kiln_lower_in(l, 3);
  const uint64_t D = (uint64_t)info->directions, H = (uint64_t)info->hidden;
  const uint64_t GH = plan->gh, H4 = plan->hidden4;
  const kiln_graph_value_t* peep = info->peephole ? kiln_lower_in(l, 7) : NULL;
  const uint64_t count = kiln_rnn_params_count(plan);
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, count));
  float* blob = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc_array(l->program->allocator, (size_t)count,
                                                   sizeof(float), (void**)&blob));
  const float* R = (const float*)r->data;
  const bool runtime = kiln_rnn_params_runtime(l, info);
  for (uint64_t d = 0; d < D && R; ++d) {
    for (uint64_t n = 0; n < GH; ++n) {
      memcpy(blob + (d * GH + n) * H4, R + (d * GH + n) * H, H * sizeof(float));
    }
  }
  p->r_offset = 0;
  p->rb_offset = (uint32_t)(D * H4 * GH);
  p->lens_offset = p->rb_offset + (uint32_t)(D * GH);
  if (peep) p->p_offset = p->lens_offset + (uint32_t)info->batch;
  if (peep && peep->data) {
    memcpy(blob + p->p_offset, peep->data, D * 3 * H * sizeof(float));
  }
  if (bias && bias->data) {
    const float* B = (const float*)bias->data;
    for (uint64_t d = 0; d < D; ++d) {
      memcpy(blob + p->rb_offset + d * GH, B + d * 2 * GH + GH, GH * sizeof(float));
    }
  }
  for (int64_t b = 0; b < info->batch; ++b) {
    uint32_t length = (uint32_t)kiln_rnn_length(info, b);
    memcpy(blob + p->lens_offset + b, &length, sizeof(length));
  }
  kiln_status_t status =
      kiln_emit_add_weight(l->program, blob, (size_t)count * sizeof(float), &plan->params);
  kiln_allocator_free(l->program->allocator, blob);
  KILN_RETURN_IF_ERROR(status);
  if (!runtime) return kiln_ok_status();
  kiln_emit_range_t constant = plan->params;
  plan->params = plan->runtime;
  KILN_RETURN_IF_ERROR(
      kiln_lower_emit_copy(l->program, &constant, &plan->params, count, KILN_EMIT_STORAGE_F32));
  if (!r->data) {
    kiln_emit_range_t in;
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 2, &in));
    kiln_graph_shape_t shape = {2, {(int64_t)(D * GH), (int64_t)H}};
    const int64_t in_strides[] = {(int64_t)H, 1}, out_strides[] = {(int64_t)H4, 1};
    KILN_RETURN_IF_ERROR(kiln_lower_strided_copy(l, &in, &plan->params, &shape, in_strides,
                                                 out_strides, 0, 0));
  }
  if (bias && !bias->data) {
    kiln_emit_range_t in;
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 3, &in));
    kiln_graph_shape_t shape = {2, {(int64_t)D, (int64_t)GH}};
    const int64_t in_strides[] = {2 * (int64_t)GH, 1}, out_strides[] = {(int64_t)GH, 1};
    KILN_RETURN_IF_ERROR(kiln_lower_strided_copy(l, &in, &plan->params, &shape, in_strides,
                                                 out_strides, (int64_t)GH, p->rb_offset));
  }
  if (info->runtime_lens) {
    // Cast to float values (the kernel clamps them), then into the blob.
    KILN_RETURN_IF_ERROR(kiln_lower_cast_int(l, l->node->inputs[4], &plan->lens));
    kiln_graph_shape_t shape = {1, {info->batch}};
    const int64_t strides[] = {1};
    KILN_RETURN_IF_ERROR(kiln_lower_strided_copy(l, &plan->lens, &plan->params, &shape, strides,
                                                 strides, 0, p->lens_offset));
  }
  if (peep && !peep->data) {
    kiln_emit_range_t in;
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 7, &in));
    kiln_graph_shape_t shape = {1, {(int64_t)(D * 3 * H)}};
    const int64_t strides[] = {1};
    KILN_RETURN_IF_ERROR(kiln_lower_strided_copy(l, &in, &plan->params, &shape, strides,
                                                 strides, 0, p->p_offset));
  }
  return kiln_ok_status();
}

// gx[d][row][GH] = X[row] . W[d]^T + Wb[d], rows in X's own (t, b) order.
static kiln_status_t kiln_rnn_projection(const kiln_lower_t* l, const kiln_rnn_plan_t* plan) {
  const kiln_rnn_info_t* info = &plan->info;
  const uint32_t rows = (uint32_t)(info->seq * info->batch), I = (uint32_t)info->input;
  const bool has_bias = kiln_lower_in(l, 3) != NULL;
  kiln_kernel_gemm_params_t g = {
      .m = rows, .n = plan->gh, .k = I, .batch = (uint32_t)info->directions,
      .a_batch_stride = 0, .a_row_stride = I, .a_col_stride = 1,
      .b_batch_stride = plan->gh * I, .b_row_stride = 1, .b_col_stride = I,
      .c_batch_stride = rows * plan->gh, .c_row_stride = plan->gh,
      .bias_batch_stride = 2 * plan->gh, .bias_row_stride = 0, .bias_col_stride = 1,
      .residual_batch_stride = rows * plan->gh, .residual_row_stride = plan->gh,
      .scale = 1.0f};
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_GEMM, .push = &g,
                                    .binding_count = 5, .written_mask = 1u << 4,
                                    .grid = KILN_EMIT_GRID_GEMM};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &desc.bindings[1]));
  desc.bindings[2] = desc.bindings[0];
  if (has_bias) KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 3, &desc.bindings[2]));
  desc.bindings[3] = desc.bindings[0];
  desc.bindings[4] = plan->gx;
  static const uint32_t kSpecs[3] = {KILN_SPEC_GEMM_ACTIVATION, KILN_SPEC_GEMM_HAS_BIAS,
                                     KILN_SPEC_GEMM_HAS_RESIDUAL};
  kiln_lower_reduction_t r = {kSpecs, KILN_ACT_NONE, has_bias, false};
  return kiln_lower_add_reduction(l, &desc, &r);
}

// Steps per recurrent dispatch: the most whose loop passes fit the budget
// on every target.
static kiln_status_t kiln_rnn_chunk(const kiln_lower_t* l, const kiln_emit_dispatch_desc_t* desc,
                                    uint32_t* out_steps) {
  const kiln_emit_program_t* program = l->program;
  kiln_kernel_recurrent_params_t p = *(const kiln_kernel_recurrent_params_t*)desc->push;
  uint32_t best = p.seq;
  for (size_t t = 0; t < program->target_count; ++t) {
    kiln_kernel_config_t config;
    KILN_RETURN_IF_ERROR_ANNOTATE(
        kiln_kernel_config_select(KILN_KERNEL_RECURRENT, &program->caps[t],
                                  KILN_KERNEL_STORAGE_FP32, &config),
        "target '%s'", program->targets[t]);
    for (size_t i = 0; i < desc->op_count; ++i) {
      KILN_RETURN_IF_ERROR(
          kiln_kernel_config_set_spec(&config, desc->ops[i].id, desc->ops[i].value));
    }
    uint32_t grid[3];
    KILN_RETURN_IF_ERROR(kiln_emit_dispatch_grid(&config, desc, grid));
    uint32_t lo = 0, hi = best;  // lo fits (or is 0)
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo + 1) / 2;
      uint64_t passes = 0;
      p.step_begin = 0;
      p.step_end = mid;
      KILN_RETURN_IF_ERROR(kiln_kernel_loop_passes(&config, &p, grid, &passes));
      if (passes <= KILN_KERNEL_LOOP_PASS_BUDGET) lo = mid;
      else hi = mid - 1;
    }
    best = lo;
  }
  if (best == 0) {
    return kiln_lower_refuse(l, "one step of hidden size %lld exceeds the %u loop passes an "
                             "invocation may make",
                             (long long)l->graph->values[l->node->inputs[2]].shape.dims[2],
                             KILN_KERNEL_LOOP_PASS_BUDGET);
  }
  *out_steps = best;
  return kiln_ok_status();
}

// The time loop, in parts of at most the chunk's steps.
static kiln_status_t kiln_rnn_steps(const kiln_lower_t* l, const kiln_rnn_plan_t* plan,
                                    kiln_kernel_recurrent_params_t* p) {
  const kiln_rnn_info_t* info = &plan->info;
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_RECURRENT, .push = p,
                                    .binding_count = 4, .written_mask = (1u << 2) | (1u << 3),
                                    .grid = KILN_EMIT_GRID_ROWS,
                                    .grid_count = (uint64_t)(info->directions * info->batch)};
  desc.bindings[0] = plan->gx;
  desc.bindings[1] = plan->params;
  desc.bindings[2] = plan->state;
  desc.bindings[3] = plan->state;  // no Y: never written (HAS_Y is off)
  if (kiln_lower_out(l, 0)) {
    KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc.bindings[3]));
    p->flags |= KILN_RNN_FLAG_HAS_Y;
  }
  kiln_kernel_spec_value_t ops[] = {
      {KILN_SPEC_RNN_KIND, plan->kind},
      {KILN_SPEC_RNN_LBR, info->linear_before_reset ? 1u : 0u},
      {KILN_SPEC_RNN_ACT_F, info->act[0]},
      {KILN_SPEC_RNN_ACT_G, info->act[1]},
      {KILN_SPEC_RNN_ACT_H, info->act[2]}};
  desc.ops = ops;
  desc.op_count = sizeof(ops) / sizeof(ops[0]);
  uint32_t chunk = 0;
  KILN_RETURN_IF_ERROR(kiln_rnn_chunk(l, &desc, &chunk));
  const uint32_t first_flags = p->flags;
  for (uint32_t begin = 0; begin < p->seq; begin += chunk) {
    p->step_begin = begin;
    p->step_end = p->seq - begin < chunk ? p->seq : begin + chunk;
    // Only the first part may start from zeros instead of the state.
    p->flags = begin == 0 ? first_flags
                          : first_flags & ~(uint32_t)(KILN_RNN_FLAG_ZERO_H | KILN_RNN_FLAG_ZERO_C);
    KILN_RETURN_IF_ERROR(kiln_emit_add_dispatch(l->program, &desc));
  }
  return kiln_ok_status();
}

// State part `which` (0: h, 1: c) of the scratch state.
static kiln_emit_range_t kiln_rnn_state_part(const kiln_rnn_plan_t* plan, uint32_t which,
                                             uint64_t words) {
  kiln_emit_range_t part = plan->state;
  // c starts at the next aligned offset: the copies bind it by sub-range.
  part.offset += which * kiln_emit_align_up(words * sizeof(float));
  part.length = words * sizeof(float);
  return part;
}

kiln_status_t kiln_lower_rnn(const kiln_lower_t* l) {
  if (kiln_emit_node_is_f16(l->program)) {
    return kiln_lower_refuse(l, "the recurrent kernel runs in float32 only (compile with "
                             "--precision=f32)");
  }
  kiln_rnn_plan_t plan;
  memset(&plan, 0, sizeof(plan));
  // kiln_rnn_info only reads the graph.
  kiln_op_infer_args_t args = {(kiln_graph_t*)l->graph, (kiln_graph_node_t*)l->node};
  KILN_RETURN_IF_ERROR(kiln_rnn_info(&args, &plan.info));
  const kiln_rnn_info_t* info = &plan.info;
  if (info->hidden > KILN_RNN_MAX_HIDDEN) {
    return kiln_lower_refuse(l, "hidden_size %lld exceeds the %d units the recurrent kernel "
                             "holds in shared memory (larger ones are unrolled only without "
                             "clip, input_forget, peepholes or short sequence_lens, up to 512 steps)",
                             (long long)info->hidden, KILN_RNN_MAX_HIDDEN);
  }
  const uint64_t D = (uint64_t)info->directions, S = (uint64_t)info->seq;
  const uint64_t B = (uint64_t)info->batch, H = (uint64_t)info->hidden;
  if (D * B > KILN_KERNEL_MAX_GRID_X) {
    return kiln_lower_refuse(l, "directions x batch = %llu exceeds %u workgroups",
                             (unsigned long long)(D * B), (unsigned)KILN_KERNEL_MAX_GRID_X);
  }
  plan.kind = info->kind == KILN_RNN_LSTM ? KILN_RNN_CELL_LSTM
              : info->kind == KILN_RNN_GRU ? KILN_RNN_CELL_GRU
                                           : KILN_RNN_CELL_SIMPLE;
  plan.hidden4 = (uint32_t)((H + 3) & ~(uint64_t)3);
  plan.gh = (uint32_t)(info->gates * info->hidden);
  const uint64_t gx_bytes = D * S * B * plan.gh * sizeof(float);
  const uint64_t state_words = D * B * H;
  // W at run time is just the gemm's operand; R, B and P go through the blob.
  const uint64_t params_bytes =
      kiln_rnn_params_runtime(l, info) ? kiln_rnn_params_count(&plan) * sizeof(float) : 0;
  if (gx_bytes > ((uint64_t)128 << 20)) {
    return kiln_lower_refuse(l, "the input projection of all steps (%llu bytes) exceeds the "
                             "128 MiB storage-buffer range",
                             (unsigned long long)gx_bytes);
  }
  // Scratch: gx, then the state, then (run-time weights) the params blob,
  // then (run-time lengths) the lengths as floats.
  const uint64_t state_at = kiln_emit_align_up(gx_bytes);
  const uint64_t c_at = kiln_emit_align_up(state_words * sizeof(float));  // from state_at
  const uint64_t params_at = kiln_emit_align_up(state_at + c_at + state_words * sizeof(float));
  const uint64_t lens_at = kiln_emit_align_up(params_at + params_bytes);
  const uint64_t lens_bytes = info->runtime_lens ? B * sizeof(float) : 0;
  kiln_emit_range_t scratch;
  KILN_RETURN_IF_ERROR(kiln_emit_scratch(l->program, lens_at + lens_bytes, &scratch));
  plan.gx = scratch;
  plan.gx.length = gx_bytes;
  plan.state = scratch;
  plan.state.offset += state_at;
  plan.state.length = c_at + state_words * sizeof(float);
  plan.runtime = scratch;
  plan.runtime.offset += params_at;
  plan.runtime.length = params_bytes;
  plan.lens = scratch;
  plan.lens.offset += lens_at;
  plan.lens.length = lens_bytes;

  kiln_kernel_recurrent_params_t p;
  memset(&p, 0, sizeof(p));
  p.batch = (uint32_t)B;
  p.hidden = (uint32_t)H;
  p.hidden4 = plan.hidden4;
  p.seq = (uint32_t)S;
  p.gx_d = (uint32_t)(S * B * plan.gh);
  p.gx_t = info->batch_first ? plan.gh : (uint32_t)(B * plan.gh);
  p.gx_b = info->batch_first ? (uint32_t)(S * plan.gh) : plan.gh;
  p.state_d = info->batch_first ? (uint32_t)H : (uint32_t)(B * H);
  p.state_b = info->batch_first ? (uint32_t)(D * H) : (uint32_t)H;
  p.c_offset = (uint32_t)(c_at / sizeof(float));
  p.y_d = info->batch_first ? (uint32_t)H : (uint32_t)(B * H);
  p.y_t = info->batch_first ? (uint32_t)(D * H) : (uint32_t)(D * B * H);
  p.y_b = info->batch_first ? (uint32_t)(S * D * H) : (uint32_t)H;
  p.clip = info->clip;
  if (info->reverse) p.flags |= KILN_RNN_FLAG_REVERSE;
  if (info->input_forget) p.flags |= KILN_RNN_FLAG_INPUT_FORGET;
  if (info->clip > 0.0f) p.flags |= KILN_RNN_FLAG_CLIP;
  if (info->lens) p.flags |= KILN_RNN_FLAG_LENS;
  if (info->runtime_lens) p.flags |= KILN_RNN_FLAG_LENS | KILN_RNN_FLAG_LENS_FLOAT;
  if (info->peephole) p.flags |= KILN_RNN_FLAG_PEEPHOLE;
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, D * S * B * plan.gh));
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, S * D * B * H));
  KILN_RETURN_IF_ERROR(kiln_rnn_params(l, &plan, &p));
  KILN_RETURN_IF_ERROR(kiln_rnn_projection(l, &plan));
  // Initial states (already in the state's layout) or zeros.
  const size_t state_count = info->kind == KILN_RNN_LSTM ? 2 : 1;
  for (uint32_t s = 0; s < state_count; ++s) {
    if (!kiln_lower_in(l, 5 + s)) {
      p.flags |= s == 0 ? KILN_RNN_FLAG_ZERO_H : KILN_RNN_FLAG_ZERO_C;
      continue;
    }
    kiln_emit_range_t in;
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 5 + s, &in));
    kiln_emit_range_t part = kiln_rnn_state_part(&plan, s, state_words);
    KILN_RETURN_IF_ERROR(kiln_lower_emit_copy(l->program, &in, &part, state_words,
                                              KILN_EMIT_STORAGE_F32));
  }
  KILN_RETURN_IF_ERROR(kiln_rnn_steps(l, &plan, &p));
  for (uint32_t s = 0; s < state_count; ++s) {
    if (!kiln_lower_out(l, 1 + s)) continue;
    kiln_emit_range_t out;
    KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 1 + s, &out));
    kiln_emit_range_t part = kiln_rnn_state_part(&plan, s, state_words);
    KILN_RETURN_IF_ERROR(kiln_lower_emit_copy(l->program, &part, &out, state_words,
                                              KILN_EMIT_STORAGE_F32));
  }
  return kiln_ok_status();
}
