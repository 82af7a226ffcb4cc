// Executables: description checks, variant selection and the deep copy of
// the chosen variant's entry points that every driver keeps.
#include "kiln/hal/executable.h"

#include <string.h>

#include "kiln/base/size_math.h"
#include "kiln/hal/driver_api.h"
#include "hal_internal.h"

#define EXE_VTABLE(e) ((const kiln_hal_executable_vtable_t*)(e)->resource.vtable)

enum { kSpirvMagic = 0x07230203, kMaxEntryPoints = 1024, kMaxNameLength = 256 };

static kiln_status_t verify_entry_point(const kiln_hal_executable_spec_t* spec,
                                        uint32_t variant_index,
                                        uint32_t entry_index) {
  const kiln_hal_executable_variant_spec_t* variant =
      &spec->variants[variant_index];
  const kiln_hal_entry_point_spec_t* entry = &variant->entry_points[entry_index];
  const char* exe_name = spec->name ? spec->name : "?";
  if (!entry->name || !entry->name[0] ||
      strnlen(entry->name, kMaxNameLength) == kMaxNameLength) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "executable '%s' variant %u entry point %u: name "
                            "is empty or longer than %d",
                            exe_name, variant_index, entry_index,
                            kMaxNameLength - 1);
  }
  for (uint32_t j = 0; j < entry_index; ++j) {
    if (strcmp(variant->entry_points[j].name, entry->name) == 0) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "executable '%s' variant %u: entry point '%s' "
                              "appears twice",
                              exe_name, variant_index, entry->name);
    }
  }
  if (entry->push_constant_bytes % 4 ||
      entry->push_constant_bytes > KILN_HAL_MAX_PUSH_CONSTANT_BYTES) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "executable '%s' entry point '%s': push-constant "
                            "size %u is not a multiple of 4 up to %d",
                            exe_name, entry->name, entry->push_constant_bytes,
                            KILN_HAL_MAX_PUSH_CONSTANT_BYTES);
  }
  if (entry->binding_count > KILN_HAL_MAX_BINDINGS_PER_DISPATCH ||
      (entry->binding_count && !entry->bindings)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "executable '%s' entry point '%s': %u bindings "
                            "(max %d)",
                            exe_name, entry->name, entry->binding_count,
                            KILN_HAL_MAX_BINDINGS_PER_DISPATCH);
  }
  for (uint32_t b = 0; b < entry->binding_count; ++b) {
    const kiln_hal_binding_layout_t* layout = &entry->bindings[b];
    if (layout->set >= KILN_HAL_MAX_DESCRIPTOR_SETS || layout->binding > 1023) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "executable '%s' entry point '%s': binding %u "
                              "(set %u, binding %u) out of range",
                              exe_name, entry->name, b, layout->set,
                              layout->binding);
    }
    if (layout->type != KILN_HAL_BINDING_STORAGE_BUFFER &&
        (layout->type != KILN_HAL_BINDING_UNIFORM_TEXEL_BUFFER_VEC4F32 ||
         !layout->read_only)) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "executable '%s' entry point '%s': binding %u "
                              "(set %u, binding %u) has type %d%s",
                              exe_name, entry->name, b, layout->set,
                              layout->binding, (int)layout->type,
                              layout->type == KILN_HAL_BINDING_UNIFORM_TEXEL_BUFFER_VEC4F32
                                  ? " but is not read-only"
                                  : " (unknown)");
    }
    for (uint32_t c = 0; c < b; ++c) {
      if (entry->bindings[c].set == layout->set &&
          entry->bindings[c].binding == layout->binding) {
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "executable '%s' entry point '%s': set %u "
                                "binding %u declared twice",
                                exe_name, entry->name, layout->set,
                                layout->binding);
      }
    }
  }
  uint64_t invocations = 1;
  for (int axis = 0; axis < 3; ++axis) {
    if (entry->workgroup_size[axis] == 0 ||
        !kiln_u64_mul(invocations, entry->workgroup_size[axis], &invocations)) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "executable '%s' entry point '%s': workgroup "
                              "size %ux%ux%u is invalid",
                              exe_name, entry->name, entry->workgroup_size[0],
                              entry->workgroup_size[1],
                              entry->workgroup_size[2]);
    }
  }
  return kiln_ok_status();
}

