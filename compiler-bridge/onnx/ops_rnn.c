// LSTM, GRU and RNN (ONNX gate orders iofc and zrh): checker, shapes and a
// direct reference implementation in double. On the GPU they run as a gemm
// for the input projection plus the time-loop kernel recurrent.comp
// (onnx-emit/lower_rnn.c); hidden sizes past that kernel's shared arrays
// are unrolled by pass_unroll_rnn.c into MatMul/Slice/activation nodes.
#include <math.h>
#include <string.h>

#include "rnn.h"

// The activations list: f (and g, h) per direction, both directions alike.
static kiln_status_t kiln_rnn_activations(const kiln_op_infer_args_t* args,
                                          kiln_rnn_info_t* out) {
  const int64_t per = out->kind == KILN_RNN_LSTM ? 3 : out->kind == KILN_RNN_GRU ? 2 : 1;
  out->act[0] = out->kind == KILN_RNN_SIMPLE ? KILN_ACT_TANH : KILN_ACT_SIGMOID;
  out->act[1] = out->act[2] = KILN_ACT_TANH;
  const kiln_graph_attr_t* attr = kiln_graph_node_find_attr(args->node, "activations");
  if (!attr) return kiln_ok_status();
  if (attr->type != KILN_GRAPH_ATTR_STRINGS || (int64_t)attr->count != per * out->directions) {
    return kiln_op_invalid(args, "activations must list %lld names",
                           (long long)(per * out->directions));
  }
  static const struct {
    const char* name;
    uint32_t code;
  } kNames[] = {{"Sigmoid", KILN_ACT_SIGMOID}, {"Tanh", KILN_ACT_TANH}, {"Relu", KILN_ACT_RELU}};
  const char* cursor = attr->s;
  for (int64_t i = 0; i < per * out->directions; ++i) {
    size_t length = strcspn(cursor, ",");
    uint32_t code = KILN_ACT_NONE;
    for (size_t n = 0; n < sizeof(kNames) / sizeof(kNames[0]); ++n) {
      if (strlen(kNames[n].name) == length && strncmp(cursor, kNames[n].name, length) == 0) {
        code = kNames[n].code;
      }
    }
    if (code == KILN_ACT_NONE) {
      return kiln_op_unsupported(args, "activation '%.*s' is not supported (Sigmoid, Tanh, Relu)",
                                 (int)length, cursor);
    }
    if (i >= per && code != out->act[i - per]) {
      return kiln_op_unsupported(args, "different activations per direction are not supported");
    }
    if (i < per) out->act[i] = code;
    cursor += length + (cursor[length] == ',' ? 1 : 0);
  }
  return kiln_ok_status();
}

double kiln_rnn_activate(uint32_t code, double x) {
  switch (code) {
    case KILN_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case KILN_ACT_RELU: return x > 0.0 ? x : 0.0;
    default: return tanh(x);
  }
}

static kiln_rnn_kind_t kiln_rnn_kind(const char* op) {
  if (strcmp(op, "LSTM") == 0) return KILN_RNN_LSTM;
  if (strcmp(op, "GRU") == 0) return KILN_RNN_GRU;
  return KILN_RNN_SIMPLE;
}

