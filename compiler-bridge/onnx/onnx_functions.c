// Model-local functions (ModelProto.functions: what the dynamo exporter
// writes for pkg.onnxscript.torch_lib, com.microsoft and its own modules)
// are inlined at import: each call becomes the function's nodes, with the
// formal inputs/outputs bound to the call's names, the body's own values
// renamed apart, and attribute references (ref_attr_name) resolved from the
// call or the function's defaults. Nesting depth and the number of inlined
// nodes are bounded: a model is untrusted input.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

// FunctionProto.attribute_proto (IR 9, defaults of the attributes) is newer
// than Debian's onnx.proto: protobuf-c keeps it as an unknown field.
#define KILN_PB_FUNCTION_ATTRIBUTE_PROTO 11

static bool kiln_str_eq(const char* a, const char* b) {
  return strcmp(a ? a : "", b ? b : "") == 0;
}

static bool kiln_is_default_domain(const char* domain) {
  return !domain || !domain[0] || strcmp(domain, "ai.onnx") == 0;
}

const Onnx__FunctionProto* kiln_onnx_find_function(
    const Onnx__ModelProto* model, const Onnx__NodeProto* node) {
  for (size_t i = 0; i < model->n_functions; ++i) {
    const Onnx__FunctionProto* fn = model->functions[i];
    bool same_domain = kiln_is_default_domain(fn->domain)
                           ? kiln_is_default_domain(node->domain)
                           : kiln_str_eq(fn->domain, node->domain);
    if (same_domain && kiln_str_eq(fn->name, node->op_type)) return fn;
  }
  return NULL;
}

// The function's default for attribute `name` (unpacked into *out_owned,
// which the caller frees), or NULL.
static kiln_status_t kiln_function_default(const Onnx__FunctionProto* fn,
                                           const char* name,
                                           const char* source,
                                           Onnx__AttributeProto** out_owned) {
  *out_owned = NULL;
  for (size_t i = 0; i < fn->base.n_unknown_fields; ++i) {
    const ProtobufCMessageUnknownField* field = &fn->base.unknown_fields[i];
    if (field->tag != KILN_PB_FUNCTION_ATTRIBUTE_PROTO ||
        field->wire_type != PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED) {
      continue;
    }
    // protobuf-c keeps the field's length prefix with the payload.
    size_t prefix = 0;
    uint64_t length = 0;
    for (int shift = 0; prefix < field->len && prefix < 10; shift += 7) {
      uint8_t byte = field->data[prefix++];
      length |= (uint64_t)(byte & 0x7f) << shift;
      if (!(byte & 0x80)) break;
    }
    Onnx__AttributeProto* attr =
        length == field->len - prefix
            ? onnx__attribute_proto__unpack(NULL, field->len - prefix,
                                            field->data + prefix)
            : NULL;
    if (!attr) {
      return kiln_make_status(KILN_STATUS_DATA_LOSS,
                              "%s: function '%s': an attribute default does "
                              "not parse",
                              source, fn->name ? fn->name : "");
    }
    if (kiln_str_eq(attr->name, name)) {
      *out_owned = attr;
      return kiln_ok_status();
    }
    onnx__attribute_proto__free_unpacked(attr, NULL);
  }
  return kiln_ok_status();
}

typedef struct kiln_inline_scope_t {
  const Onnx__FunctionProto* fn;
  const Onnx__NodeProto* call;
  char prefix[48];
  // Strings and unpacked defaults made for one body node, freed after it.
  char** strings;
  size_t string_count;
  Onnx__AttributeProto** defaults;
  size_t default_count;
} kiln_inline_scope_t;

static kiln_status_t kiln_scope_keep(kiln_inline_scope_t* scope, char* text) {
  if (!text) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "out of memory inlining a function");
  }
  char** grown = (char**)realloc(scope->strings,
                                 (scope->string_count + 1) * sizeof(char*));
  if (!grown) {
    free(text);
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "out of memory inlining a function");
  }
  scope->strings = grown;
  scope->strings[scope->string_count++] = text;
  return kiln_ok_status();
}

static void kiln_scope_release(kiln_inline_scope_t* scope) {
  for (size_t i = 0; i < scope->string_count; ++i) free(scope->strings[i]);
  free(scope->strings);
  for (size_t i = 0; i < scope->default_count; ++i) {
    onnx__attribute_proto__free_unpacked(scope->defaults[i], NULL);
  }
  free(scope->defaults);
  scope->strings = NULL;
  scope->defaults = NULL;
  scope->string_count = scope->default_count = 0;
}