kiln_status_t kiln_hal_executable_spec_verify(
    const kiln_hal_executable_spec_t* spec) {
  const char* exe_name = spec->name ? spec->name : "?";
  if (spec->variant_count == 0 || !spec->variants) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "executable '%s' has no variants", exe_name);
  }
  for (uint32_t v = 0; v < spec->variant_count; ++v) {
    const kiln_hal_executable_variant_spec_t* variant = &spec->variants[v];
    if (!variant->selector) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "executable '%s' variant %u has no selector",
                              exe_name, v);
    }
    kiln_target_triple_t triple;
    KILN_RETURN_IF_ERROR_ANNOTATE(
        kiln_target_triple_parse(kiln_make_cstring_view(variant->selector),
                                 &triple),
        "executable '%s' variant %u", exe_name, v);
    if (!variant->spirv_words || variant->spirv_word_count < 5 ||
        variant->spirv_words[0] != kSpirvMagic) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "executable '%s' variant %u ('%s'): SPIR-V is "
                              "missing or lacks the magic number",
                              exe_name, v, variant->selector);
    }
    if (variant->entry_point_count == 0 || !variant->entry_points ||
        variant->entry_point_count > kMaxEntryPoints) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "executable '%s' variant %u: %u entry points "
                              "(1..%d)",
                              exe_name, v, variant->entry_point_count,
                              kMaxEntryPoints);
    }
    if (variant->specialization_constant_count &&
        !variant->specialization_constants) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "executable '%s' variant %u: specialization "
                              "constants missing",
                              exe_name, v);
    }
    for (uint32_t i = 0; i < variant->specialization_constant_count; ++i) {
      for (uint32_t j = 0; j < i; ++j) {
        if (variant->specialization_constants[i].id ==
            variant->specialization_constants[j].id) {
          return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                  "executable '%s' variant %u: "
                                  "specialization constant %u set twice",
                                  exe_name, v,
                                  variant->specialization_constants[i].id);
        }
      }
    }
    for (uint32_t e = 0; e < variant->entry_point_count; ++e) {
      KILN_RETURN_IF_ERROR(verify_entry_point(spec, v, e));
      if (!kiln_hal_spirv_has_compute_entry_point(
              variant->spirv_words, variant->spirv_word_count,
              variant->entry_points[e].name)) {
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "executable '%s' variant %u: the SPIR-V has "
                                "no compute entry point '%s'",
                                exe_name, v, variant->entry_points[e].name);
      }
    }
  }
  return kiln_ok_status();
}

kiln_status_t kiln_hal_executable_select_variant(
    const kiln_hal_device_t* device, const kiln_hal_executable_spec_t* spec,
    uint32_t* out_variant_index, kiln_target_match_t* out_match) {
  *out_variant_index = 0;
  if (out_match) *out_match = KILN_TARGET_MATCH_NONE;
  enum { kMaxVariants = 64 };
  if (spec->variant_count > kMaxVariants) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "executable '%s' has %u variants (max %d)",
                            spec->name ? spec->name : "?", spec->variant_count,
                            kMaxVariants);
  }
  kiln_target_variant_desc_t descs[kMaxVariants];
  for (uint32_t v = 0; v < spec->variant_count; ++v) {
    descs[v].selector = spec->variants[v].selector;
    descs[v].required_features = spec->variants[v].required_features;
    descs[v].min_limits = spec->variants[v].min_limits;
  }
  const kiln_hal_device_info_t* info = &device->info;
  kiln_target_device_caps_t caps = {
      .triple = info->triple,
      .features = info->features,
      .limits = info->limits,
      .min_subgroup_size = info->min_subgroup_size,
      .max_subgroup_size = info->max_subgroup_size,
  };
  size_t index = 0;
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_target_variant_select(descs, spec->variant_count, &caps, &index,
                                 out_match),
      "executable '%s' on device '%s'", spec->name ? spec->name : "?",
      info->name);
  *out_variant_index = (uint32_t)index;
  return kiln_ok_status();
}

