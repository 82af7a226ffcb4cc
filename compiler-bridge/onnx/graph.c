// The graph IR's containers: values, nodes, attributes, lookups.
#include "kiln/compiler/graph.h"

#include <stdio.h>
#include <string.h>

#include "kiln/base/size_math.h"

size_t kiln_graph_dtype_size(kiln_graph_dtype_t dtype) {
  switch (dtype) {
    case KILN_GRAPH_DTYPE_F32: return 4;
    case KILN_GRAPH_DTYPE_I64: return 8;
    case KILN_GRAPH_DTYPE_I32: return 4;
    case KILN_GRAPH_DTYPE_BOOL: return 1;
    case KILN_GRAPH_DTYPE_F16: return 2;
    case KILN_GRAPH_DTYPE_I8: return 1;
    case KILN_GRAPH_DTYPE_U8: return 1;
    default: return 0;
  }
}

const char* kiln_graph_dtype_name(kiln_graph_dtype_t dtype) {
  switch (dtype) {
    case KILN_GRAPH_DTYPE_F32: return "float32";
    case KILN_GRAPH_DTYPE_I64: return "int64";
    case KILN_GRAPH_DTYPE_I32: return "int32";
    case KILN_GRAPH_DTYPE_BOOL: return "bool";
    case KILN_GRAPH_DTYPE_F16: return "float16";
    case KILN_GRAPH_DTYPE_I8: return "int8";
    case KILN_GRAPH_DTYPE_U8: return "uint8";
    default: return "invalid";
  }
}

kiln_status_t kiln_graph_shape_element_count(const kiln_graph_shape_t* shape,
                                             size_t* out_count) {
  *out_count = 0;
  if (shape->rank < 0 || shape->rank > KILN_GRAPH_MAX_RANK) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "rank %d invalid",
                            (int)shape->rank);
  }
  size_t count = 1;
  for (int32_t i = 0; i < shape->rank; ++i) {
    if (shape->dims[i] < 0) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "dimension %d is not known", (int)i);
    }
    if (!kiln_size_mul(count, (size_t)shape->dims[i], &count) ||
        count > (size_t)KILN_GRAPH_MAX_ELEMENTS) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                              "tensor has more than %lld elements",
                              (long long)KILN_GRAPH_MAX_ELEMENTS);
    }
  }
  *out_count = count;
  return kiln_ok_status();
}

bool kiln_graph_shape_equal(const kiln_graph_shape_t* a,
                            const kiln_graph_shape_t* b) {
  if (a->rank != b->rank) return false;
  for (int32_t i = 0; i < a->rank; ++i) {
    if (a->dims[i] != b->dims[i]) return false;
  }
  return true;
}

void kiln_graph_shape_format(const kiln_graph_shape_t* shape, char* buffer,
                             size_t buffer_size) {
  if (buffer_size == 0) return;
  buffer[0] = 0;
  if (shape->rank == 0) {
    snprintf(buffer, buffer_size, "scalar");
    return;
  }
  size_t used = 0;
  for (int32_t i = 0; i < shape->rank && used < buffer_size; ++i) {
    int written;
    if (shape->dims[i] < 0) {
      written = snprintf(buffer + used, buffer_size - used, "%s?",
                         i ? "x" : "");
    } else {
      written = snprintf(buffer + used, buffer_size - used, "%s%lld",
                         i ? "x" : "", (long long)shape->dims[i]);
    }
    if (written < 0) return;
    used += (size_t)written;
  }
}

void kiln_graph_initialize(kiln_allocator_t allocator, const char* source,
                           kiln_graph_t* out_graph) {
  memset(out_graph, 0, sizeof(*out_graph));
  out_graph->allocator = allocator;
  kiln_arena_init(&out_graph->arena, allocator, 64 * 1024);
  out_graph->source = "<memory>";
  if (source) {
    char* copy = NULL;
    kiln_status_t status =
        kiln_arena_strndup(&out_graph->arena, source, strlen(source), &copy);
    if (kiln_status_is_ok(status)) {
      out_graph->source = copy;
    } else {
      kiln_status_ignore(status);  // keep the placeholder name
    }
  }
}

void kiln_graph_deinitialize(kiln_graph_t* graph) {
  kiln_allocator_free(graph->allocator, graph->values);
  kiln_allocator_free(graph->allocator, graph->nodes);
  kiln_allocator_free(graph->allocator, graph->inputs);
  kiln_allocator_free(graph->allocator, graph->outputs);
  kiln_arena_deinit(&graph->arena);
  memset(graph, 0, sizeof(*graph));
}

