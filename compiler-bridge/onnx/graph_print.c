// Text dump of the graph IR.
#include "kiln/compiler/graph_print.h"

static void kiln_print_value(const kiln_graph_t* graph, int32_t id,
                             FILE* stream) {
  if (id < 0) {
    fprintf(stream, "-");
    return;
  }
  const kiln_graph_value_t* v = &graph->values[id];
  char shape[128];
  kiln_graph_shape_format(&v->shape, shape, sizeof(shape));
  fprintf(stream, "%%%s:%s[%s]%s", v->name, kiln_graph_dtype_name(v->dtype),
          v->has_shape ? shape : "?", v->data ? "=const" : "");
}

static void kiln_print_attr(const kiln_graph_attr_t* attr, FILE* stream) {
  fprintf(stream, " %s=", attr->name);
  switch (attr->type) {
    case KILN_GRAPH_ATTR_INT: fprintf(stream, "%lld", (long long)attr->i); break;
    case KILN_GRAPH_ATTR_FLOAT: fprintf(stream, "%g", attr->f); break;
    case KILN_GRAPH_ATTR_STRING: fprintf(stream, "\"%s\"", attr->s); break;
    case KILN_GRAPH_ATTR_STRINGS: fprintf(stream, "[%s]", attr->s); break;
    case KILN_GRAPH_ATTR_INTS:
      fprintf(stream, "[");
      for (size_t i = 0; i < attr->count; ++i) {
        fprintf(stream, "%s%lld", i ? "," : "", (long long)attr->ints[i]);
      }
      fprintf(stream, "]");
      break;
    case KILN_GRAPH_ATTR_FLOATS:
      fprintf(stream, "[");
      for (size_t i = 0; i < attr->count; ++i) {
        fprintf(stream, "%s%g", i ? "," : "", attr->floats[i]);
      }
      fprintf(stream, "]");
      break;
    case KILN_GRAPH_ATTR_TENSOR: fprintf(stream, "<tensor>"); break;
    default: fprintf(stream, "<other>"); break;
  }
}

void kiln_graph_print(const kiln_graph_t* graph, FILE* stream) {
  fprintf(stream, "graph %s (opset %lld)\n", graph->source,
          (long long)graph->opset);
  for (size_t i = 0; i < graph->input_count; ++i) {
    fprintf(stream, "  input ");
    kiln_print_value(graph, graph->inputs[i], stream);
    fprintf(stream, "\n");
  }
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed) continue;
    fprintf(stream, "  ");
    for (size_t o = 0; o < node->output_count; ++o) {
      if (o) fprintf(stream, ", ");
      kiln_print_value(graph, node->outputs[o], stream);
    }
    fprintf(stream, " = %s '%s'(", node->op_type, node->name);
    for (size_t i = 0; i < node->input_count; ++i) {
      if (i) fprintf(stream, ", ");
      kiln_print_value(graph, node->inputs[i], stream);
    }
    fprintf(stream, ")");
    for (size_t a = 0; a < node->attr_count; ++a) {
      kiln_print_attr(&node->attrs[a], stream);
    }
    fprintf(stream, "\n");
  }
  for (size_t i = 0; i < graph->output_count; ++i) {
    fprintf(stream, "  output ");
    kiln_print_value(graph, graph->outputs[i], stream);
    fprintf(stream, "\n");
  }
}
