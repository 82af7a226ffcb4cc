// SPIR-V reflection through the SPIRV-Cross C API. SPIRV-Cross assumes valid
// input, so the module is validated first: untrusted bytes never reach it.
#include <spirv_cross/spirv_cross_c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/spirv.h"
#include "spirv_internal.h"

static void kiln_spirv_copy_name(char* dst, const char* src) {
  snprintf(dst, KILN_SPIRV_MAX_NAME_LENGTH + 1, "%s", src ? src : "");
}

// SPIRV-Cross reports through this callback; the last message is kept in
// the context, so the callback only silences its default stderr print.
static void kiln_spirv_cross_error(void* userdata, const char* error) {
  (void)userdata;
  (void)error;
}

static kiln_status_t kiln_spirv_cross_status(spvc_context context,
                                             const char* kernel_name,
                                             const char* what) {
  const char* message = spvc_context_get_last_error_string(context);
  return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                          "kernel '%s': SPIRV-Cross %s failed: %s",
                          kernel_name, what,
                          (message && message[0]) ? message : "no message");
}

static kiln_status_t kiln_spirv_reflect_entry_points(
    spvc_compiler compiler, const char* kernel_name,
    kiln_spirv_reflection_t* reflection) {
  const spvc_entry_point* entry_points = NULL;
  size_t count = 0;
  if (spvc_compiler_get_entry_points(compiler, &entry_points, &count) !=
      SPVC_SUCCESS) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kernel '%s': cannot list entry points",
                            kernel_name);
  }
  for (size_t i = 0; i < count; ++i) {
    if (entry_points[i].execution_model != SpvExecutionModelGLCompute) continue;
    if (reflection->entry_point_count == KILN_SPIRV_MAX_ENTRY_POINTS) {
      return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                              "kernel '%s': more than %d compute entry points",
                              kernel_name, KILN_SPIRV_MAX_ENTRY_POINTS);
    }
    kiln_spirv_copy_name(reflection->entry_points[reflection->entry_point_count++],
                         entry_points[i].name);
  }
  if (reflection->entry_point_count == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kernel '%s': no GLCompute entry point",
                            kernel_name);
  }
  return kiln_ok_status();
}

static void kiln_spirv_reflect_workgroup(spvc_compiler compiler,
                                         kiln_spirv_reflection_t* reflection) {
  spvc_specialization_constant dims[3];
  memset(dims, 0, sizeof(dims));
  spvc_compiler_get_work_group_size_specialization_constants(
      compiler, &dims[0], &dims[1], &dims[2]);
  for (unsigned i = 0; i < 3; ++i) {
    kiln_spirv_workgroup_dim_t* dim = &reflection->workgroup_size[i];
    if (dims[i].id != 0) {
      spvc_constant constant = spvc_compiler_get_constant_handle(compiler, dims[i].id);
      dim->is_spec_constant = true;
      dim->spec_id = dims[i].constant_id;
      dim->size = constant ? spvc_constant_get_scalar_u32(constant, 0, 0) : 1;
    } else {
      dim->size = spvc_compiler_get_execution_mode_argument_by_index(
          compiler, SpvExecutionModeLocalSize, i);
      if (dim->size == 0) dim->size = 1;
    }
  }
}

static int kiln_spirv_binding_compare(const void* a, const void* b) {
  const kiln_spirv_binding_t* x = (const kiln_spirv_binding_t*)a;
  const kiln_spirv_binding_t* y = (const kiln_spirv_binding_t*)b;
  if (x->set != y->set) return x->set < y->set ? -1 : 1;
  if (x->binding != y->binding) return x->binding < y->binding ? -1 : 1;
  return 0;
}

// NonWritable lands on the variable or (glslang's choice) on each member.
static bool kiln_spirv_is_read_only(spvc_compiler compiler,
                                    const spvc_reflected_resource* resource) {
  if (spvc_compiler_has_decoration(compiler, resource->id,
                                   SpvDecorationNonWritable)) {
    return true;
  }
  spvc_type type = spvc_compiler_get_type_handle(compiler, resource->base_type_id);
  unsigned member_count = spvc_type_get_num_member_types(type);
  if (member_count == 0) return false;
  for (unsigned i = 0; i < member_count; ++i) {
    if (!spvc_compiler_get_member_decoration(compiler, resource->base_type_id,
                                             i, SpvDecorationNonWritable)) {
      return false;
    }
  }
  return true;
}

