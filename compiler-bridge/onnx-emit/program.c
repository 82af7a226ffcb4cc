// The emitter's program: tensor placement, executable dedup and per-target
// grids (dispatch order and barriers: schedule.c).
#include <string.h>

#include "emit_internal.h"
#include "kiln/base/half.h"
#include "kiln/base/size_math.h"
#include "kiln/compiler/kernels_gemm_tuning.h"
#include "kiln/hal/target_triple.h"

kiln_status_t kiln_emit_program_init(const kiln_graph_t* graph,
                                     const kiln_graph_memory_plan_t* plan,
                                     const char* const* targets,
                                     size_t target_count,
                                     kiln_allocator_t allocator,
                                     kiln_emit_program_t* out_program) {
  memset(out_program, 0, sizeof(*out_program));
  if (target_count == 0 || target_count > KILN_ONNX_COMPILE_MAX_TARGETS) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%zu target triples given; 1 to %d are allowed",
                            target_count, KILN_ONNX_COMPILE_MAX_TARGETS);
  }
  kiln_emit_program_t program;
  memset(&program, 0, sizeof(program));
  program.allocator = allocator;
  program.graph = graph;
  program.plan = plan;
  program.targets = targets;
  program.target_count = target_count;
  for (size_t t = 0; t < target_count; ++t) {
    kiln_target_triple_t triple;
    KILN_RETURN_IF_ERROR_ANNOTATE(
        kiln_target_triple_parse(kiln_make_cstring_view(targets[t]), &triple),
        "target triple '%s'", targets[t]);
    KILN_RETURN_IF_ERROR_ANNOTATE(
        kiln_kernel_arch_caps_for_arch(triple.arch, &program.caps[t]),
        "target triple '%s'", targets[t]);
  }
  KILN_RETURN_IF_ERROR(kiln_allocator_malloc(
      allocator, graph->value_count * sizeof(uint64_t) + 1,
      (void**)&program.weight_offsets));
  kiln_status_t status = kiln_allocator_malloc(
      allocator, graph->value_count * sizeof(uint64_t) + 1,
      (void**)&program.weight_offsets_f16);
  if (status) {
    kiln_allocator_free(allocator, program.weight_offsets);
    return status;
  }
  for (size_t v = 0; v < graph->value_count; ++v) {
    program.weight_offsets[v] = UINT64_MAX;
    program.weight_offsets_f16[v] = UINT64_MAX;
  }
  kiln_arena_init(&program.weight_copies, allocator, 64u << 10);
  *out_program = program;
  return kiln_ok_status();
}

void kiln_emit_program_deinit(kiln_emit_program_t* program) {
  kiln_allocator_free(program->allocator, program->executables);
  kiln_allocator_free(program->allocator, program->dispatches);
  kiln_allocator_free(program->allocator, program->weight_offsets);
  kiln_allocator_free(program->allocator, program->weight_offsets_f16);
  kiln_allocator_free(program->allocator, program->weight_pieces);
  kiln_allocator_free(program->allocator, program->host_ops);
  kiln_arena_deinit(&program->weight_copies);
  memset(program, 0, sizeof(*program));
}

// Grows an array of `element_size` items to hold one more.
static kiln_status_t kiln_emit_grow(kiln_allocator_t allocator, void** items,
                                    size_t count, size_t* capacity,
                                    size_t element_size) {
  if (count < *capacity) return kiln_ok_status();
  size_t new_capacity = *capacity ? *capacity * 2 : 16;
  size_t bytes = 0;
  if (!kiln_size_mul(new_capacity, element_size, &bytes)) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "emitter table overflow");
  }
  KILN_RETURN_IF_ERROR(kiln_allocator_realloc(allocator, bytes, items));
  *capacity = new_capacity;
  return kiln_ok_status();
}

