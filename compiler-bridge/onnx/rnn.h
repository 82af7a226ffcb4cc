// LSTM / GRU / RNN attributes and shapes, shared by the op's checker, its
// reference implementation (ops_rnn.c), the GPU lowering
// (onnx-emit/lower_rnn.c) and the unrolling pass (pass_unroll_rnn.c).
// Supported: activations Sigmoid/Tanh/Relu (the same for both directions,
// no alpha/beta), LSTM peepholes (P), forward/reverse/
// bidirectional, layout 0/1, clip, LSTM input_forget, sequence_lens absent
// or constant (each in [0, seq]) or a run-time tensor (lengths outside
// [0, seq] are clamped into it).
#ifndef KILN_COMPILER_BRIDGE_ONNX_RNN_H_
#define KILN_COMPILER_BRIDGE_ONNX_RNN_H_

#include "kiln/compiler/kernels_codes.h"
#include "ops.h"

typedef enum kiln_rnn_kind_e { KILN_RNN_SIMPLE, KILN_RNN_GRU, KILN_RNN_LSTM } kiln_rnn_kind_t;

typedef struct kiln_rnn_info_t {
  kiln_rnn_kind_t kind;
  int64_t gates;       // 1, 3 (zrh) or 4 (iofc)
  int64_t directions;  // 1 or 2
  bool reverse;        // direction == "reverse" (first direction runs backwards)
  bool batch_first;    // layout == 1
  bool linear_before_reset;  // GRU
  bool input_forget;         // LSTM: f = 1 - i
  float clip;                // > 0: gate inputs clipped to [-clip, clip]
  uint32_t act[3];           // f, g, h as KILN_ACT_SIGMOID / TANH / RELU
  int64_t seq, batch, input, hidden;
  // Constant sequence_lens (int32 or int64 data) or NULL; kiln_rnn_length
  // reads entry b.
  const kiln_graph_value_t* lens;
  bool runtime_lens;  // sequence_lens is not a constant (lens stays NULL)
  bool peephole;  // LSTM input 7 (P: [directions, 3 * hidden], i, o, f)
} kiln_rnn_info_t;

// Length of batch row b (seq without sequence_lens).
int64_t kiln_rnn_length(const kiln_rnn_info_t* info, int64_t b);
// Whether the node needs none of clip, input_forget, peepholes, non-default
// activations and lengths shorter than the sequence (what the unrolling
// pass expands).
bool kiln_rnn_is_plain(const kiln_rnn_info_t* info);
// Applies activation `code` (one of kiln_rnn_info_t's act).
double kiln_rnn_activate(uint32_t code, double x);

// Reads and checks the node; fills shapes from X and W. Messages name the node.
kiln_status_t kiln_rnn_info(const kiln_op_infer_args_t* args, kiln_rnn_info_t* out);

#endif  // KILN_COMPILER_BRIDGE_ONNX_RNN_H_
