// A context: an ordered list of modules with their imports resolved, module
// globals, per-module native state and a register stack. One context runs
// on one thread at a time; different contexts run concurrently.
#ifndef KILN_VM_CONTEXT_H_
#define KILN_VM_CONTEXT_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/base/status.h"
#include "kiln/format/signature.h"
#include "kiln/vm/instance.h"
#include "kiln/vm/module.h"
#include "kiln/vm/native_module.h"
#include "kiln/vm/value.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_vm_context_options_t {
  uint32_t max_call_depth;   // frames; deeper calls trap
  uint32_t stack_i32_words;  // 32-bit registers over all frames
  uint32_t stack_refs;       // ref registers over all frames
  // Largest single list or buffer bytecode may allocate; larger traps.
  uint64_t max_allocation_bytes;
} kiln_vm_context_options_t;
kiln_vm_context_options_t kiln_vm_context_options_default(void);

// Imports of module k resolve against the exports of modules 0..k-1 by
// "<module name>.<export name>" and signature; a missing non-optional import
// or a signature mismatch fails and names both.
kiln_status_t kiln_vm_context_create(kiln_vm_instance_t* instance,
                                     kiln_vm_module_t* const* modules,
                                     size_t module_count,
                                     const kiln_vm_context_options_t* options,
                                     kiln_vm_context_t** out_context);
void kiln_vm_context_destroy(kiln_vm_context_t* context);

typedef struct kiln_vm_function_t {
  uint32_t module_index;  // in the context's module list
  uint32_t ordinal;       // function (bytecode) or export (native) ordinal
  const kiln_format_signature_t* signature;  // informational; invoke rechecks
} kiln_vm_function_t;

// `name` is "module.export" or a bare export name (searched from the last
// module back).
kiln_status_t kiln_vm_context_find_function(kiln_vm_context_t* context,
                                            const char* name,
                                            kiln_vm_function_t* out_function);

// Runs `function`. Counts must match its signature. Ref arguments are
// borrowed; ref results are new references the caller releases. On error
// (a trap) results are zeroed.
kiln_status_t kiln_vm_context_invoke(kiln_vm_context_t* context,
                                     kiln_vm_function_t function,
                                     const kiln_vm_value_t* args,
                                     size_t arg_count,
                                     kiln_vm_value_t* results,
                                     size_t result_count);

// Fuel: every taken branch, call and return uses one unit; at zero the
// bytecode traps. UINT64_MAX (the default) means unlimited.
void kiln_vm_context_set_fuel(kiln_vm_context_t* context, uint64_t fuel);
uint64_t kiln_vm_context_fuel(const kiln_vm_context_t* context);
// Deadline: an absolute kiln_time_now_ns() time after which bytecode traps
// with DEADLINE_EXCEEDED (naming function and offset) at its next taken
// branch, call or return, within about 65536 of them. 0 (the default): none.
// Native calls (e.g. a GPU wait) are not interrupted.
void kiln_vm_context_set_deadline(kiln_vm_context_t* context,
                                  int64_t deadline_ns);
int64_t kiln_vm_context_deadline(const kiln_vm_context_t* context);

void kiln_vm_context_set_user_data(kiln_vm_context_t* context,
                                   void* user_data);
void* kiln_vm_context_user_data(const kiln_vm_context_t* context);
// Called after every call into a native module (for tracing, e.g.
// kiln-run-module --trace_execution); `status` is the call's result (still
// owned by the VM). NULL turns it off.
typedef void (*kiln_vm_native_call_hook_t)(
    void* user_data, const char* module_name, const char* export_name,
    const kiln_format_signature_t* signature, const kiln_vm_value_t* args,
    const kiln_vm_value_t* results, kiln_status_t status);
void kiln_vm_context_set_native_call_hook(kiln_vm_context_t* context,
                                          kiln_vm_native_call_hook_t hook,
                                          void* user_data);

// The context's modules in the order given at creation (native modules
// such as hal look up data, e.g. executables, in the bytecode modules).
size_t kiln_vm_context_module_count(const kiln_vm_context_t* context);
kiln_vm_module_t* kiln_vm_context_module_at(const kiln_vm_context_t* context,
                                            size_t index);
kiln_vm_instance_t* kiln_vm_context_instance(const kiln_vm_context_t* context);
kiln_allocator_t kiln_vm_context_allocator(const kiln_vm_context_t* context);

#ifdef __cplusplus
}
#endif

#endif  // KILN_VM_CONTEXT_H_
