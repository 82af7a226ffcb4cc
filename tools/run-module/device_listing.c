// Device and driver listings for kiln-run-module.
#include "device_listing.h"

#include <string.h>

#include "kiln/base/allocator.h"

void kiln_run_list_drivers(const kiln_hal_driver_registry_t* registry,
                           FILE* out) {
  if (registry->count == 0) {
    fprintf(out, "(no drivers are linked into this build)\n");
  }
  for (size_t i = 0; i < registry->count; ++i) {
    const kiln_hal_driver_factory_t* factory = registry->factories[i];
    kiln_status_t status = factory->query_available(factory->self);
    if (!status) {
      fprintf(out, "%-8s %s: available\n", factory->name, factory->description);
    } else {
      fprintf(out, "%-8s %s: unavailable: %s\n", factory->name,
              factory->description, kiln_status_message(status));
      kiln_status_free(status);
    }
  }
}

kiln_status_t kiln_run_list_devices(const kiln_hal_driver_registry_t* registry,
                                    FILE* out) {
  kiln_allocator_t allocator = kiln_allocator_system();
  size_t listed = 0;
  for (size_t i = 0; i < registry->count; ++i) {
    const kiln_hal_driver_factory_t* factory = registry->factories[i];
    kiln_status_t status = factory->query_available(factory->self);
    if (status) {
      fprintf(out, "# %s: unavailable: %s\n", factory->name,
              kiln_status_message(status));
      kiln_status_free(status);
      continue;
    }
    kiln_hal_device_entry_t* entries = NULL;
    size_t count = 0;
    KILN_RETURN_IF_ERROR_ANNOTATE(
        factory->enumerate_devices(factory->self, allocator, &entries, &count),
        "listing %s devices", factory->name);
    for (size_t d = 0; d < count; ++d) {
      fprintf(out, "%s://%s  %s  %s\n", factory->name, entries[d].path,
              entries[d].name, entries[d].triple);
    }
    listed += count;
    kiln_allocator_free(allocator, entries);
  }
  if (listed == 0) fprintf(out, "# no devices found\n");
  return kiln_ok_status();
}

static void print_bytes(FILE* out, const char* label, uint64_t bytes) {
  if (bytes >= (1ull << 30)) {
    fprintf(out, "  %-34s %.1f GiB\n", label, bytes / (double)(1ull << 30));
  } else if (bytes >= (1ull << 20)) {
    fprintf(out, "  %-34s %.1f MiB\n", label, bytes / (double)(1ull << 20));
  } else {
    fprintf(out, "  %-34s %llu B\n", label, (unsigned long long)bytes);
  }
}

