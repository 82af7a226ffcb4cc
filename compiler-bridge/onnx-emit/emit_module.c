// Builds the module for an emitted program through the module builder
// (kiln/compiler/module_builder.h); no text on the way. Ref globals: 0 the
// recorded command buffer, 1 the device copy of the weights (hal.buffer.constant:
// immutable, uploaded once per model and shared by its sessions), 2 the transient
// buffer. `record` looks every executable up once, reads each dispatch's
// grid for the variant the device chose from the `grids` table, and records
// all dispatches with barriers where the program put them. `predict`
// asserts the inputs, records on the first call, allocates the outputs and
// submits once with the inputs and outputs as binding slots. A program with
// host ops (lower_host.c) records one command buffer per GPU segment (ref
// globals 0, 3, 4, ...) and `predict` submits each in turn, calling the cpu
// native module's op after each (docs/partitioning.md).
// kiln-compile --dump-assembly disassembles the result (docs/assembly.md).
#include <string.h>

#include "emit_internal.h"
#include "kiln/compiler/module_builder.h"
#include "kiln/hal/types.h"

typedef enum kiln_emit_import_e {
  KILN_EMIT_IMPORT_DEVICE,
  KILN_EMIT_IMPORT_VIEW_ASSERT,
  KILN_EMIT_IMPORT_ALLOCATE,
  KILN_EMIT_IMPORT_CONSTANT,
  KILN_EMIT_IMPORT_VIEW_CREATE,
  KILN_EMIT_IMPORT_LOOKUP,
  KILN_EMIT_IMPORT_VARIANT,
  KILN_EMIT_IMPORT_CB_CREATE,
  KILN_EMIT_IMPORT_DISPATCH,
  KILN_EMIT_IMPORT_BARRIER,
  KILN_EMIT_IMPORT_FINALIZE,
  KILN_EMIT_IMPORT_SUBMIT,
  KILN_EMIT_IMPORT_FILL,
  // Imported only by a program with host ops (so other modules need no
  // cpu module in their context).
  KILN_EMIT_IMPORT_VIEW_BUFFER,
  KILN_EMIT_IMPORT_VIEW_OFFSET,
  KILN_EMIT_IMPORT_CPU_TOPK,
  KILN_EMIT_IMPORT_CPU_NONZERO,
  KILN_EMIT_IMPORT_CPU_NMS,
  KILN_EMIT_IMPORT_CPU_ELEMENTWISE,
  KILN_EMIT_IMPORT_COUNT,
} kiln_emit_import_t;
#define KILN_EMIT_IMPORT_FIRST_HOST KILN_EMIT_IMPORT_VIEW_BUFFER

// In kiln_emit_import_t order (the ordinals the bodies use).
static const struct {
  const char* name;
  const char* signature;
} kImports[KILN_EMIT_IMPORT_COUNT] = {
    {"hal.device", "v_r"},
    {"hal.buffer_view.assert", "riir_v"},
    {"hal.buffer.allocate", "riiI_r"},
    {"hal.buffer.constant", "rr_r"},
    {"hal.buffer_view.create", "rIir_r"},
    {"hal.executable.lookup", "rr_r"},
    {"hal.executable.variant", "r_i"},
    {"hal.command_buffer.create", "ri_r"},
    {"hal.command_buffer.dispatch", "rriiiirrr_v"},
    {"hal.command_buffer.barrier", "r_v"},
    {"hal.command_buffer.finalize", "r_v"},
    {"hal.device.submit_and_wait", "rrr_v"},
    {"hal.command_buffer.fill", "rrIIii_v"},
    {"hal.buffer_view.buffer", "r_r"},
    {"hal.buffer_view.offset", "r_I"},
    {"cpu.topk", "rIrIrIIIIIi_v"},
    {"cpu.nonzero", "rIirrII_I"},
    {"cpu.nms", "rIrIrIIIIIffi_I"},
    {"cpu.elementwise", "rIrIrIrIiir_v"},
};

// The ref global holding GPU segment s's command buffer: 0 for the first
// (its null means "not recorded yet"), 3, 4, ... for the others.
static uint32_t kiln_emit_segment_global(size_t s) { return s == 0 ? 0 : (uint32_t)(2 + s); }

typedef struct kiln_emit_module_t {
  const kiln_emit_program_t* program;
  kiln_module_writer_t* writer;
  kiln_function_builder_t* body;
  kiln_executable_builder_t* exe;
  uint32_t weights, grids, names, pushes;  // rodata ordinals (names/pushes: first)
  uint32_t record;                         // function ordinal
} kiln_emit_module_t;

#define OP(...) KILN_RETURN_IF_ERROR(KILN_FB_OP(m->body, __VA_ARGS__))