kiln_status_t kiln_rnn_info(const kiln_op_infer_args_t* args, kiln_rnn_info_t* out) {
  memset(out, 0, sizeof(*out));
  const kiln_graph_node_t* node = args->node;
  out->kind = kiln_rnn_kind(node->op_type);
  out->gates = out->kind == KILN_RNN_LSTM ? 4 : out->kind == KILN_RNN_GRU ? 3 : 1;
  static const char* const kDirections[] = {"forward", "reverse", "bidirectional", NULL};
  const char* direction = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_op_attr_choice(args, "direction", "forward", kDirections, &direction));
  out->directions = strcmp(direction, "bidirectional") == 0 ? 2 : 1;
  out->reverse = strcmp(direction, "reverse") == 0;
  KILN_RETURN_IF_ERROR(kiln_rnn_activations(args, out));
  int64_t layout = 0, hidden = 0, flag = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(node, "layout", 0, &layout));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(node, "hidden_size", 0, &hidden));
  if (layout != 0 && layout != 1) return kiln_op_invalid(args, "layout must be 0 or 1");
  out->batch_first = layout == 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(node, "input_forget", 0, &flag));
  out->input_forget = out->kind == KILN_RNN_LSTM && flag != 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(node, "clip", 0.0f, &out->clip));
  if (!(out->clip >= 0.0f)) return kiln_op_invalid(args, "clip must be positive");
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(node, "linear_before_reset", 0, &flag));
  out->linear_before_reset = flag != 0;
  const kiln_graph_value_t* x = NULL;
  const kiln_graph_value_t* w = NULL;
  const kiln_graph_value_t* r = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &x));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 1, KILN_OP_F32, &w));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 2, KILN_OP_F32, &r));
  if (x->shape.rank != 3 || w->shape.rank != 3 || r->shape.rank != 3) {
    return kiln_op_invalid(args, "X, W and R must be 3-D");
  }
  out->seq = x->shape.dims[out->batch_first ? 1 : 0];
  out->batch = x->shape.dims[out->batch_first ? 0 : 1];
  out->input = x->shape.dims[2];
  out->hidden = w->shape.dims[1] / out->gates;
  if (out->seq < 1 || out->batch < 1 || out->hidden < 1 || (hidden && hidden != out->hidden) ||
      w->shape.dims[0] != out->directions || w->shape.dims[1] != out->gates * out->hidden ||
      w->shape.dims[2] != out->input || r->shape.dims[0] != out->directions ||
      r->shape.dims[1] != out->gates * out->hidden || r->shape.dims[2] != out->hidden) {
    return kiln_op_invalid(args, "X, W, R and hidden_size disagree");
  }
  const kiln_graph_value_t* v = kiln_op_input(args, 3);
  if (v) {
    KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 3, KILN_OP_F32, &v));
    if (v->shape.rank != 2 || v->shape.dims[0] != out->directions ||
        v->shape.dims[1] != 2 * out->gates * out->hidden) {
      return kiln_op_invalid(args, "B must be [directions, 2 * gates * hidden]");
    }
  }
  if (kiln_op_input(args, 4)) {
    // Constant lengths, each within the sequence.
    KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 4, KILN_OP_INDEX, &v));
    if (v->shape.rank != 1 || v->shape.dims[0] != out->batch) {
      return kiln_op_invalid(args, "sequence_lens must be [batch]");
    }
    out->runtime_lens = !v->data;
    out->lens = v->data ? v : NULL;
    for (int64_t b = 0; b < out->batch; ++b) {
      int64_t length = kiln_rnn_length(out, b);
      if (length < 0 || length > out->seq) {
        return kiln_op_invalid(args, "sequence_lens[%lld] = %lld is outside [0, %lld]",
                               (long long)b, (long long)length, (long long)out->seq);
      }
    }
  }
  size_t states = out->kind == KILN_RNN_LSTM ? 2 : 1;
  for (size_t s = 0; s < states; ++s) {
    if (!kiln_op_input(args, 5 + s)) continue;
    KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 5 + s, KILN_OP_F32, &v));
    int64_t d0 = out->batch_first ? out->batch : out->directions;
    int64_t d1 = out->batch_first ? out->directions : out->batch;
    if (v->shape.rank != 3 || v->shape.dims[0] != d0 || v->shape.dims[1] != d1 ||
        v->shape.dims[2] != out->hidden) {
      return kiln_op_invalid(args, "initial state %zu has the wrong shape", s);
    }
  }
  if (out->kind != KILN_RNN_LSTM && args->node->input_count > 6) {
    return kiln_op_invalid(args, "too many inputs");
  }
  if (out->kind == KILN_RNN_LSTM && kiln_op_input(args, 7)) {
    KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 7, KILN_OP_F32, &v));
    if (v->shape.rank != 2 || v->shape.dims[0] != out->directions ||
        v->shape.dims[1] != 3 * out->hidden) {
      return kiln_op_invalid(args, "P must be [directions, 3 * hidden]");
    }
    out->peephole = true;
  }
  return kiln_ok_status();
}

