// Shared between the VM's own files; not installed.
#ifndef KILN_VM_INTERNAL_H_
#define KILN_VM_INTERNAL_H_

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kiln/base/file.h"
#include "kiln/format/module_reader.h"
#include "kiln/vm/vm.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the interpreter reads bytecode and registers as little-endian"
#endif

struct kiln_vm_instance_t {
  kiln_allocator_t allocator;
  pthread_mutex_t mutex;
  const kiln_vm_ref_type_t** types;
  size_t type_count;
  size_t type_capacity;
};

// Where each argument/result of a signature lands in a callee frame: the
// index in the 32-bit bank (64-bit values start at an even index) or in the
// ref bank; plus the bank sizes the arguments need.
typedef struct kiln_vm_signature_layout_t {
  uint16_t slots[2 * KILN_FORMAT_MAX_SIGNATURE_VALUES];
  uint32_t arg_i32_words;
  uint32_t arg_refs;
} kiln_vm_signature_layout_t;

void kiln_vm_signature_layout_compute(const kiln_format_signature_t* signature,
                                      kiln_vm_signature_layout_t* out);

struct kiln_vm_module_t {
  kiln_vm_ref_object_t header;  // so rodata buffers can keep it alive
  kiln_vm_instance_t* instance;
  kiln_allocator_t allocator;
  bool is_native;
  kiln_string_view_t name;
  // Native modules.
  kiln_vm_native_module_desc_t native;
  kiln_format_signature_t* native_signatures;
  // Bytecode modules.
  void* bytes_allocation;  // the copy made by load_from_memory
  kiln_file_mapping_t mapping;
  kiln_format_module_t format;
  kiln_vm_signature_layout_t* layouts;  // per signature
  const uint8_t** rodata_data;          // per rodata segment
  void** rodata_allocations;            // decompressed copies (or NULL)
  char** function_display_names;        // for traps
  // What the interpreter runs: a private copy of every function's bytecode
  // with superinstructions written in (vm/superinstructions.c).
  uint8_t* code_copy;
  const uint8_t** function_code;  // per function, into code_copy
  uint32_t superinstruction_count;
};

const char* kiln_vm_module_function_display_name(const kiln_vm_module_t* module,
                                                 uint32_t function);

// Verifies every function of a read module (vm/verifier.c).
kiln_status_t kiln_vm_verify_module(const kiln_format_module_t* format);

// Fills code_copy/function_code of a verified module, rewriting fusable
// sequences when `fuse` (vm/superinstructions.c).
kiln_status_t kiln_vm_module_build_code(kiln_vm_module_t* module, bool fuse);

// Per context, per module.
typedef struct kiln_vm_module_state_t kiln_vm_module_state_t;
typedef struct kiln_vm_import_binding_t {
  kiln_vm_module_state_t* target;  // NULL: optional import left unresolved
  uint32_t ordinal;  // bytecode function or native export in `target`
} kiln_vm_import_binding_t;

struct kiln_vm_module_state_t {
  kiln_vm_module_t* module;
  uint32_t* global_words;
  kiln_vm_ref_object_t** global_refs;
  kiln_vm_import_binding_t* imports;
  void* native_state;
  bool native_state_made;
};

typedef struct kiln_vm_frame_t {
  kiln_vm_module_state_t* state;
  uint32_t function;
  const uint8_t* code;  // function bytecode start
  const uint8_t* pc;    // saved while a callee runs
  uint32_t* r32;
  kiln_vm_ref_object_t** rr;
  uint32_t i32_words;  // allocated (even) size of the 32-bit bank
  uint32_t refs;
  // The caller's result register list (u8 count, u16 regs) or NULL when the
  // frame returns to the host.
  const uint8_t* result_list;
} kiln_vm_frame_t;

struct kiln_vm_context_t {
  kiln_vm_instance_t* instance;
  kiln_allocator_t allocator;
  kiln_vm_module_state_t* states;
  size_t state_count;
  uint32_t* i32_stack;
  size_t i32_capacity;
  size_t i32_top;
  kiln_vm_ref_object_t** ref_stack;
  size_t ref_capacity;
  size_t ref_top;
  kiln_vm_frame_t* frames;
  uint32_t frame_capacity;
  uint32_t depth;
  // Fuel the interpreter may use before it next calls kiln_vm_refuel; with a
  // deadline it is a slice and the rest waits in fuel_reserve, so the clock
  // is read once per slice, not per branch.
  uint64_t fuel;
  uint64_t fuel_reserve;
  int64_t deadline_ns;  // kiln_time_now_ns() clock; 0: none
  uint64_t max_allocation_bytes;
  void* user_data;
  kiln_vm_native_call_hook_t native_call_hook;  // NULL unless tracing
  void* native_call_hook_data;
};

// Runs bytecode function `function` of `state` (vm/interpreter.c).
kiln_status_t kiln_vm_interpret(kiln_vm_context_t* context,
                                kiln_vm_module_state_t* state,
                                uint32_t function, const kiln_vm_value_t* args,
                                kiln_vm_value_t* results);

// Called when the interpreter's fuel reaches zero: returns the next slice
// from the reserve, or 0 when bytecode must stop (fuel_reserve == 0: fuel
// is exhausted; otherwise the deadline has passed).
uint64_t kiln_vm_refuel(kiln_vm_context_t* context);

// Calls native export `ordinal` of `state` with values (vm/context.c).
kiln_status_t kiln_vm_call_native(kiln_vm_context_t* context,
                                  kiln_vm_module_state_t* state,
                                  uint32_t ordinal, const kiln_vm_value_t* args,
                                  kiln_vm_value_t* results);

#endif  // KILN_VM_INTERNAL_H_
