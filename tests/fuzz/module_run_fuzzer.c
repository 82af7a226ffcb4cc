// libFuzzer target: load + verify arbitrary bytes, then run every export
// with small arguments under a fuel budget and an allocation limit, next to
// the test host module. Traps are fine; crashes, leaks and hangs are not.
// The bytes run twice, with and without the load-time superinstructions,
// and the two runs must agree on every result, trap message and the fuel
// left: a fused handler that diverges from the plain ops aborts.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/vm/vm.h"
#include "vm_test_util.h"

#define KILN_FUZZ_MAX_EXPORTS 8

// What one export's run left behind, compared between the two runs.
typedef struct kiln_fuzz_outcome_t {
  int ran;
  kiln_status_code_t code;
  char message[256];
  uint64_t fuel_left;
  uint64_t words[KILN_FORMAT_MAX_SIGNATURE_VALUES];  // refs: null or not
} kiln_fuzz_outcome_t;

static void kiln_fuzz_run(const uint8_t* data, size_t size, bool fused,
                          kiln_fuzz_outcome_t* outcomes) {
  kiln_vm_instance_t* instance = NULL;
  kiln_vm_module_t* host = NULL;
  kiln_vm_module_t* module = NULL;
  kiln_vm_context_t* context = NULL;
  kiln_vm_module_load_options_t load_options = kiln_vm_module_load_options_default();
  load_options.max_rodata_bytes = 16u << 20;
  load_options.disable_superinstructions = !fused;
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
    for (uint32_t e = 0; e < format->export_count && e < KILN_FUZZ_MAX_EXPORTS; ++e) {
      kiln_vm_function_t function;
      function.module_index = 1;
      function.ordinal = format->exports[e].function;
      function.signature =
          &format->signatures[format->functions[function.ordinal].signature];
      kiln_vm_value_t args[KILN_FORMAT_MAX_SIGNATURE_VALUES];
      kiln_vm_value_t results[KILN_FORMAT_MAX_SIGNATURE_VALUES];
      memset(args, 0, sizeof(args));
      memset(results, 0, sizeof(results));
      for (uint32_t i = 0; i < function.signature->arg_count; ++i) {
        if (function.signature->types[i] == 'i') args[i].i32 = 3;  // small loops
      }
      kiln_vm_context_set_fuel(context, 20000);
      kiln_status_t run = kiln_vm_context_invoke(
          context, function, args, function.signature->arg_count, results,
          function.signature->result_count);
      kiln_fuzz_outcome_t* outcome = &outcomes[e];
      outcome->ran = 1;
      outcome->code = kiln_status_code(run);
      snprintf(outcome->message, sizeof(outcome->message), "%s", kiln_status_message(run));
      outcome->fuel_left = kiln_vm_context_fuel(context);
      if (!run) {
        for (uint32_t i = 0; i < function.signature->result_count; ++i) {
          char type = function.signature->types[function.signature->arg_count + i];
          if (type == 'r') {
            outcome->words[i] = results[i].ref != NULL;
            kiln_vm_ref_release(results[i].ref);
          } else if (type == 'I' || type == 'F') {
            outcome->words[i] = (uint64_t)results[i].i64;
          } else {
            outcome->words[i] = (uint32_t)results[i].i32;
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
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln_fuzz_outcome_t fused[KILN_FUZZ_MAX_EXPORTS], plain[KILN_FUZZ_MAX_EXPORTS];
  memset(fused, 0, sizeof(fused));
  memset(plain, 0, sizeof(plain));
  kiln_fuzz_run(data, size, true, fused);
  kiln_fuzz_run(data, size, false, plain);
  for (int e = 0; e < KILN_FUZZ_MAX_EXPORTS; ++e) {
    if (memcmp(&fused[e], &plain[e], sizeof(fused[e])) != 0) {
      fprintf(stderr, "export %d: fused run (code %d, fuel %llu, '%s') differs from plain "
              "run (code %d, fuel %llu, '%s')\n", e, (int)fused[e].code,
              (unsigned long long)fused[e].fuel_left, fused[e].message, (int)plain[e].code,
              (unsigned long long)plain[e].fuel_left, plain[e].message);
      abort();
    }
  }
  return 0;
}
