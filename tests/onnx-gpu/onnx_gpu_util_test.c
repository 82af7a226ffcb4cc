// The shared test helpers' own behaviour (onnx_gpu_util.h), no device
// needed: the device pose puts both variables back exactly (set, unset or
// kept), and the captured disassembly's dispatch count agrees with the
// module's own dispatch table.
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/onnx_compile.h"
#include "graph_build.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"

static const char* kiln_env_or_unset(const char* name) {
  const char* value = getenv(name);
  return value ? value : "(unset)";
}

static void kiln_expect_env(const char* device, const char* api) {
  KILN_EXPECT_STREQ(kiln_env_or_unset("KILN_TEST_DEVICE"), device);
  KILN_EXPECT_STREQ(kiln_env_or_unset("KILN_VULKAN_API_VERSION"), api);
}

KILN_TEST(OnnxGpuUtilTest, PoseRestoresBothVariables) {
  // A known starting state, itself undone at the end.
  kiln_test_pose_t outer;
  KILN_ASSERT_OK(kiln_test_pose_begin("vulkan://0?triple=arc", "1.2", &outer));
  kiln_expect_env("vulkan://0?triple=arc", "1.2");
  // Set and lifted, then back; a second end does nothing.
  kiln_test_pose_t pose;
  KILN_EXPECT_OK(kiln_test_pose_begin("vulkan://0?triple=valhall-g78-android30", "", &pose));
  kiln_expect_env("vulkan://0?triple=valhall-g78-android30", "(unset)");
  KILN_EXPECT_OK(kiln_test_pose_end(&pose));
  kiln_expect_env("vulkan://0?triple=arc", "1.2");
  KILN_EXPECT_OK(kiln_test_pose_end(&pose));
  kiln_expect_env("vulkan://0?triple=arc", "1.2");
  // NULL keeps a variable as it is.
  KILN_EXPECT_OK(kiln_test_pose_begin(NULL, "1.1", &pose));
  kiln_expect_env("vulkan://0?triple=arc", "1.1");
  KILN_EXPECT_OK(kiln_test_pose_end(&pose));
  kiln_expect_env("vulkan://0?triple=arc", "1.2");
  // Nested: variables unset before a pose are unset after it.
  kiln_test_pose_t unset;
  KILN_EXPECT_OK(kiln_test_pose_begin("", "", &unset));
  kiln_expect_env("(unset)", "(unset)");
  KILN_EXPECT_OK(kiln_test_pose_begin("vulkan://0?api=1.1", "1.1", &pose));
  kiln_expect_env("vulkan://0?api=1.1", "1.1");
  KILN_EXPECT_OK(kiln_test_pose_end(&pose));
  kiln_expect_env("(unset)", "(unset)");
  KILN_EXPECT_OK(kiln_test_pose_end(&unset));
  kiln_expect_env("vulkan://0?triple=arc", "1.2");
  KILN_EXPECT_OK(kiln_test_pose_end(&outer));
}

KILN_TEST(OnnxGpuUtilTest, TextCountsOccurrences) {
  KILN_EXPECT_EQ(kiln_gpu_text_count("aXbXXc", "X"), 3u);
  KILN_EXPECT_EQ(kiln_gpu_text_count("aaaa", "aa"), 2u);  // not overlapping
  KILN_EXPECT_EQ(kiln_gpu_text_count("abc", ""), 0u);
  KILN_EXPECT_EQ(kiln_gpu_text_count(NULL, "a"), 0u);
  // The import's declaration is not a call.
  const char* text =
      "import hal.command_buffer.dispatch \"rriiiirrr_v\"\n"
      "  call.import hal.command_buffer.dispatch r3 r16 i11 i4 i8 i9 r6 r7 r8\n"
      "  call.import hal.command_buffer.barrier r3\n";
  KILN_EXPECT_EQ(kiln_gpu_text_dispatches(text), 1u);
}

// Relu -> Softmax compiled for the default targets: the disassembly's
// dispatch calls and the module's grid table count the same dispatches.
KILN_TEST(OnnxGpuUtilTest, CapturedDispatchesMatchTheModule) {
  kiln_graph_t g;
  kiln_graph_initialize(kiln_allocator_system(), "capture-test", &g);
  g.opset = 13;
  const int64_t dims[2] = {3, 5};
  int32_t x = kiln_test_graph_input(&g, "x", 2, dims);
  int32_t node = -1, relu = -1, y = -1;
  KILN_EXPECT_OK(kiln_gpu_graph_add_node(&g, "Relu", &x, 1, &node, &relu));
  KILN_EXPECT_OK(kiln_gpu_graph_add_node(&g, "Softmax", &relu, 1, &node, &y));
  kiln_test_graph_finish(&g, &y, 1);
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  kiln_gpu_capture_t assembly;
  KILN_ASSERT_OK(kiln_gpu_capture_begin(&options, &assembly));
  kiln_byte_buffer_t module;
  kiln_byte_buffer_init(&module, kiln_allocator_system());
  KILN_EXPECT_OK(kiln_onnx_compile_graph(&g, &options, kiln_allocator_system(), &module));
  kiln_gpu_capture_end(&assembly);
  KILN_EXPECT_TRUE(assembly.text != NULL && assembly.size == strlen(assembly.text));
  KILN_EXPECT_CONTAINS(assembly.text, "export predict");
  const size_t dispatches = kiln_gpu_text_dispatches(assembly.text);
  KILN_EXPECT_GE(dispatches, 1u);
  KILN_EXPECT_EQ(dispatches,
                 kiln_gpu_module_dispatch_count(&module, kiln_onnx_compile_default_target_count));
  kiln_gpu_capture_release(&assembly);
  KILN_EXPECT_TRUE(assembly.text == NULL && assembly.stream == NULL);
  kiln_byte_buffer_deinit(&module);
  kiln_graph_deinitialize(&g);
}