static kiln_status_t kiln_emit_add_weight_piece(kiln_emit_program_t* program,
                                                const void* data, size_t size) {
  if (!size) return kiln_ok_status();
  KILN_RETURN_IF_ERROR(kiln_emit_grow(program->allocator, (void**)&program->weight_pieces,
                                      program->weight_piece_count,
                                      &program->weight_piece_capacity,
                                      sizeof(*program->weight_pieces)));
  program->weight_pieces[program->weight_piece_count++] =
      kiln_make_const_byte_span((const uint8_t*)data, size);
  program->weights_size += size;
  return kiln_ok_status();
}

// Places `data` (which stays valid and unchanged until the module is
// written: graph constants) in the weights by reference.
static kiln_status_t kiln_emit_add_weight_reference(kiln_emit_program_t* program,
                                                    const void* data, size_t size,
                                                    kiln_emit_range_t* out) {
  memset(out, 0, sizeof(*out));
  static const uint8_t zeros[KILN_EMIT_ALIGNMENT] = {0};
  uint64_t offset = program->weights_size;
  uint64_t aligned = kiln_emit_align_up(offset);
  KILN_RETURN_IF_ERROR(kiln_emit_add_weight_piece(program, zeros, (size_t)(aligned - offset)));
  KILN_RETURN_IF_ERROR(kiln_emit_add_weight_piece(program, data, size));
  // A zero-length binding is invalid: keep at least 4 bytes.
  if (size < 4) KILN_RETURN_IF_ERROR(kiln_emit_add_weight_piece(program, zeros, 4 - size));
  out->space = KILN_EMIT_SPACE_WEIGHTS;
  out->offset = aligned;
  out->length = size < 4 ? 4 : size;
  return kiln_ok_status();
}

kiln_status_t kiln_emit_add_weight(kiln_emit_program_t* program,
                                   const void* data, size_t size,
                                   kiln_emit_range_t* out) {
  memset(out, 0, sizeof(*out));
  void* copy = NULL;
  if (size) {
    KILN_RETURN_IF_ERROR(kiln_arena_allocate(&program->weight_copies, size, &copy));
    memcpy(copy, data, size);
  }
  return kiln_emit_add_weight_reference(program, copy, size, out);
}

bool kiln_emit_node_is_f16(const kiln_emit_program_t* program) {
  const kiln_graph_node_t* node = program->node;
  if (!node) return false;
  const kiln_graph_t* graph = program->graph;
  for (size_t i = 0; i < node->input_count + node->output_count; ++i) {
    int32_t id = i < node->input_count ? node->inputs[i] : node->outputs[i - node->input_count];
    if (id >= 0 && graph->values[id].dtype == KILN_GRAPH_DTYPE_F16) return true;
  }
  return false;
}

uint64_t kiln_emit_float_bytes(const kiln_emit_program_t* program) {
  return kiln_emit_node_is_f16(program) ? 2 : 4;
}

