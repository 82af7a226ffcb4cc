// Memory planning: lifetimes of intermediates -> first-fit offsets in one
// transient buffer, placing each value at the lowest aligned offset that
// does not overlap any value still alive. A view node's output (a reshape,
// or a transpose of size-1 dims: kiln_graph_view_source) shares its
// input's place: one value placed for the pair, alive as long as either,
// and the lowering copies nothing between them.
#include "kiln/compiler/graph_memory_plan.h"

#include <string.h>

#include "kiln/base/size_math.h"

static bool kiln_plan_wants(const kiln_graph_t* graph, int32_t id) {
  const kiln_graph_value_t* v = &graph->values[id];
  return v->producer >= 0 && !graph->nodes[v->producer].removed && !v->data &&
         !v->is_input && !v->is_output;
}

void kiln_graph_memory_plan_deinit(kiln_graph_memory_plan_t* plan) {
  if (plan->offsets) kiln_allocator_free(plan->allocator, plan->offsets);
  if (plan->sizes) kiln_allocator_free(plan->allocator, plan->sizes);
  if (plan->first_use) kiln_allocator_free(plan->allocator, plan->first_use);
  if (plan->last_use) kiln_allocator_free(plan->allocator, plan->last_use);
  if (plan->view_of) kiln_allocator_free(plan->allocator, plan->view_of);
  if (plan->node_levels) kiln_allocator_free(plan->allocator, plan->node_levels);
  memset(plan, 0, sizeof(*plan));
}

// The value that holds `id`'s bytes: itself, or the one it is a view of.
static size_t kiln_plan_root(const kiln_graph_memory_plan_t* plan, size_t id) {
  return plan->view_of && plan->view_of[id] >= 0 ? (size_t)plan->view_of[id] : id;
}

static bool kiln_plan_overlaps(const kiln_graph_memory_plan_t* plan, size_t a,
                               size_t b) {
  if (kiln_plan_root(plan, a) == kiln_plan_root(plan, b)) return false;  // one place
  bool time = plan->first_use[a] <= plan->last_use[b] &&
              plan->first_use[b] <= plan->last_use[a];
  bool space = plan->offsets[a] < plan->offsets[b] + plan->sizes[b] &&
               plan->offsets[b] < plan->offsets[a] + plan->sizes[a];
  return time && space && plan->sizes[a] && plan->sizes[b];
}

// Each live node's dependency level (0 when it reads only inputs and
// constants); nodes are in topological order.
static kiln_status_t kiln_plan_levels(const kiln_graph_t* graph, kiln_allocator_t allocator,
                                      int32_t** out_levels) {
  int32_t* levels = NULL;
  size_t n = graph->node_count ? graph->node_count : 1;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_calloc_array(allocator, n, sizeof(int32_t), (void**)&levels));
  for (size_t node_index = 0; node_index < graph->node_count; ++node_index) {
    const kiln_graph_node_t* node = &graph->nodes[node_index];
    if (node->removed) {
      levels[node_index] = -1;
      continue;
    }
    int32_t level = 0;
    for (size_t i = 0; i < node->input_count; ++i) {
      int32_t id = node->inputs[i];
      if (id < 0) continue;
      int32_t producer = graph->values[id].producer;
      if (producer >= 0 && (size_t)producer < node_index && levels[producer] + 1 > level) {
        level = levels[producer] + 1;
      }
    }
    levels[node_index] = level;
  }
  *out_levels = levels;
  return kiln_ok_status();
}

static kiln_status_t kiln_plan_build(const kiln_graph_t* graph, size_t alignment,
                                     kiln_allocator_t allocator, bool by_level,
                                     kiln_graph_memory_plan_t* out_plan);

kiln_status_t kiln_graph_memory_plan_build(const kiln_graph_t* graph,
                                           size_t alignment,
                                           kiln_allocator_t allocator,
                                           kiln_graph_memory_plan_t* out_plan) {
  return kiln_plan_build(graph, alignment, allocator, false, out_plan);
}

kiln_status_t kiln_graph_memory_plan_build_by_level(const kiln_graph_t* graph,
                                                    size_t alignment,
                                                    kiln_allocator_t allocator,
                                                    kiln_graph_memory_plan_t* out_plan) {
  return kiln_plan_build(graph, alignment, allocator, true, out_plan);
}

