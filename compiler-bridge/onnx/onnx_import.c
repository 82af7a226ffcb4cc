// ModelProto -> graph IR: opset check, initializers, inputs (with shape
// overrides), nodes and attributes, outputs; then shape inference validates
// every node. Failures name the model file.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/file.h"
#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/onnx.h"
#include "onnx_internal.h"

typedef struct kiln_onnx_import_t {
  kiln_graph_t* graph;
  const char* source;
  const char* model_dir;  // NULL when importing bytes without a path
  const kiln_onnx_import_options_t* options;
  const uint8_t* bytes;                // the model as given (maybe mapped)
  const kiln_onnx_raw_spans_t* spans;  // initializers' raw_data in `bytes`
  const kiln_file_mapping_t* mapping;  // NULL for bytes from the caller
  const Onnx__ModelProto* model;
  kiln_onnx_functions_t functions;     // calls into model-local functions
} kiln_onnx_import_t;

static kiln_status_t kiln_onnx_add_tensor_value(kiln_onnx_import_t* import,
                                                const Onnx__TensorProto* proto,
                                                const char* name,
                                                int32_t* out_id) {
  kiln_graph_tensor_t tensor;
  KILN_RETURN_IF_ERROR(kiln_onnx_tensor_decode(proto, import->model_dir,
                                               import->source,
                                               import->graph->allocator,
                                               &tensor));
  kiln_status_t status = kiln_graph_add_constant(
      import->graph, name, tensor.dtype, &tensor.shape, tensor.data, out_id);
  kiln_graph_tensor_deinit(&tensor);
  return status;
}

static kiln_status_t kiln_onnx_read_opset(kiln_onnx_import_t* import,
                                          const Onnx__ModelProto* model) {
  int64_t opset = -1;
  for (size_t i = 0; i < model->n_opset_import; ++i) {
    const Onnx__OperatorSetIdProto* id = model->opset_import[i];
    if (!id->domain || !id->domain[0] || strcmp(id->domain, "ai.onnx") == 0) {
      opset = id->version;
    }
  }
  if (opset < 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: no opset_import for the default ONNX domain",
                            import->source);
  }
  if (opset < KILN_ONNX_MIN_OPSET || opset > KILN_ONNX_MAX_OPSET) {
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                            "%s: opset %lld is not supported; supported: "
                            "%d to %d",
                            import->source, (long long)opset,
                            KILN_ONNX_MIN_OPSET, KILN_ONNX_MAX_OPSET);
  }
  import->graph->opset = opset;
  return kiln_ok_status();
}

static const kiln_onnx_input_shape_t* kiln_onnx_find_override(
    const kiln_onnx_import_t* import, const char* name) {
  if (!import->options) return NULL;
  for (size_t i = 0; i < import->options->input_shape_count; ++i) {
    if (strcmp(import->options->input_shapes[i].name, name) == 0) {
      return &import->options->input_shapes[i];
    }
  }
  return NULL;
}

static const kiln_graph_tensor_t* kiln_onnx_find_frozen(
    const kiln_onnx_import_t* import, const char* name, size_t position) {
  if (!import->options) return NULL;
  for (size_t i = 0; i < import->options->frozen_input_count; ++i) {
    const kiln_onnx_frozen_input_t* frozen = &import->options->frozen_inputs[i];
    if (frozen->name ? strcmp(frozen->name, name) == 0
                     : frozen->index == position) {
      return import->options->frozen_inputs[i].value;
    }
  }
  return NULL;
}

// Appends `format` to the malloc'd *text (kept on failure).
static void kiln_onnx_append(char** text, size_t* used, size_t* size,
                             const char* format, ...) KILN_PRINTF_LIKE(4, 5);
static void kiln_onnx_append(char** text, size_t* used, size_t* size,
                             const char* format, ...) {
  va_list list;
  va_start(list, format);
  int n = vsnprintf(NULL, 0, format, list);
  va_end(list);
  if (n < 0 || !*text) return;
  if (*used + (size_t)n + 1 > *size) {
    size_t grown_size = 2 * (*used + (size_t)n + 1);
    char* grown = (char*)realloc(*text, grown_size);
    if (!grown) return;
    *text = grown;
    *size = grown_size;
  }
  va_start(list, format);
  vsnprintf(*text + *used, *size - *used, format, list);
  va_end(list);
  *used += (size_t)n;
}