static kiln_status_t kiln_spirv_reflect_resources(
    spvc_compiler compiler, spvc_context context, const char* kernel_name,
    kiln_spirv_reflection_t* reflection) {
  spvc_resources resources = NULL;
  if (spvc_compiler_create_shader_resources(compiler, &resources) !=
      SPVC_SUCCESS) {
    return kiln_spirv_cross_status(context, kernel_name, "resource listing");
  }
  // Resource kinds the HAL's binding model has no place for.
  static const struct {
    spvc_resource_type type;
    const char* name;
  } kUnsupported[] = {
      {SPVC_RESOURCE_TYPE_UNIFORM_BUFFER, "uniform buffer"},
      {SPVC_RESOURCE_TYPE_STORAGE_IMAGE, "storage image"},
      {SPVC_RESOURCE_TYPE_SEPARATE_IMAGE, "separate image"},
      {SPVC_RESOURCE_TYPE_SEPARATE_SAMPLERS, "sampler"},
      {SPVC_RESOURCE_TYPE_ATOMIC_COUNTER, "atomic counter"},
      {SPVC_RESOURCE_TYPE_ACCELERATION_STRUCTURE, "acceleration structure"},
  };
  for (size_t i = 0; i < sizeof(kUnsupported) / sizeof(kUnsupported[0]); ++i) {
    const spvc_reflected_resource* list = NULL;
    size_t count = 0;
    if (spvc_resources_get_resource_list_for_type(resources, kUnsupported[i].type,
                                                  &list, &count) != SPVC_SUCCESS) {
      return kiln_spirv_cross_status(context, kernel_name, "resource listing");
    }
    if (count != 0) {
      return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                              "kernel '%s': uses a %s ('%s'); only storage "
                              "buffers and push constants are supported",
                              kernel_name, kUnsupported[i].name,
                              list[0].name ? list[0].name : "");
    }
  }

  const spvc_reflected_resource* buffers = NULL;
  size_t buffer_count = 0;
  if (spvc_resources_get_resource_list_for_type(
          resources, SPVC_RESOURCE_TYPE_STORAGE_BUFFER, &buffers,
          &buffer_count) != SPVC_SUCCESS) {
    return kiln_spirv_cross_status(context, kernel_name, "resource listing");
  }
  // Uniform texel buffers: GLSL samplerBuffer, a sampled image of Dim Buffer.
  const spvc_reflected_resource* texels = NULL;
  size_t texel_count = 0;
  if (spvc_resources_get_resource_list_for_type(
          resources, SPVC_RESOURCE_TYPE_SAMPLED_IMAGE, &texels, &texel_count) !=
      SPVC_SUCCESS) {
    return kiln_spirv_cross_status(context, kernel_name, "resource listing");
  }
  for (size_t i = 0; i < texel_count; ++i) {
    spvc_type type = spvc_compiler_get_type_handle(compiler, texels[i].base_type_id);
    if (spvc_type_get_image_dimension(type) != SpvDimBuffer) {
      return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                              "kernel '%s': uses a sampled image ('%s'); only "
                              "storage buffers, texel buffers and push "
                              "constants are supported",
                              kernel_name, texels[i].name ? texels[i].name : "");
    }
  }
  if (buffer_count + texel_count > KILN_SPIRV_MAX_BINDINGS) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "kernel '%s': %zu storage and texel buffers, more "
                            "than %d",
                            kernel_name, buffer_count + texel_count,
                            KILN_SPIRV_MAX_BINDINGS);
  }
  for (size_t i = 0; i < buffer_count; ++i) {
    kiln_spirv_binding_t* binding = &reflection->bindings[i];
    binding->set = spvc_compiler_get_decoration(compiler, buffers[i].id,
                                                SpvDecorationDescriptorSet);
    binding->binding = spvc_compiler_get_decoration(compiler, buffers[i].id,
                                                    SpvDecorationBinding);
    binding->read_only = kiln_spirv_is_read_only(compiler, &buffers[i]);
    // Optimized SPIR-V has no names; then the name stays empty rather than
    // SPIRV-Cross's invented "_123_456".
    const char* name = spvc_compiler_get_name(compiler, buffers[i].id);
    if (!name || !name[0]) name = spvc_compiler_get_name(compiler, buffers[i].base_type_id);
    kiln_spirv_copy_name(binding->name, name);
  }
  for (size_t i = 0; i < texel_count; ++i) {
    kiln_spirv_binding_t* binding = &reflection->bindings[buffer_count + i];
    binding->set = spvc_compiler_get_decoration(compiler, texels[i].id,
                                                SpvDecorationDescriptorSet);
    binding->binding = spvc_compiler_get_decoration(compiler, texels[i].id,
                                                    SpvDecorationBinding);
    binding->read_only = true;
    binding->texel = true;
    const char* name = spvc_compiler_get_name(compiler, texels[i].id);
    kiln_spirv_copy_name(binding->name, name);
  }
  buffer_count += texel_count;
  reflection->binding_count = buffer_count;
  qsort(reflection->bindings, buffer_count, sizeof(reflection->bindings[0]),
        kiln_spirv_binding_compare);
  // Two views of one storage buffer (an output written by element and by
  // quad, storage.glsl) are one binding, read-only only if both are; a
  // binding declared twice where either declaration is a texel buffer is
  // refused.
  size_t kept = 0;
  for (size_t i = 0; i < buffer_count; ++i) {
    kiln_spirv_binding_t* last = kept ? &reflection->bindings[kept - 1] : NULL;
    const kiln_spirv_binding_t* next = &reflection->bindings[i];
    if (last && kiln_spirv_binding_compare(last, next) == 0) {
      if (last->texel || next->texel) {
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "kernel '%s': set %u binding %u is declared twice, once "
                                "as a texel buffer",
                                kernel_name, next->set, next->binding);
      }
      last->read_only = last->read_only && next->read_only;
      continue;
    }
    reflection->bindings[kept++] = *next;
  }
  reflection->binding_count = kept;

  const spvc_reflected_resource* push = NULL;
  size_t push_count = 0;
  if (spvc_resources_get_resource_list_for_type(
          resources, SPVC_RESOURCE_TYPE_PUSH_CONSTANT, &push, &push_count) !=
      SPVC_SUCCESS) {
    return kiln_spirv_cross_status(context, kernel_name, "resource listing");
  }
  if (push_count > 1) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kernel '%s': %zu push-constant blocks", kernel_name,
                            push_count);
  }
  if (push_count == 1) {
    size_t size = 0;
    spvc_type type = spvc_compiler_get_type_handle(compiler, push[0].base_type_id);
    if (spvc_compiler_get_declared_struct_size(compiler, type, &size) !=
        SPVC_SUCCESS) {
      return kiln_spirv_cross_status(context, kernel_name, "push-constant size");
    }
    reflection->push_constant_size = (uint32_t)size;
  }
  return kiln_ok_status();
}

