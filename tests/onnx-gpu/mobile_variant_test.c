// Modules compiled only for the mobile triples (valhall-g78, adreno-android30):
// every variant is SPIR-V 1.3 that validates for Vulkan 1.1 and stays within
// the arch row's limits and the Android floor's 128-byte push constants;
// on lavapipe used as a plain Vulkan 1.1 device posing as that target
// ("?api=1.1&triple=") the model runs and matches PyTorch, or is refused
// with a message naming why; without the pose the device refuses the
// foreign target by name.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/onnx.h"
#include "kiln/compiler/onnx_compile.h"
#include "kiln/compiler/spirv.h"
#include "kiln/drivers/registration.h"
#include "kiln/format/module_reader.h"
#include "kiln/hal.h"
#include "kiln/hal/target_triple.h"
#include "kiln_test.h"
#include "model_compare.h"
#include "onnx_gpu_util.h"
#include "tensor_compare.h"

enum { kAndroidPushConstantBytes = 128 };

typedef struct mobile_case_t {
  const char* target;       // as users write it
  const char* full_triple;  // for the device pose
} mobile_case_t;

static const mobile_case_t kCases[] = {
    {"valhall-g78", "valhall-g78-android30"},
    {"adreno-android30", "adreno-unknown-android30"},
};

// Checks every variant of the compiled module against the Android floor.
static void check_variants(const kiln_byte_buffer_t* module_bytes,
                           const char* target) {
  kiln_format_read_options_t read_options = kiln_format_read_options_default();
  kiln_format_module_t module;
  KILN_ASSERT_OK(kiln_format_module_read(
      kiln_make_const_byte_span(module_bytes->data, module_bytes->size),
      target, &read_options, kiln_allocator_system(), &module));
  char arch[KILN_TARGET_TOKEN_CAPACITY];
  kiln_target_triple_t triple;
  KILN_ASSERT_OK(kiln_target_triple_parse(kiln_make_cstring_view(target), &triple));
  snprintf(arch, sizeof(arch), "%s", triple.arch);
  const kiln_target_arch_info_t* row = kiln_target_arch_lookup(arch);
  KILN_ASSERT_TRUE(row != NULL);
  uint32_t variants = 0;
  for (uint32_t e = 0; e < module.executables.executable_count; ++e) {
    const kiln_format_executable_t* exe = &module.executables.executables[e];
    char name[128];
    snprintf(name, sizeof(name), "%.*s", KILN_SV_ARG(exe->name));
    for (uint32_t v = 0; v < exe->variant_count; ++v) {
      const kiln_format_variant_t* variant = &exe->variants[v];
      ++variants;
      KILN_ASSERT_TRUE(variant->spirv_word_count >= 5);
      uint32_t* words = malloc(variant->spirv_word_count * sizeof(uint32_t));
      KILN_ASSERT_TRUE(words != NULL);
      for (uint32_t w = 0; w < variant->spirv_word_count; ++w) {
        words[w] = kiln_format_variant_spirv_word(variant, w);
      }
      if (words[1] > 0x00010300u) {
        KILN_ADD_FAILURE("%s: executable '%s' is SPIR-V 0x%08x, newer than 1.3",
                         target, name, words[1]);
      }
      KILN_EXPECT_OK(kiln_spirv_validate(name, words, variant->spirv_word_count,
                                         KILN_SPIRV_TARGET_VULKAN_1_1));
      free(words);
      if (variant->min_shared_memory_bytes > row->max_shared_memory_bytes) {
        KILN_ADD_FAILURE("%s: '%s' needs %u shared bytes, the %s row allows %u", target,
                         name, variant->min_shared_memory_bytes, arch,
                         row->max_shared_memory_bytes);
      }
      for (uint32_t p = 0; p < variant->entry_point_count; ++p) {
        const kiln_format_entry_point_t* entry = &variant->entry_points[p];
        uint64_t invocations = (uint64_t)entry->workgroup_size[0] *
                               entry->workgroup_size[1] * entry->workgroup_size[2];
        if (invocations > row->max_workgroup_invocations) {
          KILN_ADD_FAILURE("%s: '%s' has %llu invocations, the %s row allows %u", target,
                           name, (unsigned long long)invocations, arch,
                           row->max_workgroup_invocations);
        }
        if (entry->push_constant_bytes > kAndroidPushConstantBytes) {
          KILN_ADD_FAILURE("%s: '%s' pushes %u bytes, Android's floor is %d", target, name,
                           entry->push_constant_bytes, kAndroidPushConstantBytes);
        }
      }
    }
  }
  printf("%s: %u variants, all SPIR-V <= 1.3 and valid for Vulkan 1.1\n", target, variants);
  KILN_EXPECT_TRUE(variants > 0);
  kiln_format_module_deinit(&module);
}

