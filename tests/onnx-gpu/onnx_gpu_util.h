// Compiles an ONNX graph to a module and runs it on the default device
// (KILN_TEST_DEVICE, else "vulkan") through kiln_session_t, with the
// validation layer on: any validation message is an error.
#ifndef KILN_TESTS_ONNX_GPU_ONNX_GPU_UTIL_H_
#define KILN_TESTS_ONNX_GPU_ONNX_GPU_UTIL_H_

#include <stddef.h>

#include "kiln/compiler/graph.h"
#include "kiln/compiler/graph_tensor.h"
#include "kiln/compiler/onnx_compile.h"
#include "kiln/session.h"

typedef struct kiln_gpu_run_stats_t {
  double compile_ms;
  double first_call_ms;   // includes pipeline creation and weight upload
  double second_call_ms;  // the record-once path: one submission
} kiln_gpu_run_stats_t;

// Compiles `graph` (the default passes run inside) and calls the module's
// `predict` twice on `inputs` (graph->input_count tensors, graph order);
// fills `outputs` (graph->output_count tensors, the second call's results;
// the caller deinits them). Fails if the two calls differ. Compile errors
// come back unchanged (UNIMPLEMENTED for an op without a lowering).
kiln_status_t kiln_gpu_compile_and_run(kiln_graph_t* graph,
                                       const kiln_onnx_compile_options_t* options,
                                       const kiln_graph_tensor_t* inputs,
                                       kiln_graph_tensor_t* outputs,
                                       kiln_gpu_run_stats_t* out_stats);

// Dispatches in a compiled module of `target_count` targets: its "grids"
// rodata holds three words per dispatch and target and a closing zero.
size_t kiln_gpu_module_dispatch_count(const kiln_byte_buffer_t* module, size_t target_count);
// Compiles `graph` with `options` and counts the module's dispatches.
kiln_status_t kiln_gpu_dispatch_count(kiln_graph_t* graph,
                                      const kiln_onnx_compile_options_t* options,
                                      size_t* out_count);

// A session on the test device with the validation layer on.
kiln_status_t kiln_gpu_open(kiln_session_t** out_session);
// One call: uploads `inputs`, invokes, reads every output back into
// `outputs` (allocated here; the caller deinits them).
kiln_status_t kiln_gpu_call(kiln_session_t* session, kiln_vm_function_t function,
                            const kiln_graph_t* graph, const kiln_graph_tensor_t* inputs,
                            kiln_graph_tensor_t* outputs);

// Small hand-built graphs: a float32 graph input of `shape`, a node with
// one new output (returned in *out_value; attributes are set by the caller
// on *out_node), and marking a value as the next graph output.
kiln_status_t kiln_gpu_graph_add_input(kiln_graph_t* graph, const char* name,
                                       const kiln_graph_shape_t* shape, int32_t* out_value);
kiln_status_t kiln_gpu_graph_add_node(kiln_graph_t* graph, const char* op_type,
                                      const int32_t* inputs, size_t input_count,
                                      int32_t* out_node, int32_t* out_value);
kiln_status_t kiln_gpu_graph_add_output(kiln_graph_t* graph, int32_t value);

#endif  // KILN_TESTS_ONNX_GPU_ONNX_GPU_UTIL_H_