static kiln_status_t kiln_plan_build(const kiln_graph_t* graph, size_t alignment,
                                     kiln_allocator_t allocator, bool by_level,
                                     kiln_graph_memory_plan_t* out_plan) {
  memset(out_plan, 0, sizeof(*out_plan));
  if (!kiln_is_power_of_two(alignment)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "alignment %zu is not a power of two", alignment);
  }
  kiln_graph_memory_plan_t plan;
  memset(&plan, 0, sizeof(plan));
  plan.allocator = allocator;
  plan.alignment = alignment;
  plan.value_count = graph->value_count;
  plan.by_level = by_level;
  size_t n = graph->value_count ? graph->value_count : 1;
  kiln_status_t status =
      kiln_allocator_calloc_array(allocator, n, sizeof(size_t), (void**)&plan.offsets);
  if (kiln_status_is_ok(status)) {
    status = kiln_allocator_calloc_array(allocator, n, sizeof(size_t),
                                         (void**)&plan.sizes);
  }
  if (kiln_status_is_ok(status)) {
    status = kiln_allocator_calloc_array(allocator, n, sizeof(int32_t),
                                         (void**)&plan.first_use);
  }
  if (kiln_status_is_ok(status)) {
    status = kiln_allocator_calloc_array(allocator, n, sizeof(int32_t),
                                         (void**)&plan.last_use);
  }
  if (kiln_status_is_ok(status)) {
    status = kiln_allocator_calloc_array(allocator, n, sizeof(int32_t),
                                         (void**)&plan.view_of);
  }
  int32_t* levels = NULL;
  if (kiln_status_is_ok(status) && by_level) {
    status = kiln_plan_levels(graph, allocator, &levels);
  }
  if (!kiln_status_is_ok(status)) {
    kiln_graph_memory_plan_deinit(&plan);
    return status;
  }
  // A value lives from its producer's time to its last reader's.
  for (size_t v = 0; v < graph->value_count; ++v) {
    int32_t producer = graph->values[v].producer;
    plan.offsets[v] = KILN_GRAPH_NOT_PLANNED;
    plan.first_use[v] = levels && producer >= 0 ? levels[producer] : producer;
    plan.last_use[v] = plan.first_use[v];
  }
  for (size_t node_index = 0; node_index < graph->node_count; ++node_index) {
    const kiln_graph_node_t* node = &graph->nodes[node_index];
    if (node->removed) continue;
    int32_t time = levels ? levels[node_index] : (int32_t)node_index;
    for (size_t i = 0; i < node->input_count; ++i) {
      int32_t id = node->inputs[i];
      if (id >= 0 && time > plan.last_use[id]) plan.last_use[id] = time;
    }
  }
  // Views (nodes are in topological order, so a chain of views ends at one
  // root). The root's lifetime grows to cover its views' before anything
  // is placed: values are placed in node order but live in levels, so one
  // placed before a view's node (checked against the root alone) could
  // otherwise take the place while the view is still read.
  for (size_t v = 0; v < graph->value_count; ++v) plan.view_of[v] = -1;
  for (size_t node_index = 0; node_index < graph->node_count; ++node_index) {
    const kiln_graph_node_t* node = &graph->nodes[node_index];
    const int32_t source = kiln_graph_view_source(graph, node);
    if (source < 0 || !kiln_plan_wants(graph, source) ||
        !kiln_plan_wants(graph, node->outputs[0])) {
      continue;
    }
    const int32_t root = plan.view_of[source] >= 0 ? plan.view_of[source] : source;
    const int32_t view = node->outputs[0];
    plan.view_of[view] = root;
    if (plan.last_use[view] > plan.last_use[root]) plan.last_use[root] = plan.last_use[view];
  }
  plan.node_levels = levels;
  for (size_t i = 0; levels && i < graph->node_count; ++i) {
    if (levels[i] > plan.max_level) plan.max_level = levels[i];
  }
  // Values in definition order; each goes at the lowest offset free of every
  // already placed value whose lifetime intersects its own.
  for (size_t node_index = 0; node_index < graph->node_count; ++node_index) {
    const kiln_graph_node_t* node = &graph->nodes[node_index];
    if (node->removed) continue;
    for (size_t o = 0; o < node->output_count; ++o) {
      int32_t id = node->outputs[o];
      if (id < 0 || !kiln_plan_wants(graph, id)) continue;
      if (plan.view_of[id] >= 0) {  // placed with its root, which came first
        plan.offsets[id] = plan.offsets[plan.view_of[id]];
        plan.sizes[id] = plan.sizes[plan.view_of[id]];
        plan.view_count++;
        continue;
      }
      size_t bytes = 0, aligned = 0;
      status = kiln_graph_value_byte_size(&graph->values[id], &bytes);
      if (kiln_status_is_ok(status) &&
          !kiln_size_align_up(bytes ? bytes : 1, alignment, &aligned)) {
        status = kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "value too large");
      }
      if (!kiln_status_is_ok(status)) {
        kiln_graph_memory_plan_deinit(&plan);
        return status;
      }
      plan.sizes[id] = aligned;
      size_t offset = 0;
      bool moved = true;
      while (moved) {
        moved = false;
        plan.offsets[id] = offset;
        for (size_t other = 0; other < graph->value_count; ++other) {
          if (other == (size_t)id || plan.offsets[other] == KILN_GRAPH_NOT_PLANNED) {
            continue;
          }
          if (kiln_plan_overlaps(&plan, (size_t)id, other)) {
            offset = plan.offsets[other] + plan.sizes[other];
            moved = true;
            break;
          }
        }
      }
      plan.planned_count++;
      plan.total_bytes += aligned;
      if (offset + aligned > plan.peak_bytes) plan.peak_bytes = offset + aligned;
    }
  }
  *out_plan = plan;
  return kiln_ok_status();
}