static int kiln_spirv_spec_compare(const void* a, const void* b) {
  const kiln_spirv_spec_constant_t* x = (const kiln_spirv_spec_constant_t*)a;
  const kiln_spirv_spec_constant_t* y = (const kiln_spirv_spec_constant_t*)b;
  return x->id < y->id ? -1 : (x->id > y->id ? 1 : 0);
}

static kiln_status_t kiln_spirv_reflect_spec_constants(
    spvc_compiler compiler, const char* kernel_name,
    kiln_spirv_reflection_t* reflection) {
  const spvc_specialization_constant* constants = NULL;
  size_t count = 0;
  if (spvc_compiler_get_specialization_constants(compiler, &constants, &count) !=
      SPVC_SUCCESS) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kernel '%s': cannot list specialization constants",
                            kernel_name);
  }
  if (count > KILN_SPIRV_MAX_SPEC_CONSTANTS) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "kernel '%s': %zu specialization constants, more "
                            "than %d",
                            kernel_name, count, KILN_SPIRV_MAX_SPEC_CONSTANTS);
  }
  for (size_t i = 0; i < count; ++i) {
    kiln_spirv_spec_constant_t* out = &reflection->spec_constants[i];
    spvc_constant constant =
        spvc_compiler_get_constant_handle(compiler, constants[i].id);
    spvc_type type = spvc_compiler_get_type_handle(
        compiler, spvc_constant_get_type(constant));
    switch (spvc_type_get_basetype(type)) {
      case SPVC_BASETYPE_BOOLEAN: out->type = KILN_SPIRV_SCALAR_BOOL; break;
      case SPVC_BASETYPE_INT32: out->type = KILN_SPIRV_SCALAR_INT32; break;
      case SPVC_BASETYPE_UINT32: out->type = KILN_SPIRV_SCALAR_UINT32; break;
      case SPVC_BASETYPE_FP32: out->type = KILN_SPIRV_SCALAR_FLOAT32; break;
      default:
        return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                                "kernel '%s': specialization constant %u is not "
                                "a 32-bit scalar or bool",
                                kernel_name, constants[i].constant_id);
    }
    out->id = constants[i].constant_id;
    out->default_bits = spvc_constant_get_scalar_u32(constant, 0, 0);
    kiln_spirv_copy_name(out->name,
                         spvc_compiler_get_name(compiler, constants[i].id));
  }
  reflection->spec_constant_count = count;
  qsort(reflection->spec_constants, count, sizeof(reflection->spec_constants[0]),
        kiln_spirv_spec_compare);
  return kiln_ok_status();
}

