// Precision rewrites (docs/precision.md).
//
// kiln_graph_widen_f16 (at import, before shape inference): an fp16 model
// (model.half() exports) becomes a float32 graph whose float16 inputs and
// outputs are joined to it by Casts: float16 constants widen exactly to
// float32, Casts to float16 inside the graph become Casts to float. The
// passes and lowerings then see the float32 graph they know.
//
// kiln_graph_precision_f16 (after the passes): every float32 run-time value
// is stored as float16; graph inputs and outputs keep their dtype through
// Casts at the edges. Constants stay float32 in the graph (lowerings read
// some on the host); the emitter converts those it binds.
#include <stdio.h>
#include <string.h>

#include "kiln/base/half.h"
#include "kiln/compiler/graph_passes.h"

// Moves node `id` to the front, keeping the node array topologically
// ordered (the memory plan's levels assume producers come first).
static void kiln_precision_move_first(kiln_graph_t* graph, int32_t id) {
  kiln_graph_node_t node = graph->nodes[id];
  memmove(&graph->nodes[1], &graph->nodes[0], (size_t)id * sizeof(node));
  graph->nodes[0] = node;
  for (size_t v = 0; v < graph->value_count; ++v) {
    int32_t* producer = &graph->values[v].producer;
    if (*producer == id) {
      *producer = 0;
    } else if (*producer >= 0 && *producer < id) {
      ++*producer;
    }
  }
}

// A Cast node `from` -> `to` (ONNX dtype code `onnx_to`); `first` puts it
// before every other node.
static kiln_status_t kiln_precision_add_cast(kiln_graph_t* graph, int32_t from, int32_t to,
                                             int64_t onnx_to, bool first) {
  char name[160];
  snprintf(name, sizeof(name), "kiln.precision/%s", graph->values[to].name);
  int32_t node_id = -1;
  KILN_RETURN_IF_ERROR(kiln_graph_add_node(graph, "Cast", name, &from, 1, &to, 1, &node_id));
  kiln_graph_attr_t attr = {.name = "to", .type = KILN_GRAPH_ATTR_INT, .i = onnx_to};
  KILN_RETURN_IF_ERROR(kiln_graph_node_set_attr(graph, node_id, &attr));
  if (first) kiln_precision_move_first(graph, node_id);
  return kiln_ok_status();
}

// Node inputs reading `from` read `to` instead (graph outputs unchanged).
static void kiln_precision_redirect_inputs(kiln_graph_t* graph, int32_t from, int32_t to) {
  for (size_t n = 0; n < graph->node_count; ++n) {
    kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed) continue;
    for (size_t i = 0; i < node->input_count; ++i) {
      if (node->inputs[i] == from) node->inputs[i] = to;
    }
  }
}

// A new value named `<name><suffix>` like `id` (shape copied when known).
static kiln_status_t kiln_precision_twin(kiln_graph_t* graph, int32_t id, const char* suffix,
                                         kiln_graph_dtype_t dtype, int32_t* out_id) {
  char name[160];
  snprintf(name, sizeof(name), "%s%s", graph->values[id].name, suffix);
  KILN_RETURN_IF_ERROR(kiln_graph_add_value(graph, name, dtype, out_id));
  kiln_graph_value_t* twin = &graph->values[*out_id];
  const kiln_graph_value_t* value = &graph->values[id];
  twin->shape = value->shape;
  twin->has_shape = value->has_shape;
  return kiln_ok_status();
}

// Graph input `id` of `dtype` is read as `inner_dtype` through a first Cast.
static kiln_status_t kiln_precision_cast_input(kiln_graph_t* graph, int32_t id,
                                               kiln_graph_dtype_t inner_dtype, int64_t onnx_to) {
  int32_t inner = -1;
  KILN_RETURN_IF_ERROR(kiln_precision_twin(
      graph, id, inner_dtype == KILN_GRAPH_DTYPE_F16 ? ".f16" : ".f32", inner_dtype, &inner));
  kiln_precision_redirect_inputs(graph, id, inner);
  return kiln_precision_add_cast(graph, id, inner, onnx_to, true);
}