// `count` floats as halves, in the weight arena (alive until the module is
// written).
static kiln_status_t kiln_emit_halves(kiln_emit_program_t* program, const float* data,
                                      size_t count, uint16_t** out) {
  *out = NULL;
  if (!count) return kiln_ok_status();
  KILN_RETURN_IF_ERROR(
      kiln_arena_allocate(&program->weight_copies, count * sizeof(uint16_t), (void**)out));
  for (size_t i = 0; i < count; ++i) {
    float value;
    memcpy(&value, (const uint8_t*)data + i * sizeof(float), sizeof(value));
    (*out)[i] = kiln_f32_to_f16(value);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_emit_add_float_weight(kiln_emit_program_t* program,
                                         const float* data, size_t count,
                                         kiln_emit_range_t* out) {
  if (!kiln_emit_node_is_f16(program)) {
    return kiln_emit_add_weight(program, data, count * sizeof(float), out);
  }
  memset(out, 0, sizeof(*out));
  uint16_t* halves = NULL;
  KILN_RETURN_IF_ERROR(kiln_emit_halves(program, data, count, &halves));
  return kiln_emit_add_weight_reference(program, halves, count * sizeof(uint16_t), out);
}

kiln_status_t kiln_emit_value_range(kiln_emit_program_t* program,
                                    int32_t value_id, kiln_emit_range_t* out) {
  memset(out, 0, sizeof(*out));
  const kiln_graph_t* graph = program->graph;
  if (value_id < 0 || (size_t)value_id >= graph->value_count) {
    return kiln_make_status(KILN_STATUS_INTERNAL, "value %d out of range", value_id);
  }
  const kiln_graph_value_t* value = &graph->values[value_id];
  size_t size = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_value_byte_size(value, &size));
  // Inputs and constants first: a value that is also a graph output gets
  // its output buffer filled by a copy recorded after every node, so
  // readers must see the source, never the not-yet-written output.
  for (size_t i = 0; i < graph->input_count; ++i) {
    if (graph->inputs[i] == value_id) {
      *out = (kiln_emit_range_t){KILN_EMIT_SPACE_INPUT, (uint32_t)i, 0, size};
      return kiln_ok_status();
    }
  }
  if (value->data && value->dtype == KILN_GRAPH_DTYPE_F32 && kiln_emit_node_is_f16(program)) {
    // An f16 node reads its float32 constants (weights) as halves.
    size_t count = size / sizeof(float);
    if (program->weight_offsets_f16[value_id] == UINT64_MAX) {
      uint16_t* halves = NULL;
      KILN_RETURN_IF_ERROR(kiln_emit_halves(program, (const float*)value->data, count, &halves));
      kiln_emit_range_t placed;
      KILN_RETURN_IF_ERROR(kiln_emit_add_weight_reference(program, halves,
                                                          count * sizeof(uint16_t), &placed));
      program->weight_offsets_f16[value_id] = placed.offset;
    }
    size = count * sizeof(uint16_t);
    *out = (kiln_emit_range_t){KILN_EMIT_SPACE_WEIGHTS, 0,
                               program->weight_offsets_f16[value_id], size < 4 ? 4 : size};
    return kiln_ok_status();
  }
  if (value->data) {
    if (program->weight_offsets[value_id] == UINT64_MAX) {
      kiln_emit_range_t placed;
      KILN_RETURN_IF_ERROR(kiln_emit_add_weight_reference(program, value->data, size, &placed));
      program->weight_offsets[value_id] = placed.offset;
    }
    *out = (kiln_emit_range_t){KILN_EMIT_SPACE_WEIGHTS, 0,
                               program->weight_offsets[value_id], size < 4 ? 4 : size};
    return kiln_ok_status();
  }
  for (size_t i = 0; i < graph->output_count; ++i) {
    if (graph->outputs[i] == value_id) {
      *out = (kiln_emit_range_t){KILN_EMIT_SPACE_OUTPUT, (uint32_t)i, 0, size};
      return kiln_ok_status();
    }
  }
  if ((size_t)value_id < program->plan->value_count &&
      program->plan->offsets[value_id] != KILN_GRAPH_NOT_PLANNED) {
    *out = (kiln_emit_range_t){KILN_EMIT_SPACE_TRANSIENT, 0,
                               program->plan->offsets[value_id], size};
    return kiln_ok_status();
  }
  return kiln_make_status(KILN_STATUS_INTERNAL,
                          "value '%s' has no place (not planned)", value->name);
}

uint64_t kiln_emit_range_limit(const kiln_emit_program_t* program) {
  uint64_t limit = UINT64_MAX;
  for (size_t t = 0; t < program->target_count; ++t) {
    uint64_t range = program->caps[t].max_storage_buffer_range;
    if (range == 0) range = (uint64_t)128 << 20;  // Vulkan's guaranteed minimum
    if (range < limit) limit = range;
  }
  return limit;
}

static uint64_t kiln_emit_scratch_base(const kiln_emit_program_t* program) {
  uint64_t peak = program->plan->peak_bytes;
  return kiln_emit_align_up(peak);
}

kiln_status_t kiln_emit_scratch(kiln_emit_program_t* program, uint64_t bytes,
                                kiln_emit_range_t* out) {
  memset(out, 0, sizeof(*out));
  if (bytes == 0 || bytes > ((uint64_t)1 << 40)) {
    return kiln_make_status(KILN_STATUS_INTERNAL, "scratch of %llu bytes",
                            (unsigned long long)bytes);
  }
  const uint64_t start = program->scratch_reserved;
  if (start + bytes > program->scratch_bytes) program->scratch_bytes = start + bytes;
  *out = (kiln_emit_range_t){KILN_EMIT_SPACE_TRANSIENT, 0,
                             kiln_emit_scratch_base(program) + start, bytes};
  return kiln_ok_status();
}

uint64_t kiln_emit_scratch_reserve(kiln_emit_program_t* program, uint64_t bytes) {
  program->scratch_reserved = kiln_emit_align_up(bytes);
  return kiln_emit_scratch_held_end(program);
}

uint64_t kiln_emit_scratch_held_end(const kiln_emit_program_t* program) {
  return kiln_emit_scratch_base(program) + program->scratch_reserved;
}

// Scratch's end (the plan's peak when there is none), before the counters.
static uint64_t kiln_emit_scratch_end(const kiln_emit_program_t* program) {
  if (program->scratch_bytes == 0) return program->plan->peak_bytes;
  return kiln_emit_scratch_base(program) + program->scratch_bytes;
}

uint64_t kiln_emit_transient_bytes(const kiln_emit_program_t* program) {
  if (program->counter_bytes) return program->counter_offset + program->counter_bytes;
  return kiln_emit_scratch_end(program);
}

kiln_status_t kiln_emit_counters(kiln_emit_program_t* program, uint64_t bytes,
                                 kiln_emit_range_t* out) {
  memset(out, 0, sizeof(*out));
  if (bytes == 0 || bytes > ((uint64_t)1 << 32)) {
    return kiln_make_status(KILN_STATUS_INTERNAL, "counters of %llu bytes",
                            (unsigned long long)bytes);
  }
  // Each range starts bindable (KILN_EMIT_ALIGNMENT).
  *out = (kiln_emit_range_t){KILN_EMIT_SPACE_COUNTERS, 0, program->counter_bytes, bytes};
  program->counter_bytes += kiln_emit_align_up(bytes);
  return kiln_ok_status();
}

void kiln_emit_place_counters(kiln_emit_program_t* program) {
  const uint64_t end = kiln_emit_scratch_end(program);
  program->counter_offset = kiln_emit_align_up(end);
  for (size_t k = 0; k < program->dispatch_count; ++k) {
    kiln_emit_dispatch_t* d = &program->dispatches[k];
    for (uint32_t b = 0; b < d->binding_count; ++b) {
      if (d->bindings[b].space != KILN_EMIT_SPACE_COUNTERS) continue;
      d->bindings[b].space = KILN_EMIT_SPACE_TRANSIENT;
      d->bindings[b].offset += program->counter_offset;
    }
  }
}

// The product a gemm-family dispatch computes (m x n, reduction k, batch,
// and whether B runs along k: 1 for [n][k]), from its push constants;
// m = 0 for other kernels. The occupancy-aware tiling (gemm_occupancy.c)
// chooses per product.
static void kiln_emit_gemm_shape(const kiln_emit_dispatch_desc_t* desc, uint64_t shape[5]) {
  memset(shape, 0, 5 * sizeof(uint64_t));
  if ((desc->kernel == KILN_KERNEL_GEMM || desc->kernel == KILN_KERNEL_GEMM_SMALL ||
       kiln_kernel_is_gemm_coopmat(desc->kernel) ||
       desc->kernel == KILN_KERNEL_GEMV) &&
      desc->grid == KILN_EMIT_GRID_GEMM) {
    const kiln_kernel_gemm_params_t* p = desc->push;
    shape[0] = p->m, shape[1] = p->n, shape[2] = p->k, shape[3] = p->batch;
    shape[4] = p->b_row_stride == 1 && p->b_col_stride != 1;
  } else if (desc->kernel == KILN_KERNEL_CONV2D_GEMM &&
             desc->grid == KILN_EMIT_GRID_CONV2D_GEMM) {
    const kiln_kernel_conv2d_params_t* p = desc->push;
    if (p->groups == 0) return;
    const uint64_t cig = p->in_channels / p->groups;
    const uint64_t ci_end = p->ci_end == 0 || p->ci_end > cig ? cig : p->ci_end;
    const uint64_t kh_end = p->kh_end == 0 || p->kh_end > p->kernel_h ? p->kernel_h : p->kh_end;
    const uint64_t channels = ci_end > p->ci_begin ? ci_end - p->ci_begin : 0;
    const uint64_t rows = kh_end > p->kh_begin ? kh_end - p->kh_begin : 0;
    shape[0] = p->out_channels / p->groups;
    shape[1] = (uint64_t)p->out_height * p->out_width;
    shape[2] = channels * (channels == 1 ? rows : p->kernel_h) * p->kernel_w;
    shape[3] = (uint64_t)p->batch * p->groups;
  }
}

// Per-product tilings split a kernel's executables by tiling, and every
// executable builds a pipeline for the device's variant: a module with a
// target that keeps one tiling (lavapipe, mobile, unknown: the default
// targets) would build identical pipelines many times over (MobileNetV2 on
// lavapipe: 18 instead of 8, the first call 2x slower). So only modules
// whose targets all choose per product (e.g. --target-triple=hopper-...)
// get them.
static bool kiln_emit_per_product_tilings(const kiln_emit_program_t* program) {
  for (size_t t = 0; t < program->target_count; ++t) {
    if (!kiln_kernel_gemm_occupancy_enabled(&program->caps[t])) return false;
  }
  return program->target_count > 0;
}

kiln_status_t kiln_emit_select_config(const kiln_emit_program_t* program,
                                      const kiln_emit_dispatch_desc_t* desc, size_t target,
                                      kiln_kernel_storage_t storage,
                                      kiln_kernel_config_t* out_config) {
  uint64_t shape[5] = {0, 0, 0, 0, 0};
  if (kiln_emit_per_product_tilings(program)) kiln_emit_gemm_shape(desc, shape);
  KILN_RETURN_IF_ERROR(kiln_kernel_config_select_shape(desc->kernel, &program->caps[target],
                                                       storage, shape[0], shape[1], shape[2],
                                                       shape[3], shape[4] != 0, out_config));
  // The cpu variants build in only the paths of this dispatch's layout.
  if (desc->grid == KILN_EMIT_GRID_GEMM) {
    return kiln_kernel_config_gemm_cpu_paths(out_config, desc->push);
  }
  if (desc->kernel == KILN_KERNEL_CONV2D || desc->kernel == KILN_KERNEL_CONV2D_GEMM ||
      desc->kernel == KILN_KERNEL_DEPTHWISE_CONV2D) {
    return kiln_kernel_config_conv_cpu_paths(out_config, desc->push);
  }
  return kiln_ok_status();
}

// Executables are shared by every dispatch of one kernel with the same op
// spec constants and the same configuration on every target (the
// occupancy-aware gemm tilings differ per product; spec constants are per
// executable variant).
static kiln_status_t kiln_emit_find_executable(
    kiln_emit_program_t* program, const kiln_emit_dispatch_desc_t* desc,
    kiln_kernel_storage_t storage, uint32_t* out_index) {
  if (desc->op_count > KILN_EMIT_MAX_OPS) {
    return kiln_make_status(KILN_STATUS_INTERNAL, "too many op spec constants");
  }
  kiln_kernel_config_t configs[KILN_ONNX_COMPILE_MAX_TARGETS];
  memset(configs, 0, sizeof(configs));
  for (size_t t = 0; t < program->target_count; ++t) {
    KILN_RETURN_IF_ERROR_ANNOTATE(
        kiln_emit_select_config(program, desc, t, storage, &configs[t]),
        "node '%s' (op %s), target '%s'", program->node ? program->node->name : "(output copy)",
        program->node ? program->node->op_type : "-", program->targets[t]);
    for (size_t i = 0; i < desc->op_count; ++i) {
      KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(&configs[t], desc->ops[i].id,
                                                       desc->ops[i].value));
    }
  }
  for (size_t e = 0; e < program->executable_count; ++e) {
    const kiln_emit_executable_t* exe = &program->executables[e];
    if (exe->kernel == desc->kernel && exe->storage == storage &&
        exe->op_count == desc->op_count &&
        (desc->op_count == 0 ||
         memcmp(exe->ops, desc->ops, desc->op_count * sizeof(desc->ops[0])) == 0) &&
        memcmp(exe->configs, configs, program->target_count * sizeof(configs[0])) == 0) {
      *out_index = (uint32_t)e;
      return kiln_ok_status();
    }
  }
  KILN_RETURN_IF_ERROR(kiln_emit_grow(
      program->allocator, (void**)&program->executables, program->executable_count,
      &program->executable_capacity, sizeof(kiln_emit_executable_t)));
  kiln_emit_executable_t* exe = &program->executables[program->executable_count];
  memset(exe, 0, sizeof(*exe));
  exe->kernel = desc->kernel;
  exe->storage = storage;
  exe->op_count = desc->op_count;
  if (desc->op_count) memcpy(exe->ops, desc->ops, desc->op_count * sizeof(desc->ops[0]));
  int length = snprintf(exe->name, sizeof(exe->name), "%s%s",
                        kiln_kernel_desc(desc->kernel)->name,
                        storage == KILN_KERNEL_STORAGE_FP16 ? "_f16" : "");
  for (size_t i = 0; i < desc->op_count && length < (int)sizeof(exe->name); ++i) {
    length += snprintf(exe->name + length, sizeof(exe->name) - (size_t)length,
                       "_%u", desc->ops[i].value);
  }
  // Executables of one kernel and ops that differ only in their tiling
  // are told apart by their index.
  for (size_t e = 0; e < program->executable_count && length < (int)sizeof(exe->name); ++e) {
    if (strcmp(program->executables[e].name, exe->name) == 0) {
      snprintf(exe->name + length, sizeof(exe->name) - (size_t)length, "_t%zu",
               program->executable_count);
      break;
    }
  }
  memcpy(exe->configs, configs, program->target_count * sizeof(configs[0]));
  *out_index = (uint32_t)program->executable_count++;
  return kiln_ok_status();
}