static kiln_status_t kiln_graph_grow(kiln_graph_t* graph, void** array,
                                     size_t* capacity, size_t needed,
                                     size_t element_size) {
  if (needed <= *capacity) return kiln_ok_status();
  size_t new_capacity = *capacity ? *capacity * 2 : 16;
  while (new_capacity < needed) new_capacity *= 2;
  KILN_RETURN_IF_ERROR(kiln_allocator_realloc_array(
      graph->allocator, new_capacity, element_size, array));
  *capacity = new_capacity;
  return kiln_ok_status();
}

kiln_status_t kiln_graph_add_value(kiln_graph_t* graph, const char* name,
                                   kiln_graph_dtype_t dtype,
                                   int32_t* out_value_id) {
  *out_value_id = -1;
  if (graph->value_count >= INT32_MAX) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "too many values");
  }
  KILN_RETURN_IF_ERROR(kiln_graph_grow(graph, (void**)&graph->values,
                                       &graph->value_capacity,
                                       graph->value_count + 1,
                                       sizeof(kiln_graph_value_t)));
  char generated[48];
  if (!name || !name[0]) {
    snprintf(generated, sizeof(generated), "kiln.value.%zu",
             graph->value_count);
    name = generated;
  }
  char* copy = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_arena_strndup(&graph->arena, name, strlen(name), &copy));
  kiln_graph_value_t* value = &graph->values[graph->value_count];
  memset(value, 0, sizeof(*value));
  value->name = copy;
  value->dtype = dtype;
  value->producer = -1;
  *out_value_id = (int32_t)graph->value_count++;
  return kiln_ok_status();
}

kiln_status_t kiln_graph_value_byte_size(const kiln_graph_value_t* value,
                                         size_t* out_size) {
  *out_size = 0;
  if (!value->has_shape) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                            "value '%s' has no known shape", value->name);
  }
  size_t count = 0;
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_graph_shape_element_count(&value->shape, &count), "value '%s'",
      value->name);
  *out_size = count * kiln_graph_dtype_size(value->dtype);
  return kiln_ok_status();
}

kiln_status_t kiln_graph_value_set_data(kiln_graph_t* graph, int32_t value_id,
                                        const void* data) {
  size_t byte_size = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_value_byte_size(&graph->values[value_id], &byte_size));
  void* copy = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_arena_allocate_aligned(&graph->arena, byte_size, 64, &copy));
  if (byte_size) memcpy(copy, data, byte_size);
  graph->values[value_id].data = copy;
  return kiln_ok_status();
}

kiln_status_t kiln_graph_add_constant(kiln_graph_t* graph, const char* name,
                                      kiln_graph_dtype_t dtype,
                                      const kiln_graph_shape_t* shape,
                                      const void* data,
                                      int32_t* out_value_id) {
  *out_value_id = -1;
  int32_t id = -1;
  KILN_RETURN_IF_ERROR(kiln_graph_add_value(graph, name, dtype, &id));
  graph->values[id].has_shape = true;
  graph->values[id].shape = *shape;
  KILN_RETURN_IF_ERROR(kiln_graph_value_set_data(graph, id, data));
  *out_value_id = id;
  return kiln_ok_status();
}

int32_t kiln_graph_find_value(const kiln_graph_t* graph, const char* name) {
  // Last definition wins, matching how later passes shadow names.
  for (size_t i = graph->value_count; i-- > 0;) {
    if (strcmp(graph->values[i].name, name) == 0) return (int32_t)i;
  }
  return -1;
}

static kiln_status_t kiln_graph_copy_ids(kiln_graph_t* graph,
                                         const int32_t* ids, size_t count,
                                         int32_t** out_ids) {
  *out_ids = NULL;
  KILN_RETURN_IF_ERROR(kiln_arena_allocate_array(
      &graph->arena, count ? count : 1, sizeof(int32_t), (void**)out_ids));
  if (count) memcpy(*out_ids, ids, count * sizeof(int32_t));
  return kiln_ok_status();
}