// Compiles and runs the model on the device `uri` (one input, one output).
static kiln_status_t run_model(const char* uri, kiln_graph_t* graph,
                               const kiln_onnx_compile_options_t* options,
                               const kiln_graph_tensor_t* input,
                               kiln_graph_tensor_t* actual) {
  memset(actual, 0, sizeof(*actual));
  kiln_test_pose_t pose;
  KILN_RETURN_IF_ERROR(kiln_test_pose_begin(uri, NULL, &pose));
  kiln_gpu_run_stats_t stats;
  kiln_status_t status = kiln_gpu_compile_and_run(graph, options, input, actual, &stats);
  KILN_EXPECT_OK(kiln_test_pose_end(&pose));
  return status;
}

// Runs the model on `uri`; returns the status (OK: outputs checked).
static kiln_status_t run_on(const char* uri, kiln_graph_t* graph,
                            const kiln_onnx_compile_options_t* options,
                            const kiln_graph_tensor_t* input,
                            const kiln_graph_tensor_t* expected) {
  kiln_graph_tensor_t actual;
  KILN_RETURN_IF_ERROR(run_model(uri, graph, options, input, &actual));
  KILN_EXPECT_TRUE(kiln_graph_shape_equal(&actual.shape, &expected->shape));
  kiln_tensor_error_t error = kiln_tensor_max_error(&actual, expected);
  double max_ref = error.max_ref, max_err = error.max_err;
  printf("%s: max|err| %.3g vs max|ref| %.3g\n", uri, max_err, max_ref);
  KILN_EXPECT_TRUE(max_ref > 0.0);
  KILN_EXPECT_TRUE(max_err <= 1e-4 * max_ref);  // the model tests' tolerance
  kiln_graph_tensor_deinit(&actual);
  return kiln_ok_status();
}

