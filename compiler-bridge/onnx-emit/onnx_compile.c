// kiln_onnx_compile_*: passes, memory plan, lowering, module (built through
// the module builder, emit_module.c).
#include "kiln/compiler/onnx_compile.h"

#include <stdlib.h>
#include <string.h>

#include "lower_util.h"
#include "kiln/compiler/assembler.h"
#include "kiln/compiler/graph_passes.h"
#include "kiln/hal/target_triple.h"
#include "kiln/compiler/quant.h"

// Plans are verified at compile time up to this many value pairs (about
// 0.1 s; BERT-base's plan is ~1e6).
#define KILN_ONNX_PLAN_VERIFY_MAX_PAIRS 100000000ull

const char* const kiln_onnx_compile_default_targets[] = {
    "cpu-llvmpipe-linux", "hopper-h100-linux", "valhall-g78-android30",
    "unknown-unknown-unknown"};
const size_t kiln_onnx_compile_default_target_count = 4;

void kiln_onnx_compile_options_init(kiln_onnx_compile_options_t* options) {
  memset(options, 0, sizeof(*options));
  options->function_name = "predict";
  options->cooperative_matrix = true;
}

kiln_status_t kiln_onnx_precision_parse(const char* text, kiln_onnx_precision_t* out) {
  *out = KILN_ONNX_PRECISION_DEFAULT;
  if (text && strcmp(text, "f32") == 0) {
    *out = KILN_ONNX_PRECISION_F32;
  } else if (text && strcmp(text, "f16") == 0) {
    *out = KILN_ONNX_PRECISION_F16;
  } else {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "unknown precision '%s' (known: f32, f16)", text ? text : "(null)");
  }
  return kiln_ok_status();
}

// Ops that read integer and bool run-time data on the host (lower_host.c).
static bool kiln_onnx_compile_is_host_reader(const char* op) {
  static const char* const kOps[] = {"NonZero", "Equal", "Less", "Greater", "LessOrEqual",
                                     "GreaterOrEqual", "Not", "And", "Or", "Xor", "Where"};
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); ++i) {
    if (strcmp(op, kOps[i]) == 0) return true;
  }
  return false;
}

// Integer graph input data reaches the GPU only as Gather indices or
// through a Cast to float, possibly after reshape-family nodes (lower_int.c);
// any other use is refused here, naming the input and the consumer.
static kiln_status_t kiln_onnx_compile_check_int_uses(const kiln_graph_t* graph,
                                                      int32_t input_id, int32_t id,
                                                      int depth) {
  const kiln_graph_value_t* input = &graph->values[input_id];
  // Bounded like kiln_lower_int_input_root: a crafted model's long chain
  // must not exhaust the stack.
  if (depth > 32) {
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                            "'%s': more than 32 reshapes of integer input '%s'",
                            graph->source, input->name);
  }
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed) continue;
    for (size_t i = 0; i < node->input_count; ++i) {
      if (node->inputs[i] != id) continue;
      if (strcmp(node->op_type, "Gather") == 0 && i == 1) continue;
      if (kiln_onnx_compile_is_host_reader(node->op_type)) continue;  // read on the host
      // sequence_lens: cast to float into the recurrent kernel's params.
      if (i == 4 && (strcmp(node->op_type, "LSTM") == 0 || strcmp(node->op_type, "GRU") == 0 ||
                     strcmp(node->op_type, "RNN") == 0)) {
        continue;
      }
      if (strcmp(node->op_type, "Cast") == 0) {
        int64_t to = 0;
        KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(node, "to", 0, &to));
        if (to == 1) continue;
      }
      if (kiln_lower_is_int_passthrough(node->op_type) && i == 0 && node->output_count > 0 &&
          node->outputs[0] >= 0) {
        KILN_RETURN_IF_ERROR(kiln_onnx_compile_check_int_uses(graph, input_id,
                                                              node->outputs[0], depth + 1));
        continue;
      }
      return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                              "'%s': %s input '%s' feeds node '%s' (op %s) as its input "
                              "%zu; integer inputs run on the GPU only as Gather indices, "
                              "LSTM/GRU/RNN sequence_lens or through Cast to float (after "
                              "Reshape/Unsqueeze/Squeeze/Flatten)",
                              graph->source, kiln_graph_dtype_name(input->dtype),
                              input->name, node->name, node->op_type, i);
    }
  }
  for (size_t o = 0; o < graph->output_count; ++o) {
    if (graph->outputs[o] == id && id != input_id) {
      return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                              "'%s': output '%s' is integer data of input '%s'; compiled "
                              "models return float32", graph->source,
                              graph->values[id].name, input->name);
    }
  }
  return kiln_ok_status();
}