static bool kiln_onnx_dim_is_static(const Onnx__TensorShapeProto__Dimension* dim) {
  return dim->value_case ==
             ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
         dim->dim_value >= 0;
}

// Refuses dynamic input dims that no --input-shape fixes, naming every such
// input and dim and suggesting the flags with the model's own input names
// (its static dims kept, 1 for each dynamic one).
static kiln_status_t kiln_onnx_check_dynamic_inputs(
    const kiln_onnx_import_t* import, const Onnx__GraphProto* proto) {
  size_t size = 256, used = 0, hint_size = 256, hint_used = 0;
  char* dims = (char*)malloc(size);
  char* hint = (char*)malloc(hint_size);
  if (!dims || !hint) {
    free(dims);
    free(hint);
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  dims[0] = hint[0] = 0;
  size_t position = 0;
  for (size_t i = 0; i < proto->n_input; ++i) {
    const Onnx__ValueInfoProto* info = proto->input[i];
    const char* name = info->name ? info->name : "";
    if (kiln_graph_find_value(import->graph, name) >= 0) continue;
    size_t index = position++;
    const Onnx__TypeProto* type = info->type;
    if (!type || type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !type->tensor_type || !type->tensor_type->shape ||
        kiln_onnx_find_override(import, name) ||
        kiln_onnx_find_frozen(import, name, index)) {
      continue;
    }
    const Onnx__TensorShapeProto* shape = type->tensor_type->shape;
    bool dynamic = false;
    for (size_t d = 0; d < shape->n_dim; ++d) {
      const Onnx__TensorShapeProto__Dimension* dim = shape->dim[d];
      if (kiln_onnx_dim_is_static(dim)) continue;
      const char* param =
          dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                  dim->dim_param
              ? dim->dim_param
              : "?";
      kiln_onnx_append(&dims, &used, &size, "%s'%s' dim %zu ('%s')",
                       used ? ", " : "", name, d, param);
      dynamic = true;
    }
    if (!dynamic) continue;
    kiln_onnx_append(&hint, &hint_used, &hint_size, "%s--input-shape=%s:",
                     hint_used ? " " : "", name);
    for (size_t d = 0; d < shape->n_dim; ++d) {
      kiln_onnx_append(&hint, &hint_used, &hint_size, "%s%lld", d ? "x" : "",
                       kiln_onnx_dim_is_static(shape->dim[d])
                           ? (long long)shape->dim[d]->dim_value
                           : 1LL);
    }
  }
  kiln_status_t status = kiln_ok_status();
  if (used) {
    status = kiln_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "%s: dynamic input dims: %s; kiln compiles static shapes: give them "
        "with --input-shape=NAME:DIMS, e.g. %s",
        import->source, dims, hint);
  }
  free(dims);
  free(hint);
  return status;
}