// Graph output `id` (a node's result) is computed as a new `inner_dtype`
// value and cast to `id` at the end.
static kiln_status_t kiln_precision_cast_output(kiln_graph_t* graph, int32_t id,
                                                kiln_graph_dtype_t inner_dtype,
                                                int64_t onnx_to) {
  int32_t inner = -1;
  KILN_RETURN_IF_ERROR(kiln_precision_twin(
      graph, id, inner_dtype == KILN_GRAPH_DTYPE_F16 ? ".f16" : ".f32", inner_dtype, &inner));
  int32_t producer = graph->values[id].producer;
  kiln_graph_node_t* node = &graph->nodes[producer];
  for (size_t o = 0; o < node->output_count; ++o) {
    if (node->outputs[o] == id) node->outputs[o] = inner;
  }
  graph->values[inner].producer = producer;
  kiln_precision_redirect_inputs(graph, id, inner);
  return kiln_precision_add_cast(graph, inner, id, onnx_to, false);
}

static bool kiln_precision_is_output(const kiln_graph_t* graph, int32_t id) {
  for (size_t o = 0; o < graph->output_count; ++o) {
    if (graph->outputs[o] == id) return true;
  }
  return false;
}

kiln_status_t kiln_graph_widen_f16(kiln_graph_t* graph) {
  // Only fp16 models: a float32 model's own Casts to float16 keep their
  // rounding (and their float16 values, see kiln_emit_lower_node).
  bool fp16_model = false;
  for (size_t v = 0; v < graph->value_count; ++v) {
    fp16_model = fp16_model || graph->values[v].dtype == KILN_GRAPH_DTYPE_F16;
  }
  if (!fp16_model) return kiln_ok_status();
  for (size_t v = 0; v < graph->value_count; ++v) {
    kiln_graph_value_t* value = &graph->values[v];
    if (value->dtype != KILN_GRAPH_DTYPE_F16 || !value->data) continue;
    size_t count = 0;
    KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&value->shape, &count));
    void* wide = NULL;
    KILN_RETURN_IF_ERROR(kiln_arena_allocate(&graph->arena, count * sizeof(float) + 1, &wide));
    for (size_t i = 0; i < count; ++i) {
      uint16_t bits;
      memcpy(&bits, (const uint8_t*)value->data + 2 * i, sizeof(bits));
      ((float*)wide)[i] = kiln_f16_to_f32(bits);
    }
    value->data = wide;
    value->dtype = KILN_GRAPH_DTYPE_F32;
  }
  for (size_t n = 0; n < graph->node_count; ++n) {
    kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed || strcmp(node->op_type, "Cast") != 0) continue;
    for (size_t a = 0; a < node->attr_count; ++a) {
      kiln_graph_attr_t* attr = &node->attrs[a];
      if (strcmp(attr->name, "to") == 0 && attr->type == KILN_GRAPH_ATTR_INT && attr->i == 10) {
        attr->i = 1;
      }
    }
  }
  for (size_t i = 0; i < graph->input_count; ++i) {
    int32_t id = graph->inputs[i];
    if (graph->values[id].dtype != KILN_GRAPH_DTYPE_F16) continue;
    KILN_RETURN_IF_ERROR(kiln_precision_cast_input(graph, id, KILN_GRAPH_DTYPE_F32, 1));
  }
  // The importer marks outputs declared FLOAT16 with that dtype before
  // inference sets the real one.
  for (size_t o = 0; o < graph->output_count; ++o) {
    int32_t id = graph->outputs[o];
    kiln_graph_value_t* value = &graph->values[id];
    if (value->dtype != KILN_GRAPH_DTYPE_F16 || value->data || value->is_input) continue;
    if (value->producer < 0) {
      return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                              "'%s': float16 output '%s' is not computed by a node",
                              graph->source, value->name);
    }
    value->dtype = KILN_GRAPH_DTYPE_INVALID;  // the Cast's inference sets it
    value->has_shape = false;
    KILN_RETURN_IF_ERROR(
        kiln_precision_cast_output(graph, id, KILN_GRAPH_DTYPE_INVALID, 10));
  }
  return kiln_ok_status();
}

bool kiln_graph_has_f16_io(const kiln_graph_t* graph) {
  for (size_t i = 0; i < graph->input_count + graph->output_count; ++i) {
    int32_t id = i < graph->input_count ? graph->inputs[i]
                                        : graph->outputs[i - graph->input_count];
    if (graph->values[id].dtype == KILN_GRAPH_DTYPE_F16) return true;
  }
  return false;
}

