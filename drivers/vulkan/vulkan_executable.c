// Executables: one shader module per variant, and per entry point its
// descriptor set layouts, pipeline layout and compute pipeline (with the
// variant's specialization constants and, where asked, a required subgroup
// size), built through the device's pipeline cache.
#include <string.h>

#include "vulkan_internal.h"

static void destroy_entry_points(kiln_vk_device_t* device,
                                 kiln_vk_executable_t* executable,
                                 uint32_t count) {
  for (uint32_t e = 0; e < count; ++e) {
    kiln_vk_entry_point_t* entry = &executable->entry_points[e];
    if (entry->pipeline) {
      device->vk.vkDestroyPipeline(device->device, entry->pipeline, NULL);
    }
    if (entry->layout) {
      device->vk.vkDestroyPipelineLayout(device->device, entry->layout, NULL);
    }
    for (uint32_t s = 0; s < KILN_HAL_MAX_DESCRIPTOR_SETS; ++s) {
      if (entry->set_layouts[s]) {
        device->vk.vkDestroyDescriptorSetLayout(device->device,
                                                entry->set_layouts[s], NULL);
      }
    }
  }
}

static void executable_destroy(kiln_hal_executable_t* base) {
  kiln_vk_executable_t* executable = (kiln_vk_executable_t*)base;
  kiln_vk_device_t* device = kiln_vk_device_cast(base->device);
  if (executable->entry_points) {
    destroy_entry_points(device, executable, base->entry_point_count);
    kiln_allocator_free(device->base.allocator, executable->entry_points);
  }
  if (executable->shader_module) {
    device->vk.vkDestroyShaderModule(device->device, executable->shader_module,
                                     NULL);
  }
  kiln_hal_executable_base_deinit(base);
  kiln_allocator_free(device->base.allocator, executable);
  kiln_hal_device_release(&device->base);
}

static const kiln_hal_executable_vtable_t kExecutableVtable = {
    .destroy = executable_destroy,
};

