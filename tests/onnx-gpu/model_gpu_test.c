// Real models exported from PyTorch by scripts/export_models.py, compiled to
// modules and run on the default device (lavapipe in CI) through the
// session API: max|err| <= 1e-4 * max|ref| against PyTorch's float64 output.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_test.h"
#include "model_compare.h"
#include "onnx_gpu_util.h"
#include "tensor_compare.h"

// FNV-1a over the output bytes: printed so runs in different device modes
// (full features, KILN_VULKAN_API_VERSION=1.1) can be shown bit-identical.
static uint64_t kiln_output_digest(const kiln_graph_tensor_t* tensor) {
  uint64_t hash = 14695981039346656037ull;
  const uint8_t* bytes = (const uint8_t*)tensor->data;
  for (size_t i = 0; i < tensor->byte_size; ++i) {
    hash = (hash ^ bytes[i]) * 1099511628211ull;
  }
  return hash;
}

// `dispatches`: the number of kernel dispatches the module must record (0:
// not checked).
static void kiln_check_model_dispatches(const char* name, const char* input_shape,
                                        size_t dispatches) {
  kiln_test_model_require(name);
  kiln_test_model_case_t model;
  kiln_test_model_load(name, input_shape, &model);
  kiln_graph_tensor_t actual;
  kiln_gpu_run_stats_t stats;
  kiln_gpu_capture_t assembly = {NULL, NULL, 0};
  if (dispatches) KILN_ASSERT_OK(kiln_gpu_capture_begin(&model.options, &assembly));
  kiln_status_t status =
      kiln_gpu_compile_and_run(&model.graph, &model.options, model.inputs, &actual, &stats);
  if (dispatches) {
    kiln_gpu_capture_end(&assembly);
    printf("%s: %zu dispatches\n", name, kiln_gpu_text_dispatches(assembly.text));
    KILN_EXPECT_EQ(kiln_gpu_text_dispatches(assembly.text), dispatches);
    kiln_gpu_capture_release(&assembly);
  }
  KILN_ASSERT_OK(status);
  KILN_ASSERT_TRUE(kiln_graph_shape_equal(&actual.shape, &model.expected.shape));
  kiln_tensor_error_t error = kiln_tensor_max_error(&actual, &model.expected);
  double max_err = error.max_err, max_ref = error.max_ref;
  printf("%s on the GPU: max|err| %.3g vs max|ref| %.3g (ratio %.2g); compile %.0f ms, "
         "first call %.1f ms, second call %.1f ms\n",
         name, max_err, max_ref, max_err / max_ref, stats.compile_ms, stats.first_call_ms,
         stats.second_call_ms);
  const char* api = getenv("KILN_VULKAN_API_VERSION");
  printf("%s output digest %016llx (Vulkan API cap: %s)\n", name,
         (unsigned long long)kiln_output_digest(&actual), api && api[0] ? api : "none");
  KILN_EXPECT_TRUE(max_ref > 0.0);
  KILN_EXPECT_TRUE(max_err <= 1e-4 * max_ref);  // values printed above
  kiln_graph_tensor_deinit(&actual);
  kiln_test_model_release(&model);
}

static void kiln_check_model_on_gpu(const char* name, const char* input_shape) {
  kiln_check_model_dispatches(name, input_shape, 0);
}

KILN_TEST(OnnxGpuModelTest, MobileNetV2) { kiln_check_model_on_gpu("mobilenet_v2", NULL); }

KILN_TEST(OnnxGpuModelTest, ResNet18) { kiln_check_model_on_gpu("resnet18", NULL); }

KILN_TEST(OnnxGpuModelTest, TransformerEncoderLayer) {
  kiln_check_model_on_gpu("transformer_encoder", "input:2x10x64");
}

// Models a user is likely to try next (scripts/export_models.py exports them
// with torchvision's own builders at small inputs to keep CI time modest).
KILN_TEST(OnnxGpuModelTest, SqueezeNet11) { kiln_check_model_on_gpu("squeezenet1_1", NULL); }

KILN_TEST(OnnxGpuModelTest, ShuffleNetV2) { kiln_check_model_on_gpu("shufflenet_v2", NULL); }

KILN_TEST(OnnxGpuModelTest, MobileNetV3Small) {
  kiln_check_model_on_gpu("mobilenet_v3_small", NULL);
}

// Each SiLU (Mul(x, Sigmoid(x))) rides in its Conv's epilogue, the
// Flatten before the classifier is a view (no copy), and the nine
// squeeze-excite blocks of at most KILN_SE_MAX_PRODUCT hidden units x
// channels are one dispatch each (lower_squeeze_excite.c): 97 dispatches
// (115 with every block three, 214 with every SiLU a Sigmoid and a Mul).
KILN_TEST(OnnxGpuModelTest, EfficientNetB0) {
  kiln_check_model_dispatches("efficientnet_b0", NULL, 97);
}

KILN_TEST(OnnxGpuModelTest, MnasNet05) { kiln_check_model_on_gpu("mnasnet0_5", NULL); }

KILN_TEST(OnnxGpuModelTest, GoogLeNet) { kiln_check_model_on_gpu("googlenet", NULL); }