static kiln_status_t kiln_scope_prefixed(kiln_inline_scope_t* scope,
                                         const char* name, char** out) {
  size_t length = strlen(scope->prefix) + strlen(name) + 1;
  char* text = (char*)malloc(length);
  if (text) snprintf(text, length, "%s%s", scope->prefix, name);
  KILN_RETURN_IF_ERROR(kiln_scope_keep(scope, text));
  *out = text;
  return kiln_ok_status();
}

// A body value name in the caller's scope.
static kiln_status_t kiln_scope_bind(kiln_inline_scope_t* scope,
                                     const char* name, char** out) {
  *out = (char*)"";
  if (!name || !name[0]) return kiln_ok_status();  // an absent optional
  for (size_t i = 0; i < scope->fn->n_input; ++i) {
    if (kiln_str_eq(scope->fn->input[i], name)) {
      *out = i < scope->call->n_input ? scope->call->input[i] : (char*)"";
      return kiln_ok_status();
    }
  }
  for (size_t i = 0; i < scope->fn->n_output; ++i) {
    if (kiln_str_eq(scope->fn->output[i], name) && i < scope->call->n_output &&
        scope->call->output[i] && scope->call->output[i][0]) {
      *out = scope->call->output[i];
      return kiln_ok_status();
    }
  }
  return kiln_scope_prefixed(scope, name, out);
}

static const Onnx__AttributeProto* kiln_call_attr(const Onnx__NodeProto* call,
                                                  const char* name) {
  for (size_t i = 0; i < call->n_attribute; ++i) {
    if (kiln_str_eq(call->attribute[i]->name, name)) return call->attribute[i];
  }
  return NULL;
}

// Fills `out` (an array of body->n_attribute copies) and `out_pointers`
// with the body node's attributes, references resolved; *out_count may be
// smaller (a reference with neither a value nor a default is left out).
static kiln_status_t kiln_scope_attrs(kiln_inline_scope_t* scope,
                                      const Onnx__NodeProto* body,
                                      const char* source,
                                      Onnx__AttributeProto* out,
                                      Onnx__AttributeProto** out_pointers,
                                      size_t* out_count) {
  *out_count = 0;
  for (size_t i = 0; i < body->n_attribute; ++i) {
    const Onnx__AttributeProto* attr = body->attribute[i];
    const Onnx__AttributeProto* value = attr;
    if (attr->ref_attr_name && attr->ref_attr_name[0]) {
      value = kiln_call_attr(scope->call, attr->ref_attr_name);
      if (!value) {
        Onnx__AttributeProto* fallback = NULL;
        KILN_RETURN_IF_ERROR(kiln_function_default(
            scope->fn, attr->ref_attr_name, source, &fallback));
        if (fallback) {
          Onnx__AttributeProto** grown = (Onnx__AttributeProto**)realloc(
              scope->defaults, (scope->default_count + 1) * sizeof(*grown));
          if (!grown) {
            onnx__attribute_proto__free_unpacked(fallback, NULL);
            return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                                    "out of memory inlining a function");
          }
          scope->defaults = grown;
          scope->defaults[scope->default_count++] = fallback;
        }
        value = fallback;
      }
      if (!value) continue;  // unset: the op's own default applies
    }
    out[*out_count] = *value;
    out[*out_count].name = attr->name;
    out[*out_count].ref_attr_name = NULL;
    out_pointers[*out_count] = &out[*out_count];
    ++*out_count;
  }
  return kiln_ok_status();
}