kiln_status_t kiln_emit_dispatch_grid(const kiln_kernel_config_t* config,
                                      const kiln_emit_dispatch_desc_t* desc,
                                      uint32_t out_grid[3]) {
  switch (desc->grid) {
    case KILN_EMIT_GRID_GEMM:
      return kiln_kernel_grid_gemm(config, desc->push, out_grid);
    case KILN_EMIT_GRID_CONV2D:
      return kiln_kernel_grid_conv2d(config, desc->push, out_grid);
    case KILN_EMIT_GRID_CONV2D_GEMM:
      return kiln_kernel_grid_conv2d_gemm(config, desc->push, out_grid);
    case KILN_EMIT_GRID_LINEAR:
      return kiln_kernel_grid_linear(config, desc->grid_count, out_grid);
    case KILN_EMIT_GRID_ROWS:
      return kiln_kernel_grid_rows(config, desc->grid_count, out_grid);
    case KILN_EMIT_GRID_ATTENTION:
    case KILN_EMIT_GRID_ATTENTION_MERGE:
      return kiln_kernel_grid_attention(config, desc->push,
                                        desc->grid == KILN_EMIT_GRID_ATTENTION_MERGE, out_grid);
  }
  return kiln_make_status(KILN_STATUS_INTERNAL, "unknown grid kind %d", (int)desc->grid);
}

