// Native modules: a host (or modules/hal) exposes C functions to bytecode
// as a table of {name, signature, function}. Bytecode imports them as
// "<module>.<name>" and the context checks the signatures match.
//
// A native function gets its arguments (refs borrowed) and fills results
// (refs it stores there are owned by the VM afterwards). An error status
// becomes a trap that names the import and the calling bytecode.
#ifndef KILN_VM_NATIVE_MODULE_H_
#define KILN_VM_NATIVE_MODULE_H_

#include <stddef.h>

#include "kiln/base/status.h"
#include "kiln/vm/instance.h"
#include "kiln/vm/module.h"
#include "kiln/vm/value.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_vm_context_t kiln_vm_context_t;

typedef kiln_status_t (*kiln_vm_native_fn_t)(kiln_vm_context_t* context,
                                             void* state,
                                             const kiln_vm_value_t* args,
                                             kiln_vm_value_t* results);

typedef struct kiln_vm_native_export_t {
  const char* name;
  const char* signature;  // "ii_i", "rI_v", ...
  kiln_vm_native_fn_t fn;
} kiln_vm_native_export_t;

typedef struct kiln_vm_native_module_desc_t {
  const char* name;
  const kiln_vm_native_export_t* exports;  // must outlive the module
  size_t export_count;
  void* user_data;
  // Optional per-context state: made when a context including this module
  // is created, passed to every function, destroyed with the context.
  kiln_status_t (*create_state)(void* user_data, kiln_vm_context_t* context,
                                void** out_state);
  void (*destroy_state)(void* user_data, void* state);
  // Optional: frees user_data when the module itself is destroyed (not
  // called when kiln_vm_module_create_native fails).
  void (*destroy_user_data)(void* user_data);
} kiln_vm_native_module_desc_t;

// Checks every signature and name; the descriptor is copied.
kiln_status_t kiln_vm_module_create_native(
    kiln_vm_instance_t* instance, const kiln_vm_native_module_desc_t* desc,
    kiln_vm_module_t** out_module);

#ifdef __cplusplus
}
#endif

#endif  // KILN_VM_NATIVE_MODULE_H_