// call.import with register lists.
static kiln_status_t kiln_emit_call(kiln_emit_module_t* m, kiln_emit_import_t import,
                                    const uint16_t* args, size_t arg_count,
                                    const uint16_t* results, size_t result_count) {
  return kiln_function_builder_call(m->body, KILN_VM_OP_CALL_IMPORT, (uint32_t)import, args,
                                    arg_count, results, result_count);
}
#define CALL(import, args, results)                                                     \
  KILN_RETURN_IF_ERROR(kiln_emit_call(m, (import), (const uint16_t[])args,              \
                                      sizeof((const uint16_t[])args) / sizeof(uint16_t), \
                                      (const uint16_t[])results,                        \
                                      sizeof((const uint16_t[])results) / sizeof(uint16_t)))
#define CALL0(import, args)                                                             \
  KILN_RETURN_IF_ERROR(kiln_emit_call(m, (import), (const uint16_t[])args,              \
                                      sizeof((const uint16_t[])args) / sizeof(uint16_t), \
                                      NULL, 0))
#define REGS(...) {__VA_ARGS__}

// Kernel feature bits -> the module format's (what variant selection reads).
static uint32_t kiln_emit_features(uint32_t kernel_features) {
  uint32_t features = 0;
  if (kernel_features & KILN_KERNEL_FEATURE_FP16_STORAGE) {
    features |= KILN_FORMAT_FEATURE_STORAGE_16BIT;
  }
  if (kernel_features & KILN_KERNEL_FEATURE_SUBGROUP_ARITHMETIC) {
    features |= KILN_FORMAT_FEATURE_SUBGROUP_OPS;
  }
  return features;
}

static kiln_status_t kiln_emit_executable(kiln_emit_module_t* m,
                                          const kiln_emit_executable_t* exe) {
  const kiln_emit_program_t* program = m->program;
  const kiln_kernel_desc_t* desc = kiln_kernel_desc(exe->kernel);
  KILN_RETURN_IF_ERROR(kiln_executable_builder_begin(m->exe, kiln_make_cstring_view(exe->name)));
  for (size_t t = 0; t < program->target_count; ++t) {
    const kiln_kernel_config_t* config = &exe->configs[t];
    kiln_kernel_spirv_t spirv;
    KILN_RETURN_IF_ERROR(kiln_kernel_get_config_spirv(config, &spirv));
    kiln_executable_variant_desc_t variant = {
        .target = kiln_make_cstring_view(program->targets[t]),
        .required_features = kiln_emit_features(config->required_features),
        .min_shared_memory_bytes = config->shared_memory_bytes,
        .min_workgroup_invocations = config->workgroup_size[0] * config->workgroup_size[1] *
                                     config->workgroup_size[2],
    };
    KILN_RETURN_IF_ERROR(kiln_executable_builder_add_variant(m->exe, &variant));
    KILN_RETURN_IF_ERROR(kiln_executable_builder_append_spirv(
        m->exe, kiln_make_const_byte_span(spirv.words, spirv.word_count * 4)));
    KILN_RETURN_IF_ERROR(kiln_executable_builder_add_entry(
        m->exe, kiln_make_cstring_view(desc->entry_point), config->workgroup_size,
        desc->push_constant_size));
    for (uint32_t b = 0; b < desc->binding_count; ++b) {
      uint32_t binding = desc->bindings[b].binding;
      uint32_t flags = desc->bindings[b].read_only ? KILN_FORMAT_BINDING_READ_ONLY : 0;
      if ((spirv.texel_bindings >> binding) & 1u) flags |= KILN_FORMAT_BINDING_TEXEL_VEC4F32;
      KILN_RETURN_IF_ERROR(kiln_executable_builder_add_binding(m->exe, 0, binding, flags));
    }
    for (size_t s = 0; s < config->spec_count; ++s) {
      KILN_RETURN_IF_ERROR(
          kiln_executable_builder_add_spec(m->exe, config->spec[s].id, config->spec[s].value));
    }
  }
  return kiln_executable_builder_finish(m->exe, m->writer);
}