// Whether every reader of value `id` runs on the host (which reads bool
// data as is).
static bool kiln_onnx_compile_feeds_host_only(const kiln_graph_t* graph, int32_t id) {
  bool read = false;
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed) continue;
    for (size_t i = 0; i < node->input_count; ++i) {
      if (node->inputs[i] != id) continue;
      // Reshapes and Cast of bool data run on the host too.
      if (!kiln_onnx_compile_is_host_reader(node->op_type) &&
          !kiln_lower_is_int_passthrough(node->op_type) && strcmp(node->op_type, "Cast") != 0) {
        return false;
      }
      read = true;
    }
  }
  return read;
}

// Graph inputs cross the ABI as f32 buffer views (f16 for fp16 models), or
// i64/i32 ones for token ids, or bool ones read only on the host; outputs as
// f32 (f16), or i64 indices.
static kiln_status_t kiln_onnx_compile_check_io(const kiln_graph_t* graph) {
  if (graph->output_count == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "'%s': the graph has no outputs",
                            graph->source);
  }
  for (size_t i = 0; i < graph->input_count + graph->output_count; ++i) {
    bool is_input = i < graph->input_count;
    int32_t id = is_input ? graph->inputs[i] : graph->outputs[i - graph->input_count];
    const kiln_graph_value_t* value = &graph->values[id];
    bool is_index = is_input && (value->dtype == KILN_GRAPH_DTYPE_I64 ||
                                 value->dtype == KILN_GRAPH_DTYPE_I32);
    bool is_host_bool = is_input && value->dtype == KILN_GRAPH_DTYPE_BOOL &&
                        kiln_onnx_compile_feeds_host_only(graph, id);
    // ArgMax/ArgMin/TopK indices, NonZero and NonMaxSuppression results
    // leave as an i64 buffer view.
    const kiln_graph_node_t* producer =
        !is_input && value->producer >= 0 ? &graph->nodes[value->producer] : NULL;
    static const char* const kIndexOps[] = {"ArgMax", "ArgMin", "TopK", "NonZero",
                                            "NonMaxSuppression"};
    bool is_arg = false;
    for (size_t k = 0; producer && value->dtype == KILN_GRAPH_DTYPE_I64 &&
                       k < sizeof(kIndexOps) / sizeof(kIndexOps[0]); ++k) {
      if (strcmp(producer->op_type, kIndexOps[k]) == 0) is_arg = true;
    }
    // Bool masks (and Where's int64 selections) computed on the host leave
    // as views of their type.
    if (producer && (value->dtype == KILN_GRAPH_DTYPE_BOOL ||
                     (value->dtype == KILN_GRAPH_DTYPE_I64 &&
                      strcmp(producer->op_type, "Where") == 0)) &&
        (kiln_onnx_compile_is_host_reader(producer->op_type) ||
         kiln_lower_is_int_passthrough(producer->op_type))) {
      is_arg = true;
    }
    if (value->dtype != KILN_GRAPH_DTYPE_F32 && value->dtype != KILN_GRAPH_DTYPE_F16 &&
        !is_index && !is_arg && !is_host_bool) {
      return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                              "'%s': %s '%s' is %s; compiled models take float32, float16, "
                              "int64 or int32 inputs (bool ones only into host ops) and return "
                              "float32 or float16 outputs (int64 from "
                              "ArgMax/ArgMin/TopK/NonZero/NonMaxSuppression, bool from "
                              "host comparisons)",
                              graph->source, is_input ? "input" : "output", value->name,
                              kiln_graph_dtype_name(value->dtype));
    }
    if (is_index) KILN_RETURN_IF_ERROR(kiln_onnx_compile_check_int_uses(graph, id, id, 0));
    size_t count = 0;
    KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&value->shape, &count));
    if (count == 0) {
      return kiln_make_status(KILN_STATUS_UNIMPLEMENTED, "'%s': %s '%s' is empty",
                              graph->source, is_input ? "input" : "output", value->name);
    }
  }
  return kiln_ok_status();
}

