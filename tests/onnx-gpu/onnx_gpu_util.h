// Compiles an ONNX graph to a module and runs it on the default device
// (KILN_TEST_DEVICE, else "vulkan") through kiln_session_t, with the
// validation layer on: any validation message is an error.
#ifndef KILN_TESTS_ONNX_GPU_ONNX_GPU_UTIL_H_
#define KILN_TESTS_ONNX_GPU_ONNX_GPU_UTIL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

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
// The same, but the first call takes `first_inputs` (other values): the
// second call's results then show state a call leaves for the next (the
// split-K counters) rather than agreeing with a first call that had it.
kiln_status_t kiln_gpu_compile_and_run_after(kiln_graph_t* graph,
                                             const kiln_onnx_compile_options_t* options,
                                             const kiln_graph_tensor_t* first_inputs,
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

// Posing the test device as another (tests/onnx-gpu): KILN_TEST_DEVICE set
// to `uri` (e.g. "vulkan://0?triple=valhall-g78-android30") and
// KILN_VULKAN_API_VERSION to `api_version`, until kiln_test_pose_end puts
// both back as they were. NULL keeps a variable as it is (e.g. the vk11
// suite's 1.1 cap); "" removes it. On an error nothing stays changed and
// *out_saved needs no end. No fatal assertion may come between the two:
// it would leave the test with the pose still on.
typedef struct kiln_test_pose_t {
  bool device_set, api_set;  // which variables the pose changed
  char* device;              // their values before (NULL: unset)
  char* api_version;
} kiln_test_pose_t;
kiln_status_t kiln_test_pose_begin(const char* uri, const char* api_version,
                                   kiln_test_pose_t* out_saved);
// Restores and frees what kiln_test_pose_begin saved (a second call does
// nothing).
kiln_status_t kiln_test_pose_end(kiln_test_pose_t* saved);

// A module's disassembly, captured while it compiles: _begin points
// options->assembly_stream at an in-memory stream, _end closes it; only
// then are `text` (NUL-terminated) and `size` set, until _release.
typedef struct kiln_gpu_capture_t {
  FILE* stream;
  char* text;
  size_t size;
} kiln_gpu_capture_t;
kiln_status_t kiln_gpu_capture_begin(kiln_onnx_compile_options_t* options,
                                     kiln_gpu_capture_t* out_capture);
void kiln_gpu_capture_end(kiln_gpu_capture_t* capture);
void kiln_gpu_capture_release(kiln_gpu_capture_t* capture);
// Occurrences of `needle` in `text` (not overlapping).
size_t kiln_gpu_text_count(const char* text, const char* needle);
// The kernel dispatches a disassembly records: calls of
// hal.command_buffer.dispatch (the import's declaration not counted).
size_t kiln_gpu_text_dispatches(const char* text);

// A session on the test device with the validation layer on.
kiln_status_t kiln_gpu_open(kiln_session_t** out_session);
// Whether the test device has cooperative matrix, and its triple; a
// SKIPPED line on stderr when it has none (lavapipe).
kiln_status_t kiln_gpu_coopmat_triple(char* triple, size_t size, bool* out_has);
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