void kiln_run_dump_device_info(const kiln_hal_device_info_t* info, FILE* out) {
  char triple[KILN_TARGET_TRIPLE_TEXT_CAPACITY];
  kiln_target_triple_format(&info->triple, triple, sizeof(triple));
  char features[512];
  kiln_target_features_format(info->features, features, sizeof(features));
  fprintf(out, "%s://%s\n", info->driver, info->path);
  fprintf(out, "  %-34s %s\n", "name", info->name);
  fprintf(out, "  %-34s %s (%s), id %u, version 0x%x\n", "driver",
          info->driver_name, info->driver_info, info->driver_id,
          info->driver_version);
  fprintf(out, "  %-34s 0x%04x / 0x%04x\n", "vendor / device id",
          info->vendor_id, info->device_id);
  fprintf(out, "  %-34s %s\n", "uuid", info->uuid_text);
  fprintf(out, "  %-34s %u.%u.%u\n", "vulkan api", info->api_major,
          info->api_minor, info->api_patch);
  fprintf(out, "  %-34s %s\n", "target triple", triple);
  fprintf(out, "  %-34s %s\n", "  because", info->triple_reason);
  fprintf(out, "  %-34s %s\n", "features", features);
  if (info->driver_mechanisms[0]) {
    fprintf(out, "  %-34s %s\n", "driver uses", info->driver_mechanisms);
  }
  fprintf(out, "  %-34s %u (controllable %u..%u)\n", "subgroup size",
          info->limits.subgroup_size, info->min_subgroup_size,
          info->max_subgroup_size);
  fprintf(out, "  %-34s %u\n", "max workgroup invocations",
          info->limits.max_workgroup_invocations);
  fprintf(out, "  %-34s %u x %u x %u\n", "max workgroup size",
          info->max_workgroup_size[0], info->max_workgroup_size[1],
          info->max_workgroup_size[2]);
  fprintf(out, "  %-34s %u x %u x %u\n", "max workgroup count",
          info->max_workgroup_count[0], info->max_workgroup_count[1],
          info->max_workgroup_count[2]);
  print_bytes(out, "shared memory", info->limits.max_shared_memory_bytes);
  print_bytes(out, "push constants", info->limits.max_push_constant_bytes);
  print_bytes(out, "max storage buffer range",
              info->limits.max_storage_buffer_range);
  fprintf(out, "  %-34s %llu\n", "storage offset alignment",
          (unsigned long long)info->min_storage_buffer_offset_alignment);
  fprintf(out, "  %-34s %s (period %.3f ns)\n", "timestamps",
          info->timestamps ? "yes" : "no", info->timestamp_period_ns);
  fprintf(out, "  %-34s %u\n", "cooperative matrix shapes",
          info->cooperative_matrix_shape_count);
  for (uint32_t i = 0; i < info->cooperative_matrix_shape_count; ++i) {
    const kiln_hal_cooperative_matrix_shape_t* s =
        &info->cooperative_matrix_shapes[i];
    fprintf(out, "    %ux%ux%u %s -> %s (%s)\n", s->m, s->n, s->k,
            kiln_hal_element_type_name(s->a_type),
            kiln_hal_element_type_name(s->c_type), s->nv ? "NV" : "KHR");
  }
  fprintf(out, "  %-34s %s\n", "cooperative matrix kernels",
          (info->features & KILN_TARGET_FEATURE_COOPERATIVE_MATRIX)
              ? (info->cooperative_matrix_robust_buffer_access
                     ? "yes (VK_NV_cooperative_matrix, robust buffer access)"
                     : "yes (VK_NV_cooperative_matrix)")
              : "no (needs VK_NV_cooperative_matrix with 16x16x16 f16 -> f32, "
                "shaderFloat16, vulkanMemoryModel)");
  for (uint32_t i = 0; i < info->memory_heap_count; ++i) {
    char label[64];
    snprintf(label, sizeof(label), "memory heap %u%s", i,
             info->memory_heaps[i].device_local ? " (device-local)" : "");
    print_bytes(out, label, info->memory_heaps[i].size);
  }
  fprintf(out, "  %-34s %s\n", "validation layer",
          info->validation_enabled ? "on" : "off");
}

static kiln_status_t dump_one(const kiln_hal_driver_registry_t* registry,
                              const char* uri, bool validation, FILE* out) {
  kiln_hal_device_options_t options;
  kiln_hal_device_options_init(&options);
  options.enable_validation = validation;
  kiln_hal_device_t* device = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_create_device(registry,
                                              kiln_make_cstring_view(uri),
                                              &options,
                                              kiln_allocator_system(), &device));
  kiln_run_dump_device_info(kiln_hal_device_info(device), out);
  kiln_hal_device_release(device);
  return kiln_ok_status();
}

kiln_status_t kiln_run_dump_devices(const kiln_hal_driver_registry_t* registry,
                                    const char* uri, bool validation,
                                    FILE* out) {
  if (uri) return dump_one(registry, uri, validation, out);
  kiln_allocator_t allocator = kiln_allocator_system();
  for (size_t i = 0; i < registry->count; ++i) {
    const kiln_hal_driver_factory_t* factory = registry->factories[i];
    kiln_status_t status = factory->query_available(factory->self);
    if (status) {
      fprintf(out, "# %s: unavailable: %s\n", factory->name,
              kiln_status_message(status));
      kiln_status_free(status);
      continue;
    }
    kiln_hal_device_entry_t* entries = NULL;
    size_t count = 0;
    KILN_RETURN_IF_ERROR(
        factory->enumerate_devices(factory->self, allocator, &entries, &count));
    kiln_status_t result = kiln_ok_status();
    for (size_t d = 0; d < count && !result; ++d) {
      char device_uri[128];
      snprintf(device_uri, sizeof(device_uri), "%s://%s", factory->name,
               entries[d].path);
      result = dump_one(registry, device_uri, validation, out);
    }
    kiln_allocator_free(allocator, entries);
    KILN_RETURN_IF_ERROR(result);
  }
  return kiln_ok_status();
}
