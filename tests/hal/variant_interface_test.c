// Every variant the ONNX compiler emits, for every default target (not only
// the one this machine's device selects), passes the HAL's interface check:
// its SPIR-V declares exactly the bindings, push-constant size, workgroup
// size and specialization constants the module declares for it. Without
// this, a metadata slip in the NVIDIA or Mali variants would first show as a
// refusal on that hardware.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executable_spec.h"
#include "hal_internal.h"
#include "kiln/base/byte_buffer.h"
#include "kiln/compiler/onnx_compile.h"
#include "kiln/vm/vm.h"
#include "kiln_test.h"

// A device with limits no variant exceeds: only the interface is tested.
static void roomy_device_info(kiln_hal_device_info_t* info) {
  memset(info, 0, sizeof(*info));
  strcpy(info->name, "roomy");
  info->api_major = 1;
  info->api_minor = 3;
  info->limits.max_shared_memory_bytes = 1u << 20;
}

// Compiles `path` and checks every variant; returns how many were checked.
static uint32_t check_model(const char* path) {
  kiln_allocator_t allocator = kiln_allocator_system();
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  kiln_byte_buffer_t bytes;
  kiln_byte_buffer_init(&bytes, allocator);
  KILN_EXPECT_OK(kiln_onnx_compile_file(path, &options, allocator, &bytes));
  kiln_vm_instance_t* instance = NULL;
  KILN_EXPECT_OK(kiln_vm_instance_create(allocator, &instance));
  kiln_vm_module_load_options_t load = kiln_vm_module_load_options_default();
  load.max_rodata_bytes = 1u << 30;
  kiln_vm_module_t* module = NULL;
  KILN_EXPECT_OK(kiln_vm_module_load_from_memory(
      instance, kiln_byte_buffer_span(&bytes), path, &load, &module));
  kiln_hal_device_info_t info;
  roomy_device_info(&info);
  uint32_t checked = 0;
  const kiln_format_module_t* format = module ? kiln_vm_module_format(module) : NULL;
  for (uint32_t e = 0; format && e < format->executables.executable_count; ++e) {
    kiln_hal_spec_storage_t storage;
    memset(&storage, 0, sizeof(storage));
    kiln_arena_init(&storage.arena, allocator, 16 * 1024);
    KILN_EXPECT_OK(kiln_hal_convert_executable(
        &format->executables.executables[e], &storage));
    KILN_EXPECT_OK(kiln_hal_executable_spec_verify(&storage.spec));
    for (uint32_t v = 0; v < storage.spec.variant_count; ++v) {
      KILN_EXPECT_OK(kiln_hal_executable_check_variant(&info, &storage.spec, v,
                                                       allocator));
      ++checked;
    }
    kiln_arena_deinit(&storage.arena);
  }
  kiln_vm_module_release(module);
  kiln_vm_instance_destroy(instance);
  kiln_byte_buffer_deinit(&bytes);
  return checked;
}

KILN_TEST(VariantInterfaceTest, CompiledNodeModelsMatchTheirMetadata) {
  static const char* kNodes[] = {
      "conv_with_strides_padding", "matmul_2d", "softmax_axis_1", "relu",
      "add", "maxpool_2d_default", "averagepool_2d_default",
      "gemm_default_no_bias", "reduce_mean_default_axes_keepdims_example",
      "sigmoid", "conv_with_autopad_same"};
  uint32_t checked = 0;
  for (size_t i = 0; i < sizeof(kNodes) / sizeof(kNodes[0]); ++i) {
    char path[512];
    snprintf(path, sizeof(path),
             "/usr/share/libonnx-testdata/data/node/test_%s/model.onnx",
             kNodes[i]);
    FILE* file = fopen(path, "rb");
    if (!file) continue;  // the ONNX test data package is optional
    fclose(file);
    checked += check_model(path);
  }
  printf("checked %u variants of ONNX node-test models\n", checked);
}

KILN_TEST(VariantInterfaceTest, CompiledMobileNetV2MatchesItsMetadata) {
  const char* dir = getenv("KILN_ONNX_MODELS_DIR");
  char path[1024];
  snprintf(path, sizeof(path), "%s/mobilenet_v2/model.onnx",
           dir ? dir : "tests/onnx/models");
  FILE* file = fopen(path, "rb");
  if (!file) {
    printf("skipped: no %s (models are exported when torch exists)\n", path);
    return;
  }
  fclose(file);
  uint32_t checked = check_model(path);
  KILN_EXPECT_GT(checked, 20);
  printf("checked %u variants of MobileNetV2\n", checked);
}
