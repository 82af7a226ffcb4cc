// The reference executor: walks live nodes in order, gives each output a
// buffer (its own allocation, or its memory-plan slot), runs the op's plain C
// implementation and frees intermediates after their last use.
#include "kiln/compiler/graph_reference.h"

#include <string.h>

#include "ops.h"

typedef struct kiln_ref_state_t {
  const kiln_graph_t* graph;
  kiln_allocator_t allocator;
  void** buffers;    // per value
  bool* owned;       // buffer allocated here (free after last use)
  int32_t* last_use; // per value
  uint8_t* arena;    // memory-plan buffer
} kiln_ref_state_t;

static void kiln_ref_state_free(kiln_ref_state_t* state) {
  for (size_t v = 0; v < state->graph->value_count; ++v) {
    if (state->owned && state->owned[v] && state->buffers[v]) {
      kiln_allocator_free(state->allocator, state->buffers[v]);
    }
  }
  if (state->buffers) kiln_allocator_free(state->allocator, state->buffers);
  if (state->owned) kiln_allocator_free(state->allocator, state->owned);
  if (state->last_use) kiln_allocator_free(state->allocator, state->last_use);
  if (state->arena) kiln_allocator_free(state->allocator, state->arena);
}

static kiln_status_t kiln_ref_bind_inputs(kiln_ref_state_t* state,
                                          const kiln_graph_tensor_t* inputs,
                                          size_t input_count) {
  const kiln_graph_t* graph = state->graph;
  if (input_count != graph->input_count) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: graph has %zu inputs, %zu given",
                            graph->source, graph->input_count, input_count);
  }
  for (size_t i = 0; i < input_count; ++i) {
    const kiln_graph_value_t* v = &graph->values[graph->inputs[i]];
    if (inputs[i].dtype != v->dtype ||
        !kiln_graph_shape_equal(&inputs[i].shape, &v->shape)) {
      char want[128], have[128];
      kiln_graph_shape_format(&v->shape, want, sizeof(want));
      kiln_graph_shape_format(&inputs[i].shape, have, sizeof(have));
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "%s: input %zu ('%s') must be %s %s, got %s %s",
                              graph->source, i, v->name,
                              kiln_graph_dtype_name(v->dtype), want,
                              kiln_graph_dtype_name(inputs[i].dtype), have);
    }
    state->buffers[graph->inputs[i]] = inputs[i].data;
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_ref_run_node(kiln_ref_state_t* state,
                                       const kiln_graph_memory_plan_t* plan,
                                       size_t node_index) {
  const kiln_graph_t* graph = state->graph;
  const kiln_graph_node_t* node = &graph->nodes[node_index];
  const kiln_op_def_t* op = kiln_op_find(node->op_type);
  if (!op || node->input_count > 64 || node->output_count > 64) {
    return kiln_make_status(KILN_STATUS_INTERNAL, "node '%s' (%s) cannot run",
                            node->name, node->op_type);
  }
  bool all_constant = true;
  for (size_t o = 0; o < node->output_count; ++o) {
    if (node->outputs[o] >= 0 && !graph->values[node->outputs[o]].data) {
      all_constant = false;
    }
  }
  if (all_constant) return kiln_ok_status();  // computed at compile time
  kiln_ref_tensor_t inputs[64];
  kiln_ref_tensor_t outputs[64];
  memset(inputs, 0, sizeof(inputs));
  memset(outputs, 0, sizeof(outputs));
  for (size_t i = 0; i < node->input_count; ++i) {
    int32_t id = node->inputs[i];
    if (id < 0) continue;
    const kiln_graph_value_t* v = &graph->values[id];
    inputs[i].dtype = v->dtype;
    inputs[i].shape = v->shape;
    inputs[i].data = state->buffers[id];
    KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&v->shape, &inputs[i].count));
    if (!inputs[i].data) {
      return kiln_make_status(KILN_STATUS_INTERNAL,
                              "node '%s' reads '%s' before it is computed",
                              node->name, v->name);
    }
  }
  for (size_t o = 0; o < node->output_count; ++o) {
    int32_t id = node->outputs[o];
    if (id < 0) continue;
    const kiln_graph_value_t* v = &graph->values[id];
    outputs[o].dtype = v->dtype;
    outputs[o].shape = v->shape;
    KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&v->shape, &outputs[o].count));
    if (plan && plan->offsets[id] != KILN_GRAPH_NOT_PLANNED) {
      state->buffers[id] = state->arena + plan->offsets[id];
      // Poison the slot so reads of stale data cannot go unnoticed; a view
      // shares its input's slot, which already holds its bytes.
      if (!plan->view_of || plan->view_of[id] < 0) {
        memset(state->buffers[id], 0xff, plan->sizes[id]);
      }
    } else {
      KILN_RETURN_IF_ERROR(kiln_allocator_calloc_array(
          state->allocator, outputs[o].count ? outputs[o].count : 1,
          kiln_graph_dtype_size(v->dtype), &state->buffers[id]));
      state->owned[id] = true;
    }
    outputs[o].data = state->buffers[id];
  }
  const bool in_place_view = node->output_count == 1 && node->outputs[0] >= 0 && plan &&
                             plan->view_of && plan->view_of[node->outputs[0]] >= 0;
  kiln_op_run_args_t args = {node,    graph->opset,      inputs,
                             node->input_count, outputs, node->output_count,
                             state->allocator};
  if (!in_place_view) {
    KILN_RETURN_IF_ERROR_ANNOTATE(op->run(&args), "running node '%s' (%s)",
                                  node->name, node->op_type);
  }
  // Free intermediates whose last reader was this node.
  for (size_t i = 0; i < node->input_count; ++i) {
    int32_t id = node->inputs[i];
    if (id >= 0 && state->owned[id] && state->last_use[id] == (int32_t)node_index &&
        !graph->values[id].is_output) {
      kiln_allocator_free(state->allocator, state->buffers[id]);
      state->buffers[id] = NULL;
      state->owned[id] = false;
    }
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_ref_execute(kiln_ref_state_t* state,
                                      const kiln_graph_tensor_t* inputs,
                                      size_t input_count,
                                      const kiln_graph_memory_plan_t* plan,
                                      kiln_graph_tensor_t* outputs) {
  const kiln_graph_t* graph = state->graph;
  size_t n = graph->value_count ? graph->value_count : 1;
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc_array(
      state->allocator, n, sizeof(void*), (void**)&state->buffers));
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc_array(
      state->allocator, n, sizeof(bool), (void**)&state->owned));
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc_array(
      state->allocator, n, sizeof(int32_t), (void**)&state->last_use));
  if (plan) {
    if (plan->value_count != graph->value_count) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "memory plan is for a different graph");
    }
    KILN_RETURN_IF_ERROR(kiln_allocator_malloc(
        state->allocator, plan->peak_bytes ? plan->peak_bytes : 1,
        (void**)&state->arena));
  }
  for (size_t v = 0; v < graph->value_count; ++v) {
    state->buffers[v] = graph->values[v].data;
    state->last_use[v] = -1;
  }
  for (size_t node_index = 0; node_index < graph->node_count; ++node_index) {
    const kiln_graph_node_t* node = &graph->nodes[node_index];
    if (node->removed) continue;
    for (size_t i = 0; i < node->input_count; ++i) {
      if (node->inputs[i] >= 0) state->last_use[node->inputs[i]] = (int32_t)node_index;
    }
  }
  KILN_RETURN_IF_ERROR(kiln_ref_bind_inputs(state, inputs, input_count));
  for (size_t node_index = 0; node_index < graph->node_count; ++node_index) {
    if (graph->nodes[node_index].removed) continue;
    KILN_RETURN_IF_ERROR(kiln_ref_run_node(state, plan, node_index));
  }
  for (size_t i = 0; i < graph->output_count; ++i) {
    const kiln_graph_value_t* v = &graph->values[graph->outputs[i]];
    const void* data = state->buffers[graph->outputs[i]];
    if (!data) {
      return kiln_make_status(KILN_STATUS_INTERNAL, "output '%s' was never "
                              "computed", v->name);
    }
    KILN_RETURN_IF_ERROR(kiln_graph_tensor_allocate(state->allocator, v->dtype,
                                                    &v->shape, &outputs[i]));
    if (outputs[i].byte_size) memcpy(outputs[i].data, data, outputs[i].byte_size);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_graph_reference_run(const kiln_graph_t* graph,
                                       const kiln_graph_tensor_t* inputs,
                                       size_t input_count,
                                       const kiln_graph_memory_plan_t* plan,
                                       kiln_allocator_t allocator,
                                       kiln_graph_tensor_t* outputs) {
  memset(outputs, 0, graph->output_count * sizeof(*outputs));
  kiln_ref_state_t state;
  memset(&state, 0, sizeof(state));
  state.graph = graph;
  state.allocator = allocator;
  kiln_status_t status =
      kiln_ref_execute(&state, inputs, input_count, plan, outputs);
  kiln_ref_state_free(&state);
  if (!kiln_status_is_ok(status)) {
    for (size_t i = 0; i < graph->output_count; ++i) {
      kiln_graph_tensor_deinit(&outputs[i]);
    }
  }
  return status;
}
