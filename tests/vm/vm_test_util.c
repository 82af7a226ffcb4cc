#include "vm_test_util.h"

#include <string.h>

#include "kiln/compiler/assembler.h"

static kiln_status_t kiln_host_add(kiln_vm_context_t* context, void* state,
                                   const kiln_vm_value_t* args,
                                   kiln_vm_value_t* results) {
  results[0].i32 = (int32_t)((uint32_t)args[0].i32 + (uint32_t)args[1].i32);
  return kiln_ok_status();
}

static kiln_status_t kiln_host_fail(kiln_vm_context_t* context, void* state,
                                    const kiln_vm_value_t* args,
                                    kiln_vm_value_t* results) {
  if (args[0].i32 != 0) {
    return kiln_make_status(KILN_STATUS_UNAVAILABLE, "host.fail called with %d",
                            args[0].i32);
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_host_counter(kiln_vm_context_t* context, void* state,
                                       const kiln_vm_value_t* args,
                                       kiln_vm_value_t* results) {
  int32_t* count = (int32_t*)state;
  results[0].i32 = ++*count;
  return kiln_ok_status();
}

static kiln_status_t kiln_host_make_list(kiln_vm_context_t* context,
                                         void* state,
                                         const kiln_vm_value_t* args,
                                         kiln_vm_value_t* results) {
  // Bounded like any host function facing untrusted bytecode.
  if (args[0].i32 < 0 || args[0].i32 > 65536) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "host.make_list: length %d outside [0, 65536]",
                            args[0].i32);
  }
  kiln_vm_list_t* list = NULL;
  KILN_RETURN_IF_ERROR(kiln_vm_list_create(kiln_vm_context_allocator(context),
                                           KILN_VM_LIST_I32, 0, &list));
  kiln_status_t status = kiln_vm_list_resize(list, (uint32_t)args[0].i32);
  if (status) {
    kiln_vm_ref_release(&list->header);
    return status;
  }
  for (int32_t i = 0; i < args[0].i32; ++i) ((int32_t*)list->data)[i] = i;
  results[0].ref = &list->header;
  return kiln_ok_status();
}

static kiln_status_t kiln_host_list_sum(kiln_vm_context_t* context,
                                        void* state,
                                        const kiln_vm_value_t* args,
                                        kiln_vm_value_t* results) {
  KILN_RETURN_IF_ERROR(kiln_vm_ref_check(args[0].ref, &kiln_vm_list_type,
                                         "host.list_sum argument 0"));
  const kiln_vm_list_t* list = (const kiln_vm_list_t*)args[0].ref;
  int64_t sum = 0;
  for (uint32_t i = 0; i < list->size; ++i) sum += ((int32_t*)list->data)[i];
  results[0].i64 = sum;
  return kiln_ok_status();
}

static kiln_status_t kiln_host_echo_ref(kiln_vm_context_t* context,
                                        void* state,
                                        const kiln_vm_value_t* args,
                                        kiln_vm_value_t* results) {
  kiln_vm_ref_retain(args[0].ref);
  results[0].ref = args[0].ref;
  return kiln_ok_status();
}

static kiln_status_t kiln_host_create_state(void* user_data,
                                            kiln_vm_context_t* context,
                                            void** out_state) {
  // The system allocator on both ends: destroy_state gets no context.
  return kiln_allocator_calloc(kiln_allocator_system(), sizeof(int32_t),
                               out_state);
}

static void kiln_host_destroy_state(void* user_data, void* state) {
  kiln_allocator_free(kiln_allocator_system(), state);
}

static const kiln_vm_native_export_t kiln_host_exports[] = {
    {"add", "ii_i", kiln_host_add},
    {"fail", "i_v", kiln_host_fail},
    {"counter", "v_i", kiln_host_counter},
    {"make_list", "i_r", kiln_host_make_list},
    {"list_sum", "r_I", kiln_host_list_sum},
    {"echo_ref", "r_r", kiln_host_echo_ref},
};

kiln_status_t kiln_vm_test_host_module(kiln_vm_instance_t* instance,
                                       kiln_vm_module_t** out_module) {
  kiln_vm_native_module_desc_t desc;
  memset(&desc, 0, sizeof(desc));
  desc.name = "host";
  desc.exports = kiln_host_exports;
  desc.export_count = sizeof(kiln_host_exports) / sizeof(kiln_host_exports[0]);
  desc.create_state = kiln_host_create_state;
  desc.destroy_state = kiln_host_destroy_state;
  return kiln_vm_module_create_native(instance, &desc, out_module);
}

kiln_status_t kiln_vm_test_assemble(const char* source,
                                    kiln_byte_buffer_t* out) {
  kiln_byte_buffer_init(out, kiln_allocator_system());
  kiln_status_t status = kiln_assembler_assemble(
      kiln_make_cstring_view(source), "test.kasm", kiln_allocator_system(), out);
  if (status) kiln_byte_buffer_deinit(out);
  return status;
}

kiln_status_t kiln_vm_test_env_init(kiln_vm_test_env_t* env,
                                    const char* source) {
  return kiln_vm_test_env_init_with_options(env, source, NULL);
}

kiln_status_t kiln_vm_test_env_init_with_options(
    kiln_vm_test_env_t* env, const char* source,
    const kiln_vm_module_load_options_t* options) {
  memset(env, 0, sizeof(*env));
  kiln_byte_buffer_t bytes;
  KILN_RETURN_IF_ERROR(kiln_vm_test_assemble(source, &bytes));
  kiln_status_t status =
      kiln_vm_instance_create(kiln_allocator_system(), &env->instance);
  if (!status) status = kiln_vm_test_host_module(env->instance, &env->host);
  if (!status) {
    status = kiln_vm_module_load_from_memory(
        env->instance, kiln_byte_buffer_span(&bytes), "test.kasm", options,
        &env->module);
  }
  kiln_byte_buffer_deinit(&bytes);
  if (!status) {
    kiln_vm_module_t* modules[2] = {env->host, env->module};
    status = kiln_vm_context_create(env->instance, modules, 2, NULL,
                                    &env->context);
  }
  if (status) kiln_vm_test_env_deinit(env);
  return status;
}

void kiln_vm_test_env_deinit(kiln_vm_test_env_t* env) {
  kiln_vm_context_destroy(env->context);
  kiln_vm_module_release(env->module);
  kiln_vm_module_release(env->host);
  kiln_vm_instance_destroy(env->instance);
  memset(env, 0, sizeof(*env));
}

kiln_status_t kiln_vm_test_call(kiln_vm_test_env_t* env, const char* name,
                                const kiln_vm_value_t* args, size_t arg_count,
                                kiln_vm_value_t* results, size_t result_count) {
  kiln_vm_function_t function;
  KILN_RETURN_IF_ERROR(kiln_vm_context_find_function(env->context, name, &function));
  return kiln_vm_context_invoke(env->context, function, args, arg_count,
                                results, result_count);
}
