// Helpers for VM tests: assemble text, load it next to a host native module
// ("host") and call exports by name.
#ifndef KILN_TESTS_VM_VM_TEST_UTIL_H_
#define KILN_TESTS_VM_VM_TEST_UTIL_H_

#include "kiln/base/byte_buffer.h"
#include "kiln/vm/vm.h"

typedef struct kiln_vm_test_env_t {
  kiln_vm_instance_t* instance;
  kiln_vm_module_t* host;
  kiln_vm_module_t* module;
  kiln_vm_context_t* context;
} kiln_vm_test_env_t;

// The host module: add "ii_i", fail "i_v" (errors when given non-zero),
// counter "v_i" (per-context state, counts calls), make_list "i_r" (an i32
// list of n elements 0..n-1), list_sum "r_I", echo_ref "r_r".
kiln_status_t kiln_vm_test_host_module(kiln_vm_instance_t* instance,
                                       kiln_vm_module_t** out_module);

kiln_status_t kiln_vm_test_assemble(const char* source,
                                    kiln_byte_buffer_t* out);
// Assembles `source`, loads it and makes a context [host, module].
kiln_status_t kiln_vm_test_env_init(kiln_vm_test_env_t* env,
                                    const char* source);
// Same with load options (NULL: defaults).
kiln_status_t kiln_vm_test_env_init_with_options(
    kiln_vm_test_env_t* env, const char* source,
    const kiln_vm_module_load_options_t* options);
void kiln_vm_test_env_deinit(kiln_vm_test_env_t* env);
kiln_status_t kiln_vm_test_call(kiln_vm_test_env_t* env, const char* name,
                                const kiln_vm_value_t* args, size_t arg_count,
                                kiln_vm_value_t* results, size_t result_count);

#endif  // KILN_TESTS_VM_VM_TEST_UTIL_H_
