// Modules: bytecode modules loaded from .kiln bytes (verified before they
// can run) and native modules described by the host. Both are ref-counted
// and immutable, so many contexts on many threads may share one.
#ifndef KILN_VM_MODULE_H_
#define KILN_VM_MODULE_H_

#include <stdbool.h>
#include <stdint.h>

#include "kiln/base/status.h"
#include "kiln/base/views.h"
#include "kiln/format/module_reader.h"
#include "kiln/vm/instance.h"
#include "kiln/vm/ref.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_vm_module_t kiln_vm_module_t;

typedef struct kiln_vm_module_load_options_t {
  uint64_t max_rodata_bytes;  // total after decompression
  // Run the bytecode exactly as stored instead of rewriting compare+cond_br
  // and add+compare+cond_br sequences into superinstructions at load.
  // Results, traps and fuel are the same either way; tests compare them.
  bool disable_superinstructions;
} kiln_vm_module_load_options_t;
kiln_vm_module_load_options_t kiln_vm_module_load_options_default(void);

// Copies `bytes`, reads and verifies every function. `what` names the
// module in errors (a path or "<memory>"). options may be NULL.
kiln_status_t kiln_vm_module_load_from_memory(
    kiln_vm_instance_t* instance, kiln_const_byte_span_t bytes,
    const char* what, const kiln_vm_module_load_options_t* options,
    kiln_vm_module_t** out_module);
// Maps the file read-only (rodata stays in the mapping unless compressed).
kiln_status_t kiln_vm_module_load_from_file(
    kiln_vm_instance_t* instance, const char* path,
    const kiln_vm_module_load_options_t* options,
    kiln_vm_module_t** out_module);

void kiln_vm_module_retain(kiln_vm_module_t* module);
void kiln_vm_module_release(kiln_vm_module_t* module);
// The module as a ref object (what rodata vm.buffers hold as their owner),
// for holders that keep data pointing into the module alive.
kiln_vm_ref_object_t* kiln_vm_module_as_ref(kiln_vm_module_t* module);

kiln_string_view_t kiln_vm_module_name(const kiln_vm_module_t* module);
// The parsed container of a bytecode module; NULL for a native module.
const kiln_format_module_t* kiln_vm_module_format(
    const kiln_vm_module_t* module);

// How many instruction sequences the loader fused into superinstructions
// (0 for native modules and under disable_superinstructions).
uint32_t kiln_vm_module_superinstruction_count(const kiln_vm_module_t* module);

#ifdef __cplusplus
}
#endif

#endif  // KILN_VM_MODULE_H_