// Outputs that no node writes get a copy, recorded after every node: a
// graph input or a constant (readers use the source, see
// kiln_emit_value_range), or a value listed again (copied from the output
// its producer wrote, the first listing).
static kiln_status_t kiln_onnx_compile_passthrough(kiln_emit_program_t* program) {
  const kiln_graph_t* graph = program->graph;
  for (size_t o = 0; o < graph->output_count; ++o) {
    int32_t id = graph->outputs[o];
    const kiln_graph_value_t* value = &graph->values[id];
    bool written = value->producer >= 0 && !value->data && !value->is_input;
    size_t first = 0;
    while (graph->outputs[first] != id) ++first;
    if (written && first == o) continue;
    kiln_emit_range_t source;
    KILN_RETURN_IF_ERROR(kiln_emit_value_range(program, id, &source));
    size_t size = 0;
    KILN_RETURN_IF_ERROR(kiln_graph_value_byte_size(value, &size));
    kiln_emit_range_t target = {KILN_EMIT_SPACE_OUTPUT, (uint32_t)o, 0, size};
    bool half = value->dtype == KILN_GRAPH_DTYPE_F16;
    KILN_RETURN_IF_ERROR(kiln_lower_emit_copy(program, &source, &target, size / (half ? 2 : 4),
                                              half ? KILN_EMIT_STORAGE_F16
                                                   : KILN_EMIT_STORAGE_F32));
  }
  return kiln_ok_status();
}

static void kiln_onnx_compile_report(const kiln_onnx_compile_options_t* options,
                                     const char* stage, size_t done, size_t total,
                                     uint64_t bytes) {
  if (options->progress) options->progress(options->progress_user, stage, done, total, bytes);
}

// Counts the bytes on their way to the caller's sink, for progress.
typedef struct kiln_onnx_compile_sink_t {
  const kiln_onnx_compile_options_t* options;
  uint64_t written;
} kiln_onnx_compile_sink_t;

static kiln_status_t kiln_onnx_compile_sink(void* user, kiln_const_byte_span_t piece) {
  kiln_onnx_compile_sink_t* sink = (kiln_onnx_compile_sink_t*)user;
  KILN_RETURN_IF_ERROR(sink->options->module_sink(sink->options->module_sink_user, piece));
  sink->written += piece.size;
  kiln_onnx_compile_report(sink->options, "write", 0, 0, sink->written);
  return kiln_ok_status();
}

// f16 buffers need 16-bit storage on every target (a module keeps one
// storage per tensor, so a target without it cannot get an f32 path):
// the default triples are filtered to those that have it; a given triple
// without it is refused, naming it. The portable `unknown` arch stays: it
// stands for any device, so its f16 variant requires 16-bit storage at run
// time (kiln_onnx_compile_portable_f16) rather than at compile time.
static bool kiln_onnx_compile_is_portable(const char* arch) {
  return strcmp(arch, kiln_target_triple_unknown().arch) == 0;
}

static kiln_status_t kiln_onnx_compile_f16_targets(const kiln_onnx_compile_options_t* options,
                                                   const char** out_targets,
                                                   size_t* out_count) {
  const bool given = options->target_count != 0;
  const char* const* targets = given ? options->targets : kiln_onnx_compile_default_targets;
  size_t count = given ? options->target_count : kiln_onnx_compile_default_target_count;
  *out_count = 0;
  if (count > KILN_ONNX_COMPILE_MAX_TARGETS) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%zu target triples given; 1 to %d are allowed", count,
                            KILN_ONNX_COMPILE_MAX_TARGETS);
  }
  for (size_t t = 0; t < count; ++t) {
    kiln_target_triple_t triple;
    KILN_RETURN_IF_ERROR_ANNOTATE(
        kiln_target_triple_parse(kiln_make_cstring_view(targets[t]), &triple),
        "target triple '%s'", targets[t]);
    kiln_kernel_arch_caps_t caps;
    KILN_RETURN_IF_ERROR_ANNOTATE(kiln_kernel_arch_caps_for_arch(triple.arch, &caps),
                                  "target triple '%s'", targets[t]);
    if (caps.fp16_storage || kiln_onnx_compile_is_portable(triple.arch)) {
      out_targets[(*out_count)++] = targets[t];
    } else if (given) {
      return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                              "target '%s' lacks 16-bit storage (storageBuffer16BitAccess), "
                              "which f16 tensors need (--precision=f16, an fp16 model or a Cast "
                              "to float16); drop the target or compile an fp32 model with "
                              "--precision=f32",
                              targets[t]);
    }
  }
  return kiln_ok_status();
}

