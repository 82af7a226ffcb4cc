// com.microsoft::MatMulNBits MLPs made by onnxruntime's MatMulNBitsQuantizer
// (scripts/make_quant_models.py; tests/data/quant, block 32 and 128, with
// and without zero points): the reference executor and the GPU (lavapipe in
// CI) against onnxruntime's own outputs, <= 1e-4 max|ref| (at
// --precision=f16: <= 1e-2); the q4_zp repack
// against the reference dequantization bit for bit; malformed models
// refused naming the tensor or attribute.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/file.h"
#include "kiln/compiler/graph_reference.h"
#include "kiln/compiler/onnx.h"
#include "kiln/compiler/quant.h"
#include "kiln_test.h"
#include "npy.h"
#include "onnx_gpu_util.h"

static const char* kiln_quant_dir(void) {
  const char* dir = getenv("KILN_QUANT_MODELS_DIR");
  return dir ? dir : "tests/data/quant";
}

static kiln_status_t kiln_nbits_read_npy(const char* path, kiln_graph_tensor_t* out) {
  kiln_file_contents_t contents;
  KILN_RETURN_IF_ERROR(
      kiln_file_read_all_limited(path, 16u << 20, kiln_allocator_system(), &contents));
  kiln_host_tensor_t host;
  size_t offset = 0;
  kiln_status_t status =
      kiln_npy_parse(kiln_make_const_byte_span(contents.data, contents.size), path, &offset,
                     kiln_allocator_system(), &host);
  kiln_allocator_free(contents.allocator, contents.data);
  KILN_RETURN_IF_ERROR(status);
  kiln_graph_shape_t shape = {0};
  shape.rank = (int32_t)host.rank;
  for (size_t d = 0; d < host.rank && d < KILN_GRAPH_MAX_RANK; ++d) shape.dims[d] = host.dims[d];
  if (host.element_type == KILN_ELEMENT_F32 && host.rank <= KILN_GRAPH_MAX_RANK) {
    status = kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32, &shape, out);
    if (!status && host.byte_size) memcpy(out->data, host.data, host.byte_size);
  } else {
    status = kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "%s: expected float32", path);
  }
  kiln_host_tensor_deinit(&host);
  return status;
}

static double kiln_nbits_error(const kiln_graph_tensor_t* got, const kiln_graph_tensor_t* want) {
  if (!kiln_graph_shape_equal(&got->shape, &want->shape)) return INFINITY;
  double max_ref = 0, worst = 0;
  for (size_t i = 0; i < want->byte_size / sizeof(float); ++i) {
    const double w = ((const float*)want->data)[i], g = ((const float*)got->data)[i];
    max_ref = fmax(max_ref, fabs(w));
    if (!(fabs(g - w) <= worst)) worst = isnan(g - w) ? INFINITY : fabs(g - w);
  }
  return max_ref > 0 ? worst / max_ref : INFINITY;
}

// Each MatMulNBits node's weight through the q4_zp repack and its
// dequantizer against (code - zero point) * scale computed here.
static void kiln_nbits_check_repack(const kiln_graph_t* graph) {
  for (size_t i = 0; i < graph->node_count; ++i) {
    const kiln_graph_node_t* node = &graph->nodes[i];
    if (strcmp(node->op_type, "MatMulNBits") != 0) continue;
    int64_t k = 0, n = 0, block = 0;
    KILN_ASSERT_OK(kiln_graph_node_attr_int(node, "K", 0, &k));
    KILN_ASSERT_OK(kiln_graph_node_attr_int(node, "N", 0, &n));
    KILN_ASSERT_OK(kiln_graph_node_attr_int(node, "block_size", 0, &block));
    const uint8_t* b = graph->values[node->inputs[1]].data;
    const float* scales = graph->values[node->inputs[2]].data;
    const uint8_t* zp = node->input_count > 3 && node->inputs[3] >= 0
                            ? graph->values[node->inputs[3]].data
                            : NULL;
    const uint64_t row_bytes = kiln_quant_row_bytes(KILN_QUANT_Q4_ZP, (uint64_t)k);
    uint8_t* packed = malloc((size_t)(n * row_bytes));
    float* w = malloc((size_t)(n * k) * sizeof(float));
    KILN_ASSERT_TRUE(packed && w);
    kiln_quant_q4_zp_from_nbits(b, scales, zp, (uint64_t)n, (uint64_t)k, (uint64_t)block, packed);
    KILN_ASSERT_OK(kiln_quant_unpack(KILN_QUANT_Q4_ZP, packed, (uint64_t)n, (uint64_t)k, w));
    const int64_t k_blocks = (k + block - 1) / block;
    size_t mismatches = 0;
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t e = 0; e < k; ++e) {
        const int64_t bi = e / block, off = e % block;
        const int code = (b[(j * k_blocks + bi) * (block / 2) + off / 2] >> (4 * (off & 1))) & 15;
        const int z = zp ? (zp[j * ((k_blocks + 1) / 2) + bi / 2] >> (4 * (bi & 1))) & 15 : 8;
        mismatches += w[j * k + e] != (float)(code - z) * scales[j * k_blocks + bi];
      }
    }
    KILN_EXPECT_EQ(mismatches, 0u);
    free(packed);
    free(w);
  }
}