// QOperator chains (pass_qoperator.c: kiln.Quantize -> Sub -> Conv / MatMul
// -> kiln.Requantize ... -> kiln.Dequantize) carry int8 values as exact
// fp32 integers, and their Conv / MatMul sums (up to 2^24) would be rounded
// by fp16 storage. So at f16 every value from a kiln.Quantize or
// kiln.Requantize up to the kiln.Dequantize that ends the chain stays
// float32: a Cast to float joins each kiln.Quantize's f16 input (the
// quantization is computed from the f16 value, exactly as ONNX defines it)
// and a Cast to float16 each kiln.Dequantize's output; the chain's kernels
// are the fp32 ones, bit for bit the f32 path's.
static bool kiln_precision_is_op(const kiln_graph_node_t* node, const char* op) {
  return !node->removed && strcmp(node->op_type, op) == 0;
}

// Node n's input slot i (a float16 value) reads a float32 twin made by a
// Cast placed right after the value's producer (or first). Node n moves
// one on.
static kiln_status_t kiln_precision_read_f32(kiln_graph_t* graph, size_t n, size_t i) {
  const int32_t id = graph->nodes[n].inputs[i];
  int32_t twin = -1;
  KILN_RETURN_IF_ERROR(kiln_precision_twin(graph, id, ".f32", KILN_GRAPH_DTYPE_F32, &twin));
  graph->nodes[n].inputs[i] = twin;
  const size_t added = graph->node_count;
  const int32_t producer = graph->values[id].producer;
  KILN_RETURN_IF_ERROR(kiln_precision_add_cast(graph, id, twin, 1, producer < 0));
  if (producer >= 0) {
    KILN_RETURN_IF_ERROR(kiln_graph_place_nodes_after(graph, (size_t)producer, added));
  }
  return kiln_ok_status();
}

// Node n's output slot o (a float16 value) is written as a float32 twin and
// cast to it by a Cast placed right after node n.
static kiln_status_t kiln_precision_write_f32(kiln_graph_t* graph, size_t n, size_t o) {
  const int32_t id = graph->nodes[n].outputs[o];
  int32_t twin = -1;
  KILN_RETURN_IF_ERROR(kiln_precision_twin(graph, id, ".f32", KILN_GRAPH_DTYPE_F32, &twin));
  graph->nodes[n].outputs[o] = twin;
  graph->values[twin].producer = (int32_t)n;
  const size_t added = graph->node_count;
  KILN_RETURN_IF_ERROR(kiln_precision_add_cast(graph, twin, id, 10, false));
  return kiln_graph_place_nodes_after(graph, n, added);
}

static bool kiln_precision_is_f16(const kiln_graph_t* graph, int32_t id) {
  return id >= 0 && !graph->values[id].data && graph->values[id].dtype == KILN_GRAPH_DTYPE_F16;
}