// Whether a live node reads or writes a float16 tensor (then every target
// needs 16-bit storage: f16 builds and casts).
static bool kiln_onnx_compile_uses_f16(const kiln_graph_t* graph) {
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed) continue;
    for (size_t i = 0; i < node->input_count + node->output_count; ++i) {
      int32_t id = i < node->input_count ? node->inputs[i] : node->outputs[i - node->input_count];
      if (id >= 0 && graph->values[id].dtype == KILN_GRAPH_DTYPE_F16) return true;
    }
  }
  return false;
}

// --print-statistics: weight bytes, and what weight-only quantization did.
static void kiln_onnx_compile_statistics(const kiln_emit_program_t* program,
                                         const kiln_onnx_compile_options_t* options) {
  FILE* f = options->statistics_stream;
  fprintf(f, "weights: %llu bytes, %zu dispatches, %zu barriers\n",
          (unsigned long long)program->weights_size, program->dispatch_count,
          program->barrier_count);
  if (program->qdq_int8_count) {
    fprintf(f, "qdq int8: %zu weights kept int8, %llu fp32 bytes -> %llu bytes\n",
            program->qdq_int8_count, (unsigned long long)program->qdq_int8_fp32_bytes,
            (unsigned long long)program->qdq_int8_bytes);
  }
  if (!options->quantize) return;
  fprintf(f,
          "quantize %s: %zu weights, %llu fp32 bytes -> %llu bytes (%.2fx smaller); "
          "%zu products kept fp32\n",
          kiln_quant_layout_name((kiln_quant_layout_t)options->quantize), program->quant_count,
          (unsigned long long)program->quant_fp32_bytes,
          (unsigned long long)program->quant_bytes,
          program->quant_bytes ? (double)program->quant_fp32_bytes / (double)program->quant_bytes
                               : 0.0,
          program->quant_kept_fp32);
}

static kiln_status_t kiln_onnx_compile_program(kiln_graph_t* graph,
                                               bool needs_16bit_storage,
                                               const kiln_onnx_compile_options_t* options,
                                               kiln_graph_memory_plan_t* plan,
                                               kiln_allocator_t allocator,
                                               kiln_byte_buffer_t* out) {
  const char* const* targets = options->targets;
  size_t target_count = options->target_count;
  const char* f16_targets[KILN_ONNX_COMPILE_MAX_TARGETS];
  if (needs_16bit_storage) {
    KILN_RETURN_IF_ERROR(kiln_onnx_compile_f16_targets(options, f16_targets, &target_count));
    targets = f16_targets;
  } else if (target_count == 0) {
    targets = kiln_onnx_compile_default_targets;
    target_count = kiln_onnx_compile_default_target_count;
  }
  kiln_emit_program_t program;
  KILN_RETURN_IF_ERROR(
      kiln_emit_program_init(graph, plan, targets, target_count, allocator, &program));
  // The portable variant of an f16 module: fp16 storage, fp32 math, for any
  // device with 16-bit storage (its variant declares the feature; a device
  // without it is refused at load, naming it). Without it a default f16
  // module ran only on llvmpipe, an H100 and a Mali G78 (an H200 found no
  // variant).
  for (size_t t = 0; needs_16bit_storage && t < target_count; ++t) {
    if (kiln_onnx_compile_is_portable(program.caps[t].arch)) program.caps[t].fp16_storage = true;
  }
  if (options->max_storage_buffer_range && options->max_storage_buffer_range < 4096) {
    kiln_emit_program_deinit(&program);
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "max_storage_buffer_range %llu is below 4096 bytes",
                            (unsigned long long)options->max_storage_buffer_range);
  }
  for (size_t t = 0; options->max_storage_buffer_range && t < target_count; ++t) {
    uint64_t* range = &program.caps[t].max_storage_buffer_range;
    if (*range == 0 || *range > options->max_storage_buffer_range) {
      *range = options->max_storage_buffer_range;
    }
  }
  program.no_fallback = options->no_fallback;
  program.cooperative_matrix = options->cooperative_matrix;
  program.conv_windows = options->conv_windows;
  program.quantize = options->quantize;
  program.statistics_stream = options->statistics_stream;
  kiln_status_t status = kiln_ok_status();
  // Level by level (node order within a level): the order the memory plan's
  // lifetimes assume, so a range is reused only after its last reader.
  size_t lowered = 0;
  for (int32_t level = 0; level <= plan->max_level && !status; ++level) {
    for (size_t n = 0; n < graph->node_count && !status; ++n) {
      if (graph->nodes[n].removed || plan->node_levels[n] != level) continue;
      kiln_onnx_compile_report(options, "lower", lowered++, graph->node_count, 0);
      status = kiln_emit_lower_node(&program, (int32_t)n);
    }
  }
  program.node = NULL;  // the output copies belong to no node
  if (!status) status = kiln_onnx_compile_passthrough(&program);
  if (!status) kiln_emit_place_counters(&program);
  if (!status) status = kiln_emit_program_schedule(&program);
  if (!status && options->statistics_stream) kiln_onnx_compile_statistics(&program, options);
  // Scratch of multi-pass lowerings lives past the planned values.
  if (!status) plan->peak_bytes = (size_t)kiln_emit_transient_bytes(&program);
  size_t before = out->size;
  kiln_onnx_compile_sink_t sink = {options, 0};
  if (!status) {
    kiln_onnx_compile_report(options, "write", 0, 0, 0);
    status = kiln_emit_write_module(
        &program, options->function_name ? options->function_name : "predict", out,
        options->module_sink ? kiln_onnx_compile_sink : NULL, &sink);
  }
  if (!status && options->assembly_stream && !options->module_sink) {
    // The disassembly of the finished module (it reassembles to the same
    // bytes), not a second description kept beside it.
    status = kiln_disassembler_write_bytes(
        kiln_make_const_byte_span(out->data + before, out->size - before), "<onnx-emit>", true,
        options->assembly_stream);
  }
  if (status) out->size = before;
  kiln_emit_program_deinit(&program);
  return status;
}