kiln_status_t kiln_spirv_reflect(const char* kernel_name,
                                 const uint32_t* words, size_t word_count,
                                 kiln_spirv_reflection_t* out_reflection) {
  if (!out_reflection) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_spirv_reflect: out_reflection is NULL");
  }
  memset(out_reflection, 0, sizeof(*out_reflection));
  if (!kernel_name) kernel_name = "<unnamed>";
  // Vulkan 1.3 rules accept every SPIR-V version up to 1.6.
  KILN_RETURN_IF_ERROR(kiln_spirv_validate(kernel_name, words, word_count,
                                           KILN_SPIRV_TARGET_VULKAN_1_3));

  spvc_context context = NULL;
  if (spvc_context_create(&context) != SPVC_SUCCESS) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "kernel '%s': spvc_context_create failed",
                            kernel_name);
  }
  spvc_context_set_error_callback(context, kiln_spirv_cross_error, NULL);
  kiln_status_t status = kiln_ok_status();
  spvc_parsed_ir ir = NULL;
  spvc_compiler compiler = NULL;
  // SPIRV-Cross does not know SPV_NV_cooperative_matrix: it reads the
  // module's interface from a copy without it.
  uint32_t* stripped = NULL;
  size_t stripped_count = 0;
  if (kiln_spirv_uses_nv_cooperative_matrix(words, word_count)) {
    status = kiln_spirv_strip_cooperative_matrix(kernel_name, words, word_count, &stripped,
                                                 &stripped_count);
    words = stripped;
    word_count = stripped_count;
  }
  if (!kiln_status_is_ok(status)) {
    // reported below
  } else if (spvc_context_parse_spirv(context, words, word_count, &ir) != SPVC_SUCCESS) {
    status = kiln_spirv_cross_status(context, kernel_name, "parse");
  } else if (spvc_context_create_compiler(context, SPVC_BACKEND_NONE, ir,
                                          SPVC_CAPTURE_MODE_TAKE_OWNERSHIP,
                                          &compiler) != SPVC_SUCCESS) {
    status = kiln_spirv_cross_status(context, kernel_name, "compiler creation");
  }
  kiln_spirv_reflection_t reflection;
  memset(&reflection, 0, sizeof(reflection));
  if (kiln_status_is_ok(status)) {
    status = kiln_spirv_reflect_entry_points(compiler, kernel_name, &reflection);
  }
  if (kiln_status_is_ok(status)) {
    kiln_spirv_reflect_workgroup(compiler, &reflection);
    status = kiln_spirv_reflect_resources(compiler, context, kernel_name,
                                          &reflection);
  }
  if (kiln_status_is_ok(status)) {
    status = kiln_spirv_reflect_spec_constants(compiler, kernel_name, &reflection);
  }
  spvc_context_destroy(context);
  free(stripped);
  if (kiln_status_is_ok(status)) *out_reflection = reflection;
  return status;
}

kiln_status_t kiln_spirv_reflection_find_spec_constant(
    const kiln_spirv_reflection_t* reflection, uint32_t id,
    const kiln_spirv_spec_constant_t** out_constant) {
  if (out_constant) *out_constant = NULL;
  if (!reflection || !out_constant) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "find_spec_constant: NULL argument");
  }
  for (size_t i = 0; i < reflection->spec_constant_count; ++i) {
    if (reflection->spec_constants[i].id == id) {
      *out_constant = &reflection->spec_constants[i];
      return kiln_ok_status();
    }
  }
  return kiln_make_status(KILN_STATUS_NOT_FOUND,
                          "no specialization constant with id %u", id);
}

kiln_status_t kiln_spirv_reflection_specialize(
    const kiln_spirv_reflection_t* reflection, const uint32_t* spec_ids,
    const uint32_t* spec_values, size_t spec_count, uint32_t out_workgroup_size[3]) {
  if (out_workgroup_size) memset(out_workgroup_size, 0, 3 * sizeof(uint32_t));
  if (!reflection || !out_workgroup_size || (spec_count && (!spec_ids || !spec_values))) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "specialize: NULL argument");
  }
  for (size_t i = 0; i < spec_count; ++i) {
    const kiln_spirv_spec_constant_t* constant = NULL;
    kiln_status_t status =
        kiln_spirv_reflection_find_spec_constant(reflection, spec_ids[i], &constant);
    if (status) {
      return kiln_status_annotate(status, "specialization value %zu names no constant", i);
    }
    if (constant->type == KILN_SPIRV_SCALAR_BOOL && spec_values[i] > 1) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "specialization constant %u is a bool; value %u", spec_ids[i],
                              spec_values[i]);
    }
  }
  uint32_t size[3];
  for (int d = 0; d < 3; ++d) {
    const kiln_spirv_workgroup_dim_t* dim = &reflection->workgroup_size[d];
    size[d] = dim->size;
    if (!dim->is_spec_constant) continue;
    for (size_t i = 0; i < spec_count; ++i) {
      if (spec_ids[i] == dim->spec_id) size[d] = spec_values[i];  // last one wins
    }
    if (size[d] == 0) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "workgroup dimension %d (spec id %u) specialized to 0", d,
                              dim->spec_id);
    }
  }
  memcpy(out_workgroup_size, size, sizeof(size));
  return kiln_ok_status();
}
