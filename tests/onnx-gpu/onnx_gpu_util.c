// See onnx_gpu_util.h.
#include "onnx_gpu_util.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/time.h"
#include "kiln/format/module_reader.h"
#include "kiln/hal/target_triple.h"
#include "kiln/session.h"

size_t kiln_gpu_module_dispatch_count(const kiln_byte_buffer_t* module, size_t target_count) {
  kiln_format_module_t format;
  kiln_format_read_options_t read = kiln_format_read_options_default();
  kiln_status_t status = kiln_format_module_read(kiln_byte_buffer_span(module), "count", &read,
                                                 kiln_allocator_system(), &format);
  if (status) {
    kiln_status_free(status);
    return 0;
  }
  size_t count = 0;
  for (uint32_t i = 0; i < format.rodata_count && target_count; ++i) {
    if (kiln_string_view_equal_cstring(format.rodata[i].name, "grids")) {
      count = (size_t)(format.rodata[i].size - 4) / (12 * target_count);
    }
  }
  kiln_format_module_deinit(&format);
  return count;
}

kiln_status_t kiln_gpu_dispatch_count(kiln_graph_t* graph,
                                      const kiln_onnx_compile_options_t* options,
                                      size_t* out_count) {
  *out_count = 0;
  kiln_byte_buffer_t module;
  kiln_byte_buffer_init(&module, kiln_allocator_system());
  kiln_status_t status = kiln_onnx_compile_graph(graph, options, kiln_allocator_system(), &module);
  if (!status) {
    size_t targets = options && options->target_count ? options->target_count
                                                      : kiln_onnx_compile_default_target_count;
    *out_count = kiln_gpu_module_dispatch_count(&module, targets);
  }
  kiln_byte_buffer_deinit(&module);
  return status;
}

// Sets `name` to `value` ("": removes it); *out_before gets the old value
// (NULL: it was unset), which the caller frees.
static kiln_status_t kiln_test_env_swap(const char* name, const char* value, char** out_before) {
  const char* before = getenv(name);
  *out_before = before ? strdup(before) : NULL;
  if (before && !*out_before) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory saving %s", name);
  }
  if ((value[0] ? setenv(name, value, 1) : unsetenv(name)) != 0) {
    const int error = errno;
    free(*out_before);
    *out_before = NULL;
    return kiln_make_status(KILN_STATUS_INTERNAL, "setting %s to '%s': %s", name, value,
                            strerror(error));
  }
  return kiln_ok_status();
}

// Puts `name` back to *before (NULL: unset) and frees it.
static kiln_status_t kiln_test_env_restore(const char* name, char** before) {
  const int rc = *before ? setenv(name, *before, 1) : unsetenv(name);
  const int error = errno;
  free(*before);
  *before = NULL;
  return rc == 0 ? kiln_ok_status()
                 : kiln_make_status(KILN_STATUS_INTERNAL, "restoring %s: %s", name,
                                    strerror(error));
}

kiln_status_t kiln_test_pose_begin(const char* uri, const char* api_version,
                                   kiln_test_pose_t* out_saved) {
  memset(out_saved, 0, sizeof(*out_saved));
  kiln_status_t status = kiln_ok_status();
  if (uri) {
    status = kiln_test_env_swap("KILN_TEST_DEVICE", uri, &out_saved->device);
    out_saved->device_set = !status;
  }
  if (!status && api_version) {
    status = kiln_test_env_swap("KILN_VULKAN_API_VERSION", api_version,
                                &out_saved->api_version);
    out_saved->api_set = !status;
  }
  if (status) kiln_status_ignore(kiln_test_pose_end(out_saved));
  return status;
}

kiln_status_t kiln_test_pose_end(kiln_test_pose_t* saved) {
  kiln_status_t status = kiln_ok_status();
  if (saved->api_set) {
    status = kiln_test_env_restore("KILN_VULKAN_API_VERSION", &saved->api_version);
    saved->api_set = false;
  }
  if (saved->device_set) {
    kiln_status_t device = kiln_test_env_restore("KILN_TEST_DEVICE", &saved->device);
    saved->device_set = false;
    if (status) {
      kiln_status_ignore(device);
    } else {
      status = device;
    }
  }
  return status;
}

kiln_status_t kiln_gpu_capture_begin(kiln_onnx_compile_options_t* options,
                                     kiln_gpu_capture_t* out_capture) {
  memset(out_capture, 0, sizeof(*out_capture));
  out_capture->stream = open_memstream(&out_capture->text, &out_capture->size);
  if (!out_capture->stream) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "open_memstream: %s",
                            strerror(errno));
  }
  options->assembly_stream = out_capture->stream;
  return kiln_ok_status();
}

void kiln_gpu_capture_end(kiln_gpu_capture_t* capture) {
  if (capture->stream) fclose(capture->stream);
  capture->stream = NULL;
}

void kiln_gpu_capture_release(kiln_gpu_capture_t* capture) {
  kiln_gpu_capture_end(capture);
  free(capture->text);
  capture->text = NULL;
  capture->size = 0;
}

