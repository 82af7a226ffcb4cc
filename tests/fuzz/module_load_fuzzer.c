// libFuzzer target: read + verify arbitrary bytes as a module, and
// disassemble what loads (the disassembler must cope with anything the
// reader accepts). Any crash, leak or sanitizer report is a bug.
#include <stdint.h>
#include <stdio.h>

#include "kiln/compiler/assembler.h"
#include "kiln/vm/vm.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln_vm_instance_t* instance = NULL;
  kiln_status_t status = kiln_vm_instance_create(kiln_allocator_system(), &instance);
  if (status) {
    kiln_status_free(status);
    return 0;
  }
  kiln_vm_module_load_options_t options = kiln_vm_module_load_options_default();
  options.max_rodata_bytes = 16u << 20;
  kiln_vm_module_t* module = NULL;
  status = kiln_vm_module_load_from_memory(
      instance, kiln_make_const_byte_span(data, size), "fuzz", &options, &module);
  if (!status) {
    FILE* sink = fopen("/dev/null", "w");
    if (sink) {
      kiln_status_free(kiln_disassembler_write(kiln_vm_module_format(module), true, sink));
      fclose(sink);
    }
  }
  kiln_status_free(status);
  kiln_vm_module_release(module);
  kiln_vm_instance_destroy(instance);
  return 0;
}
