// Loading: read the container, verify every function, unpack rodata, then
// precompute what calls need (signature layouts, display names).
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "kiln/base/size_math.h"

kiln_vm_module_load_options_t kiln_vm_module_load_options_default(void) {
  kiln_vm_module_load_options_t options;
  options.max_rodata_bytes = kiln_format_read_options_default().max_rodata_bytes;
  options.disable_superinstructions = false;
  return options;
}

void kiln_vm_signature_layout_compute(const kiln_format_signature_t* signature,
                                      kiln_vm_signature_layout_t* out) {
  memset(out, 0, sizeof(*out));
  // Arguments and results each start at slot 0 of their banks.
  for (int side = 0; side < 2; ++side) {
    uint32_t words = 0, refs = 0;
    uint32_t begin = side == 0 ? 0 : signature->arg_count;
    uint32_t end = side == 0 ? signature->arg_count
                             : (uint32_t)signature->arg_count +
                                   signature->result_count;
    for (uint32_t i = begin; i < end; ++i) {
      char type = signature->types[i];
      if (type == KILN_VALUE_TYPE_REF) {
        out->slots[i] = (uint16_t)refs++;
      } else if (kiln_value_type_is_64bit(type)) {
        words = (words + 1) & ~1u;
        out->slots[i] = (uint16_t)words;
        words += 2;
      } else {
        out->slots[i] = (uint16_t)words++;
      }
    }
    if (side == 0) {
      out->arg_i32_words = words;
      out->arg_refs = refs;
    }
  }
}

static void kiln_vm_module_destroy(kiln_vm_ref_object_t* object) {
  kiln_vm_module_t* module = (kiln_vm_module_t*)object;
  kiln_allocator_t allocator = module->allocator;
  if (!module->is_native) {
    for (uint32_t i = 0; module->rodata_allocations &&
                         i < module->format.rodata_count;
         ++i) {
      kiln_allocator_free(allocator, module->rodata_allocations[i]);
    }
    for (uint32_t i = 0; module->function_display_names &&
                         i < module->format.function_count;
         ++i) {
      kiln_allocator_free(allocator, module->function_display_names[i]);
    }
    kiln_allocator_free(allocator, module->function_display_names);
    kiln_allocator_free(allocator, (void*)module->function_code);
    kiln_allocator_free(allocator, module->code_copy);
    kiln_allocator_free(allocator, module->rodata_allocations);
    kiln_allocator_free(allocator, (void*)module->rodata_data);
    kiln_allocator_free(allocator, module->layouts);
    kiln_format_module_deinit(&module->format);
    kiln_file_unmap(&module->mapping);
    kiln_allocator_free(allocator, module->bytes_allocation);
  }
  kiln_allocator_free(allocator, module->native_signatures);
  if (module->is_native && module->native.destroy_user_data) {
    module->native.destroy_user_data(module->native.user_data);
  }
  kiln_allocator_free(allocator, module);
}

static const kiln_vm_ref_type_t kiln_vm_module_type = {"vm.module",
                                                       kiln_vm_module_destroy};

void kiln_vm_module_retain(kiln_vm_module_t* module) {
  if (module) kiln_vm_ref_retain(&module->header);
}
kiln_vm_ref_object_t* kiln_vm_module_as_ref(kiln_vm_module_t* module) {
  return &module->header;
}
void kiln_vm_module_release(kiln_vm_module_t* module) {
  if (module) kiln_vm_ref_release(&module->header);
}
kiln_string_view_t kiln_vm_module_name(const kiln_vm_module_t* module) {
  return module->name;
}
const kiln_format_module_t* kiln_vm_module_format(
    const kiln_vm_module_t* module) {
  return module->is_native ? NULL : &module->format;
}

uint32_t kiln_vm_module_superinstruction_count(const kiln_vm_module_t* module) {
  return module->superinstruction_count;
}

const char* kiln_vm_module_function_display_name(const kiln_vm_module_t* module,
                                                 uint32_t function) {
  return module->function_display_names[function];
}

