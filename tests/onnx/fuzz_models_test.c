// Mutated node-test models (seeded byte flips): import, passes and — when
// every tensor is small — a reference run on zeros. Untrusted models must
// give a result or an error, never a crash, hang or leak (ASan/UBSan/LSan
// watch this test).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/file.h"
#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/graph_reference.h"
#include "kiln/compiler/onnx.h"
#include "kiln_test.h"

static bool kiln_small_graph(const kiln_graph_t* graph) {
  size_t total = 0;
  for (size_t v = 0; v < graph->value_count; ++v) {
    size_t count = 0;
    kiln_status_t status =
        kiln_graph_shape_element_count(&graph->values[v].shape, &count);
    if (!kiln_status_is_ok(status)) {
      kiln_status_free(status);
      continue;  // values never given a shape (unused outputs)
    }
    total += count;
  }
  return total < 100000;
}

static void kiln_try_run(kiln_graph_t* graph) {
  kiln_graph_tensor_t inputs[16];
  kiln_graph_tensor_t outputs[16];
  if (graph->input_count > 16 || graph->output_count > 16 ||
      !kiln_small_graph(graph)) {
    return;
  }
  size_t made = 0;
  kiln_status_t status = kiln_ok_status();
  for (; made < graph->input_count && kiln_status_is_ok(status); ++made) {
    const kiln_graph_value_t* v = &graph->values[graph->inputs[made]];
    status = kiln_graph_tensor_allocate(kiln_allocator_system(), v->dtype,
                                        &v->shape, &inputs[made]);
  }
  if (kiln_status_is_ok(status)) {
    status = kiln_graph_reference_run(graph, inputs, graph->input_count, NULL,
                                      kiln_allocator_system(), outputs);
    if (kiln_status_is_ok(status)) {
      for (size_t i = 0; i < graph->output_count; ++i) {
        kiln_graph_tensor_deinit(&outputs[i]);
      }
    }
  } else {
    --made;
  }
  kiln_status_free(status);
  for (size_t i = 0; i < made; ++i) kiln_graph_tensor_deinit(&inputs[i]);
}

KILN_TEST(OnnxFuzzTest, MutatedModelsNeverCrash) {
  static const char* const kModels[] = {
      "test_conv_with_strides_and_asymmetric_padding", "test_maxpool_2d_ceil",
      "test_resize_upsample_scales_linear", "test_slice_neg_steps",
      "test_gather_negative_indices", "test_reshape_negative_extended_dims",
      "test_convtranspose_pads", "test_averagepool_2d_pads_count_include_pad",
      "test_layer_normalization_4d_axis_negative_2", "test_split_equal_parts_2d",
      "test_softmax_axis_1_expanded", "test_edge_pad", "test_gemm_all_attributes",
      "test_where_long_example", "test_greater_equal_bcast", "test_mean_example",
  };
  uint32_t rng = 7;
  size_t imported = 0, total = 0;
  for (size_t m = 0; m < sizeof(kModels) / sizeof(kModels[0]); ++m) {
    char path[512];
    snprintf(path, sizeof(path),
             "/usr/share/libonnx-testdata/data/node/%s/model.onnx", kModels[m]);
    kiln_file_contents_t contents;
    KILN_ASSERT_OK(kiln_file_read_all(path, kiln_allocator_system(), &contents));
    uint8_t* copy = malloc(contents.size);
    for (int round = 0; round < 1500; ++round) {
      memcpy(copy, contents.data, contents.size);
      int flips = 1 + round % 4;
      for (int f = 0; f < flips; ++f) {
        rng = rng * 1664525u + 1013904223u;
        size_t at = (rng >> 8) % contents.size;
        rng = rng * 1664525u + 1013904223u;
        copy[at] = (uint8_t)(rng >> 24);
      }
      kiln_graph_t graph;
      kiln_status_t status = kiln_onnx_import_bytes(
          copy, contents.size, kModels[m], NULL, kiln_allocator_system(), &graph);
      ++total;
      if (!kiln_status_is_ok(status)) {
        kiln_status_free(status);
        continue;
      }
      ++imported;
      kiln_try_run(&graph);
      status = kiln_graph_run_default_passes(&graph);
      if (kiln_status_is_ok(status)) kiln_try_run(&graph);
      kiln_status_free(status);
      kiln_graph_deinitialize(&graph);
    }
    free(copy);
    kiln_file_contents_deinit(&contents);
  }
  printf("mutated models: %zu tried, %zu imported and run\n", total, imported);
  KILN_EXPECT_GT(imported, 0u);
}