kiln_status_t kiln_hal_executable_create(
    kiln_hal_device_t* device, const kiln_hal_executable_spec_t* spec,
    kiln_hal_executable_t** out_executable) {
  *out_executable = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_executable_spec_verify(spec));
  uint32_t variant_index = 0;
  kiln_target_match_t match = KILN_TARGET_MATCH_NONE;
  KILN_RETURN_IF_ERROR(
      kiln_hal_executable_select_variant(device, spec, &variant_index, &match));
  // Entry points the device cannot run are refused before the driver sees
  // them, naming the limit.
  const kiln_hal_executable_variant_spec_t* variant =
      &spec->variants[variant_index];
  const kiln_hal_device_info_t* info = &device->info;
  for (uint32_t e = 0; e < variant->entry_point_count; ++e) {
    const kiln_hal_entry_point_spec_t* entry = &variant->entry_points[e];
    uint64_t invocations = (uint64_t)entry->workgroup_size[0] *
                           entry->workgroup_size[1] * entry->workgroup_size[2];
    if (invocations > info->limits.max_workgroup_invocations ||
        entry->workgroup_size[0] > info->max_workgroup_size[0] ||
        entry->workgroup_size[1] > info->max_workgroup_size[1] ||
        entry->workgroup_size[2] > info->max_workgroup_size[2]) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                              "executable '%s' entry point '%s': workgroup "
                              "%ux%ux%u exceeds device '%s' limits",
                              spec->name ? spec->name : "?", entry->name,
                              entry->workgroup_size[0],
                              entry->workgroup_size[1],
                              entry->workgroup_size[2], info->name);
    }
    if (entry->push_constant_bytes > info->limits.max_push_constant_bytes) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                              "executable '%s' entry point '%s': %u "
                              "push-constant bytes, device has %u",
                              spec->name ? spec->name : "?", entry->name,
                              entry->push_constant_bytes,
                              info->limits.max_push_constant_bytes);
    }
  }
  // Only the chosen variant reaches the driver, so only it is checked.
  KILN_RETURN_IF_ERROR(
      kiln_hal_executable_check_variant(info, spec, variant_index,
                                        device->allocator));
  // The driver sees a copy of the variants whose chosen one carries the
  // robust-access SPIR-V (indices clamped, shared memory included).
  enum { kMaxVariants = 64 };  // select_variant refused more
  kiln_hal_executable_variant_spec_t variants[kMaxVariants];
  memcpy(variants, spec->variants, spec->variant_count * sizeof(variants[0]));
  uint32_t* robust_words = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_spirv_make_robust(
      info, spec->name ? spec->name : "?", variant_index, device->allocator,
      variant->spirv_words, variant->spirv_word_count, &robust_words,
      &variants[variant_index].spirv_word_count));
  variants[variant_index].spirv_words = robust_words;
  kiln_hal_executable_spec_t robust_spec = *spec;
  robust_spec.variants = variants;
  const kiln_hal_device_vtable_t* vtable = device->resource.vtable;
  kiln_status_t status = vtable->executable_create(
      device, &robust_spec, variant_index, match, out_executable);
  kiln_allocator_free(device->allocator, robust_words);
  KILN_RETURN_IF_ERROR_ANNOTATE(status, "executable '%s' variant %u ('%s')",
                                spec->name ? spec->name : "?", variant_index,
                                variant->selector);
  return kiln_ok_status();
}

