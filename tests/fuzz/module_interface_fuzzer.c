// libFuzzer target: everything a module's kernels must pass before a driver
// sees them, without a GPU. Arbitrary bytes are loaded and verified as a
// module; every variant of every executable then goes through the HAL
// description check, SPIR-V validation, the reflected interface against the
// declared metadata, the workgroup-memory limit and, when all pass, the
// robust-access transform (local clamp, or the full pass). The device is a generic Vulkan 1.3 one (only its
// shared-memory limit matters here). Seeds are real modules (samples,
// compiled ONNX models), so mutations reach SPIR-V. Any crash, leak or
// sanitizer report is a bug.
#include <stdint.h>
#include <string.h>

#include "executable_spec.h"
#include "hal_internal.h"
#include "kiln/vm/vm.h"

static void fuzz_device_info(kiln_hal_device_info_t* info) {
  memset(info, 0, sizeof(*info));
  strcpy(info->name, "fuzz device");
  info->api_major = 1;
  info->api_minor = 3;
  info->limits.max_workgroup_invocations = 128;
  info->limits.max_shared_memory_bytes = 1u << 20;  // let every variant through
  info->limits.max_push_constant_bytes = 128;
  info->max_workgroup_size[0] = info->max_workgroup_size[1] = 128;
  info->max_workgroup_size[2] = 64;
  // The local clamp runs (and falls back to the full pass where it must).
  info->robust_buffer_access = true;
}

static void check_executable(const kiln_hal_device_info_t* info,
                             const kiln_format_executable_t* executable) {
  kiln_allocator_t allocator = kiln_allocator_system();
  kiln_hal_spec_storage_t storage;
  memset(&storage, 0, sizeof(storage));
  kiln_arena_init(&storage.arena, allocator, 16 * 1024);
  kiln_status_t status = kiln_hal_convert_executable(executable, &storage);
  if (!status) status = kiln_hal_executable_spec_verify(&storage.spec);
  for (uint32_t v = 0; !status && v < storage.spec.variant_count; ++v) {
    kiln_status_t check =
        kiln_hal_executable_check_variant(info, &storage.spec, v, allocator);
    if (!check) {
      const kiln_hal_executable_variant_spec_t* variant =
          &storage.spec.variants[v];
      uint32_t* robust = NULL;
      size_t robust_count = 0;
      check = kiln_hal_spirv_make_robust(
          info, "fuzz", v, allocator, variant->spirv_words,
          variant->spirv_word_count, &robust, &robust_count);
      kiln_allocator_free(allocator, robust);
    }
    kiln_status_free(check);
  }
  kiln_status_free(status);
  kiln_arena_deinit(&storage.arena);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln_vm_instance_t* instance = NULL;
  kiln_status_t status =
      kiln_vm_instance_create(kiln_allocator_system(), &instance);
  if (status) {
    kiln_status_free(status);
    return 0;
  }
  kiln_vm_module_load_options_t options = kiln_vm_module_load_options_default();
  options.max_rodata_bytes = 16u << 20;
  kiln_vm_module_t* module = NULL;
  status = kiln_vm_module_load_from_memory(
      instance, kiln_make_const_byte_span(data, size), "fuzz", &options,
      &module);
  if (!status) {
    kiln_hal_device_info_t info;
    fuzz_device_info(&info);
    const kiln_format_module_t* format = kiln_vm_module_format(module);
    for (uint32_t e = 0; e < format->executables.executable_count; ++e) {
      check_executable(&info, &format->executables.executables[e]);
    }
  }
  kiln_status_free(status);
  kiln_vm_module_release(module);
  kiln_vm_instance_destroy(instance);
  return 0;
}