uint64_t kiln_emit_desc_float_bytes(const kiln_emit_program_t* program,
                                    const kiln_emit_dispatch_desc_t* desc) {
  if (desc->storage == KILN_EMIT_STORAGE_F16) return 2;
  if (desc->storage == KILN_EMIT_STORAGE_F32) return 4;
  return kiln_emit_float_bytes(program);
}

bool kiln_emit_conv_windows_fit(const kiln_kernel_conv2d_params_t* c) {
  return c->in_height > 0 && c->in_height <= 0xffff && c->in_width > 0 &&
         c->in_width <= 0xffff && c->kernel_h > 0 && c->kernel_h <= 0xff && c->kernel_w > 0 &&
         c->kernel_w <= 0xff && c->stride_h <= 0xff && c->stride_w <= 0xff &&
         c->pad_top <= 0xffff && c->pad_left <= 0xffff && c->dilation_h <= 0xff &&
         c->dilation_w <= 0xff && c->out_width > 0 && c->out_width <= 0xffff;
}

kiln_status_t kiln_emit_conv_windows_specs(const kiln_kernel_conv2d_params_t* c,
                                           uint32_t out[4]) {
  if (!kiln_emit_conv_windows_fit(c)) {
    return kiln_make_status(KILN_STATUS_INTERNAL, "conv windows past the packed geometry");
  }
  out[0] = c->in_height | c->in_width << 16;
  out[1] = c->kernel_h | c->kernel_w << 8 | c->stride_h << 16 | c->stride_w << 24;
  out[2] = c->pad_top | c->pad_left << 16;
  out[3] = c->dilation_h | c->dilation_w << 8 | c->out_width << 16;
  return kiln_ok_status();
}

