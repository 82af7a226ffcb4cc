// Prints the program as kiln assembly (docs/assembly.md). Ref globals:
// 0 the recorded command buffer, 1 the device copy of the weights, 2 the
// transient buffer. `record` looks every executable up once, reads each
// dispatch's grid for the variant the device chose from the `grids` table,
// and records all dispatches with barriers where the program put them.
// `predict` asserts the inputs, records on the first call, allocates the
// outputs and submits once with the inputs and outputs as binding slots.
#include <inttypes.h>
#include <string.h>

#include "emit_internal.h"
#include "kiln/hal/types.h"

static const char* const kImports[] = {
    "hal.device \"v_r\"",
    "hal.buffer_view.assert \"riir_v\"",
    "hal.buffer.allocate \"riiI_r\"",
    "hal.buffer.write \"rIrII_v\"",
    "hal.buffer_view.create \"rIir_r\"",
    "hal.executable.lookup \"rr_r\"",
    "hal.executable.variant \"r_i\"",
    "hal.command_buffer.create \"ri_r\"",
    "hal.command_buffer.dispatch \"rriiiirrr_v\"",
    "hal.command_buffer.barrier \"r_v\"",
    "hal.command_buffer.finalize \"r_v\"",
    "hal.device.submit_and_wait \"rrr_v\"",
};

static void kiln_emit_hex(FILE* stream, const uint8_t* data, size_t size) {
  static const char kDigits[] = "0123456789abcdef";
  char chunk[8192];
  size_t used = 0;
  for (size_t i = 0; i < size; ++i) {
    chunk[used++] = kDigits[data[i] >> 4];
    chunk[used++] = kDigits[data[i] & 15];
    if (used == sizeof(chunk)) {
      fwrite(chunk, 1, used, stream);
      used = 0;
    }
  }
  fwrite(chunk, 1, used, stream);
}

static uint32_t kiln_emit_features(uint32_t kernel_features) {
  uint32_t features = 0;
  if (kernel_features & KILN_KERNEL_FEATURE_FP16_STORAGE) features |= 0x4;
  if (kernel_features & KILN_KERNEL_FEATURE_SUBGROUP_ARITHMETIC) features |= 0x10;
  return features;
}

static kiln_status_t kiln_emit_executable(const kiln_emit_program_t* program,
                                          const kiln_emit_executable_t* exe,
                                          FILE* stream) {
  const kiln_kernel_desc_t* desc = kiln_kernel_desc(exe->kernel);
  fprintf(stream, "executable %s\n", exe->name);
  for (size_t t = 0; t < program->target_count; ++t) {
    const kiln_kernel_config_t* config = &exe->configs[t];
    kiln_kernel_spirv_t spirv;
    KILN_RETURN_IF_ERROR(kiln_kernel_get_spirv(exe->kernel, config->variant, &spirv));
    uint32_t invocations = config->workgroup_size[0] * config->workgroup_size[1] *
                           config->workgroup_size[2];
    fprintf(stream, "  variant \"%s\" features 0x%x shared %u invocations %u\n",
            program->targets[t], kiln_emit_features(config->required_features),
            config->shared_memory_bytes, invocations);
    for (size_t w = 0; w < spirv.word_count; w += 16) {
      fprintf(stream, "    spirv");
      for (size_t i = w; i < w + 16 && i < spirv.word_count; ++i) {
        fprintf(stream, " 0x%08x", spirv.words[i]);
      }
      fprintf(stream, "\n");
    }
    fprintf(stream, "    entry %s workgroup %u %u %u push %u\n", desc->entry_point,
            config->workgroup_size[0], config->workgroup_size[1],
            config->workgroup_size[2], desc->push_constant_size);
    for (uint32_t b = 0; b < desc->binding_count; ++b) {
      fprintf(stream, "      binding 0 %u%s%s\n", desc->bindings[b].binding,
              desc->bindings[b].read_only ? " readonly" : "",
              ((spirv.texel_bindings >> desc->bindings[b].binding) & 1u) ? " texel" : "");
    }
    for (size_t s = 0; s < config->spec_count; ++s) {
      fprintf(stream, "      spec %u %u\n", config->spec[s].id, config->spec[s].value);
    }
  }
  fprintf(stream, "end\n\n");
  return kiln_ok_status();
}

