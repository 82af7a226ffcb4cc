// libFuzzer target: load + verify arbitrary bytes, then run every export
// with zero arguments under a fuel budget and an allocation limit, next to
// the test host module. Traps are fine; crashes, leaks and hangs are not.
#include <stdint.h>
#include <string.h>

#include "kiln/vm/vm.h"
#include "vm_test_util.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln_vm_instance_t* instance = NULL;
  kiln_vm_module_t* host = NULL;
  kiln_vm_module_t* module = NULL;
  kiln_vm_context_t* context = NULL;
  kiln_vm_module_load_options_t load_options = kiln_vm_module_load_options_default();
  load_options.max_rodata_bytes = 16u << 20;
  kiln_vm_context_options_t options = kiln_vm_context_options_default();
  options.max_allocation_bytes = 1u << 20;
  options.max_call_depth = 64;
  kiln_status_t status = kiln_vm_instance_create(kiln_allocator_system(), &instance);
  if (!status) status = kiln_vm_test_host_module(instance, &host);
  if (!status) {
    status = kiln_vm_module_load_from_memory(
        instance, kiln_make_const_byte_span(data, size), "fuzz", &load_options, &module);
  }
  if (!status) {
    kiln_vm_module_t* modules[2] = {host, module};
    status = kiln_vm_context_create(instance, modules, 2, &options, &context);
  }
  if (!status) {
    const kiln_format_module_t* format = kiln_vm_module_format(module);
    for (uint32_t e = 0; e < format->export_count && e < 8; ++e) {
      kiln_vm_function_t function;
      function.module_index = 1;
      function.ordinal = format->exports[e].function;
      function.signature =
          &format->signatures[format->functions[function.ordinal].signature];
      kiln_vm_value_t args[KILN_FORMAT_MAX_SIGNATURE_VALUES];
      kiln_vm_value_t results[KILN_FORMAT_MAX_SIGNATURE_VALUES];
      memset(args, 0, sizeof(args));
      for (uint32_t i = 0; i < function.signature->arg_count; ++i) {
        if (function.signature->types[i] == 'i') args[i].i32 = 3;  // small loops
      }
      kiln_vm_context_set_fuel(context, 20000);
      kiln_status_t run = kiln_vm_context_invoke(
          context, function, args, function.signature->arg_count, results,
          function.signature->result_count);
      if (!run) {
        for (uint32_t i = 0; i < function.signature->result_count; ++i) {
          if (function.signature->types[function.signature->arg_count + i] == 'r') {
            kiln_vm_ref_release(results[i].ref);
          }
        }
      }
      kiln_status_free(run);
    }
  }
  kiln_status_free(status);
  kiln_vm_context_destroy(context);
  kiln_vm_module_release(module);
  kiln_vm_module_release(host);
  if (instance) kiln_vm_instance_destroy(instance);
  return 0;
}