static kiln_status_t kiln_vm_module_alloc(kiln_vm_instance_t* instance,
                                          kiln_vm_module_t** out) {
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc(instance->allocator,
                                             sizeof(kiln_vm_module_t),
                                             (void**)out));
  kiln_vm_ref_object_init(&(*out)->header, &kiln_vm_module_type);
  (*out)->instance = instance;
  (*out)->allocator = instance->allocator;
  return kiln_ok_status();
}

// Names for traps: debug name, else an export name, else "#<ordinal>".
static kiln_status_t kiln_vm_module_make_display_names(kiln_vm_module_t* module) {
  const kiln_format_module_t* format = &module->format;
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc_array(
      module->allocator, format->function_count ? format->function_count : 1,
      sizeof(char*), (void**)&module->function_display_names));
  for (uint32_t i = 0; i < format->function_count; ++i) {
    kiln_string_view_t name = format->functions[i].name;
    for (uint32_t e = 0; name.size == 0 && e < format->export_count; ++e) {
      if (format->exports[e].function == i) name = format->exports[e].name;
    }
    char fallback[16];
    if (name.size == 0) {
      snprintf(fallback, sizeof(fallback), "#%u", i);
      name = kiln_make_cstring_view(fallback);
    }
    size_t length = name.size > 200 ? 200 : name.size;
    char* text = NULL;
    KILN_RETURN_IF_ERROR(
        kiln_allocator_malloc(module->allocator, length + 1, (void**)&text));
    memcpy(text, name.data, length);
    text[length] = 0;
    module->function_display_names[i] = text;
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_vm_module_prepare(
    kiln_vm_module_t* module, kiln_const_byte_span_t bytes, const char* what,
    const kiln_vm_module_load_options_t* options) {
  kiln_format_read_options_t read_options = kiln_format_read_options_default();
  if (options) read_options.max_rodata_bytes = options->max_rodata_bytes;
  KILN_RETURN_IF_ERROR(kiln_format_module_read(
      bytes, what, &read_options, module->allocator, &module->format));
  kiln_format_module_t* format = &module->format;
  module->name = format->name;
  KILN_RETURN_IF_ERROR_ANNOTATE(kiln_vm_verify_module(format),
                                "while verifying module '%s'", what);
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_vm_module_build_code(module,
                                !(options && options->disable_superinstructions)),
      "while loading module '%s'", what);
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc_array(
      module->allocator, format->signature_count ? format->signature_count : 1,
      sizeof(kiln_vm_signature_layout_t), (void**)&module->layouts));
  for (uint32_t i = 0; i < format->signature_count; ++i) {
    kiln_vm_signature_layout_compute(&format->signatures[i],
                                     &module->layouts[i]);
  }
  size_t rodata_slots = format->rodata_count ? format->rodata_count : 1;
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc_array(
      module->allocator, rodata_slots, sizeof(void*),
      (void**)&module->rodata_data));
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc_array(
      module->allocator, rodata_slots, sizeof(void*),
      (void**)&module->rodata_allocations));
  for (uint32_t i = 0; i < format->rodata_count; ++i) {
    const kiln_format_rodata_t* rodata = &format->rodata[i];
    if (!(rodata->flags & KILN_FORMAT_RODATA_ZSTD)) {
      module->rodata_data[i] = rodata->stored;
      continue;
    }
    // The instance's allocator (a session's budget) sees the unpacked size:
    // a small module may ask for gigabytes here.
    void* data = NULL;
    KILN_RETURN_IF_ERROR_ANNOTATE(
        kiln_allocator_malloc(module->allocator, (size_t)rodata->size, &data),
        "while unpacking rodata %u (%llu bytes) of module '%s'", i,
        (unsigned long long)rodata->size, what);
    module->rodata_allocations[i] = data;
    KILN_RETURN_IF_ERROR_ANNOTATE(
        kiln_format_rodata_unpack(rodata, i,
                                  kiln_make_byte_span(data, (size_t)rodata->size)),
        "while loading module '%s'", what);
    module->rodata_data[i] = data;
  }
  return kiln_vm_module_make_display_names(module);
}