// record(device r0, weights r1, transient r2) -> command buffer r3.
// Executable e lives in r(16+e), its chosen variant in i(16+e).
static void kiln_emit_record(const kiln_emit_program_t* program, FILE* stream) {
  const size_t e_count = program->executable_count;
  fprintf(stream, "func record \"rrr_r\" regs %zu refs %zu\n", 16 + e_count,
          16 + e_count);
  fprintf(stream, "  const.i32 i0 0\n");
  fprintf(stream, "  call.import hal.command_buffer.create r0 i0 -> r3\n");
  fprintf(stream, "  buffer.rodata r5 grids\n");
  for (size_t e = 0; e < e_count; ++e) {
    fprintf(stream, "  buffer.rodata r4 x%zu\n", e);
    fprintf(stream, "  call.import hal.executable.lookup r0 r4 -> r%zu\n", 16 + e);
    fprintf(stream, "  call.import hal.executable.variant r%zu -> i%zu\n", 16 + e, 16 + e);
  }
  const size_t targets = program->target_count;
  for (size_t k = 0; k < program->dispatch_count; ++k) {
    const kiln_emit_dispatch_t* d = &program->dispatches[k];
    size_t e = d->executable;
    fprintf(stream, "  # dispatch %zu: %s\n", k, program->executables[e].name);
    if (d->barrier_before) fprintf(stream, "  call.import hal.command_buffer.barrier r3\n");
    // Grid words at ((k * targets) + variant) * 12 in `grids`.
    fprintf(stream, "  const.i32 i0 %zu\n  add.i32 i0 i0 i%zu\n", k * targets, 16 + e);
    fprintf(stream, "  const.i32 i1 12\n  mul.i32 i0 i0 i1\n  sext.i32.i64 I2 i0\n");
    fprintf(stream, "  buffer.load.i32 i4 r5 I2\n  const.i64 I6 4\n  add.i64 I2 I2 I6\n");
    fprintf(stream, "  buffer.load.i32 i8 r5 I2\n  add.i64 I2 I2 I6\n");
    fprintf(stream, "  buffer.load.i32 i9 r5 I2\n");
    fprintf(stream, "  const.i32 i10 %u\n  list.alloc r6 ref i10\n  list.resize r6 i10\n",
            d->binding_count);
    fprintf(stream, "  const.i32 i10 %u\n  list.alloc r7 i64 i10\n  list.resize r7 i10\n",
            3 * d->binding_count);
    for (uint32_t b = 0; b < d->binding_count; ++b) {
      const kiln_emit_range_t* range = &d->bindings[b];
      uint64_t slot = 0;
      switch (range->space) {
        case KILN_EMIT_SPACE_INPUT:
          slot = range->index;
          break;
        case KILN_EMIT_SPACE_OUTPUT:
          slot = program->graph->input_count + range->index;
          break;
        case KILN_EMIT_SPACE_TRANSIENT:
        case KILN_EMIT_SPACE_WEIGHTS:
          fprintf(stream, "  const.i32 i10 %u\n  list.set.ref r6 i10 r%d\n", b,
                  range->space == KILN_EMIT_SPACE_WEIGHTS ? 1 : 2);
          break;
      }
      uint64_t values[3] = {range->offset, range->length, slot};
      for (int v = 0; v < 3; ++v) {
        fprintf(stream, "  const.i32 i10 %u\n  const.i64 I12 %" PRIu64
                        "\n  list.set.i64 r7 i10 I12\n",
                3 * b + (uint32_t)v, values[v]);
      }
    }
    fprintf(stream, "  buffer.rodata r8 p%zu\n  const.i32 i11 0\n", k);
    fprintf(stream, "  call.import hal.command_buffer.dispatch r3 r%zu i11 i4 i8 i9 r6 r7 r8\n",
            16 + e);
  }
  fprintf(stream, "  call.import hal.command_buffer.finalize r3\n  return r3\nend\n\n");
}