kiln_status_t kiln_emit_add_dispatch(kiln_emit_program_t* program,
                                     const kiln_emit_dispatch_desc_t* desc) {
  const kiln_kernel_desc_t* kernel = kiln_kernel_desc(desc->kernel);
  if (!kernel || desc->binding_count != kernel->binding_count) {
    return kiln_make_status(KILN_STATUS_INTERNAL, "bad dispatch of kernel %d",
                            (int)desc->kernel);
  }
  // A binding past a target's storage-buffer range would be refused by the
  // device: ops that can be split were split by lower_big.c; others stop here.
  const uint64_t limit = kiln_emit_range_limit(program);
  for (uint32_t b = 0; b < desc->binding_count; ++b) {
    if (desc->bindings[b].length > limit) {
      const kiln_graph_node_t* node = program->node;
      return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                              "node '%s' (op %s): kernel '%s' binding %u spans %llu bytes, "
                              "more than the %llu-byte storage-buffer range of the targets, "
                              "and this op is not split into smaller ranges",
                              node ? node->name : "?", node ? node->op_type : "?",
                              kernel->name, b,
                              (unsigned long long)desc->bindings[b].length,
                              (unsigned long long)limit);
    }
  }
  // Casts join f32 and f16 buffers themselves: they have one build.
  bool cast = desc->kernel == KILN_KERNEL_CAST_F32_TO_F16 ||
              desc->kernel == KILN_KERNEL_CAST_F16_TO_F32;
  kiln_kernel_storage_t storage =
      desc->storage == KILN_EMIT_STORAGE_F16 ||
              (desc->storage == KILN_EMIT_STORAGE_NODE && !cast && kiln_emit_node_is_f16(program))
          ? KILN_KERNEL_STORAGE_FP16
          : KILN_KERNEL_STORAGE_FP32;
  // gemm_coopmat stages B by its contiguous run: k-major for a transposed
  // weight ([n][k]), n-major otherwise (KILN_SPEC_COOPMAT_B_KMAJOR); an
  // n-major run that starts 4-aligned but not 8 loads as two quads
  // (KILN_SPEC_COOPMAT_B_QUADS); a conv's windows are read from its input
  // by their geometry (KILN_SPEC_COOPMAT_CONV_*).
  kiln_kernel_spec_value_t ops[KILN_EMIT_MAX_OPS];
  kiln_emit_dispatch_desc_t coop;
  if (kiln_kernel_is_gemm_coopmat(desc->kernel)) {
    if (desc->op_count + 5 > KILN_EMIT_MAX_OPS) {
      return kiln_make_status(KILN_STATUS_INTERNAL, "gemm_coopmat: %zu op spec constants",
                              desc->op_count);
    }
    const kiln_kernel_gemm_params_t* p = desc->push;
    const kiln_kernel_conv2d_params_t* w = desc->b_windows;
    const bool k_major = !w && p->b_row_stride == 1 && p->b_col_stride != 1;
    const uint32_t starts = p->b_row_stride | p->b_batch_stride;
    coop = *desc;
    if (desc->op_count) memcpy(ops, desc->ops, desc->op_count * sizeof(ops[0]));
    ops[coop.op_count++] = (kiln_kernel_spec_value_t){KILN_SPEC_COOPMAT_B_KMAJOR, k_major};
    if (w) {
      uint32_t geometry[4];
      KILN_RETURN_IF_ERROR(kiln_emit_conv_windows_specs(w, geometry));
      ops[coop.op_count++] = (kiln_kernel_spec_value_t){KILN_SPEC_COOPMAT_CONV_IN, geometry[0]};
      ops[coop.op_count++] =
          (kiln_kernel_spec_value_t){KILN_SPEC_COOPMAT_CONV_KERNEL, geometry[1]};
      ops[coop.op_count++] = (kiln_kernel_spec_value_t){KILN_SPEC_COOPMAT_CONV_PAD, geometry[2]};
      ops[coop.op_count++] = (kiln_kernel_spec_value_t){KILN_SPEC_COOPMAT_CONV_OUT, geometry[3]};
    } else if (!k_major && p->b_col_stride == 1 && (starts & 7) != 0 && (starts & 3) == 0 &&
               storage == KILN_KERNEL_STORAGE_FP16) {
      ops[coop.op_count++] = (kiln_kernel_spec_value_t){KILN_SPEC_COOPMAT_B_QUADS, 1};
    }
    coop.ops = ops;
    desc = &coop;
  }
  uint32_t executable = 0;
  KILN_RETURN_IF_ERROR(kiln_emit_find_executable(program, desc, storage, &executable));
  KILN_RETURN_IF_ERROR(kiln_emit_grow(
      program->allocator, (void**)&program->dispatches, program->dispatch_count,
      &program->dispatch_capacity, sizeof(kiln_emit_dispatch_t)));
  kiln_emit_dispatch_t* dispatch = &program->dispatches[program->dispatch_count];
  memset(dispatch, 0, sizeof(*dispatch));
  dispatch->executable = executable;
  dispatch->push_size = kernel->push_constant_size;
  memcpy(dispatch->push, desc->push, kernel->push_constant_size);
  dispatch->binding_count = desc->binding_count;
  memcpy(dispatch->bindings, desc->bindings,
         desc->binding_count * sizeof(desc->bindings[0]));
  const kiln_emit_executable_t* exe = &program->executables[executable];
  for (size_t t = 0; t < program->target_count; ++t) {
    KILN_RETURN_IF_ERROR(kiln_emit_dispatch_grid(&exe->configs[t], desc, dispatch->grids[t]));
  }
  dispatch->written_mask = desc->written_mask;
  dispatch->disjoint_group = program->disjoint_group;
  ++program->dispatch_count;
  return kiln_ok_status();
}

kiln_status_t kiln_emit_add_host_op(kiln_emit_program_t* program,
                                    const kiln_emit_host_op_t* op) {
  KILN_RETURN_IF_ERROR(kiln_emit_grow(program->allocator, (void**)&program->host_ops,
                                      program->host_op_count, &program->host_op_capacity,
                                      sizeof(*program->host_ops)));
  kiln_emit_host_op_t* added = &program->host_ops[program->host_op_count++];
  *added = *op;
  added->first_dispatch = program->dispatch_count;
  return kiln_ok_status();
}

void kiln_emit_segment(const kiln_emit_program_t* program, size_t s, size_t* begin,
                       size_t* end) {
  *begin = s == 0 ? 0 : program->host_ops[s - 1].first_dispatch;
  *end = s < program->host_op_count ? program->host_ops[s].first_dispatch
                                    : program->dispatch_count;
}