int64_t kiln_rnn_length(const kiln_rnn_info_t* info, int64_t b) {
  const kiln_graph_value_t* v = info->lens;
  if (!v) return info->seq;
  return v->dtype == KILN_GRAPH_DTYPE_I64 ? ((const int64_t*)v->data)[b]
                                          : ((const int32_t*)v->data)[b];
}

bool kiln_rnn_is_plain(const kiln_rnn_info_t* info) {
  if (info->input_forget || info->clip > 0.0f || info->peephole || info->runtime_lens) {
    return false;
  }
  if (info->act[0] != (info->kind == KILN_RNN_SIMPLE ? KILN_ACT_TANH : KILN_ACT_SIGMOID) ||
      info->act[1] != KILN_ACT_TANH || info->act[2] != KILN_ACT_TANH) {
    return false;
  }
  for (int64_t b = 0; b < info->batch; ++b) {
    if (kiln_rnn_length(info, b) != info->seq) return false;
  }
  return true;
}

static kiln_status_t kiln_infer_rnn(const kiln_op_infer_args_t* args) {
  kiln_rnn_info_t info;
  KILN_RETURN_IF_ERROR(kiln_rnn_info(args, &info));
  kiln_graph_shape_t y = info.batch_first
                             ? (kiln_graph_shape_t){4, {info.batch, info.seq, info.directions,
                                                        info.hidden}}
                             : (kiln_graph_shape_t){4, {info.seq, info.directions, info.batch,
                                                        info.hidden}};
  kiln_graph_shape_t state =
      info.batch_first ? (kiln_graph_shape_t){3, {info.batch, info.directions, info.hidden}}
                       : (kiln_graph_shape_t){3, {info.directions, info.batch, info.hidden}};
  KILN_RETURN_IF_ERROR(kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &y));
  KILN_RETURN_IF_ERROR(kiln_op_set_output(args, 1, KILN_GRAPH_DTYPE_F32, &state));
  if (args->node->output_count > 2 && info.kind != KILN_RNN_LSTM) {
    return kiln_op_invalid(args, "only LSTM has a third output");
  }
  return kiln_op_set_output(args, 2, KILN_GRAPH_DTYPE_F32, &state);
}

// Offset of (time or direction-major) state entry [d][b] in layout order.
static size_t kiln_state_at(const kiln_rnn_info_t* info, int64_t d, int64_t b) {
  return (size_t)(info->batch_first ? b * info->directions + d : d * info->batch + b) *
         (size_t)info->hidden;
}

// R[g] . v for rows [g0, g1) of one direction's R (or W) into out.
static void kiln_rnn_gemv(const float* m, int64_t cols, const double* v, const float* bias,
                          int64_t g0, int64_t g1, double* out) {
  for (int64_t g = g0; g < g1; ++g) {
    double sum = bias ? bias[g] : 0.0;
    for (int64_t i = 0; i < cols; ++i) sum += (double)m[g * cols + i] * v[i];
    out[g] = sum;
  }
}

static double kiln_rnn_clip(double x, double clip) {
  return clip > 0.0 ? (x < -clip ? -clip : x > clip ? clip : x) : x;
}