// Adds input `info`; *out_is_input is false when it was frozen to a constant.
static kiln_status_t kiln_onnx_add_input(kiln_onnx_import_t* import,
                                         const Onnx__ValueInfoProto* info,
                                         size_t position, bool* out_is_input) {
  *out_is_input = true;
  const char* name = info->name ? info->name : "";
  const Onnx__TypeProto* type = info->type;
  if (!type || type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
      !type->tensor_type) {
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                            "%s: input '%s' is not a tensor; supported: "
                            "tensors of FLOAT, INT64, INT32, BOOL",
                            import->source, name);
  }
  const Onnx__TypeProto__Tensor* tensor_type = type->tensor_type;
  kiln_graph_dtype_t dtype = kiln_onnx_dtype_from_proto(tensor_type->elem_type);
  if (dtype == KILN_GRAPH_DTYPE_INVALID) {
    return kiln_make_status(
        KILN_STATUS_UNIMPLEMENTED,
        "%s: input '%s' has dtype %s; supported: FLOAT, INT64, INT32, BOOL, "
        "INT8, UINT8",
        import->source, name,
        kiln_onnx_proto_dtype_name(tensor_type->elem_type));
  }
  int32_t id = -1;
  const kiln_graph_tensor_t* frozen = kiln_onnx_find_frozen(import, name, position);
  if (frozen) {
    if (frozen->dtype != dtype) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "%s: frozen input '%s' is %s but the model "
                              "declares %s",
                              import->source, name,
                              kiln_graph_dtype_name(frozen->dtype),
                              kiln_graph_dtype_name(dtype));
    }
    *out_is_input = false;
    return kiln_graph_add_constant(import->graph, name, dtype, &frozen->shape,
                                   frozen->data, &id);
  }
  KILN_RETURN_IF_ERROR(kiln_graph_add_value(import->graph, name, dtype, &id));
  kiln_graph_value_t* value = &import->graph->values[id];
  value->is_input = true;
  const kiln_onnx_input_shape_t* override =
      kiln_onnx_find_override(import, name);
  if (override) {
    const Onnx__TensorShapeProto* declared = tensor_type->shape;
    if (declared && declared->n_dim != (size_t)override->shape.rank) {
      return kiln_make_status(
          KILN_STATUS_INVALID_ARGUMENT,
          "%s: --input-shape for '%s' has rank %d but the model declares %zu",
          import->source, name, (int)override->shape.rank, declared->n_dim);
    }
    for (int32_t d = 0; declared && d < override->shape.rank; ++d) {
      const Onnx__TensorShapeProto__Dimension* dim = declared->dim[d];
      if (dim->value_case ==
              ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
          dim->dim_value != override->shape.dims[d]) {
        return kiln_make_status(
            KILN_STATUS_INVALID_ARGUMENT,
            "%s: --input-shape for '%s' sets dim %d to %lld but the model "
            "fixes it at %lld",
            import->source, name, (int)d, (long long)override->shape.dims[d],
            (long long)dim->dim_value);
      }
    }
    value->shape = override->shape;
    value->has_shape = true;
  } else {
    const Onnx__TensorShapeProto* declared = tensor_type->shape;
    if (!declared) {
      return kiln_make_status(
          KILN_STATUS_INVALID_ARGUMENT,
          "%s: input '%s' has no shape; give one with --input-shape=%s:DIMS",
          import->source, name, name);
    }
    if (declared->n_dim > KILN_GRAPH_MAX_RANK) {
      return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                              "%s: input '%s' has rank %zu; at most %d",
                              import->source, name, declared->n_dim,
                              KILN_GRAPH_MAX_RANK);
    }
    value->shape.rank = (int32_t)declared->n_dim;
    for (size_t d = 0; d < declared->n_dim; ++d) {
      const Onnx__TensorShapeProto__Dimension* dim = declared->dim[d];
      if (dim->value_case !=
              ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE ||
          dim->dim_value < 0) {
        const char* param =
            dim->value_case ==
                    ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                ? dim->dim_param
                : "?";
        return kiln_make_status(
            KILN_STATUS_INVALID_ARGUMENT,
            "%s: input '%s' dim %zu is dynamic ('%s'); give a static shape "
            "with --input-shape=%s:DIMS",
            import->source, name, d, param ? param : "?", name);
      }
      value->shape.dims[d] = dim->dim_value;
    }
    value->has_shape = true;
  }
  size_t count = 0;
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_graph_shape_element_count(&value->shape, &count), "%s: input '%s'",
      import->source, name);
  return kiln_ok_status();
}