kiln_status_t kiln_hal_executable_check_variant(
    const kiln_hal_device_info_t* info, const kiln_hal_executable_spec_t* spec,
    uint32_t variant_index, kiln_allocator_t allocator) {
  const kiln_hal_executable_variant_spec_t* variant =
      &spec->variants[variant_index];
  const char* name = spec->name ? spec->name : "?";
  KILN_RETURN_IF_ERROR(kiln_hal_spirv_validate(
      info, name, variant_index, variant->spirv_words,
      variant->spirv_word_count));
  uint64_t shared_bytes = 0;
  KILN_RETURN_IF_ERROR(kiln_hal_spirv_check_interface(
      spec, variant_index, allocator, &shared_bytes));
  if (shared_bytes > info->limits.max_shared_memory_bytes) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "executable '%s' variant %u ('%s'): %llu bytes "
                            "of workgroup memory after specialization, "
                            "device '%s' has %u",
                            name, variant_index, variant->selector,
                            (unsigned long long)shared_bytes, info->name,
                            info->limits.max_shared_memory_bytes);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_hal_executable_base_init(
    kiln_hal_executable_t* base, const void* vtable, kiln_hal_device_t* device,
    const kiln_hal_executable_spec_t* spec, uint32_t variant_index,
    kiln_target_match_t match) {
  const kiln_hal_executable_variant_spec_t* variant =
      &spec->variants[variant_index];
  // One block: entry structs, then binding arrays, then names.
  size_t total = variant->entry_point_count * sizeof(kiln_hal_entry_point_spec_t);
  for (uint32_t e = 0; e < variant->entry_point_count; ++e) {
    total += variant->entry_points[e].binding_count *
                 sizeof(kiln_hal_binding_layout_t) +
             strlen(variant->entry_points[e].name) + 1;
  }
  uint8_t* block = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_malloc(device->allocator, total, (void**)&block));
  kiln_hal_entry_point_spec_t* entries = (kiln_hal_entry_point_spec_t*)block;
  uint8_t* cursor =
      block + variant->entry_point_count * sizeof(kiln_hal_entry_point_spec_t);
  for (uint32_t e = 0; e < variant->entry_point_count; ++e) {
    const kiln_hal_entry_point_spec_t* source = &variant->entry_points[e];
    entries[e] = *source;
    size_t binding_bytes =
        source->binding_count * sizeof(kiln_hal_binding_layout_t);
    if (binding_bytes) memcpy(cursor, source->bindings, binding_bytes);
    entries[e].bindings = (const kiln_hal_binding_layout_t*)cursor;
    cursor += binding_bytes;
  }
  for (uint32_t e = 0; e < variant->entry_point_count; ++e) {
    size_t length = strlen(variant->entry_points[e].name) + 1;
    memcpy(cursor, variant->entry_points[e].name, length);
    entries[e].name = (const char*)cursor;
    cursor += length;
  }
  kiln_hal_resource_init(&base->resource, vtable);
  base->device = device;
  base->variant_index = variant_index;
  base->match = match;
  base->entry_point_count = variant->entry_point_count;
  base->entry_points = entries;
  return kiln_ok_status();
}

void kiln_hal_executable_base_deinit(kiln_hal_executable_t* base) {
  kiln_allocator_free(base->device->allocator, base->entry_points);
  base->entry_points = NULL;
}

void kiln_hal_executable_retain(kiln_hal_executable_t* executable) {
  if (executable) kiln_hal_resource_retain(&executable->resource);
}

void kiln_hal_executable_release(kiln_hal_executable_t* executable) {
  if (executable && kiln_hal_resource_release(&executable->resource)) {
    EXE_VTABLE(executable)->destroy(executable);
  }
}

uint32_t kiln_hal_executable_variant_index(
    const kiln_hal_executable_t* executable) {
  return executable->variant_index;
}

kiln_target_match_t kiln_hal_executable_match(
    const kiln_hal_executable_t* executable) {
  return executable->match;
}

uint32_t kiln_hal_executable_entry_point_count(
    const kiln_hal_executable_t* executable) {
  return executable->entry_point_count;
}

const kiln_hal_entry_point_spec_t* kiln_hal_executable_entry_point(
    const kiln_hal_executable_t* executable, uint32_t ordinal) {
  return ordinal < executable->entry_point_count
             ? &executable->entry_points[ordinal]
             : NULL;
}

kiln_status_t kiln_hal_executable_lookup_entry_point(
    const kiln_hal_executable_t* executable, const char* name,
    uint32_t* out_ordinal) {
  *out_ordinal = 0;
  for (uint32_t e = 0; e < executable->entry_point_count; ++e) {
    if (strcmp(executable->entry_points[e].name, name) == 0) {
      *out_ordinal = e;
      return kiln_ok_status();
    }
  }
  return kiln_make_status(KILN_STATUS_NOT_FOUND,
                          "executable has no entry point '%s'", name);
}