// The rodata segments: weights, the grid table (u32 x, y, z per dispatch and
// variant, then a zero word), executable names, push constants.
static kiln_status_t kiln_emit_rodata(kiln_emit_module_t* m) {
  const kiln_emit_program_t* program = m->program;
  uint32_t ordinal = 0;
  if (program->weights_size) {
    // By reference: the weights go from the graph's constants (and the
    // program's own copies) to the output, never joined in memory.
    KILN_RETURN_IF_ERROR(kiln_module_writer_add_rodata_pieces(
        m->writer, kiln_make_cstring_view("weights"), program->weight_pieces,
        program->weight_piece_count, KILN_EMIT_ALIGNMENT, KILN_MODULE_WRITER_COMPRESSION_AUTO,
        &m->weights));
  }
  kiln_byte_buffer_t grids;
  kiln_byte_buffer_init(&grids, program->allocator);
  kiln_status_t status = kiln_ok_status();
  for (size_t k = 0; k < program->dispatch_count && !status; ++k) {
    for (size_t t = 0; t < program->target_count && !status; ++t) {
      for (int d = 0; d < 3 && !status; ++d) {
        status = kiln_byte_buffer_append_u32(&grids, program->dispatches[k].grids[t][d]);
      }
    }
  }
  if (!status) status = kiln_byte_buffer_append_u32(&grids, 0);
  if (!status) {
    status = kiln_module_writer_add_rodata(m->writer, kiln_make_cstring_view("grids"),
                                           kiln_byte_buffer_span(&grids), 4,
                                           KILN_MODULE_WRITER_COMPRESSION_NONE, &m->grids);
  }
  kiln_byte_buffer_deinit(&grids);
  KILN_RETURN_IF_ERROR(status);
  char name[32];
  for (size_t e = 0; e < program->executable_count; ++e) {
    const char* text = program->executables[e].name;
    snprintf(name, sizeof(name), "x%zu", e);
    KILN_RETURN_IF_ERROR(kiln_module_writer_add_rodata(
        m->writer, kiln_make_cstring_view(name), kiln_make_const_byte_span(text, strlen(text)),
        16, KILN_MODULE_WRITER_COMPRESSION_NONE, &ordinal));
    if (e == 0) m->names = ordinal;
  }
  for (size_t k = 0; k < program->dispatch_count; ++k) {
    snprintf(name, sizeof(name), "p%zu", k);
    KILN_RETURN_IF_ERROR(kiln_module_writer_add_rodata(
        m->writer, kiln_make_cstring_view(name),
        kiln_make_const_byte_span(program->dispatches[k].push, program->dispatches[k].push_size),
        4, KILN_MODULE_WRITER_COMPRESSION_NONE, &ordinal));
    if (k == 0) m->pushes = ordinal;
  }
  return kiln_ok_status();
}

// Records dispatch k into the command buffer in r3 (executables in r16..).
static kiln_status_t kiln_emit_record_dispatch(kiln_emit_module_t* m, size_t k) {
  const kiln_emit_program_t* program = m->program;
  const size_t targets = program->target_count;
  const kiln_emit_dispatch_t* d = &program->dispatches[k];
  uint16_t e = (uint16_t)(16 + d->executable);
  if (d->barrier_before) CALL0(KILN_EMIT_IMPORT_BARRIER, REGS(3));
  // Grid words at ((k * targets) + variant) * 12 in `grids`.
  OP(KILN_VM_OP_CONST_I32, 0, k * targets);
  OP(KILN_VM_OP_ADD_I32, 0, 0, e);
  OP(KILN_VM_OP_CONST_I32, 1, 12);
  OP(KILN_VM_OP_MUL_I32, 0, 0, 1);
  OP(KILN_VM_OP_SEXT_I32_I64, 2, 0);
  OP(KILN_VM_OP_BUFFER_LOAD_I32, 4, 5, 2);
  OP(KILN_VM_OP_CONST_I64, 6, 4);
  OP(KILN_VM_OP_ADD_I64, 2, 2, 6);
  OP(KILN_VM_OP_BUFFER_LOAD_I32, 8, 5, 2);
  OP(KILN_VM_OP_ADD_I64, 2, 2, 6);
  OP(KILN_VM_OP_BUFFER_LOAD_I32, 9, 5, 2);
  OP(KILN_VM_OP_CONST_I32, 10, d->binding_count);
  OP(KILN_VM_OP_LIST_ALLOC, 6, KILN_VM_LIST_REF, 10);
  OP(KILN_VM_OP_LIST_RESIZE, 6, 10);
  OP(KILN_VM_OP_CONST_I32, 10, 3 * d->binding_count);
  OP(KILN_VM_OP_LIST_ALLOC, 7, KILN_VM_LIST_I64, 10);
  OP(KILN_VM_OP_LIST_RESIZE, 7, 10);
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
      case KILN_EMIT_SPACE_COUNTERS:  // kiln_emit_place_counters ran before
        return kiln_make_status(KILN_STATUS_INTERNAL, "dispatch %zu: counters not placed", k);
      case KILN_EMIT_SPACE_TRANSIENT:
      case KILN_EMIT_SPACE_WEIGHTS:
        OP(KILN_VM_OP_CONST_I32, 10, b);
        OP(KILN_VM_OP_LIST_SET_REF, 6, 10, range->space == KILN_EMIT_SPACE_WEIGHTS ? 1 : 2);
        break;
    }
    uint64_t values[3] = {range->offset, range->length, slot};
    for (uint32_t v = 0; v < 3; ++v) {
      OP(KILN_VM_OP_CONST_I32, 10, 3 * b + v);
      OP(KILN_VM_OP_CONST_I64, 12, values[v]);
      OP(KILN_VM_OP_LIST_SET_I64, 7, 10, 12);
    }
  }
  OP(KILN_VM_OP_BUFFER_RODATA, 8, m->pushes + k);
  OP(KILN_VM_OP_CONST_I32, 11, 0);
  CALL0(KILN_EMIT_IMPORT_DISPATCH, REGS(3, e, 11, 4, 8, 9, 6, 7, 8));
  return kiln_ok_status();
}