// Adds body node `body` of the scope's function, renamed into the caller.
static kiln_status_t kiln_inline_body_node(kiln_onnx_functions_t* functions,
                                           kiln_inline_scope_t* scope,
                                           const Onnx__NodeProto* body) {
  Onnx__NodeProto node = *body;
  char** inputs = (char**)calloc(body->n_input + 1, sizeof(char*));
  char** outputs = (char**)calloc(body->n_output + 1, sizeof(char*));
  Onnx__AttributeProto* attrs = (Onnx__AttributeProto*)calloc(
      body->n_attribute + 1, sizeof(Onnx__AttributeProto));
  Onnx__AttributeProto** attr_pointers = (Onnx__AttributeProto**)calloc(
      body->n_attribute + 1, sizeof(Onnx__AttributeProto*));
  kiln_status_t status = kiln_ok_status();
  if (!inputs || !outputs || !attrs || !attr_pointers) {
    status = kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                              "out of memory inlining a function");
  }
  for (size_t i = 0; kiln_status_is_ok(status) && i < body->n_input; ++i) {
    status = kiln_scope_bind(scope, body->input[i], &inputs[i]);
  }
  for (size_t i = 0; kiln_status_is_ok(status) && i < body->n_output; ++i) {
    status = kiln_scope_bind(scope, body->output[i], &outputs[i]);
  }
  char* name = NULL;
  if (kiln_status_is_ok(status)) {
    status = kiln_scope_prefixed(
        scope,
        body->name && body->name[0] ? body->name
                                    : (body->op_type ? body->op_type : ""),
        &name);
  }
  size_t attr_count = 0;
  if (kiln_status_is_ok(status)) {
    status = kiln_scope_attrs(scope, body, functions->source, attrs,
                              attr_pointers, &attr_count);
  }
  if (kiln_status_is_ok(status)) {
    node.name = name;
    node.input = inputs;
    node.output = outputs;
    node.attribute = attr_pointers;
    node.n_attribute = attr_count;
    status = functions->add_node(functions->context, &node);
  }
  free(inputs);
  free(outputs);
  free(attrs);
  free(attr_pointers);
  kiln_scope_release(scope);
  return status;
}

kiln_status_t kiln_onnx_inline_call(kiln_onnx_functions_t* functions,
                                    const Onnx__FunctionProto* fn,
                                    const Onnx__NodeProto* call) {
  const char* call_name = call->name && call->name[0] ? call->name
                          : call->op_type                ? call->op_type
                                                         : "";
  const char* fn_name = fn->name ? fn->name : "";
  if (functions->depth >= KILN_ONNX_MAX_FUNCTION_DEPTH) {
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                            "%s: node '%s' calls function '%s' nested more "
                            "than %d deep",
                            functions->source, call_name, fn_name,
                            KILN_ONNX_MAX_FUNCTION_DEPTH);
  }
  if (call->n_input > fn->n_input || call->n_output > fn->n_output) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: node '%s' passes %zu inputs/%zu outputs to "
                            "function '%s', which has %zu/%zu",
                            functions->source, call_name, call->n_input,
                            call->n_output, fn_name, fn->n_input,
                            fn->n_output);
  }
  // The body is read at the model's opset: a function that imports another
  // version of the default domain would mean other op semantics.
  for (size_t i = 0; i < fn->n_opset_import; ++i) {
    const Onnx__OperatorSetIdProto* id = fn->opset_import[i];
    if (kiln_is_default_domain(id->domain) && id->version != functions->opset) {
      return kiln_make_status(
          KILN_STATUS_UNIMPLEMENTED,
          "%s: function '%s' (called by node '%s') imports opset %lld of the "
          "default domain but the model imports %lld; kiln reads one opset",
          functions->source, fn_name, call_name, (long long)id->version,
          (long long)functions->opset);
    }
  }
  if (fn->n_node > KILN_ONNX_MAX_INLINED_NODES - functions->inlined_nodes) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "%s: inlining function '%s' (node '%s') passes "
                            "%d inlined nodes",
                            functions->source, fn_name, call_name,
                            KILN_ONNX_MAX_INLINED_NODES);
  }
  functions->inlined_nodes += fn->n_node;
  kiln_inline_scope_t scope;
  memset(&scope, 0, sizeof(scope));
  scope.fn = fn;
  scope.call = call;
  snprintf(scope.prefix, sizeof(scope.prefix), "kiln.inline%zu/",
           functions->next_call++);
  ++functions->depth;
  kiln_status_t status = kiln_ok_status();
  for (size_t i = 0; i < fn->n_node && kiln_status_is_ok(status); ++i) {
    status = kiln_inline_body_node(functions, &scope, fn->node[i]);
  }
  --functions->depth;
  if (kiln_status_is_ok(status) || functions->depth > 0) return status;
  return kiln_status_annotate(status, "in function '%s' (called by node '%s')",
                              fn_name, call_name);
}
