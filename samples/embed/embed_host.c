// A host program embedding kiln: it registers its own native module
// ("host"), loads embed.kiln, runs predict on its own data on the default
// Vulkan device and checks the result. Built against the installed library:
//   cc embed_host.c $(pkg-config --cflags --libs kiln) -o embed_host
//   ./embed_host embed.kiln [device-uri]
#include <stdio.h>
#include <stdlib.h>

#include "kiln/session.h"

// host.scale() -> f32: the factor predict multiplies by.
static kiln_status_t host_scale(kiln_vm_context_t* context, void* state,
                                const kiln_vm_value_t* args,
                                kiln_vm_value_t* results) {
  results[0] = kiln_vm_value_f32(2.5f);
  return kiln_ok_status();
}

// host.report(i64 count): the module tells the host how much it scaled.
static kiln_status_t host_report(kiln_vm_context_t* context, void* state,
                                 const kiln_vm_value_t* args,
                                 kiln_vm_value_t* results) {
  int64_t* reported = (int64_t*)state;
  *reported = args[0].i64;
  return kiln_ok_status();
}

static int64_t reported_count = -1;

static kiln_status_t host_create_state(void* user_data,
                                       kiln_vm_context_t* context,
                                       void** out_state) {
  *out_state = &reported_count;
  return kiln_ok_status();
}

static const kiln_vm_native_export_t host_exports[] = {
    {"scale", "v_f", host_scale},
    {"report", "I_v", host_report},
};

static kiln_status_t run(const char* module_path, const char* device) {
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  if (device) options.device_uri = device;
  kiln_session_t* session = NULL;
  KILN_RETURN_IF_ERROR(kiln_session_create(&options, &session));
  kiln_vm_native_module_desc_t host = {
      .name = "host", .exports = host_exports, .export_count = 2,
      .create_state = host_create_state};
  kiln_status_t status = kiln_session_add_native_module(session, &host);
  if (!status) status = kiln_session_load_module_file(session, module_path);
  kiln_vm_function_t predict;
  if (!status) status = kiln_session_lookup(session, "predict", &predict);

  float input[100], output[100];
  for (int i = 0; i < 100; ++i) input[i] = (float)i - 50.0f;
  int64_t shape[1] = {100};
  kiln_hal_buffer_view_t* view = NULL;
  if (!status) {
    status = kiln_session_buffer_view_from_host(
        session, KILN_HAL_ELEMENT_F32, 1, shape, input, sizeof(input), &view);
  }
  kiln_vm_value_t args[1] = {{0}}, results[1] = {{0}};
  if (!status) {
    status = kiln_hal_module_wrap_buffer_view(kiln_session_allocator(session),
                                              view, &args[0].ref);
  }
  if (!status) status = kiln_session_invoke(session, predict, args, 1, results, 1);
  kiln_hal_buffer_view_t* result = NULL;
  if (!status) {
    status = kiln_hal_module_unwrap_buffer_view(results[0].ref, "result", &result);
  }
  if (!status) {
    status = kiln_session_buffer_view_to_host(session, result, output,
                                              sizeof(output));
  }
  int wrong = 0;
  for (int i = 0; !status && i < 100; ++i) wrong += output[i] != input[i] * 2.5f;
  if (!status && (wrong || reported_count != 100)) {
    status = kiln_make_status(KILN_STATUS_INTERNAL,
                              "%d wrong elements, host.report saw %lld", wrong,
                              (long long)reported_count);
  }
  // Under KILN_VULKAN_VALIDATION=1 (the test suite), any message fails.
  uint64_t messages =
      kiln_hal_device_validation_message_count(kiln_session_device(session));
  if (!status && messages) {
    status = kiln_make_status(KILN_STATUS_INTERNAL, "%llu validation messages",
                              (unsigned long long)messages);
  }
  if (!status) printf("embed: predict scaled 100 elements by 2.5 correctly\n");
  kiln_vm_ref_release(args[0].ref);
  kiln_vm_ref_release(results[0].ref);
  kiln_hal_buffer_view_release(view);
  kiln_session_destroy(session);
  return status;
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s embed.kiln [device-uri]\n", argv[0]);
    return 2;
  }
  kiln_status_t status = run(argv[1], argc == 3 ? argv[2] : NULL);
  if (status) {
    char* text = kiln_status_to_string(status);
    fprintf(stderr, "embed: %s\n", text);
    free(text);
    kiln_status_free(status);
    return 1;
  }
  return 0;
}
