// hal.executable.*: executables come from the executables section of the
// bytecode modules in the context; the device picks the variant. Each is
// built (pipelines created) once per shared cache (so once for all the
// sessions of a model) and cached by name in each context.
#include <string.h>

#include "executable_spec.h"
#include "hal_module_state.h"
#include "kiln/format/module_format.h"
#include "kiln/format/module_reader.h"

static kiln_target_features_t kiln_hal_features_from_format(uint32_t bits) {
  kiln_target_features_t features = 0;
  if (bits & KILN_FORMAT_FEATURE_FP16) features |= KILN_TARGET_FEATURE_FP16;
  if (bits & KILN_FORMAT_FEATURE_INT8_DOT_PRODUCT) {
    features |= KILN_TARGET_FEATURE_INT8_DOT;
  }
  if (bits & KILN_FORMAT_FEATURE_STORAGE_16BIT) {
    features |= KILN_TARGET_FEATURE_STORAGE_16BIT;
  }
  if (bits & KILN_FORMAT_FEATURE_STORAGE_8BIT) {
    features |= KILN_TARGET_FEATURE_STORAGE_8BIT;
  }
  if (bits & KILN_FORMAT_FEATURE_SUBGROUP_OPS) {
    features |= KILN_TARGET_FEATURE_SUBGROUP_OPS;
  }
  if (bits & KILN_FORMAT_FEATURE_COOPERATIVE_MATRIX) {
    features |= KILN_TARGET_FEATURE_COOPERATIVE_MATRIX;
  }
  return features;
}

static kiln_status_t kiln_hal_copy_string(kiln_arena_t* arena,
                                          kiln_string_view_t text,
                                          char** out) {
  return kiln_arena_strndup(arena, text.data, text.size, out);
}

// Converts one format variant. Specialization constants are per entry point
// in the file and per variant in the HAL: they are merged, and two entry
// points giving one id different values is an error.
static kiln_status_t kiln_hal_convert_variant(
    kiln_arena_t* arena, const kiln_format_executable_t* executable,
    uint32_t variant_index, kiln_hal_executable_variant_spec_t* out) {
  const kiln_format_variant_t* variant = &executable->variants[variant_index];
  char* selector = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_copy_string(arena, variant->target, &selector));
  out->selector = selector;
  out->required_features =
      kiln_hal_features_from_format(variant->required_features);
  memset(&out->min_limits, 0, sizeof(out->min_limits));
  out->min_limits.subgroup_size = variant->min_subgroup_size;
  out->min_limits.max_shared_memory_bytes = variant->min_shared_memory_bytes;
  out->min_limits.max_workgroup_invocations =
      variant->min_workgroup_invocations;
  // SPIR-V words may be unaligned in the file: copy them out.
  uint32_t* words = NULL;
  KILN_RETURN_IF_ERROR(kiln_arena_allocate_array(
      arena, variant->spirv_word_count, sizeof(uint32_t), (void**)&words));
  for (uint32_t i = 0; i < variant->spirv_word_count; ++i) {
    words[i] = kiln_format_variant_spirv_word(variant, i);
  }
  out->spirv_words = words;
  out->spirv_word_count = variant->spirv_word_count;

  kiln_hal_entry_point_spec_t* entries = NULL;
  KILN_RETURN_IF_ERROR(kiln_arena_allocate_array(
      arena, variant->entry_point_count, sizeof(*entries), (void**)&entries));
  uint32_t total_specializations = 0;
  for (uint32_t e = 0; e < variant->entry_point_count; ++e) {
    total_specializations += variant->entry_points[e].specialization_count;
  }
  kiln_hal_specialization_constant_t* constants = NULL;
  KILN_RETURN_IF_ERROR(kiln_arena_allocate_array(
      arena, total_specializations, sizeof(*constants), (void**)&constants));
  uint32_t constant_count = 0;
  for (uint32_t e = 0; e < variant->entry_point_count; ++e) {
    const kiln_format_entry_point_t* source = &variant->entry_points[e];
    kiln_hal_entry_point_spec_t* entry = &entries[e];
    char* name = NULL;
    KILN_RETURN_IF_ERROR(kiln_hal_copy_string(arena, source->name, &name));
    entry->name = name;
    memcpy(entry->workgroup_size, source->workgroup_size,
           sizeof(entry->workgroup_size));
    entry->push_constant_bytes = source->push_constant_bytes;
    kiln_hal_binding_layout_t* layouts = NULL;
    KILN_RETURN_IF_ERROR(kiln_arena_allocate_array(
        arena, source->binding_count, sizeof(*layouts), (void**)&layouts));
    for (uint32_t b = 0; b < source->binding_count; ++b) {
      layouts[b].set = source->bindings[b].set;
      layouts[b].binding = source->bindings[b].binding;
      layouts[b].read_only =
          (source->bindings[b].flags & KILN_FORMAT_BINDING_READ_ONLY) != 0;
      layouts[b].type =
          (source->bindings[b].flags & KILN_FORMAT_BINDING_TEXEL_VEC4F32)
              ? KILN_HAL_BINDING_UNIFORM_TEXEL_BUFFER_VEC4F32
              : KILN_HAL_BINDING_STORAGE_BUFFER;
    }
    entry->bindings = layouts;
    entry->binding_count = source->binding_count;
    for (uint32_t s = 0; s < source->specialization_count; ++s) {
      const kiln_format_specialization_t* constant =
          &source->specializations[s];
      bool seen = false;
      for (uint32_t k = 0; k < constant_count; ++k) {
        if (constants[k].id != constant->id) continue;
        seen = true;
        if (constants[k].value != constant->value) {
          return kiln_make_status(
              KILN_STATUS_INVALID_ARGUMENT,
              "executable '%.*s' variant '%s': entry points give "
              "specialization constant %u the values %u and %u",
              KILN_SV_ARG(executable->name), selector, constant->id,
              constants[k].value, constant->value);
        }
      }
      if (!seen) {
        constants[constant_count].id = constant->id;
        constants[constant_count].value = constant->value;
        ++constant_count;
      }
    }
  }
  out->entry_points = entries;
  out->entry_point_count = variant->entry_point_count;
  out->specialization_constants = constants;
  out->specialization_constant_count = constant_count;
  return kiln_ok_status();
}