// Builds an i64 dims list of `shape` in ref register `list`.
static void kiln_emit_dims(FILE* stream, const kiln_graph_shape_t* shape, int list) {
  // Capacity at least 1, so a scalar's empty list still has storage.
  fprintf(stream, "  const.i32 i0 %d\n  list.alloc r%d i64 i0\n", shape->rank ? shape->rank : 1,
          list);
  fprintf(stream, "  const.i32 i0 %d\n  list.resize r%d i0\n", shape->rank, list);
  for (int32_t d = 0; d < shape->rank; ++d) {
    fprintf(stream, "  const.i32 i0 %d\n  const.i64 I2 %" PRId64 "\n  list.set.i64 r%d i0 I2\n",
            d, shape->dims[d], list);
  }
}

static void kiln_emit_predict(const kiln_emit_program_t* program,
                              const char* function_name, FILE* stream) {
  const kiln_graph_t* graph = program->graph;
  const size_t inputs = graph->input_count, outputs = graph->output_count;
  const size_t base = inputs;
  const size_t r_device = base, r_cb = base + 1, r_weights = base + 2,
               r_transient = base + 3, r_bytes = base + 4, r_list = base + 5,
               r_table = base + 6, r_buffer = base + 7, r_out = base + 8;
  fprintf(stream, "func %s \"", function_name);
  for (size_t i = 0; i < inputs; ++i) fputc('r', stream);
  if (inputs == 0) fputc('v', stream);
  fputc('_', stream);
  for (size_t o = 0; o < outputs; ++o) fputc('r', stream);
  fprintf(stream, "\" regs 16 refs %zu\n", r_out + outputs);
  fprintf(stream, "  call.import hal.device -> r%zu\n", r_device);
  for (size_t i = 0; i < inputs; ++i) {
    const kiln_graph_value_t* value = &graph->values[graph->inputs[i]];
    kiln_emit_dims(stream, &value->shape, (int)r_list);
    // check_io admits f32 and, for Gather indices, i64 / i32 inputs.
    kiln_hal_element_type_t element = value->dtype == KILN_GRAPH_DTYPE_I64 ? KILN_HAL_ELEMENT_I64
                                      : value->dtype == KILN_GRAPH_DTYPE_I32
                                          ? KILN_HAL_ELEMENT_I32
                                          : KILN_HAL_ELEMENT_F32;
    fprintf(stream, "  const.i32 i4 %zu\n  const.i32 i5 %d\n", i, (int)element);
    fprintf(stream, "  call.import hal.buffer_view.assert r%zu i4 i5 r%zu\n", i, r_list);
  }
  fprintf(stream, "  global.load.ref r%zu 0\n  ref.is_null i0 r%zu\n", r_cb, r_cb);
  fprintf(stream, "  cond_br i0 first_call ready\nfirst_call:\n");
  fprintf(stream, "  const.i32 i0 0\n");
  if (program->weights.size) {
    fprintf(stream, "  buffer.rodata r%zu weights\n  buffer.length I2 r%zu\n", r_bytes, r_bytes);
    fprintf(stream, "  call.import hal.buffer.allocate r%zu i0 i0 I2 -> r%zu\n", r_device,
            r_weights);
    fprintf(stream, "  const.i64 I4 0\n");
    fprintf(stream, "  call.import hal.buffer.write r%zu I4 r%zu I4 I2\n", r_weights, r_bytes);
  } else {
    fprintf(stream, "  const.i64 I2 %u\n", KILN_EMIT_ALIGNMENT);
    fprintf(stream, "  call.import hal.buffer.allocate r%zu i0 i0 I2 -> r%zu\n", r_device,
            r_weights);
  }
  size_t transient = program->plan->peak_bytes;
  if (transient < KILN_EMIT_ALIGNMENT) transient = KILN_EMIT_ALIGNMENT;
  fprintf(stream, "  const.i64 I2 %zu\n", transient);
  fprintf(stream, "  call.import hal.buffer.allocate r%zu i0 i0 I2 -> r%zu\n", r_device,
          r_transient);
  fprintf(stream, "  global.store.ref 1 r%zu\n  global.store.ref 2 r%zu\n", r_weights,
          r_transient);
  fprintf(stream, "  call record r%zu r%zu r%zu -> r%zu\n", r_device, r_weights, r_transient,
          r_cb);
  fprintf(stream, "  global.store.ref 0 r%zu\n  br ready\nready:\n", r_cb);
  fprintf(stream, "  const.i32 i6 %zu\n  list.alloc r%zu ref i6\n  list.resize r%zu i6\n",
          inputs + outputs, r_table, r_table);
  for (size_t i = 0; i < inputs; ++i) {
    fprintf(stream, "  const.i32 i6 %zu\n  list.set.ref r%zu i6 r%zu\n", i, r_table, i);
  }
  for (size_t o = 0; o < outputs; ++o) {
    const kiln_graph_value_t* value = &graph->values[graph->outputs[o]];
    size_t bytes = 0;
    (void)kiln_graph_value_byte_size(value, &bytes);
    fprintf(stream, "  const.i32 i0 0\n  const.i64 I2 %zu\n", bytes < 4 ? 4 : bytes);
    fprintf(stream, "  call.import hal.buffer.allocate r%zu i0 i0 I2 -> r%zu\n", r_device,
            r_buffer);
    kiln_emit_dims(stream, &value->shape, (int)r_list);
    fprintf(stream, "  const.i64 I4 0\n  const.i32 i6 %d\n", (int)KILN_HAL_ELEMENT_F32);
    fprintf(stream, "  call.import hal.buffer_view.create r%zu I4 i6 r%zu -> r%zu\n",
            r_buffer, r_list, r_out + o);
    fprintf(stream, "  const.i32 i6 %zu\n  list.set.ref r%zu i6 r%zu\n", inputs + o, r_table,
            r_out + o);
  }
  fprintf(stream, "  call.import hal.device.submit_and_wait r%zu r%zu r%zu\n", r_device, r_cb,
          r_table);
  fprintf(stream, "  return");
  for (size_t o = 0; o < outputs; ++o) fprintf(stream, " r%zu", r_out + o);
  fprintf(stream, "\nend\n\nexport %s\n", function_name);
}