kiln_status_t kiln_graph_memory_plan_verify(
    const kiln_graph_t* graph, const kiln_graph_memory_plan_t* plan) {
  for (size_t a = 0; a < plan->value_count; ++a) {
    if (plan->offsets[a] == KILN_GRAPH_NOT_PLANNED) continue;
    if (plan->offsets[a] % plan->alignment ||
        plan->offsets[a] + plan->sizes[a] > plan->peak_bytes) {
      return kiln_make_status(KILN_STATUS_INTERNAL,
                              "value '%s' is misaligned or past the buffer",
                              graph->values[a].name);
    }
    for (size_t b = a + 1; b < plan->value_count; ++b) {
      if (plan->offsets[b] == KILN_GRAPH_NOT_PLANNED) continue;
      if (kiln_plan_overlaps(plan, a, b)) {
        return kiln_make_status(KILN_STATUS_INTERNAL,
                                "values '%s' and '%s' overlap while both live",
                                graph->values[a].name, graph->values[b].name);
      }
    }
  }
  return kiln_ok_status();
}

void kiln_graph_memory_plan_print(const kiln_graph_t* graph,
                                  const kiln_graph_memory_plan_t* plan,
                                  FILE* stream) {
  fprintf(stream, "memory plan (alignment %zu):\n", plan->alignment);
  fprintf(stream, "  %-40s %12s %12s  %s\n", "value", "offset", "bytes",
          plan->by_level ? "live levels" : "live nodes");
  for (size_t v = 0; v < plan->value_count; ++v) {
    if (plan->offsets[v] == KILN_GRAPH_NOT_PLANNED) continue;
    fprintf(stream, "  %-40s %12zu %12zu  [%d, %d]", graph->values[v].name,
            plan->offsets[v], plan->sizes[v], (int)plan->first_use[v],
            (int)plan->last_use[v]);
    if (plan->view_of && plan->view_of[v] >= 0) {
      fprintf(stream, "  view of %s", graph->values[plan->view_of[v]].name);
    }
    fputc('\n', stream);
  }
  double ratio = plan->total_bytes
                     ? (double)plan->peak_bytes / (double)plan->total_bytes
                     : 0.0;
  fprintf(stream,
          "  %zu intermediates (and %zu views of them): peak %zu bytes vs %zu bytes "
          "summed (%.1f%%)\n",
          plan->planned_count, plan->view_count, plan->peak_bytes, plan->total_bytes,
          100.0 * ratio);
}