// Nodes whose lowering takes float32 only (a GPT block's Where, RNN / GRU /
// LSTM, a Cast from bool) run at float32 between Casts, so the rest of the
// graph keeps float16 storage instead of the whole model being refused.
static kiln_status_t kiln_precision_keep_nodes_f32(kiln_graph_t* graph,
                                                   kiln_graph_node_predicate_t keep_f32) {
  for (size_t n = 0; keep_f32 && n < graph->node_count; ++n) {
    if (graph->nodes[n].removed || !keep_f32(graph, &graph->nodes[n])) continue;
    for (size_t i = 0; i < graph->nodes[n].input_count; ++i) {
      if (!kiln_precision_is_f16(graph, graph->nodes[n].inputs[i])) continue;
      KILN_RETURN_IF_ERROR(kiln_precision_read_f32(graph, n, i));
      ++n;  // the Cast went before it
    }
    const size_t node = n;
    for (size_t o = 0; o < graph->nodes[node].output_count; ++o) {
      if (!kiln_precision_is_f16(graph, graph->nodes[node].outputs[o])) continue;
      KILN_RETURN_IF_ERROR(kiln_precision_write_f32(graph, node, o));
      ++n;  // the Cast follows it
    }
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_precision_keep_qop_f32(kiln_graph_t* graph) {
  for (size_t n = 0; n < graph->node_count; ++n) {  // producers come first
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed) continue;
    bool integer = kiln_precision_is_op(node, "kiln.Quantize") ||
                   kiln_precision_is_op(node, "kiln.Requantize");
    for (size_t i = 0; i < node->input_count && !integer; ++i) {
      int32_t id = node->inputs[i];
      integer = id >= 0 && !graph->values[id].data &&
                graph->values[id].dtype == KILN_GRAPH_DTYPE_F32 &&
                !kiln_precision_is_op(node, "kiln.Dequantize") && !graph->values[id].is_input;
    }
    if (!integer) continue;
    for (size_t o = 0; o < node->output_count; ++o) {
      int32_t id = node->outputs[o];
      if (id >= 0 && graph->values[id].dtype == KILN_GRAPH_DTYPE_F16) {
        graph->values[id].dtype = KILN_GRAPH_DTYPE_F32;
      }
    }
  }
  for (size_t n = 0; n < graph->node_count; ++n) {
    const bool quantize = kiln_precision_is_op(&graph->nodes[n], "kiln.Quantize");
    const bool dequantize = kiln_precision_is_op(&graph->nodes[n], "kiln.Dequantize");
    if (!quantize && !dequantize) continue;
    const int32_t id = quantize ? graph->nodes[n].inputs[0] : graph->nodes[n].outputs[0];
    if (id < 0 || graph->values[id].dtype != KILN_GRAPH_DTYPE_F16) continue;
    // x (f16) -> Cast -> f32 -> kiln.Quantize; kiln.Dequantize -> f32 ->
    // Cast -> y (f16).
    KILN_RETURN_IF_ERROR(quantize ? kiln_precision_read_f32(graph, n, 0)
                                  : kiln_precision_write_f32(graph, n, 0));
    ++n;  // the node moved one on (quantize) or the Cast follows it
  }
  return kiln_ok_status();
}

kiln_status_t kiln_graph_precision_f16(kiln_graph_t* graph, kiln_graph_node_predicate_t keep_f32) {
  for (size_t n = 0; n < graph->node_count; ++n) {
    // Its scale, rounded to fp16 storage, would move every quantized value.
    if (kiln_precision_is_op(&graph->nodes[n], "kiln.DynamicQuantizeParams")) {
      return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                              "'%s': node '%s' (op DynamicQuantizeLinear): dynamic "
                              "quantization runs at fp32; compile with --precision=f32",
                              graph->source, graph->nodes[n].name);
    }
  }
  for (size_t i = 0; i < graph->input_count; ++i) {
    int32_t id = graph->inputs[i];
    if (graph->values[id].dtype != KILN_GRAPH_DTYPE_F32) continue;
    if (kiln_precision_is_output(graph, id)) {
      return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                              "'%s': input '%s' is also an output; --precision=f16 "
                              "does not take such graphs",
                              graph->source, graph->values[id].name);
    }
    KILN_RETURN_IF_ERROR(kiln_precision_cast_input(graph, id, KILN_GRAPH_DTYPE_F16, 10));
  }
  for (size_t o = 0; o < graph->output_count; ++o) {
    int32_t id = graph->outputs[o];
    const kiln_graph_value_t* value = &graph->values[id];
    bool first = true;
    for (size_t p = 0; p < o; ++p) first = first && graph->outputs[p] != id;
    if (!first || value->dtype != KILN_GRAPH_DTYPE_F32 || value->data || value->producer < 0) {
      continue;
    }
    KILN_RETURN_IF_ERROR(kiln_precision_cast_output(graph, id, KILN_GRAPH_DTYPE_F16, 1));
  }
  for (size_t v = 0; v < graph->value_count; ++v) {
    kiln_graph_value_t* value = &graph->values[v];
    if (value->dtype != KILN_GRAPH_DTYPE_F32 || value->data || value->is_input ||
        kiln_precision_is_output(graph, (int32_t)v)) {
      continue;
    }
    value->dtype = KILN_GRAPH_DTYPE_F16;
  }
  KILN_RETURN_IF_ERROR(kiln_precision_keep_qop_f32(graph));
  return kiln_precision_keep_nodes_f32(graph, keep_f32);
}