kiln_status_t kiln_hal_convert_executable(
    const kiln_format_executable_t* executable, kiln_hal_spec_storage_t* out) {
  kiln_hal_executable_variant_spec_t* variants = NULL;
  KILN_RETURN_IF_ERROR(kiln_arena_allocate_array(
      &out->arena, executable->variant_count, sizeof(*variants),
      (void**)&variants));
  for (uint32_t v = 0; v < executable->variant_count; ++v) {
    KILN_RETURN_IF_ERROR(
        kiln_hal_convert_variant(&out->arena, executable, v, &variants[v]));
  }
  char* name = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_hal_copy_string(&out->arena, executable->name, &name));
  out->spec.name = name;
  out->spec.variants = variants;
  out->spec.variant_count = executable->variant_count;
  return kiln_ok_status();
}

// Finds `name` in the executables sections of the context's modules and
// the module holding it.
static const kiln_format_executable_t* kiln_hal_find_executable(
    kiln_vm_context_t* context, kiln_string_view_t name,
    kiln_vm_module_t** out_module) {
  size_t count = kiln_vm_context_module_count(context);
  for (size_t m = count; m-- > 0;) {
    kiln_vm_module_t* module = kiln_vm_context_module_at(context, m);
    const kiln_format_module_t* format = kiln_vm_module_format(module);
    if (!format) continue;  // a native module
    for (uint32_t e = 0; e < format->executables.executable_count; ++e) {
      const kiln_format_executable_t* executable =
          &format->executables.executables[e];
      if (kiln_string_view_equal(executable->name, name)) {
        *out_module = module;
        return executable;
      }
    }
  }
  return NULL;
}

typedef struct kiln_hal_build_request_t {
  kiln_allocator_t allocator;
  const kiln_format_executable_t* source;
} kiln_hal_build_request_t;

// Builds an executable for the shared cache (called once per source).
static kiln_status_t kiln_hal_build_executable(
    void* build_data, kiln_hal_device_t* device,
    kiln_hal_executable_t** out_executable) {
  const kiln_hal_build_request_t* request = build_data;
  kiln_hal_spec_storage_t storage;
  memset(&storage, 0, sizeof(storage));
  kiln_arena_init(&storage.arena, request->allocator, 16 * 1024);
  kiln_status_t status = kiln_hal_convert_executable(request->source, &storage);
  if (kiln_status_is_ok(status)) {
    status = kiln_hal_executable_create(device, &storage.spec, out_executable);
  }
  kiln_arena_deinit(&storage.arena);  // the HAL copied the spec
  return status;
}