static void check_mobile_model(const char* model) {
  kiln_test_model_require(model);
  char path[1024];
  kiln_test_model_path(model, "model.onnx", path, sizeof(path));
  kiln_graph_tensor_t input, expected;
  kiln_test_model_read(model, "input_0.pb", &input);
  kiln_test_model_read(model, "output_0.pb", &expected);
  for (size_t c = 0; c < sizeof(kCases) / sizeof(kCases[0]); ++c) {
    kiln_onnx_compile_options_t options;
    kiln_onnx_compile_options_init(&options);
    const char* targets[1] = {kCases[c].target};
    options.targets = targets;
    options.target_count = 1;
    kiln_graph_t graph;
    KILN_ASSERT_OK(kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
    kiln_byte_buffer_t bytes;
    kiln_byte_buffer_init(&bytes, kiln_allocator_system());
    KILN_ASSERT_OK(kiln_onnx_compile_graph(&graph, &options, kiln_allocator_system(), &bytes));
    check_variants(&bytes, kCases[c].target);
    kiln_byte_buffer_deinit(&bytes);
    kiln_graph_deinitialize(&graph);

    // Posing as the target on a plain 1.1 device: runs right or names why.
    char uri[256];
    snprintf(uri, sizeof(uri), "vulkan://0?api=1.1&triple=%s", kCases[c].full_triple);
    KILN_ASSERT_OK(kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
    kiln_status_t status = run_on(uri, &graph, &options, &input, &expected);
    kiln_graph_deinitialize(&graph);
    if (status) {
      char text[1024];
      kiln_status_format(status, text, sizeof(text));
      printf("%s refused: %s\n", uri, text);
      // A refusal must say what the device lacks, never fail inside Vulkan.
      KILN_EXPECT_TRUE(strstr(text, "needs") != NULL || strstr(text, "lacks") != NULL);
      KILN_EXPECT_TRUE(strstr(text, "vkCreate") == NULL);
      kiln_status_free(status);
    }
  }
  kiln_graph_tensor_deinit(&input);
  kiln_graph_tensor_deinit(&expected);
}

KILN_TEST(MobileVariantTest, MobileNetV2ForValhallAndAdreno) {
  check_mobile_model("mobilenet_v2");
}

// Without the pose a desktop device refuses a module built only for a
// mobile target, naming the variant and why it does not fit.
KILN_TEST(MobileVariantTest, ForeignTargetIsRefusedByName) {
  kiln_test_model_require("mlp_softmax");
  char path[1024];
  kiln_test_model_path("mlp_softmax", "model.onnx", path, sizeof(path));
  kiln_graph_tensor_t input, expected;
  kiln_test_model_read("mlp_softmax", "input_0.pb", &input);
  kiln_test_model_read("mlp_softmax", "output_0.pb", &expected);
  static const struct {
    const char* target;
    const char* reason;
  } kRefusals[] = {
      // Device-independent parts (lavapipe is cpu-llvmpipe-linux, the H200
      // hopper-h200-linux).
      {"valhall-g78", "arch valhall (arm) is not the device's "},
      {"adreno-android30", "OS android30 does not run on "},
  };
  for (size_t c = 0; c < sizeof(kRefusals) / sizeof(kRefusals[0]); ++c) {
    kiln_onnx_compile_options_t options;
    kiln_onnx_compile_options_init(&options);
    const char* targets[1] = {kRefusals[c].target};
    options.targets = targets;
    options.target_count = 1;
    kiln_graph_t graph;
    KILN_ASSERT_OK(kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
    kiln_status_t status = run_on("vulkan://0?api=1.1", &graph, &options, &input, &expected);
    kiln_graph_deinitialize(&graph);
    KILN_EXPECT_TRUE(status != NULL);
    if (!status) continue;
    char text[1024];
    kiln_status_format(status, text, sizeof(text));
    kiln_status_free(status);
    char selector[64];
    snprintf(selector, sizeof(selector), "'%s'", kRefusals[c].target);
    if (!strstr(text, selector) || !strstr(text, kRefusals[c].reason)) {
      KILN_ADD_FAILURE("refusal does not name %s and '%s': %s", selector,
                       kRefusals[c].reason, text);
    }
  }
  kiln_graph_tensor_deinit(&input);
  kiln_graph_tensor_deinit(&expected);
}

// The arch of vulkan://0 as derived (no cap), e.g. "cpu" for lavapipe.
static void device_arch(char* out, size_t size) {
  snprintf(out, size, "?");
  kiln_hal_driver_registry_t* registry = kiln_hal_driver_registry_default();
  KILN_EXPECT_OK(kiln_drivers_register_all(registry));
  kiln_hal_device_options_t options;
  kiln_hal_device_options_init(&options);
  kiln_hal_device_t* device = NULL;
  KILN_EXPECT_OK(kiln_hal_create_device(registry, kiln_make_cstring_view("vulkan://0"),
                                        &options, kiln_allocator_system(), &device));
  if (!device) return;
  snprintf(out, size, "%s", kiln_hal_device_info(device)->triple.arch);
  kiln_hal_device_release(device);
}

// The encoder on the device as it is and used as a plain Vulkan 1.1 device
// (fences, descriptor sets, no fp16/8-bit storage). On a CPU device (lavapipe,
// CI) both pick the same variants, so the outputs must be bit-identical;
// elsewhere the full device may pick variants the 1.1 device lacks
// (cooperative matrix, fp16), so they must agree within the model tests'
// tolerance (1e-4 of the largest value).
KILN_TEST(MobileVariantTest, EncoderBitIdenticalInBothApiModes) {
  kiln_test_model_require("transformer_encoder");
  char path[1024];
  kiln_test_model_path("transformer_encoder", "model.onnx", path, sizeof(path));
  kiln_graph_tensor_t input, outputs[2];
  memset(outputs, 0, sizeof(outputs));
  kiln_test_model_read("transformer_encoder", "input_0.pb", &input);
  kiln_onnx_input_shape_t shape;
  KILN_ASSERT_OK(kiln_onnx_parse_input_shape("input:2x10x64", &shape));
  const char* uris[2] = {"vulkan://0", "vulkan://0?api=1.1"};
  // The first run must see the full device even inside the vk11 suite.
  kiln_test_pose_t no_cap;
  KILN_ASSERT_OK(kiln_test_pose_begin(NULL, "", &no_cap));
  kiln_status_t status = kiln_ok_status();
  for (int mode = 0; mode < 2 && !status; ++mode) {
    kiln_onnx_compile_options_t options;
    kiln_onnx_compile_options_init(&options);
    options.import.input_shapes = &shape;
    options.import.input_shape_count = 1;
    kiln_graph_t graph;
    status = kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph);
    if (status) break;
    status = run_model(uris[mode], &graph, &options, &input, &outputs[mode]);
    kiln_graph_deinitialize(&graph);
  }
  KILN_EXPECT_OK(kiln_test_pose_end(&no_cap));
  KILN_EXPECT_OK(status);
  KILN_EXPECT_EQ(outputs[0].byte_size, outputs[1].byte_size);
  KILN_EXPECT_TRUE(outputs[0].byte_size > 0);
  char arch[KILN_TARGET_TOKEN_CAPACITY];
  device_arch(arch, sizeof(arch));
  if (!status && outputs[0].byte_size == outputs[1].byte_size) {
    bool identical = memcmp(outputs[0].data, outputs[1].data, outputs[0].byte_size) == 0;
    kiln_tensor_error_t error = kiln_tensor_max_error(&outputs[1], &outputs[0]);
    double max_value = error.max_ref, max_diff = error.max_err;
    printf("device arch %s: outputs %s (max|diff| %.3g, max|value| %.3g)\n", arch,
           identical ? "bit-identical" : "differ", max_diff, max_value);
    if (strcmp(arch, "cpu") == 0) {
      KILN_EXPECT_TRUE(identical);
    } else {
      KILN_EXPECT_TRUE(max_value > 0.0 && max_diff <= 1e-4 * max_value);
    }
  }
  for (int mode = 0; mode < 2; ++mode) kiln_graph_tensor_deinit(&outputs[mode]);
  kiln_graph_tensor_deinit(&input);
}