KILN_TEST(OnnxGpuModelTest, DenseNet121) { kiln_check_model_on_gpu("densenet121", NULL); }

KILN_TEST(OnnxGpuModelTest, RegNetY400MF) { kiln_check_model_on_gpu("regnet_y_400mf", NULL); }

KILN_TEST(OnnxGpuModelTest, ResNeXtGroupedConvs) { kiln_check_model_on_gpu("resnext_small", NULL); }

KILN_TEST(OnnxGpuModelTest, AlexNetLayout) { kiln_check_model_on_gpu("alexnet_small", NULL); }

KILN_TEST(OnnxGpuModelTest, VisionTransformer) { kiln_check_model_on_gpu("vit_tiny", NULL); }

KILN_TEST(OnnxGpuModelTest, SwinTransformer) { kiln_check_model_on_gpu("swin_small", NULL); }

// Two post-norm GELU layers and a final LayerNorm: 7 dispatches per layer
// (QKV GEMM, fused attention, out-projection GEMM, residual Add +
// LayerNorm, GEMM+GELU, GEMM+residual, LayerNorm) plus the final norm and
// a copy of the graph input for the first layer's [1, s, d] -> [s, 1, d]
// transpose. The transposes of size-1 dims and the reshape around
// attention are views in the memory plan (21 dispatches when they were
// copies, 61 before the attention, GELU and Add+LayerNorm fusions).
KILN_TEST(OnnxGpuModelTest, TransformerEncoderGelu) {
  kiln_check_model_dispatches("transformer_gelu", NULL, 16);
}

KILN_TEST(OnnxGpuModelTest, UNetUpsampling) { kiln_check_model_on_gpu("unet_small", NULL); }

KILN_TEST(OnnxGpuModelTest, Conv1dNet) { kiln_check_model_on_gpu("conv1d_net", NULL); }

KILN_TEST(OnnxGpuModelTest, MlpSoftmax) { kiln_check_model_on_gpu("mlp_softmax", NULL); }

KILN_TEST(OnnxGpuModelTest, ShapeArithmetic) { kiln_check_model_on_gpu("shape_ops", NULL); }

KILN_TEST(OnnxGpuModelTest, MaxVit) { kiln_check_model_on_gpu("maxvit_small", NULL); }

KILN_TEST(OnnxGpuModelTest, LstmTwoLayers) { kiln_check_model_on_gpu("lstm_net", NULL); }

KILN_TEST(OnnxGpuModelTest, GruBidirectional) { kiln_check_model_on_gpu("gru_net", NULL); }

KILN_TEST(OnnxGpuModelTest, LstmBidirectionalLong) {
  kiln_check_model_on_gpu("lstm_bidir_net", NULL);
}

KILN_TEST(OnnxGpuModelTest, RnnTanh) { kiln_check_model_on_gpu("rnn_net", NULL); }

KILN_TEST(OnnxGpuModelTest, SuperResolutionPixelShuffle) {
  kiln_check_model_on_gpu("super_resolution", NULL);
}

KILN_TEST(OnnxGpuModelTest, StyleTransfer) { kiln_check_model_on_gpu("style_transfer", NULL); }

KILN_TEST(OnnxGpuModelTest, DcganGenerator) { kiln_check_model_on_gpu("dcgan_generator", NULL); }

KILN_TEST(OnnxGpuModelTest, ActivationZoo) { kiln_check_model_on_gpu("activation_zoo", NULL); }

KILN_TEST(OnnxGpuModelTest, GptBlockCausalMask) { kiln_check_model_on_gpu("gpt_block", NULL); }

// The plain GPT-2 block (opset 17): LayerNorm, QKV GEMM, causal attention
// (the Where(tril == 0, -inf) mask becomes the kernel's causal flag, the
// q/k/v Split and head transposes its strides), out-projection GEMM +
// residual, LayerNorm, GEMM + GELU, GEMM + residual (27 before).
KILN_TEST(OnnxGpuModelTest, Gpt2BlockFusedCausalAttention) {
  kiln_check_model_dispatches("gpt2_block", NULL, 7);
}

// Text models: int64 token ids (1x16) in, Gather on the GPU from the
// module's i64 input view.
KILN_TEST(OnnxGpuModelTest, TextClassifierTokenIds) {
  kiln_check_model_on_gpu("text_classifier", NULL);
}

KILN_TEST(OnnxGpuModelTest, TinyBertTokenAndPositionEmbeddings) {
  kiln_check_model_on_gpu("tiny_bert", NULL);
}

// Token ids and an int64 attention mask: the mask enters float work through
// Unsqueeze + Cast (cast_int_to_f32 on the input binding) twice.
KILN_TEST(OnnxGpuModelTest, MaskedEncoderAttentionMask) {
  kiln_check_model_on_gpu("masked_encoder", NULL);
}

// conv -> scores (GPU) -> TopK (host, docs/partitioning.md) -> Gather and
// Mul (GPU again) against PyTorch; the dispatch count covers both GPU
// segments (its Reshape and the Unsqueeze of TopK's output are views: 11
// when they were copies).
KILN_TEST(OnnxGpuModelTest, DetectorTailSplitAroundTopK) {
  kiln_check_model_dispatches("detector_tail", NULL, 9);
}