kiln_status_t kiln_graph_add_node(kiln_graph_t* graph, const char* op_type,
                                  const char* name, const int32_t* inputs,
                                  size_t input_count, const int32_t* outputs,
                                  size_t output_count, int32_t* out_node_id) {
  *out_node_id = -1;
  if (graph->node_count >= INT32_MAX) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "too many nodes");
  }
  KILN_RETURN_IF_ERROR(kiln_graph_grow(graph, (void**)&graph->nodes,
                                       &graph->node_capacity,
                                       graph->node_count + 1,
                                       sizeof(kiln_graph_node_t)));
  kiln_graph_node_t node;
  memset(&node, 0, sizeof(node));
  char generated[48];
  if (!name || !name[0]) {
    snprintf(generated, sizeof(generated), "%s_%zu", op_type,
             graph->node_count);
    name = generated;
  }
  char* name_copy = NULL;
  char* op_copy = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_arena_strndup(&graph->arena, name, strlen(name), &name_copy));
  KILN_RETURN_IF_ERROR(
      kiln_arena_strndup(&graph->arena, op_type, strlen(op_type), &op_copy));
  node.name = name_copy;
  node.op_type = op_copy;
  KILN_RETURN_IF_ERROR(
      kiln_graph_copy_ids(graph, inputs, input_count, &node.inputs));
  KILN_RETURN_IF_ERROR(
      kiln_graph_copy_ids(graph, outputs, output_count, &node.outputs));
  node.input_count = input_count;
  node.output_count = output_count;
  int32_t id = (int32_t)graph->node_count;
  graph->nodes[graph->node_count++] = node;
  for (size_t i = 0; i < output_count; ++i) {
    if (outputs[i] >= 0) graph->values[outputs[i]].producer = id;
  }
  *out_node_id = id;
  return kiln_ok_status();
}

kiln_status_t kiln_graph_node_set_attr(kiln_graph_t* graph, int32_t node_id,
                                       const kiln_graph_attr_t* attr) {
  kiln_graph_attr_t copy = *attr;
  KILN_RETURN_IF_ERROR(kiln_arena_strndup(&graph->arena, attr->name,
                                          strlen(attr->name),
                                          (char**)&copy.name));
  if (attr->s) {
    KILN_RETURN_IF_ERROR(kiln_arena_strndup(&graph->arena, attr->s,
                                            strlen(attr->s), (char**)&copy.s));
  }
  if (attr->ints) {
    int64_t* ints = NULL;
    KILN_RETURN_IF_ERROR(kiln_arena_allocate_array(
        &graph->arena, attr->count ? attr->count : 1, sizeof(int64_t),
        (void**)&ints));
    if (attr->count) memcpy(ints, attr->ints, attr->count * sizeof(int64_t));
    copy.ints = ints;
  }
  if (attr->floats) {
    float* floats = NULL;
    KILN_RETURN_IF_ERROR(kiln_arena_allocate_array(
        &graph->arena, attr->count ? attr->count : 1, sizeof(float),
        (void**)&floats));
    if (attr->count) memcpy(floats, attr->floats, attr->count * sizeof(float));
    copy.floats = floats;
  }
  kiln_graph_node_t* node = &graph->nodes[node_id];
  for (size_t i = 0; i < node->attr_count; ++i) {
    if (strcmp(node->attrs[i].name, attr->name) == 0) {
      node->attrs[i] = copy;
      return kiln_ok_status();
    }
  }
  // Arena arrays cannot grow in place: copy into a larger one.
  kiln_graph_attr_t* attrs = NULL;
  KILN_RETURN_IF_ERROR(kiln_arena_allocate_array(
      &graph->arena, node->attr_count + 1, sizeof(kiln_graph_attr_t),
      (void**)&attrs));
  if (node->attr_count) {
    memcpy(attrs, node->attrs, node->attr_count * sizeof(kiln_graph_attr_t));
  }
  attrs[node->attr_count] = copy;
  node->attrs = attrs;
  node->attr_count++;
  return kiln_ok_status();
}

kiln_status_t kiln_graph_node_append_input(kiln_graph_t* graph,
                                           int32_t node_id, int32_t value_id) {
  kiln_graph_node_t* node = &graph->nodes[node_id];
  int32_t* inputs = NULL;
  KILN_RETURN_IF_ERROR(kiln_arena_allocate_array(
      &graph->arena, node->input_count + 1, sizeof(int32_t), (void**)&inputs));
  if (node->input_count) {
    memcpy(inputs, node->inputs, node->input_count * sizeof(int32_t));
  }
  inputs[node->input_count] = value_id;
  node->inputs = inputs;
  node->input_count++;
  return kiln_ok_status();
}

const kiln_graph_attr_t* kiln_graph_node_find_attr(
    const kiln_graph_node_t* node, const char* name) {
  for (size_t i = 0; i < node->attr_count; ++i) {
    if (strcmp(node->attrs[i].name, name) == 0) return &node->attrs[i];
  }
  return NULL;
}