static kiln_status_t kiln_onnx_convert_attr(kiln_onnx_import_t* import,
                                            const Onnx__NodeProto* node_proto,
                                            const Onnx__AttributeProto* proto,
                                            int32_t node_id) {
  kiln_graph_attr_t attr;
  memset(&attr, 0, sizeof(attr));
  attr.name = proto->name ? proto->name : "";
  attr.tensor = -1;
  char text[1024];
  switch (proto->type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
      attr.type = KILN_GRAPH_ATTR_INT;
      attr.i = proto->i;
      break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
      attr.type = KILN_GRAPH_ATTR_FLOAT;
      attr.f = proto->f;
      break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: {
      attr.type = KILN_GRAPH_ATTR_STRING;
      size_t length = proto->s.len;
      if (length >= sizeof(text) || (length && memchr(proto->s.data, 0, length))) {
        return kiln_make_status(
            KILN_STATUS_INVALID_ARGUMENT,
            "%s: node '%s': string attribute '%s' is too long or has NULs",
            import->source, node_proto->name ? node_proto->name : "",
            attr.name);
      }
      if (length) memcpy(text, proto->s.data, length);
      text[length] = 0;
      attr.s = text;
      break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: {
      // Short lists of plain names (LSTM/GRU/RNN activations) joined by ','.
      attr.type = KILN_GRAPH_ATTR_STRINGS;
      attr.count = proto->n_strings;
      size_t used = 0;
      for (size_t i = 0; i < proto->n_strings; ++i) {
        size_t length = proto->strings[i].len;
        const uint8_t* data = proto->strings[i].data;
        if (used + length + 2 > sizeof(text) ||
            (length && (memchr(data, 0, length) || memchr(data, ',', length)))) {
          attr.type = KILN_GRAPH_ATTR_OTHER;  // refused by the op's checker
          break;
        }
        if (i) text[used++] = ',';
        if (length) memcpy(text + used, data, length);
        used += length;
      }
      text[used] = 0;
      attr.s = text;
      break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
      attr.type = KILN_GRAPH_ATTR_INTS;
      attr.ints = proto->ints;
      attr.count = proto->n_ints;
      if (!attr.ints) attr.ints = (const int64_t*)"";  // empty list
      break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
      attr.type = KILN_GRAPH_ATTR_FLOATS;
      attr.floats = proto->floats;
      attr.count = proto->n_floats;
      if (!attr.floats) attr.floats = (const float*)"";
      break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
      if (!proto->t) {
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "%s: node '%s': tensor attribute '%s' is empty",
                                import->source,
                                node_proto->name ? node_proto->name : "",
                                attr.name);
      }
      attr.type = KILN_GRAPH_ATTR_TENSOR;
      KILN_RETURN_IF_ERROR(
          kiln_onnx_add_tensor_value(import, proto->t, NULL, &attr.tensor));
      break;
    default:
      attr.type = KILN_GRAPH_ATTR_OTHER;  // refused by the op's checker
      break;
  }
  return kiln_graph_node_set_attr(import->graph, node_id, &attr);
}

static kiln_status_t kiln_onnx_add_node(void* context,
                                        const Onnx__NodeProto* proto) {
  kiln_onnx_import_t* import = (kiln_onnx_import_t*)context;
  kiln_graph_t* graph = import->graph;
  const char* node_name = proto->name ? proto->name : "";
  const char* op_type = proto->op_type ? proto->op_type : "";
  const Onnx__FunctionProto* fn = kiln_onnx_find_function(import->model, proto);
  if (fn) return kiln_onnx_inline_call(&import->functions, fn, proto);
  // onnxruntime's int4 weight op is the one com.microsoft op kiln takes.
  const bool contrib = proto->domain && strcmp(proto->domain, "com.microsoft") == 0 &&
                       strcmp(op_type, "MatMulNBits") == 0;
  if (proto->domain && proto->domain[0] && !contrib &&
      strcmp(proto->domain, "ai.onnx") != 0) {
    return kiln_make_status(
        KILN_STATUS_UNIMPLEMENTED,
        "%s: node '%s' (%s) is in domain '%s'; supported: the default ONNX "
        "domain and the model's own functions (%zu, none named %s)",
        import->source, node_name, op_type, proto->domain,
        import->model->n_functions, op_type);
  }
  int32_t inputs[64];
  int32_t outputs[64];
  if (proto->n_input > 64 || proto->n_output > 64) {
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                            "%s: node '%s' (%s) has too many inputs/outputs",
                            import->source, node_name, op_type);
  }
  for (size_t i = 0; i < proto->n_input; ++i) {
    const char* name = proto->input[i];
    if (!name || !name[0]) {
      inputs[i] = -1;
      continue;
    }
    inputs[i] = kiln_graph_find_value(graph, name);
    if (inputs[i] < 0) {
      return kiln_make_status(
          KILN_STATUS_INVALID_ARGUMENT,
          "%s: node '%s' (%s) reads '%s', which nothing defines before it",
          import->source, node_name, op_type, name);
    }
  }
  for (size_t i = 0; i < proto->n_output; ++i) {
    const char* name = proto->output[i];
    if (!name || !name[0]) {
      outputs[i] = -1;
      continue;
    }
    if (kiln_graph_find_value(graph, name) >= 0) {
      return kiln_make_status(
          KILN_STATUS_INVALID_ARGUMENT,
          "%s: node '%s' (%s) redefines '%s' (graphs are single assignment)",
          import->source, node_name, op_type, name);
    }
    KILN_RETURN_IF_ERROR(kiln_graph_add_value(
        graph, name, KILN_GRAPH_DTYPE_INVALID, &outputs[i]));
  }
  int32_t node_id = -1;
  KILN_RETURN_IF_ERROR(kiln_graph_add_node(graph, op_type, node_name, inputs,
                                           proto->n_input, outputs,
                                           proto->n_output, &node_id));
  for (size_t i = 0; i < proto->n_attribute; ++i) {
    KILN_RETURN_IF_ERROR(
        kiln_onnx_convert_attr(import, proto, proto->attribute[i], node_id));
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_onnx_import_model(kiln_onnx_import_t* import,
                                            const Onnx__ModelProto* model) {
  kiln_graph_t* graph = import->graph;
  KILN_RETURN_IF_ERROR(kiln_onnx_read_opset(import, model));
  import->model = model;
  import->functions.source = import->source;
  import->functions.opset = graph->opset;
  import->functions.add_node = kiln_onnx_add_node;
  import->functions.context = import;
  const Onnx__GraphProto* proto = model->graph;
  if (!proto) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "%s: model has no "
                            "graph", import->source);
  }
  if (import->spans->count != proto->n_initializer) {
    return kiln_make_status(KILN_STATUS_INTERNAL,
                            "%s: found %zu initializers' raw data for %zu "
                            "initializers",
                            import->source, import->spans->count,
                            proto->n_initializer);
  }
  if (proto->n_sparse_initializer) {
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                            "%s: sparse initializers are not supported",
                            import->source);
  }
  for (size_t i = 0; i < proto->n_initializer; ++i) {
    const Onnx__TensorProto* tensor = proto->initializer[i];
    if (!tensor->name || !tensor->name[0]) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "%s: initializer %zu has no name",
                              import->source, i);
    }
    int32_t id = -1;
    const kiln_onnx_raw_span_t* span = &import->spans->spans[i];
    if (!span->present) {
      KILN_RETURN_IF_ERROR(
          kiln_onnx_add_tensor_value(import, tensor, tensor->name, &id));
      continue;
    }
    // raw_data was left out of the unpacked message: decode it from the
    // model bytes, then let the mapped pages go.
    Onnx__TensorProto with_raw = *tensor;
    with_raw.raw_data.data = (uint8_t*)(import->bytes + span->offset);
    with_raw.raw_data.len = span->size;
    KILN_RETURN_IF_ERROR(
        kiln_onnx_add_tensor_value(import, &with_raw, tensor->name, &id));
    if (import->mapping) {
      kiln_file_mapping_release(import->mapping, span->offset, span->size);
    }
  }
  KILN_RETURN_IF_ERROR(kiln_onnx_check_dynamic_inputs(import, proto));
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc_array(
      graph->allocator, proto->n_input + 1, sizeof(int32_t),
      (void**)&graph->inputs));
  size_t position = 0;
  for (size_t i = 0; i < proto->n_input; ++i) {
    const char* name = proto->input[i]->name ? proto->input[i]->name : "";
    // Inputs that also have an initializer are constants (an old ONNX habit).
    if (kiln_graph_find_value(graph, name) >= 0) continue;
    bool is_input = true;
    KILN_RETURN_IF_ERROR(kiln_onnx_add_input(import, proto->input[i],
                                             position++, &is_input));
    if (is_input) {
      graph->inputs[graph->input_count++] = (int32_t)graph->value_count - 1;
    }
  }
  // An override for a name the model lacks is a typo: say so.
  for (size_t i = 0; import->options && i < import->options->input_shape_count;
       ++i) {
    const char* name = import->options->input_shapes[i].name;
    int32_t id = kiln_graph_find_value(graph, name);
    if (id < 0 || !graph->values[id].is_input) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "%s: --input-shape names '%s', which is not a "
                              "graph input",
                              import->source, name);
    }
  }
  for (size_t i = 0; i < proto->n_node; ++i) {
    KILN_RETURN_IF_ERROR(kiln_onnx_add_node(import, proto->node[i]));
  }
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc_array(
      graph->allocator, proto->n_output + 1, sizeof(int32_t),
      (void**)&graph->outputs));
  for (size_t i = 0; i < proto->n_output; ++i) {
    const char* name = proto->output[i]->name ? proto->output[i]->name : "";
    int32_t id = kiln_graph_find_value(graph, name);
    if (id < 0) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "%s: graph output '%s' is never defined",
                              import->source, name);
    }
    graph->values[id].is_output = true;
    graph->outputs[graph->output_count++] = id;
    // A float16 output: kiln_graph_widen_f16 joins it to the float32 graph.
    const Onnx__TypeProto* type = proto->output[i]->type;
    if (type && type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && type->tensor_type &&
        type->tensor_type->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 &&
        graph->values[id].producer >= 0 && !graph->values[id].data) {
      graph->values[id].dtype = KILN_GRAPH_DTYPE_F16;
    }
  }
  if (graph->output_count == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: graph has no outputs", import->source);
  }
  KILN_RETURN_IF_ERROR(kiln_graph_widen_f16(graph));
  KILN_RETURN_IF_ERROR_ANNOTATE(kiln_graph_infer_shapes(graph), "%s",
                                import->source);
  return kiln_ok_status();
}