static kiln_status_t create_entry_point(
    kiln_vk_device_t* device, kiln_vk_executable_t* executable,
    const char* executable_name, const kiln_hal_executable_variant_spec_t* variant,
    const kiln_hal_entry_point_spec_t* spec, kiln_vk_entry_point_t* entry) {
  const struct VolkDeviceTable* vk = &device->vk;
  // Group bindings by set; push descriptors need them all in one set.
  uint32_t used_sets = 0;
  for (uint32_t b = 0; b < spec->binding_count; ++b) {
    uint32_t set = spec->bindings[b].set;
    entry->set_binding_counts[set]++;
    if (set + 1 > entry->set_count) entry->set_count = set + 1;
  }
  for (uint32_t s = 0; s < entry->set_count; ++s) {
    if (entry->set_binding_counts[s]) used_sets++;
  }
  entry->use_push_descriptors = device->support.push_descriptors &&
                                used_sets == 1 && spec->binding_count > 0;
  for (uint32_t s = 0; s < entry->set_count; ++s) {
    VkDescriptorSetLayoutBinding layout_bindings[KILN_HAL_MAX_BINDINGS_PER_DISPATCH];
    uint32_t count = 0;
    for (uint32_t b = 0; b < spec->binding_count; ++b) {
      if (spec->bindings[b].set != s) continue;
      bool texel = spec->bindings[b].type ==
                   KILN_HAL_BINDING_UNIFORM_TEXEL_BUFFER_VEC4F32;
      if (texel) entry->texel_binding_count++;
      layout_bindings[count++] = (VkDescriptorSetLayoutBinding){
          .binding = spec->bindings[b].binding,
          .descriptorType = texel ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
                                  : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
          .descriptorCount = 1,
          .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
      };
    }
    VkDescriptorSetLayoutCreateInfo layout_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .flags = entry->use_push_descriptors && count
                     ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR
                     : 0,
        .bindingCount = count,
        .pBindings = layout_bindings,
    };
    KILN_RETURN_IF_ERROR(kiln_vk_result_status(
        vk->vkCreateDescriptorSetLayout(device->device, &layout_info, NULL,
                                        &entry->set_layouts[s]),
        "vkCreateDescriptorSetLayout"));
  }
  VkPushConstantRange push_range = {VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                    spec->push_constant_bytes};
  VkPipelineLayoutCreateInfo layout_info = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
      .setLayoutCount = entry->set_count,
      .pSetLayouts = entry->set_layouts,
      .pushConstantRangeCount = spec->push_constant_bytes ? 1 : 0,
      .pPushConstantRanges = &push_range,
  };
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(
      vk->vkCreatePipelineLayout(device->device, &layout_info, NULL,
                                 &entry->layout),
      "vkCreatePipelineLayout"));

  VkSpecializationMapEntry map[64];
  uint32_t spec_count = variant->specialization_constant_count;
  if (spec_count > 64) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%u specialization constants (max 64)", spec_count);
  }
  uint32_t values[64];
  for (uint32_t i = 0; i < spec_count; ++i) {
    map[i] = (VkSpecializationMapEntry){
        variant->specialization_constants[i].id, i * 4, 4};
    values[i] = variant->specialization_constants[i].value;
  }
  VkSpecializationInfo specialization = {
      .mapEntryCount = spec_count,
      .pMapEntries = map,
      .dataSize = spec_count * 4,
      .pData = values,
  };
  VkPipelineShaderStageRequiredSubgroupSizeCreateInfo subgroup_info = {
      .sType =
          VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
      .requiredSubgroupSize = spec->required_subgroup_size,
  };
  const kiln_hal_device_info_t* info = &device->base.info;
  bool require_size = false;
  if (spec->required_subgroup_size &&
      spec->required_subgroup_size != info->limits.subgroup_size) {
    if (!device->support.subgroup_size_control ||
        spec->required_subgroup_size < info->min_subgroup_size ||
        spec->required_subgroup_size > info->max_subgroup_size ||
        (spec->required_subgroup_size & (spec->required_subgroup_size - 1))) {
      return kiln_make_status(KILN_STATUS_UNAVAILABLE,
                              "entry point '%s' needs subgroup size %u; "
                              "device '%s' has %u (controllable %u..%u: %s)",
                              spec->name, spec->required_subgroup_size,
                              info->name, info->limits.subgroup_size,
                              info->min_subgroup_size, info->max_subgroup_size,
                              device->support.subgroup_size_control ? "yes"
                                                                    : "no");
    }
    require_size = true;
  } else if (spec->required_subgroup_size &&
             device->support.subgroup_size_control) {
    require_size = true;  // pin the default so the driver cannot vary it
  }
  VkComputePipelineCreateInfo pipeline_info = {
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .flags = device->support.pipeline_statistics
                   ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR
                   : 0,
      .stage =
          {
              .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
              .pNext = require_size ? &subgroup_info : NULL,
              .stage = VK_SHADER_STAGE_COMPUTE_BIT,
              .module = executable->shader_module,
              .pName = spec->name,
              .pSpecializationInfo = spec_count ? &specialization : NULL,
          },
      .layout = entry->layout,
  };
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_vk_result_status(
          vk->vkCreateComputePipelines(device->device, device->pipeline_cache,
                                       1, &pipeline_info, NULL,
                                       &entry->pipeline),
          "vkCreateComputePipelines"),
      "entry point '%s'", spec->name);
  kiln_vk_pipeline_stats_print(device, entry->pipeline, executable_name,
                               spec->name);
  __atomic_fetch_add(&device->cache_stats.pipelines_created, 1,
                     __ATOMIC_RELAXED);
  return kiln_ok_status();
}

kiln_status_t kiln_vk_executable_create(kiln_hal_device_t* base,
                                        const kiln_hal_executable_spec_t* spec,
                                        uint32_t variant_index,
                                        kiln_target_match_t match,
                                        kiln_hal_executable_t** out) {
  kiln_vk_device_t* device = kiln_vk_device_cast(base);
  const kiln_hal_executable_variant_spec_t* variant =
      &spec->variants[variant_index];
  kiln_vk_executable_t* executable = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc(base->allocator,
                                             sizeof(*executable),
                                             (void**)&executable));
  kiln_status_t status = kiln_hal_executable_base_init(
      &executable->base, &kExecutableVtable, base, spec, variant_index, match);
  if (status) {
    kiln_allocator_free(base->allocator, executable);
    return status;
  }
  kiln_hal_device_retain(base);
  status = kiln_allocator_calloc_array(base->allocator,
                                       variant->entry_point_count,
                                       sizeof(kiln_vk_entry_point_t),
                                       (void**)&executable->entry_points);
  if (!status) {
    VkShaderModuleCreateInfo module_info = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = variant->spirv_word_count * 4,
        .pCode = variant->spirv_words,
    };
    status = kiln_vk_result_status(
        device->vk.vkCreateShaderModule(device->device, &module_info, NULL,
                                        &executable->shader_module),
        "vkCreateShaderModule");
  }
  for (uint32_t e = 0; !status && e < variant->entry_point_count; ++e) {
    status = create_entry_point(device, executable,
                                spec->name ? spec->name : "(unnamed)", variant,
                                &variant->entry_points[e],
                                &executable->entry_points[e]);
  }
  if (status) {
    executable_destroy(&executable->base);
    return status;
  }
  *out = &executable->base;
  return kiln_ok_status();
}