static kiln_status_t kiln_graph_attr_type_error(const kiln_graph_node_t* node,
                                                const char* name,
                                                const char* wanted) {
  return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                          "node '%s' (%s): attribute '%s' must be %s",
                          node->name, node->op_type, name, wanted);
}

kiln_status_t kiln_graph_node_attr_int(const kiln_graph_node_t* node,
                                       const char* name, int64_t fallback,
                                       int64_t* out_value) {
  *out_value = fallback;
  const kiln_graph_attr_t* attr = kiln_graph_node_find_attr(node, name);
  if (!attr) return kiln_ok_status();
  if (attr->type != KILN_GRAPH_ATTR_INT) {
    return kiln_graph_attr_type_error(node, name, "an int");
  }
  *out_value = attr->i;
  return kiln_ok_status();
}

kiln_status_t kiln_graph_node_attr_float(const kiln_graph_node_t* node,
                                         const char* name, float fallback,
                                         float* out_value) {
  *out_value = fallback;
  const kiln_graph_attr_t* attr = kiln_graph_node_find_attr(node, name);
  if (!attr) return kiln_ok_status();
  if (attr->type != KILN_GRAPH_ATTR_FLOAT) {
    return kiln_graph_attr_type_error(node, name, "a float");
  }
  *out_value = attr->f;
  return kiln_ok_status();
}

kiln_status_t kiln_graph_node_attr_string(const kiln_graph_node_t* node,
                                          const char* name,
                                          const char* fallback,
                                          const char** out_value) {
  *out_value = fallback;
  const kiln_graph_attr_t* attr = kiln_graph_node_find_attr(node, name);
  if (!attr) return kiln_ok_status();
  if (attr->type != KILN_GRAPH_ATTR_STRING) {
    return kiln_graph_attr_type_error(node, name, "a string");
  }
  *out_value = attr->s;
  return kiln_ok_status();
}

kiln_status_t kiln_graph_node_attr_ints(const kiln_graph_node_t* node,
                                        const char* name,
                                        const int64_t** out_values,
                                        size_t* out_count) {
  *out_values = NULL;
  *out_count = 0;
  const kiln_graph_attr_t* attr = kiln_graph_node_find_attr(node, name);
  if (!attr) return kiln_ok_status();
  if (attr->type != KILN_GRAPH_ATTR_INTS) {
    return kiln_graph_attr_type_error(node, name, "a list of ints");
  }
  *out_values = attr->ints;
  *out_count = attr->count;
  return kiln_ok_status();
}

size_t kiln_graph_value_use_count(const kiln_graph_t* graph,
                                  int32_t value_id) {
  size_t uses = graph->values[value_id].is_output ? 1 : 0;
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed) continue;
    for (size_t i = 0; i < node->input_count; ++i) {
      if (node->inputs[i] == value_id) ++uses;
    }
  }
  return uses;
}

void kiln_graph_replace_uses(kiln_graph_t* graph, int32_t from, int32_t to) {
  for (size_t n = 0; n < graph->node_count; ++n) {
    kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed) continue;
    for (size_t i = 0; i < node->input_count; ++i) {
      if (node->inputs[i] == from) node->inputs[i] = to;
    }
  }
  for (size_t i = 0; i < graph->output_count; ++i) {
    if (graph->outputs[i] == from) graph->outputs[i] = to;
  }
}

kiln_status_t kiln_graph_place_nodes_after(kiln_graph_t* g, size_t after, size_t from) {
  size_t count = g->node_count, moved = count - from;
  if (moved == 0 || from == after + 1) return kiln_ok_status();
  kiln_graph_node_t* copy = NULL;
  int32_t* map = NULL;
  kiln_status_t status =
      kiln_allocator_malloc(g->allocator, count * sizeof(*copy), (void**)&copy);
  if (!status) status = kiln_allocator_malloc(g->allocator, count * sizeof(*map), (void**)&map);
  if (!status) {
    memcpy(copy, g->nodes, count * sizeof(*copy));
    size_t next = after + 1;
    for (size_t i = from; i < count; ++i) map[i] = (int32_t)next++;
    for (size_t i = after + 1; i < from; ++i) map[i] = (int32_t)next++;
    for (size_t i = 0; i <= after; ++i) map[i] = (int32_t)i;
    for (size_t i = 0; i < count; ++i) g->nodes[map[i]] = copy[i];
    for (size_t v = 0; v < g->value_count; ++v) {
      if (g->values[v].producer >= 0) g->values[v].producer = map[g->values[v].producer];
    }
  }
  kiln_allocator_free(g->allocator, copy);
  kiln_allocator_free(g->allocator, map);
  return status;
}