size_t kiln_gpu_text_count(const char* text, const char* needle) {
  size_t count = 0;
  const size_t length = strlen(needle);
  for (const char* at = text ? strstr(text, needle) : NULL; at && length;
       at = strstr(at + length, needle)) {
    ++count;
  }
  return count;
}

size_t kiln_gpu_text_dispatches(const char* text) {
  return kiln_gpu_text_count(text, "call.import hal.command_buffer.dispatch ");
}

kiln_status_t kiln_gpu_open(kiln_session_t** out_session) {
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  const char* device = getenv("KILN_TEST_DEVICE");
  if (device && device[0]) options.device_uri = device;
  options.enable_validation = true;
  KILN_RETURN_IF_ERROR(kiln_session_create(&options, out_session));
  // Keeps lavapipe mapped after the loader unloads it, so its known leak
  // (tests/hal/lsan_suppressions.txt) is attributed by name.
  if (kiln_hal_device_info(kiln_session_device(*out_session))->driver_id == 13) {
    (void)dlopen("libvulkan_lvp.so", RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_gpu_coopmat_triple(char* triple, size_t size, bool* out_has) {
  *out_has = false;
  kiln_session_t* session = NULL;
  KILN_RETURN_IF_ERROR(kiln_gpu_open(&session));
  const kiln_hal_device_info_t* info = kiln_hal_device_info(kiln_session_device(session));
  *out_has = info->cooperative_matrix_shape_count > 0;
  kiln_target_triple_format(&info->triple, triple, size);
  if (!*out_has) fprintf(stderr, "SKIPPED: device '%s' lacks cooperative matrix\n", info->name);
  kiln_session_destroy(session);
  return kiln_ok_status();
}

kiln_status_t kiln_gpu_call(kiln_session_t* session, kiln_vm_function_t function,
                                   const kiln_graph_t* graph,
                                   const kiln_graph_tensor_t* inputs,
                                   kiln_graph_tensor_t* outputs) {
  size_t in_count = graph->input_count, out_count = graph->output_count;
  kiln_vm_value_t* args = calloc(in_count + 1, sizeof(*args));
  kiln_vm_value_t* results = calloc(out_count + 1, sizeof(*results));
  kiln_status_t status = args && results ? kiln_ok_status()
                                         : kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                                                            "out of memory");
  for (size_t i = 0; i < in_count && !status; ++i) {
    const kiln_graph_tensor_t* t = &inputs[i];
    // Token ids go in as the integer views the module asserts.
    kiln_hal_element_type_t element = t->dtype == KILN_GRAPH_DTYPE_I64    ? KILN_HAL_ELEMENT_I64
                                      : t->dtype == KILN_GRAPH_DTYPE_I32  ? KILN_HAL_ELEMENT_I32
                                      : t->dtype == KILN_GRAPH_DTYPE_F16  ? KILN_HAL_ELEMENT_F16
                                      : t->dtype == KILN_GRAPH_DTYPE_BOOL ? KILN_HAL_ELEMENT_BOOL
                                                                          : KILN_HAL_ELEMENT_F32;
    kiln_hal_buffer_view_t* view = NULL;
    status = kiln_session_buffer_view_from_host(session, element,
                                                (size_t)t->shape.rank, t->shape.dims,
                                                t->data, t->byte_size, &view);
    if (!status) {
      status = kiln_hal_module_wrap_buffer_view(kiln_session_allocator(session), view,
                                                &args[i].ref);
      kiln_hal_buffer_view_release(view);
    }
  }
  if (!status) status = kiln_session_invoke(session, function, args, in_count, results, out_count);
  for (size_t o = 0; o < out_count && !status; ++o) {
    const kiln_graph_value_t* value = &graph->values[graph->outputs[o]];
    kiln_hal_buffer_view_t* view = NULL;
    status = kiln_hal_module_unwrap_buffer_view(results[o].ref, "result", &view);
    // The view's shape: a data-dependent output (NonZero, NMS) has fewer
    // rows than the graph's bound.
    kiln_graph_shape_t shape = value->shape;
    if (!status && kiln_hal_buffer_view_rank(view) == (size_t)shape.rank) {
      for (int32_t d = 0; d < shape.rank; ++d) {
        shape.dims[d] = kiln_hal_buffer_view_dim(view, (size_t)d);
      }
    }
    if (!status) {
      status = kiln_graph_tensor_allocate(kiln_allocator_system(), value->dtype, &shape,
                                          &outputs[o]);
    }
    if (!status) {
      status = kiln_session_buffer_view_to_host(session, view, outputs[o].data,
                                                outputs[o].byte_size);
    }
  }
  for (size_t i = 0; args && i < in_count; ++i) kiln_vm_ref_release(args[i].ref);
  for (size_t o = 0; results && o < out_count; ++o) kiln_vm_ref_release(results[o].ref);
  free(args);
  free(results);
  return status;
}

kiln_status_t kiln_gpu_compile_and_run(kiln_graph_t* graph,
                                       const kiln_onnx_compile_options_t* options,
                                       const kiln_graph_tensor_t* inputs,
                                       kiln_graph_tensor_t* outputs,
                                       kiln_gpu_run_stats_t* out_stats) {
  return kiln_gpu_compile_and_run_after(graph, options, inputs, inputs, outputs, out_stats);
}

kiln_status_t kiln_gpu_compile_and_run_after(kiln_graph_t* graph,
                                             const kiln_onnx_compile_options_t* options,
                                             const kiln_graph_tensor_t* first_inputs,
                                             const kiln_graph_tensor_t* inputs,
                                             kiln_graph_tensor_t* outputs,
                                             kiln_gpu_run_stats_t* out_stats) {
  memset(out_stats, 0, sizeof(*out_stats));
  size_t out_count = graph->output_count;
  memset(outputs, 0, out_count * sizeof(*outputs));
  kiln_byte_buffer_t module;
  kiln_byte_buffer_init(&module, kiln_allocator_system());
  int64_t start = kiln_time_now_ns();
  kiln_status_t status =
      kiln_onnx_compile_graph(graph, options, kiln_allocator_system(), &module);
  out_stats->compile_ms = (double)(kiln_time_now_ns() - start) * 1e-6;
  if (status) {
    kiln_byte_buffer_deinit(&module);
    return status;
  }
  kiln_session_t* session = NULL;
  status = kiln_gpu_open(&session);
  if (!status) {
    status = kiln_session_load_module_memory(session, kiln_byte_buffer_span(&module),
                                             graph->source);
  }
  kiln_vm_function_t function;
  if (!status) {
    status = kiln_session_lookup(
        session, options && options->function_name ? options->function_name : "predict",
        &function);
  }
  kiln_graph_tensor_t* first = calloc(out_count, sizeof(*first));
  if (!status && !first) status = kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "oom");
  if (!status) {
    start = kiln_time_now_ns();
    status = kiln_gpu_call(session, function, graph, first_inputs, first);
    out_stats->first_call_ms = (double)(kiln_time_now_ns() - start) * 1e-6;
  }
  if (!status) {
    start = kiln_time_now_ns();
    status = kiln_gpu_call(session, function, graph, inputs, outputs);
    out_stats->second_call_ms = (double)(kiln_time_now_ns() - start) * 1e-6;
  }
  // The recorded command buffer is reused: both calls must agree exactly.
  for (size_t o = 0; o < out_count && !status && first_inputs == inputs; ++o) {
    if (memcmp(first[o].data, outputs[o].data, outputs[o].byte_size) != 0) {
      status = kiln_make_status(KILN_STATUS_DATA_LOSS,
                                "output %zu differs between the first and second call", o);
    }
  }
  if (!status && session) {
    kiln_hal_device_t* device = kiln_session_device(session);
    uint64_t messages = kiln_hal_device_validation_message_count(device);
    if (messages) {
      status = kiln_make_status(KILN_STATUS_INTERNAL, "%llu validation messages; last: %s",
                                (unsigned long long)messages,
                                kiln_hal_device_last_validation_message(device));
    }
  }
  for (size_t o = 0; first && o < out_count; ++o) kiln_graph_tensor_deinit(&first[o]);
  free(first);
  if (status) {
    for (size_t o = 0; o < out_count; ++o) kiln_graph_tensor_deinit(&outputs[o]);
  }
  if (session) kiln_session_destroy(session);
  kiln_byte_buffer_deinit(&module);
  return status;
}

kiln_status_t kiln_gpu_graph_add_input(kiln_graph_t* graph, const char* name,
                                       const kiln_graph_shape_t* shape, int32_t* out_value) {
  KILN_RETURN_IF_ERROR(kiln_graph_add_value(graph, name, KILN_GRAPH_DTYPE_F32, out_value));
  kiln_graph_value_t* value = &graph->values[*out_value];
  value->has_shape = true;
  value->shape = *shape;
  value->is_input = true;
  KILN_RETURN_IF_ERROR(kiln_allocator_realloc_array(graph->allocator, graph->input_count + 1,
                                                    sizeof(int32_t), (void**)&graph->inputs));
  graph->inputs[graph->input_count++] = *out_value;
  return kiln_ok_status();
}

kiln_status_t kiln_gpu_graph_add_node(kiln_graph_t* graph, const char* op_type,
                                      const int32_t* inputs, size_t input_count,
                                      int32_t* out_node, int32_t* out_value) {
  KILN_RETURN_IF_ERROR(kiln_graph_add_value(graph, NULL, KILN_GRAPH_DTYPE_INVALID, out_value));
  return kiln_graph_add_node(graph, op_type, NULL, inputs, input_count, out_value, 1, out_node);
}

kiln_status_t kiln_gpu_graph_add_output(kiln_graph_t* graph, int32_t value) {
  KILN_RETURN_IF_ERROR(kiln_allocator_realloc_array(graph->allocator, graph->output_count + 1,
                                                    sizeof(int32_t), (void**)&graph->outputs));
  graph->outputs[graph->output_count++] = value;
  graph->values[value].is_output = true;
  return kiln_ok_status();
}