kiln_status_t kiln_vm_module_load_from_memory(
    kiln_vm_instance_t* instance, kiln_const_byte_span_t bytes,
    const char* what, const kiln_vm_module_load_options_t* options,
    kiln_vm_module_t** out_module) {
  *out_module = NULL;
  if (!what) what = "<memory>";
  kiln_vm_module_t* module = NULL;
  KILN_RETURN_IF_ERROR(kiln_vm_module_alloc(instance, &module));
  // The copy is aligned like a page so rodata alignment holds in memory.
  size_t padded = 0;
  kiln_status_t status = kiln_ok_status();
  if (!kiln_size_add(bytes.size, KILN_FORMAT_RODATA_MAX_ALIGNMENT, &padded)) {
    status = kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "module too large");
  }
  if (!status) {
    status = kiln_allocator_malloc(instance->allocator, padded,
                                   &module->bytes_allocation);
  }
  if (!status) {
    uintptr_t base = (uintptr_t)module->bytes_allocation;
    uint8_t* aligned = (uint8_t*)module->bytes_allocation +
                       ((KILN_FORMAT_RODATA_MAX_ALIGNMENT -
                         (base % KILN_FORMAT_RODATA_MAX_ALIGNMENT)) %
                        KILN_FORMAT_RODATA_MAX_ALIGNMENT);
    if (bytes.size) memcpy(aligned, bytes.data, bytes.size);
    status = kiln_vm_module_prepare(
        module, kiln_make_const_byte_span(aligned, bytes.size), what, options);
  }
  if (status) {
    kiln_vm_module_release(module);
    return status;
  }
  *out_module = module;
  return kiln_ok_status();
}

kiln_status_t kiln_vm_module_load_from_file(
    kiln_vm_instance_t* instance, const char* path,
    const kiln_vm_module_load_options_t* options,
    kiln_vm_module_t** out_module) {
  *out_module = NULL;
  kiln_vm_module_t* module = NULL;
  KILN_RETURN_IF_ERROR(kiln_vm_module_alloc(instance, &module));
  kiln_status_t status = kiln_file_map(path, &module->mapping);
  if (!status) {
    status = kiln_vm_module_prepare(
        module,
        kiln_make_const_byte_span(module->mapping.data, module->mapping.size),
        path, options);
  }
  if (status) {
    kiln_vm_module_release(module);
    return status;
  }
  *out_module = module;
  return kiln_ok_status();
}

kiln_status_t kiln_vm_module_create_native(
    kiln_vm_instance_t* instance, const kiln_vm_native_module_desc_t* desc,
    kiln_vm_module_t** out_module) {
  *out_module = NULL;
  if (!desc || !desc->name || !desc->name[0] ||
      (desc->export_count && !desc->exports)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "native module needs a name and an export table");
  }
  kiln_vm_module_t* module = NULL;
  KILN_RETURN_IF_ERROR(kiln_vm_module_alloc(instance, &module));
  module->is_native = true;
  module->native = *desc;
  module->name = kiln_make_cstring_view(desc->name);
  kiln_status_t status = kiln_allocator_calloc_array(
      module->allocator, desc->export_count ? desc->export_count : 1,
      sizeof(kiln_format_signature_t), (void**)&module->native_signatures);
  for (size_t i = 0; !status && i < desc->export_count; ++i) {
    const kiln_vm_native_export_t* entry = &desc->exports[i];
    if (!entry->name || !entry->signature || !entry->fn) {
      status = kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "native module '%s': export %zu needs a name, "
                                "a signature and a function",
                                desc->name, i);
      break;
    }
    status = kiln_format_signature_parse(
        kiln_make_cstring_view(entry->signature), &module->native_signatures[i]);
    if (status) {
      status = kiln_status_annotate(status, "native module '%s' export '%s'",
                                    desc->name, entry->name);
    }
  }
  if (status) {
    kiln_vm_module_release(module);
    return status;
  }
  *out_module = module;
  return kiln_ok_status();
}
