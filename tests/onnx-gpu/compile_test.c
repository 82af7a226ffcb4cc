// kiln_onnx_compile_* contracts: refusals name node, op and opset and leave
// no partial module; target triples are checked; the emitted module asserts
// its input shapes at run time.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/onnx.h"
#include "kiln/compiler/onnx_compile.h"
#include "kiln/session.h"
#include "kiln_test.h"

#define KILN_NODE_DIR "/usr/share/libonnx-testdata/data/node"

KILN_TEST(OnnxCompileTest, UnsupportedNodeIsRefusedWithoutPartialModule) {
  kiln_byte_buffer_t out;
  kiln_byte_buffer_init(&out, kiln_allocator_system());
  // A 3-D ConvTranspose: 3-D pools and convolutions run, this does not.
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_UNIMPLEMENTED,
      "(op ConvTranspose, opset 11): only 1-D (NCL) and 2-D (NCHW) ConvTranspose is supported",
      kiln_onnx_compile_file(KILN_NODE_DIR "/test_convtranspose_3d/model.onnx", NULL,
                             kiln_allocator_system(), &out));
  KILN_EXPECT_EQ(out.size, 0u);
  kiln_byte_buffer_deinit(&out);
}

// Ops the front end runs but the GPU takes only in some forms: each
// refusal says which form is missing.
KILN_TEST(OnnxCompileTest, PartlyLoweredOpsNameWhatIsMissing) {
  static const struct {
    const char* model;
    const char* message;
  } kCases[] = {
      {"test_maxpool_with_argmax_2d_precomputed_strides",
       "(op MaxPool, opset 12): the Indices output is not supported"},
      {"test_mod_mixed_sign_float32", "(op Mod, opset 13): supported ops:"},
      // The list is complete: its last entries (once cut off at 512 bytes).
      {"test_mod_mixed_sign_float32", "Ceil, Round, Sign (no GPU lowering)"},
  };
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s/model.onnx", KILN_NODE_DIR, kCases[i].model);
    kiln_byte_buffer_t out;
    kiln_byte_buffer_init(&out, kiln_allocator_system());
    KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_UNIMPLEMENTED, kCases[i].message,
                               kiln_onnx_compile_file(path, NULL, kiln_allocator_system(), &out));
    KILN_EXPECT_EQ(out.size, 0u);
    kiln_byte_buffer_deinit(&out);
  }
}

KILN_TEST(OnnxCompileTest, NonFloatInputsAreRefused) {
  kiln_byte_buffer_t out;
  kiln_byte_buffer_init(&out, kiln_allocator_system());
  // int32 inputs are taken as Gather indices and by host ops (comparisons,
  // docs/partitioning.md), not by GPU arithmetic (integer Max folds on
  // constants only).
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_UNIMPLEMENTED, "int32 input 'data_0' feeds node 'Max_0' (op Max)",
      kiln_onnx_compile_file(KILN_NODE_DIR "/test_max_int32/model.onnx", NULL,
                             kiln_allocator_system(), &out));
  KILN_EXPECT_EQ(out.size, 0u);
  // Bool inputs into host ops compile (Not runs on the host).
  KILN_EXPECT_OK(kiln_onnx_compile_file(KILN_NODE_DIR "/test_not_2d/model.onnx", NULL,
                                        kiln_allocator_system(), &out));
  KILN_EXPECT_GT(out.size, 0u);
  kiln_byte_buffer_deinit(&out);
}

KILN_TEST(OnnxCompileTest, BadTargetTripleIsRefused) {
  const char* targets[] = {"cpu-llvmpipe-linux", "nosucharch"};
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  options.targets = targets;
  options.target_count = 2;
  kiln_byte_buffer_t out;
  kiln_byte_buffer_init(&out, kiln_allocator_system());
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "nosucharch",
      kiln_onnx_compile_file(KILN_NODE_DIR "/test_relu/model.onnx", &options,
                             kiln_allocator_system(), &out));
  KILN_EXPECT_EQ(out.size, 0u);
  kiln_byte_buffer_deinit(&out);
}

KILN_TEST(OnnxCompileTest, WrongInputShapeTrapsNamingTheInput) {
  kiln_byte_buffer_t module;
  kiln_byte_buffer_init(&module, kiln_allocator_system());
  KILN_ASSERT_OK(kiln_onnx_compile_file(KILN_NODE_DIR "/test_relu/model.onnx", NULL,
                                        kiln_allocator_system(), &module));
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  const char* device = getenv("KILN_TEST_DEVICE");
  if (device && device[0]) options.device_uri = device;
  options.enable_validation = true;
  kiln_session_t* session = NULL;
  KILN_ASSERT_OK(kiln_session_create(&options, &session));
  KILN_ASSERT_OK(kiln_session_load_module_memory(session, kiln_byte_buffer_span(&module),
                                                 "relu"));
  kiln_vm_function_t predict;
  KILN_ASSERT_OK(kiln_session_lookup(session, "predict", &predict));
  float data[12] = {0};
  int64_t shape[2] = {3, 4};  // the model takes 3x4x5
  kiln_hal_buffer_view_t* view = NULL;
  KILN_ASSERT_OK(kiln_session_buffer_view_from_host(session, KILN_HAL_ELEMENT_F32, 2, shape,
                                                    data, sizeof(data), &view));
  kiln_vm_value_t args[1], results[1];
  memset(results, 0, sizeof(results));
  KILN_ASSERT_OK(
      kiln_hal_module_wrap_buffer_view(kiln_session_allocator(session), view, &args[0].ref));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "input 0: expected 3x4x5xf32",
                             kiln_session_invoke(session, predict, args, 1, results, 1));
  kiln_vm_ref_release(args[0].ref);
  kiln_hal_buffer_view_release(view);
  kiln_session_destroy(session);
  kiln_byte_buffer_deinit(&module);
}