// (device, name vm.buffer) -> executable.
static kiln_status_t kiln_hal_export_executable_lookup(
    kiln_vm_context_t* context, void* opaque, const kiln_vm_value_t* args,
    kiln_vm_value_t* results) {
  kiln_hal_module_state_t* state = opaque;
  const char* export_name = "executable.lookup";
  kiln_hal_device_t* device = NULL;
  kiln_vm_buffer_t* name_bytes = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 0, &kiln_hal_device_ref_type,
                                    export_name, (void**)&device));
  KILN_RETURN_IF_ERROR(kiln_hal_arg_bytes(args, 1, export_name, &name_bytes));
  if (device != state->device) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "hal.%s: the device is not this context's device",
                            export_name);
  }
  kiln_string_view_t name = kiln_make_string_view(
      (const char*)name_bytes->data, (size_t)name_bytes->length);
  for (size_t i = 0; i < state->executable_count; ++i) {
    if (kiln_string_view_equal_cstring(name, state->executables[i].name)) {
      kiln_vm_ref_retain(state->executables[i].ref);
      results[0].ref = state->executables[i].ref;
      return kiln_ok_status();
    }
  }
  kiln_vm_module_t* owner = NULL;
  const kiln_format_executable_t* source =
      kiln_hal_find_executable(context, name, &owner);
  if (!source) {
    return kiln_make_status(KILN_STATUS_NOT_FOUND,
                            "hal.%s: no executable named '%.*s' in the "
                            "context's modules",
                            export_name, KILN_SV_ARG(name));
  }
  if (state->executable_count == state->executable_capacity) {
    size_t capacity = state->executable_capacity ? 2 * state->executable_capacity : 8;
    KILN_RETURN_IF_ERROR(kiln_allocator_realloc_array(
        state->allocator, capacity, sizeof(*state->executables),
        (void**)&state->executables));
    state->executable_capacity = capacity;
  }
  kiln_hal_executable_t* executable = NULL;
  kiln_hal_build_request_t request = {state->allocator, source};
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_hal_shared_cache_executable(
          state->options.shared_cache, kiln_vm_module_as_ref(owner), source,
          kiln_hal_build_executable, &request, &executable),
      "in hal.%s", export_name);
  kiln_vm_ref_object_t* ref = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_ref_wrap(
      state->allocator, &kiln_hal_executable_ref_type, executable, &ref));
  char* cached_name = NULL;
  kiln_status_t status =
      kiln_allocator_malloc(state->allocator, name.size + 1, (void**)&cached_name);
  if (!kiln_status_is_ok(status)) {
    kiln_vm_ref_release(ref);
    return status;
  }
  memcpy(cached_name, name.data, name.size);
  cached_name[name.size] = 0;
  state->executables[state->executable_count].name = cached_name;
  state->executables[state->executable_count].ref = ref;
  state->executable_count++;
  kiln_vm_ref_retain(ref);
  results[0].ref = ref;
  return kiln_ok_status();
}

// (executable, name vm.buffer) -> entry point ordinal.
static kiln_status_t kiln_hal_export_executable_entry_point(
    kiln_vm_context_t* context, void* opaque, const kiln_vm_value_t* args,
    kiln_vm_value_t* results) {
  const char* export_name = "executable.entry_point";
  kiln_hal_executable_t* executable = NULL;
  kiln_vm_buffer_t* name_bytes = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 0, &kiln_hal_executable_ref_type,
                                    export_name, (void**)&executable));
  KILN_RETURN_IF_ERROR(kiln_hal_arg_bytes(args, 1, export_name, &name_bytes));
  char name[256];
  if (name_bytes->length >= sizeof(name)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "hal.%s: entry point name of %llu bytes is too "
                            "long",
                            export_name,
                            (unsigned long long)name_bytes->length);
  }
  memcpy(name, name_bytes->data, (size_t)name_bytes->length);
  name[name_bytes->length] = 0;
  uint32_t ordinal = 0;
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_hal_executable_lookup_entry_point(executable, name, &ordinal),
      "in hal.%s", export_name);
  results[0] = kiln_vm_value_i32((int32_t)ordinal);
  return kiln_ok_status();
}

// (executable, entry point, dimension 0..2) -> the workgroup size the chosen
// variant uses, so bytecode can size its dispatch grid for any variant.
static kiln_status_t kiln_hal_export_executable_workgroup_size(
    kiln_vm_context_t* context, void* opaque, const kiln_vm_value_t* args,
    kiln_vm_value_t* results) {
  const char* export_name = "executable.workgroup_size";
  kiln_hal_executable_t* executable = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 0, &kiln_hal_executable_ref_type,
                                    export_name, (void**)&executable));
  uint32_t count = kiln_hal_executable_entry_point_count(executable);
  if (args[1].i32 < 0 || (uint32_t)args[1].i32 >= count || args[2].i32 < 0 ||
      args[2].i32 > 2) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "hal.%s: entry point %d (of %u), dimension %d (of "
                            "3)",
                            export_name, args[1].i32, count, args[2].i32);
  }
  const kiln_hal_entry_point_spec_t* entry =
      kiln_hal_executable_entry_point(executable, (uint32_t)args[1].i32);
  results[0] = kiln_vm_value_i32((int32_t)entry->workgroup_size[args[2].i32]);
  return kiln_ok_status();
}

// (executable) -> the index of the variant the device chose, so bytecode
// can pick per-variant constants (grid sizes) from a table.
static kiln_status_t kiln_hal_export_executable_variant(
    kiln_vm_context_t* context, void* opaque, const kiln_vm_value_t* args,
    kiln_vm_value_t* results) {
  kiln_hal_executable_t* executable = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 0, &kiln_hal_executable_ref_type,
                                    "executable.variant", (void**)&executable));
  results[0] =
      kiln_vm_value_i32((int32_t)kiln_hal_executable_variant_index(executable));
  return kiln_ok_status();
}

const kiln_vm_native_export_t kiln_hal_executable_exports[] = {
    {"executable.variant", "r_i", kiln_hal_export_executable_variant},
    {"executable.workgroup_size", "rii_i",
     kiln_hal_export_executable_workgroup_size},
    {"executable.lookup", "rr_r", kiln_hal_export_executable_lookup},
    {"executable.entry_point", "rr_i", kiln_hal_export_executable_entry_point},
};
const size_t kiln_hal_executable_export_count =
    sizeof(kiln_hal_executable_exports) /
    sizeof(kiln_hal_executable_exports[0]);