// record(device r0, weights r1, transient r2) -> command buffer r3.
// Executable e lives in r(16+e), its chosen variant in i(16+e). A program
// with counters fills them with zeros first (the first segment).
static kiln_status_t kiln_emit_record(kiln_emit_module_t* m) {
  const kiln_emit_program_t* program = m->program;
  const size_t e_count = program->executable_count;
  if (16 + e_count > 0xFFFF) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "'%s': %zu executables need more than 65535 registers",
                            program->graph->source, e_count);
  }
  KILN_RETURN_IF_ERROR(kiln_function_builder_begin(m->body, m->record));
  OP(KILN_VM_OP_BUFFER_RODATA, 5, m->grids);
  for (size_t e = 0; e < e_count; ++e) {
    uint16_t r = (uint16_t)(16 + e);
    OP(KILN_VM_OP_BUFFER_RODATA, 4, m->names + e);
    CALL(KILN_EMIT_IMPORT_LOOKUP, REGS(0, 4), REGS(r));
    CALL(KILN_EMIT_IMPORT_VARIANT, REGS(r), REGS(r));
  }
  // One command buffer per GPU segment (host ops sit between them); the
  // first always exists, an empty later one is not made.
  for (size_t s = 0; s <= program->host_op_count; ++s) {
    size_t begin = 0, end = 0;
    kiln_emit_segment(program, s, &begin, &end);
    if (s > 0 && begin == end) continue;
    OP(KILN_VM_OP_CONST_I32, 0, 0);
    CALL(KILN_EMIT_IMPORT_CB_CREATE, REGS(0, 0), REGS(3));
    if (s == 0 && program->counter_bytes) {
      // Every call starts with its counters at zero (kiln_emit_counters),
      // whatever an earlier call or another module left in the buffer.
      OP(KILN_VM_OP_CONST_I64, 4, program->counter_offset);
      OP(KILN_VM_OP_CONST_I64, 6, program->counter_bytes);
      OP(KILN_VM_OP_CONST_I32, 8, 0);
      OP(KILN_VM_OP_CONST_I32, 9, 4);
      CALL0(KILN_EMIT_IMPORT_FILL, REGS(3, 2, 4, 6, 8, 9));
      CALL0(KILN_EMIT_IMPORT_BARRIER, REGS(3));
    }
    for (size_t k = begin; k < end; ++k) KILN_RETURN_IF_ERROR(kiln_emit_record_dispatch(m, k));
    CALL0(KILN_EMIT_IMPORT_FINALIZE, REGS(3));
    OP(KILN_VM_OP_GLOBAL_STORE_REF, kiln_emit_segment_global(s), 3);
  }
  OP(KILN_VM_OP_GLOBAL_LOAD_REF, 3, 0);
  OP(KILN_VM_OP_RETURN, 3);
  return kiln_function_builder_end(m->body, (uint32_t)(16 + e_count), (uint32_t)(16 + e_count));
}

// Builds an i64 list of `count` values in ref register `list`.
static kiln_status_t kiln_emit_i64_list(kiln_emit_module_t* m, const int64_t* values,
                                        size_t count, uint16_t list) {
  // Capacity at least 1, so a scalar's empty list still has storage.
  OP(KILN_VM_OP_CONST_I32, 0, count ? count : 1);
  OP(KILN_VM_OP_LIST_ALLOC, list, KILN_VM_LIST_I64, 0);
  OP(KILN_VM_OP_CONST_I32, 0, count);
  OP(KILN_VM_OP_LIST_RESIZE, list, 0);
  for (size_t i = 0; i < count; ++i) {
    OP(KILN_VM_OP_CONST_I32, 0, i);
    OP(KILN_VM_OP_CONST_I64, 2, (uint64_t)values[i]);
    OP(KILN_VM_OP_LIST_SET_I64, list, 0, 2);
  }
  return kiln_ok_status();
}

// Builds an i64 dims list of `shape` in ref register `list`.
static kiln_status_t kiln_emit_dims(kiln_emit_module_t* m, const kiln_graph_shape_t* shape,
                                    uint16_t list) {
  return kiln_emit_i64_list(m, shape->dims, (size_t)shape->rank, list);
}

// Registers of predict beyond its inputs (see kiln_emit_predict).
typedef struct kiln_emit_predict_regs_t {
  uint16_t device, out_buffers, host_refs, dynamic_views, list;
} kiln_emit_predict_regs_t;

// Int registers of a host call: the operands' byte offsets (I32 .. I38),
// sizes (I44 .. I50), flags/element (i52), the count it returns (I54), the
// thresholds (i56, i57); I40 is scratch.
enum { KILN_EMIT_HOST_OFFSETS = 32, KILN_EMIT_HOST_SIZES = 44, KILN_EMIT_HOST_FLAGS = 52,
       KILN_EMIT_HOST_COUNT = 54, KILN_EMIT_HOST_FLOATS = 56, KILN_EMIT_HOST_INTS = 64 };