// `mapping`, when given, holds `data` and has its pages released as the
// weights are copied out.
static kiln_status_t kiln_onnx_import_slimmed(
    const uint8_t* data, size_t size, const char* path,
    const kiln_file_mapping_t* mapping,
    const kiln_onnx_import_options_t* options, kiln_allocator_t allocator,
    kiln_graph_t* out_graph) {
  const char* source = path ? path : "<memory>";
  kiln_graph_initialize(allocator, source, out_graph);
  kiln_byte_buffer_t slim;
  kiln_onnx_raw_spans_t spans;
  kiln_status_t status =
      kiln_onnx_slim_model(data, size, source, allocator, &slim, &spans);
  if (!kiln_status_is_ok(status)) {
    kiln_graph_deinitialize(out_graph);
    return status;
  }
  Onnx__ModelProto* model =
      onnx__model_proto__unpack(NULL, slim.size, slim.data);
  kiln_byte_buffer_deinit(&slim);
  if (!model) {
    kiln_onnx_raw_spans_deinit(&spans, allocator);
    kiln_graph_deinitialize(out_graph);
    return kiln_make_status(KILN_STATUS_DATA_LOSS,
                            "%s: not a valid ONNX model (protobuf parse "
                            "failed)",
                            source);
  }
  char model_dir[4096];
  const char* dir = NULL;
  if (path) {
    const char* slash = strrchr(path, '/');
    if (!slash) {
      snprintf(model_dir, sizeof(model_dir), ".");
    } else {
      size_t length = (size_t)(slash - path);
      if (length >= sizeof(model_dir)) length = sizeof(model_dir) - 1;
      memcpy(model_dir, path, length);
      model_dir[length] = 0;
      if (length == 0) snprintf(model_dir, sizeof(model_dir), "/");
    }
    dir = model_dir;
  }
  kiln_onnx_import_t import = {out_graph, out_graph->source, dir, options,
                               data,      &spans,            mapping};
  status = kiln_onnx_import_model(&import, model);
  onnx__model_proto__free_unpacked(model, NULL);
  kiln_onnx_raw_spans_deinit(&spans, allocator);
  if (!kiln_status_is_ok(status)) kiln_graph_deinitialize(out_graph);
  return status;
}

kiln_status_t kiln_onnx_import_bytes(const void* data, size_t size,
                                     const char* path,
                                     const kiln_onnx_import_options_t* options,
                                     kiln_allocator_t allocator,
                                     kiln_graph_t* out_graph) {
  return kiln_onnx_import_slimmed((const uint8_t*)data, size, path, NULL,
                                  options, allocator, out_graph);
}

// The file is mapped, not read: its weights are copied once, into the graph.
kiln_status_t kiln_onnx_import_file(const char* path,
                                    const kiln_onnx_import_options_t* options,
                                    kiln_allocator_t allocator,
                                    kiln_graph_t* out_graph) {
  memset(out_graph, 0, sizeof(*out_graph));
  kiln_file_mapping_t mapping;
  KILN_RETURN_IF_ERROR(kiln_file_map(path, &mapping));
  kiln_status_t status =
      kiln_onnx_import_slimmed(mapping.data, mapping.size, path, &mapping,
                               options, allocator, out_graph);
  kiln_file_unmap(&mapping);
  return status;
}