static kiln_status_t kiln_run_rnn(const kiln_op_run_args_t* args) {
  kiln_rnn_kind_t kind = kiln_rnn_kind(args->node->op_type);
  const char* direction = "forward";
  int64_t layout = 0, lbr = 0, input_forget = 0;
  float clip_attr = 0.0f;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_string(args->node, "direction", "forward", &direction));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "layout", 0, &layout));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "linear_before_reset", 0, &lbr));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "input_forget", 0, &input_forget));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(args->node, "clip", 0.0f, &clip_attr));
  const double clip = clip_attr;
  kiln_rnn_info_t info;
  memset(&info, 0, sizeof(info));
  info.gates = kind == KILN_RNN_LSTM ? 4 : kind == KILN_RNN_GRU ? 3 : 1;
  info.directions = strcmp(direction, "bidirectional") == 0 ? 2 : 1;
  info.batch_first = layout == 1;
  info.kind = kind;
  // The node passed kiln_rnn_info already: the list parses.
  kiln_op_infer_args_t infer_args = {NULL, (kiln_graph_node_t*)args->node};
  KILN_RETURN_IF_ERROR(kiln_rnn_activations(&infer_args, &info));
  const uint32_t F = info.act[0], Gc = info.act[1], Hc = info.act[2];
  const kiln_ref_tensor_t* x = &args->inputs[0];
  info.seq = x->shape.dims[info.batch_first ? 1 : 0];
  info.batch = x->shape.dims[info.batch_first ? 0 : 1];
  const int64_t I = x->shape.dims[2], G = info.gates;
  const int64_t H = info.hidden = args->inputs[1].shape.dims[1] / G;
  const float* X = (const float*)x->data;
  const float* W = (const float*)args->inputs[1].data;
  const float* R = (const float*)args->inputs[2].data;
  const float* B = args->input_count > 3 ? (const float*)args->inputs[3].data : NULL;
  const kiln_ref_tensor_t* lens = args->input_count > 4 && args->inputs[4].data
                                      ? &args->inputs[4] : NULL;
  const float* h0 = args->input_count > 5 ? (const float*)args->inputs[5].data : NULL;
  const float* c0 = args->input_count > 6 && kind == KILN_RNN_LSTM
                        ? (const float*)args->inputs[6].data
                        : NULL;
  const float* P = args->input_count > 7 && kind == KILN_RNN_LSTM
                       ? (const float*)args->inputs[7].data
                       : NULL;
  double* scratch = NULL;
  size_t per = (size_t)(5 * H + 2 * G * H + I);
  KILN_RETURN_IF_ERROR(
      kiln_allocator_malloc(args->allocator, per * sizeof(double), (void**)&scratch));
  double *h = scratch, *c = h + H, *gx = c + H, *gh = gx + G * H, *z = gh + G * H;
  double *r = z + H, *tmp = r + H, *xv = tmp + H;
  float* Y = args->output_count > 0 ? (float*)args->outputs[0].data : NULL;
  float* Yh = args->output_count > 1 ? (float*)args->outputs[1].data : NULL;
  float* Yc = args->output_count > 2 ? (float*)args->outputs[2].data : NULL;
  for (int64_t d = 0; d < info.directions; ++d) {
    const float* Wd = W + d * G * H * I;
    const float* Rd = R + d * G * H * H;
    const float* Wb = B ? B + d * 2 * G * H : NULL;
    const float* Rb = B ? Wb + G * H : NULL;
    // Peepholes i, o, f (zeros without P): i and f see c_{t-1}, o sees c_t.
    const float* Pd = P ? P + d * 3 * H : NULL;
    bool backwards = d == 1 || strcmp(direction, "reverse") == 0;
    for (int64_t b = 0; b < info.batch; ++b) {
      size_t s = kiln_state_at(&info, d, b);
      int64_t length = info.seq;
      if (lens) {
        length = lens->dtype == KILN_GRAPH_DTYPE_I64 ? ((const int64_t*)lens->data)[b]
                                                     : ((const int32_t*)lens->data)[b];
        // Run-time lengths outside [0, seq] are clamped (as on the GPU).
        length = length < 0 ? 0 : length > info.seq ? info.seq : length;
      }
      for (int64_t j = 0; j < H; ++j) {
        h[j] = h0 ? h0[s + (size_t)j] : 0.0;
        c[j] = c0 ? c0[s + (size_t)j] : 0.0;
      }
      for (int64_t step = 0; step < info.seq; ++step) {
        // Past the row's length Y is zero and the state stays.
        bool live = step < length;
        int64_t t = !live ? step : backwards ? length - 1 - step : step;
        if (live) {
          const float* xt = X + (info.batch_first ? b * info.seq + t : t * info.batch + b) * I;
          for (int64_t i = 0; i < I; ++i) xv[i] = xt[i];
          kiln_rnn_gemv(Wd, I, xv, Wb, 0, G * H, gx);
          if (kind == KILN_RNN_LSTM) {
            kiln_rnn_gemv(Rd, H, h, Rb, 0, G * H, gh);
            for (int64_t j = 0; j < H; ++j) {
              double pi = Pd ? Pd[j] * c[j] : 0.0, pf = Pd ? Pd[2 * H + j] * c[j] : 0.0;
              double in = kiln_rnn_activate(F, kiln_rnn_clip(gx[j] + gh[j] + pi, clip));
              double f = input_forget
                             ? 1.0 - in
                             : kiln_rnn_activate(F, kiln_rnn_clip(gx[2 * H + j] + gh[2 * H + j] + pf, clip));
              double cc = kiln_rnn_activate(Gc, kiln_rnn_clip(gx[3 * H + j] + gh[3 * H + j], clip));
              c[j] = f * c[j] + in * cc;
              double po = Pd ? Pd[H + j] * c[j] : 0.0;
              double o = kiln_rnn_activate(F, kiln_rnn_clip(gx[H + j] + gh[H + j] + po, clip));
              h[j] = o * kiln_rnn_activate(Hc, c[j]);
            }
          } else if (kind == KILN_RNN_GRU) {
            kiln_rnn_gemv(Rd, H, h, Rb, 0, 2 * H, gh);
            for (int64_t j = 0; j < H; ++j) {
              z[j] = kiln_rnn_activate(F, kiln_rnn_clip(gx[j] + gh[j], clip));
              r[j] = kiln_rnn_activate(F, kiln_rnn_clip(gx[H + j] + gh[H + j], clip));
            }
            if (lbr) {
              kiln_rnn_gemv(Rd, H, h, Rb, 2 * H, 3 * H, gh);
              for (int64_t j = 0; j < H; ++j) {
                tmp[j] = kiln_rnn_activate(Gc, kiln_rnn_clip(gx[2 * H + j] + r[j] * gh[2 * H + j], clip));
              }
            } else {
              for (int64_t j = 0; j < H; ++j) tmp[j] = r[j] * h[j];
              kiln_rnn_gemv(Rd, H, tmp, Rb, 2 * H, 3 * H, gh);
              for (int64_t j = 0; j < H; ++j) {
                tmp[j] = kiln_rnn_activate(Gc, kiln_rnn_clip(gx[2 * H + j] + gh[2 * H + j], clip));
              }
            }
            for (int64_t j = 0; j < H; ++j) h[j] = (1.0 - z[j]) * tmp[j] + z[j] * h[j];
          } else {
            kiln_rnn_gemv(Rd, H, h, Rb, 0, H, gh);
            for (int64_t j = 0; j < H; ++j) h[j] = kiln_rnn_activate(F, kiln_rnn_clip(gx[j] + gh[j], clip));
          }
        }
        if (Y) {
          int64_t row = info.batch_first ? (b * info.seq + t) * info.directions + d
                                         : (t * info.directions + d) * info.batch + b;
          for (int64_t j = 0; j < H; ++j) Y[row * H + j] = live ? (float)h[j] : 0.0f;
        }
      }
      for (int64_t j = 0; j < H; ++j) {
        if (Yh) Yh[s + (size_t)j] = (float)h[j];
        if (Yc) Yc[s + (size_t)j] = (float)c[j];
      }
    }
  }
  kiln_allocator_free(args->allocator, scratch);
  return kiln_ok_status();
}

#define KILN_RNN_ATTRS "activations,clip,direction,hidden_size,layout"

const kiln_op_def_t kiln_ops_rnn[] = {
    {"LSTM", KILN_RNN_ATTRS ",input_forget", 3, 8, 0, 3, kiln_infer_rnn, kiln_run_rnn, 7},
    {"GRU", KILN_RNN_ATTRS ",linear_before_reset", 3, 6, 0, 2, kiln_infer_rnn, kiln_run_rnn, 7},
    {"RNN", KILN_RNN_ATTRS, 3, 6, 0, 2, kiln_infer_rnn, kiln_run_rnn, 7},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