// Puts operand j of a host call (its buffer and byte offset) in registers;
// the buffer register to pass goes to *out_ref.
static kiln_status_t kiln_emit_host_operand(kiln_emit_module_t* m,
                                            const kiln_emit_predict_regs_t* r,
                                            const kiln_emit_range_t* range, uint32_t j,
                                            uint16_t* out_ref) {
  const uint16_t offset = (uint16_t)(KILN_EMIT_HOST_OFFSETS + 2 * j);
  const uint16_t ref = (uint16_t)(r->host_refs + j);
  *out_ref = ref;
  switch (range->space) {
    case KILN_EMIT_SPACE_INPUT: {
      // The caller's view: its buffer, at the view's own offset.
      const uint16_t view = (uint16_t)range->index;
      CALL(KILN_EMIT_IMPORT_VIEW_BUFFER, REGS(view), REGS(ref));
      CALL(KILN_EMIT_IMPORT_VIEW_OFFSET, REGS(view), REGS(offset));
      OP(KILN_VM_OP_CONST_I64, 40, range->offset);
      OP(KILN_VM_OP_ADD_I64, offset, offset, 40);
      return kiln_ok_status();
    }
    case KILN_EMIT_SPACE_OUTPUT:
      *out_ref = (uint16_t)(r->out_buffers + range->index);
      break;
    case KILN_EMIT_SPACE_TRANSIENT:
      OP(KILN_VM_OP_GLOBAL_LOAD_REF, ref, 2);
      break;
    case KILN_EMIT_SPACE_WEIGHTS:  // immutable: host ops only read it
      OP(KILN_VM_OP_GLOBAL_LOAD_REF, ref, 1);
      break;
    case KILN_EMIT_SPACE_COUNTERS:  // no host op binds counters
      return kiln_make_status(KILN_STATUS_INTERNAL, "a host op operand in counters");
  }
  OP(KILN_VM_OP_CONST_I64, offset, range->offset);
  return kiln_ok_status();
}

static uint64_t kiln_emit_f32_bits(float value) {
  uint32_t bits = 0;
  memcpy(&bits, &value, 4);
  return bits;
}

// Calls the cpu module for host op h; a data-dependent output then gets a
// view of its real shape (register dynamic_views + output index).
static kiln_status_t kiln_emit_host_call(kiln_emit_module_t* m, const kiln_emit_predict_regs_t* r,
                                         const kiln_emit_host_op_t* h) {
  uint16_t refs[4] = {0, 0, 0, 0};
  for (uint32_t j = 0; j < h->range_count; ++j) {
    KILN_RETURN_IF_ERROR(kiln_emit_host_operand(m, r, &h->ranges[j], j, &refs[j]));
  }
  for (uint32_t i = 0; i < 4; ++i) {
    OP(KILN_VM_OP_CONST_I64, KILN_EMIT_HOST_SIZES + 2 * i, (uint64_t)h->ints[i]);
  }
  const uint16_t o0 = KILN_EMIT_HOST_OFFSETS, o1 = o0 + 2, o2 = o0 + 4, o3 = o0 + 6;
  const uint16_t s0 = KILN_EMIT_HOST_SIZES, s1 = s0 + 2, s2 = s0 + 4, s3 = s0 + 6;
  const uint16_t flags = KILN_EMIT_HOST_FLAGS, count = KILN_EMIT_HOST_COUNT;
  switch (h->kind) {
    case KILN_EMIT_HOST_TOPK:
      OP(KILN_VM_OP_CONST_I32, flags, (uint32_t)h->ints[4]);
      CALL0(KILN_EMIT_IMPORT_CPU_TOPK,
            REGS(refs[0], o0, refs[1], o1, refs[2], o2, s0, s1, s2, s3, flags));
      break;
    case KILN_EMIT_HOST_NONZERO: {
      OP(KILN_VM_OP_CONST_I32, flags, (uint32_t)h->ints[0]);
      OP(KILN_VM_OP_CONST_I64, s0, (uint64_t)h->ints[1]);
      KILN_RETURN_IF_ERROR(kiln_emit_dims(m, &h->shape, r->list));
      CALL(KILN_EMIT_IMPORT_CPU_NONZERO, REGS(refs[0], o0, flags, r->list, refs[1], o1, s0),
           REGS(count));
      break;
    }
    case KILN_EMIT_HOST_NMS: {
      const uint16_t iou = KILN_EMIT_HOST_FLOATS, score = iou + 1;
      OP(KILN_VM_OP_CONST_I32, flags, (uint32_t)h->ints[4]);
      OP(KILN_VM_OP_CONST_F32, iou, kiln_emit_f32_bits(h->floats[0]));
      OP(KILN_VM_OP_CONST_F32, score, kiln_emit_f32_bits(h->floats[1]));
      CALL(KILN_EMIT_IMPORT_CPU_NMS,
           REGS(refs[0], o0, refs[1], o1, refs[2], o2, s0, s1, s2, s3, iou, score, flags),
           REGS(count));
      break;
    }
    case KILN_EMIT_HOST_ELEMENTWISE: {
      const uint16_t element = flags + 1;
      OP(KILN_VM_OP_CONST_I32, flags, (uint32_t)h->ints[0]);
      OP(KILN_VM_OP_CONST_I32, element, (uint32_t)h->ints[1]);
      KILN_RETURN_IF_ERROR(kiln_emit_i64_list(m, h->broadcast, h->broadcast_size, r->list));
      CALL0(KILN_EMIT_IMPORT_CPU_ELEMENTWISE, REGS(refs[0], o0, refs[1], o1, refs[2], o2,
                                                  refs[3], o3, flags, element, r->list));
      break;
    }
  }
  if (h->count_output < 0) return kiln_ok_status();
  // The output's view with the count in place of the bound.
  const kiln_graph_t* graph = m->program->graph;
  const kiln_graph_value_t* value = &graph->values[graph->outputs[h->count_output]];
  KILN_RETURN_IF_ERROR(kiln_emit_dims(m, &value->shape, r->list));
  OP(KILN_VM_OP_CONST_I32, 0, (uint32_t)h->count_dim);
  OP(KILN_VM_OP_LIST_SET_I64, r->list, 0, count);
  OP(KILN_VM_OP_CONST_I64, 2, 0);
  OP(KILN_VM_OP_CONST_I32, 4, (uint32_t)KILN_HAL_ELEMENT_I64);
  CALL(KILN_EMIT_IMPORT_VIEW_CREATE,
       REGS((uint16_t)(r->out_buffers + h->count_output), 2, 4, r->list),
       REGS((uint16_t)(r->dynamic_views + h->count_output)));
  return kiln_ok_status();
}