kiln_status_t kiln_emit_write_assembly(const kiln_emit_program_t* program,
                                       const char* function_name, FILE* stream) {
  fprintf(stream, "# Compiled from %s by kiln-compile.\nmodule model\n\n",
          program->graph->source ? program->graph->source : "an ONNX graph");
  for (size_t i = 0; i < sizeof(kImports) / sizeof(kImports[0]); ++i) {
    fprintf(stream, "import %s\n", kImports[i]);
  }
  fprintf(stream, "\nglobals 0 3\n\n");
  if (program->weights.size) {
    fprintf(stream, "rodata weights align %u auto hex \"", KILN_EMIT_ALIGNMENT);
    kiln_emit_hex(stream, program->weights.data, program->weights.size);
    fprintf(stream, "\"\n");
  }
  // Grid table: u32 x, y, z per (dispatch, variant).
  fprintf(stream, "rodata grids align 4 raw hex \"");
  for (size_t k = 0; k < program->dispatch_count; ++k) {
    for (size_t t = 0; t < program->target_count; ++t) {
      uint8_t bytes[12];
      for (int d = 0; d < 3; ++d) {
        uint32_t v = program->dispatches[k].grids[t][d];
        bytes[4 * d] = (uint8_t)v;
        bytes[4 * d + 1] = (uint8_t)(v >> 8);
        bytes[4 * d + 2] = (uint8_t)(v >> 16);
        bytes[4 * d + 3] = (uint8_t)(v >> 24);
      }
      kiln_emit_hex(stream, bytes, sizeof(bytes));
    }
  }
  fprintf(stream, "00000000\"\n");
  for (size_t e = 0; e < program->executable_count; ++e) {
    fprintf(stream, "rodata x%zu raw text \"%s\"\n", e, program->executables[e].name);
  }
  for (size_t k = 0; k < program->dispatch_count; ++k) {
    fprintf(stream, "rodata p%zu align 4 raw hex \"", k);
    kiln_emit_hex(stream, program->dispatches[k].push, program->dispatches[k].push_size);
    fprintf(stream, "\"\n");
  }
  fprintf(stream, "\n");
  for (size_t e = 0; e < program->executable_count; ++e) {
    KILN_RETURN_IF_ERROR(kiln_emit_executable(program, &program->executables[e], stream));
  }
  kiln_emit_record(program, stream);
  kiln_emit_predict(program, function_name, stream);
  if (ferror(stream)) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "writing the assembly failed");
  }
  return kiln_ok_status();
}