kiln_status_t kiln_onnx_compile_graph(kiln_graph_t* graph,
                                      const kiln_onnx_compile_options_t* options,
                                      kiln_allocator_t allocator,
                                      kiln_byte_buffer_t* out) {
  kiln_onnx_compile_options_t defaults;
  if (!options) {
    kiln_onnx_compile_options_init(&defaults);
    options = &defaults;
  }
  kiln_onnx_compile_report(options, "passes", 0, 0, 0);
  const bool f16_io = kiln_graph_has_f16_io(graph);
  kiln_onnx_precision_t precision = options->precision;
  if (precision == KILN_ONNX_PRECISION_DEFAULT) {
    precision = f16_io ? KILN_ONNX_PRECISION_F16 : KILN_ONNX_PRECISION_F32;
  }
  if (precision != KILN_ONNX_PRECISION_F32 && precision != KILN_ONNX_PRECISION_F16) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "unknown precision %d",
                            (int)precision);
  }
  KILN_RETURN_IF_ERROR(kiln_graph_run_default_passes(graph));
  if (precision == KILN_ONNX_PRECISION_F16) {
    KILN_RETURN_IF_ERROR(kiln_graph_precision_f16(graph, kiln_emit_node_runs_f32_only));
  }
  KILN_RETURN_IF_ERROR(kiln_onnx_compile_check_io(graph));
  kiln_graph_memory_plan_t plan;
  KILN_RETURN_IF_ERROR(
      kiln_graph_memory_plan_build_by_level(graph, KILN_EMIT_ALIGNMENT, allocator, &plan));
  // A plan whose live values overlap would be a silent wrong answer: check
  // it independently (each planned value against the values after it;
  // bounded so huge graphs do not pay the quadratic check).
  if ((uint64_t)(plan.planned_count + plan.view_count) * graph->value_count <=
      KILN_ONNX_PLAN_VERIFY_MAX_PAIRS) {
    kiln_status_t verified = kiln_graph_memory_plan_verify(graph, &plan);
    if (!kiln_status_is_ok(verified)) {
      kiln_graph_memory_plan_deinit(&plan);
      return verified;
    }
  }
  if (options->memory_plan_stream) {
    kiln_graph_memory_plan_print(graph, &plan, options->memory_plan_stream);
  }
  kiln_status_t status = kiln_onnx_compile_program(
      graph, f16_io || kiln_onnx_compile_uses_f16(graph), options, &plan, allocator, out);
  kiln_graph_memory_plan_deinit(&plan);
  return status;
}

kiln_status_t kiln_onnx_compile_file(const char* path,
                                     const kiln_onnx_compile_options_t* options,
                                     kiln_allocator_t allocator,
                                     kiln_byte_buffer_t* out) {
  if (options) kiln_onnx_compile_report(options, "import", 0, 0, 0);
  kiln_graph_t graph;
  KILN_RETURN_IF_ERROR(
      kiln_onnx_import_file(path, options ? &options->import : NULL, allocator, &graph));
  kiln_status_t status = kiln_onnx_compile_graph(&graph, options, allocator, out);
  kiln_graph_deinitialize(&graph);
  return status;
}
