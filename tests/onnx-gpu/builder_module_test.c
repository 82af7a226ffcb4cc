// ONNX modules are built through the module builder (emit_module.c), not
// printed as text and reassembled. Their --dump-assembly is the disassembly
// of the finished module, and that text must assemble back to the identical
// bytes: the builder path and the text path (the assembler) agree on every
// import, rodata segment, executable variant, dispatch and register count.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/assembler.h"
#include "kiln/compiler/onnx_compile.h"
#include "kiln/vm/vm.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"

#define KILN_NODE_DIR "/usr/share/libonnx-testdata/data/node"

KILN_TEST(OnnxBuilderModuleTest, DisassemblyReassemblesToIdenticalModule) {
  // Convolution, GEMM, pooling, softmax, two inputs, several outputs, int64
  // indices, a pass-through output.
  static const struct {
    const char* model;
    size_t min_dispatches;
  } kCases[] = {
      {"test_conv_with_strides_padding", 1}, {"test_gemm_default_no_bias", 1},
      {"test_averagepool_2d_default", 1},    {"test_softmax_axis_1", 1},
      {"test_add", 1},                       {"test_split_equal_parts_1d", 3},
      {"test_gather_0", 1},                  {"test_identity", 1},
      {"test_relu", 1},                      {"test_matmul_2d", 1},
  };
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s/model.onnx", KILN_NODE_DIR, kCases[i].model);
    kiln_onnx_compile_options_t options;
    kiln_onnx_compile_options_init(&options);
    kiln_gpu_capture_t assembly;
    KILN_ASSERT_OK(kiln_gpu_capture_begin(&options, &assembly));
    kiln_byte_buffer_t built, assembled;
    kiln_byte_buffer_init(&built, kiln_allocator_system());
    kiln_byte_buffer_init(&assembled, kiln_allocator_system());
    kiln_status_t status = kiln_onnx_compile_file(path, &options, kiln_allocator_system(), &built);
    kiln_gpu_capture_end(&assembly);
    const char* text = assembly.text;
    bool compiled = status == NULL;
    KILN_EXPECT_OK(status);  // consumes status
    if (compiled) {
      KILN_EXPECT_OK(kiln_assembler_assemble(kiln_make_string_view(text, assembly.size), path,
                                             kiln_allocator_system(), &assembled));
      KILN_EXPECT_EQ(assembled.size, built.size);
      if (assembled.size == built.size) {
        KILN_EXPECT_BYTES_EQ(assembled.data, built.data, built.size);
      }
      // The dispatch list is in the module: one dispatch call per kernel
      // launch, every executable looked up once in `record`.
      KILN_EXPECT_GE(kiln_gpu_text_dispatches(text), kCases[i].min_dispatches);
      KILN_EXPECT_EQ(kiln_gpu_text_count(text, "call.import hal.executable.lookup "),
                     kiln_gpu_text_count(text, "\nexecutable "));
      KILN_EXPECT_CONTAINS(text, "export predict");
      // The VM accepts it (the verifier runs on load).
      kiln_vm_instance_t* instance = NULL;
      KILN_ASSERT_OK(kiln_vm_instance_create(kiln_allocator_system(), &instance));
      kiln_vm_module_t* module = NULL;
      KILN_EXPECT_OK(kiln_vm_module_load_from_memory(instance, kiln_byte_buffer_span(&built),
                                                     path, NULL, &module));
      kiln_vm_module_release(module);
      kiln_vm_instance_destroy(instance);
    }
    kiln_gpu_capture_release(&assembly);
    kiln_byte_buffer_deinit(&built);
    kiln_byte_buffer_deinit(&assembled);
  }
}