static kiln_status_t kiln_emit_predict(kiln_emit_module_t* m, uint32_t ordinal) {
  const kiln_emit_program_t* program = m->program;
  const kiln_graph_t* graph = program->graph;
  const size_t inputs = graph->input_count, outputs = graph->output_count;
  const uint16_t base = (uint16_t)inputs;
  const uint16_t r_device = base, r_cb = base + 1, r_weights = base + 2,
                 r_transient = base + 3, r_bytes = base + 4, r_list = base + 5,
                 r_table = base + 6, r_buffer = base + 7, r_out = base + 8;
  // Host ops need each output's buffer, four operand buffers and the views
  // of data-dependent outputs.
  const kiln_emit_predict_regs_t regs = {
      r_device, (uint16_t)(r_out + outputs), (uint16_t)(r_out + 2 * outputs),
      (uint16_t)(r_out + 2 * outputs + 4), r_list};
  const bool host = program->host_op_count > 0;
  KILN_RETURN_IF_ERROR(kiln_function_builder_begin(m->body, ordinal));
  uint32_t first_call = 0, ready = 0;
  KILN_RETURN_IF_ERROR(kiln_function_builder_new_label(m->body, &first_call));
  KILN_RETURN_IF_ERROR(kiln_function_builder_new_label(m->body, &ready));
  KILN_RETURN_IF_ERROR(kiln_emit_call(m, KILN_EMIT_IMPORT_DEVICE, NULL, 0, &r_device, 1));
  for (size_t i = 0; i < inputs; ++i) {
    const kiln_graph_value_t* value = &graph->values[graph->inputs[i]];
    KILN_RETURN_IF_ERROR(kiln_emit_dims(m, &value->shape, r_list));
    // check_io admits f32, f16 (fp16 models), i64 / i32 (Gather indices,
    // NonZero) and bool (host ops) inputs.
    kiln_hal_element_type_t element = value->dtype == KILN_GRAPH_DTYPE_I64 ? KILN_HAL_ELEMENT_I64
                                      : value->dtype == KILN_GRAPH_DTYPE_I32
                                          ? KILN_HAL_ELEMENT_I32
                                      : value->dtype == KILN_GRAPH_DTYPE_F16
                                          ? KILN_HAL_ELEMENT_F16
                                      : value->dtype == KILN_GRAPH_DTYPE_BOOL
                                          ? KILN_HAL_ELEMENT_BOOL
                                          : KILN_HAL_ELEMENT_F32;
    OP(KILN_VM_OP_CONST_I32, 4, i);
    OP(KILN_VM_OP_CONST_I32, 5, (uint32_t)element);
    CALL0(KILN_EMIT_IMPORT_VIEW_ASSERT, REGS((uint16_t)i, 4, 5, r_list));
  }
  OP(KILN_VM_OP_GLOBAL_LOAD_REF, r_cb, 0);
  OP(KILN_VM_OP_REF_IS_NULL, 0, r_cb);
  OP(KILN_VM_OP_COND_BR, 0, first_call, ready);
  KILN_RETURN_IF_ERROR(kiln_function_builder_bind_label(m->body, first_call));
  OP(KILN_VM_OP_CONST_I32, 0, 0);
  if (program->weights_size) {
    // One immutable device copy per model, bound read-only by every
    // session's dispatches (kernels declare weight bindings read-only).
    OP(KILN_VM_OP_BUFFER_RODATA, r_bytes, m->weights);
    CALL(KILN_EMIT_IMPORT_CONSTANT, REGS(r_device, r_bytes), REGS(r_weights));
  } else {
    OP(KILN_VM_OP_CONST_I64, 2, KILN_EMIT_ALIGNMENT);
    CALL(KILN_EMIT_IMPORT_ALLOCATE, REGS(r_device, 0, 0, 2), REGS(r_weights));
  }
  uint64_t transient = program->plan->peak_bytes;
  if (transient < KILN_EMIT_ALIGNMENT) transient = KILN_EMIT_ALIGNMENT;
  OP(KILN_VM_OP_CONST_I64, 2, transient);
  CALL(KILN_EMIT_IMPORT_ALLOCATE, REGS(r_device, 0, 0, 2), REGS(r_transient));
  OP(KILN_VM_OP_GLOBAL_STORE_REF, 1, r_weights);
  OP(KILN_VM_OP_GLOBAL_STORE_REF, 2, r_transient);
  KILN_RETURN_IF_ERROR(kiln_function_builder_call(
      m->body, KILN_VM_OP_CALL, m->record, (const uint16_t[]){r_device, r_weights, r_transient},
      3, &r_cb, 1));
  OP(KILN_VM_OP_GLOBAL_STORE_REF, 0, r_cb);
  OP(KILN_VM_OP_BR, ready);
  KILN_RETURN_IF_ERROR(kiln_function_builder_bind_label(m->body, ready));
  OP(KILN_VM_OP_CONST_I32, 6, inputs + outputs);
  OP(KILN_VM_OP_LIST_ALLOC, r_table, KILN_VM_LIST_REF, 6);
  OP(KILN_VM_OP_LIST_RESIZE, r_table, 6);
  for (size_t i = 0; i < inputs; ++i) {
    OP(KILN_VM_OP_CONST_I32, 6, i);
    OP(KILN_VM_OP_LIST_SET_REF, r_table, 6, i);
  }
  uint16_t results[KILN_FORMAT_MAX_SIGNATURE_VALUES];
  for (size_t o = 0; o < outputs; ++o) {
    const kiln_graph_value_t* value = &graph->values[graph->outputs[o]];
    size_t bytes = 0;
    KILN_RETURN_IF_ERROR(kiln_graph_value_byte_size(value, &bytes));
    OP(KILN_VM_OP_CONST_I32, 0, 0);
    OP(KILN_VM_OP_CONST_I64, 2, bytes < 4 ? 4 : bytes);
    const uint16_t buffer = host ? (uint16_t)(regs.out_buffers + o) : r_buffer;
    CALL(KILN_EMIT_IMPORT_ALLOCATE, REGS(r_device, 0, 0, 2), REGS(buffer));
    KILN_RETURN_IF_ERROR(kiln_emit_dims(m, &value->shape, r_list));
    uint16_t r = (uint16_t)(r_out + o);
    OP(KILN_VM_OP_CONST_I64, 4, 0);
    kiln_hal_element_type_t element = value->dtype == KILN_GRAPH_DTYPE_I64
                                          ? KILN_HAL_ELEMENT_I64
                                      : value->dtype == KILN_GRAPH_DTYPE_F16
                                          ? KILN_HAL_ELEMENT_F16
                                      : value->dtype == KILN_GRAPH_DTYPE_BOOL
                                          ? KILN_HAL_ELEMENT_BOOL
                                          : KILN_HAL_ELEMENT_F32;
    OP(KILN_VM_OP_CONST_I32, 6, (uint32_t)element);
    CALL(KILN_EMIT_IMPORT_VIEW_CREATE, REGS(buffer, 4, 6, r_list), REGS(r));
    OP(KILN_VM_OP_CONST_I32, 6, inputs + o);
    OP(KILN_VM_OP_LIST_SET_REF, r_table, 6, r);
    results[o] = r;
  }
  // Each GPU segment is one submission (waited for), then its host op.
  for (size_t s = 0; s <= program->host_op_count; ++s) {
    size_t begin = 0, end = 0;
    kiln_emit_segment(program, s, &begin, &end);
    if (begin < end) {
      if (s > 0) OP(KILN_VM_OP_GLOBAL_LOAD_REF, r_cb, kiln_emit_segment_global(s));
      CALL0(KILN_EMIT_IMPORT_SUBMIT, REGS(r_device, r_cb, r_table));
    }
    if (s == program->host_op_count) break;
    const kiln_emit_host_op_t* h = &program->host_ops[s];
    KILN_RETURN_IF_ERROR(kiln_emit_host_call(m, &regs, h));
    if (h->count_output >= 0) results[h->count_output] = regs.dynamic_views + h->count_output;
  }
  uint64_t returned[KILN_FORMAT_MAX_SIGNATURE_VALUES];
  for (size_t o = 0; o < outputs; ++o) returned[o] = results[o];
  KILN_RETURN_IF_ERROR(kiln_function_builder_op(m->body, KILN_VM_OP_RETURN, returned, outputs));
  return kiln_function_builder_end(m->body, host ? KILN_EMIT_HOST_INTS : 16,
                                   (uint32_t)(host ? regs.dynamic_views + outputs
                                                   : r_out + outputs));
}