static void kiln_check_nbits_model(const char* name) {
  char path[1024], x_path[1024], y_path[1024], fp32_path[1024];
  snprintf(path, sizeof(path), "%s/%s/model.onnx", kiln_quant_dir(), name);
  snprintf(x_path, sizeof(x_path), "%s/%s/input_0.npy", kiln_quant_dir(), name);
  snprintf(y_path, sizeof(y_path), "%s/%s/output_0.npy", kiln_quant_dir(), name);
  snprintf(fp32_path, sizeof(fp32_path), "%s/%s/output_fp32.npy", kiln_quant_dir(), name);
  kiln_graph_tensor_t x, ort, fp32, cpu, gpu;
  KILN_ASSERT_OK(kiln_nbits_read_npy(x_path, &x));
  KILN_ASSERT_OK(kiln_nbits_read_npy(y_path, &ort));
  KILN_ASSERT_OK(kiln_nbits_read_npy(fp32_path, &fp32));
  kiln_onnx_compile_options_t options;
  kiln_onnx_compile_options_init(&options);
  kiln_graph_t graph;
  KILN_ASSERT_OK(kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
  kiln_nbits_check_repack(&graph);
  KILN_ASSERT_OK(kiln_graph_reference_run(&graph, &x, 1, NULL, kiln_allocator_system(), &cpu));
  kiln_gpu_run_stats_t stats;
  KILN_ASSERT_OK(kiln_gpu_compile_and_run(&graph, &options, &x, &gpu, &stats));
  const double cpu_err = kiln_nbits_error(&cpu, &ort), gpu_err = kiln_nbits_error(&gpu, &ort);
  printf("%s: vs onnxruntime: reference %.2g, GPU %.2g of max|ref|; onnxruntime vs the fp32 "
         "MLP %.3g\n",
         name, cpu_err, gpu_err, kiln_nbits_error(&ort, &fp32));
  KILN_EXPECT_TRUE(cpu_err <= 1e-4);
  KILN_EXPECT_TRUE(gpu_err <= 1e-4);
  // --precision=f16: activations f16 in memory (qgemm_f16), the q4_zp
  // words unchanged; within 1e-2 of onnxruntime's max|ref|.
  kiln_graph_tensor_t half;
  kiln_graph_deinitialize(&graph);
  options.precision = KILN_ONNX_PRECISION_F16;
  KILN_ASSERT_OK(kiln_onnx_import_file(path, &options.import, kiln_allocator_system(), &graph));
  KILN_ASSERT_OK(kiln_gpu_compile_and_run(&graph, &options, &x, &half, &stats));
  const double f16_err = kiln_nbits_error(&half, &ort);
  printf("%s at f16: vs onnxruntime %.2g of max|ref|\n", name, f16_err);
  KILN_EXPECT_TRUE(f16_err <= 1e-2);
  kiln_graph_tensor_deinit(&half);
  kiln_graph_tensor_deinit(&x);
  kiln_graph_tensor_deinit(&ort);
  kiln_graph_tensor_deinit(&fp32);
  kiln_graph_tensor_deinit(&cpu);
  kiln_graph_tensor_deinit(&gpu);
  kiln_graph_deinitialize(&graph);
}

KILN_TEST(MatMulNBitsTest, Block32Symmetric) { kiln_check_nbits_model("nbits_b32_sym"); }
KILN_TEST(MatMulNBitsTest, Block32ZeroPoints) { kiln_check_nbits_model("nbits_b32_zp"); }
KILN_TEST(MatMulNBitsTest, Block128Symmetric) { kiln_check_nbits_model("nbits_b128_sym"); }
KILN_TEST(MatMulNBitsTest, Block128ZeroPoints) { kiln_check_nbits_model("nbits_b128_zp"); }

static void kiln_expect_refused(const char* name, const char* substring) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s/model.onnx", kiln_quant_dir(), name);
  kiln_graph_t graph;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, substring,
                             kiln_onnx_import_file(path, NULL, kiln_allocator_system(), &graph));
}

KILN_TEST(MatMulNBitsTest, MalformedRefusedNamingTheTensor) {
  kiln_expect_refused("bad_zero_scale", "'w1_scales' element 3 is 0");
  kiln_expect_refused("bad_short_b", "'w1_Q4'");
  kiln_expect_refused("bad_block_size", "block_size 48 is not a power of two");
}