#undef OP

// "rr_r": one ref per input ("v" when none), one per output.
static kiln_status_t kiln_emit_predict_signature(const kiln_graph_t* graph, char* text,
                                                 size_t capacity) {
  size_t inputs = graph->input_count, outputs = graph->output_count;
  if (inputs > KILN_FORMAT_MAX_SIGNATURE_VALUES || outputs > KILN_FORMAT_MAX_SIGNATURE_VALUES ||
      inputs + outputs + 3 > capacity) {
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                            "'%s': %zu inputs and %zu outputs exceed the %d values a "
                            "function signature holds",
                            graph->source, inputs, outputs, KILN_FORMAT_MAX_SIGNATURE_VALUES);
  }
  size_t n = 0;
  for (size_t i = 0; i < inputs; ++i) text[n++] = 'r';
  if (inputs == 0) text[n++] = 'v';
  text[n++] = '_';
  for (size_t o = 0; o < outputs; ++o) text[n++] = 'r';
  text[n] = 0;
  return kiln_ok_status();
}

static kiln_status_t kiln_emit_module_build(kiln_emit_module_t* m, const char* function_name) {
  const kiln_emit_program_t* program = m->program;
  KILN_RETURN_IF_ERROR(kiln_module_writer_set_name(m->writer, kiln_make_cstring_view("model")));
  const uint32_t imports =
      program->host_op_count ? KILN_EMIT_IMPORT_COUNT : KILN_EMIT_IMPORT_FIRST_HOST;
  for (uint32_t i = 0; i < imports; ++i) {
    uint32_t ordinal = 0;
    KILN_RETURN_IF_ERROR(kiln_module_writer_add_import(
        m->writer, kiln_make_cstring_view(kImports[i].name),
        kiln_make_cstring_view(kImports[i].signature), 0, &ordinal));
  }
  KILN_RETURN_IF_ERROR(kiln_module_writer_set_globals(
      m->writer, 0, (uint32_t)(3 + program->host_op_count)));
  KILN_RETURN_IF_ERROR(kiln_emit_rodata(m));
  for (size_t e = 0; e < program->executable_count; ++e) {
    KILN_RETURN_IF_ERROR(kiln_emit_executable(m, &program->executables[e]));
  }
  char signature[2 * KILN_FORMAT_MAX_SIGNATURE_VALUES + 3];
  KILN_RETURN_IF_ERROR(kiln_emit_predict_signature(program->graph, signature, sizeof(signature)));
  uint32_t predict = 0;
  KILN_RETURN_IF_ERROR(kiln_module_writer_declare_function(
      m->writer, kiln_make_cstring_view("record"), kiln_make_cstring_view("rrr_r"), &m->record));
  KILN_RETURN_IF_ERROR(kiln_module_writer_declare_function(
      m->writer, kiln_make_cstring_view(function_name), kiln_make_cstring_view(signature),
      &predict));
  KILN_RETURN_IF_ERROR(
      kiln_module_writer_add_export(m->writer, kiln_make_cstring_view(function_name), predict));
  KILN_RETURN_IF_ERROR(kiln_emit_record(m));
  return kiln_emit_predict(m, predict);
}

kiln_status_t kiln_emit_write_module(const kiln_emit_program_t* program,
                                     const char* function_name, kiln_byte_buffer_t* out,
                                     kiln_module_writer_sink_fn_t sink, void* sink_user) {
  kiln_emit_module_t m;
  memset(&m, 0, sizeof(m));
  m.program = program;
  kiln_status_t status = kiln_module_writer_create(program->allocator, &m.writer);
  if (!status) status = kiln_function_builder_create(m.writer, program->allocator, &m.body);
  if (!status) status = kiln_executable_builder_create(program->allocator, &m.exe);
  if (!status) status = kiln_emit_module_build(&m, function_name);
  uint64_t size = 0;
  if (!status && sink) status = kiln_module_writer_finish_streamed(m.writer, sink, sink_user, &size);
  if (!status && !sink) status = kiln_module_writer_finish(m.writer, out);
  kiln_executable_builder_destroy(m.exe);
  kiln_function_builder_destroy(m.body);
  kiln_module_writer_destroy(m.writer);
  return status;
}
