// The module builder: what the text assembler and the ONNX emitter both use
// to make modules. Module-level entities (imports, functions, exports,
// globals, rodata) go through the module writer (module_writer.h); this
// header adds function bodies encoded from the ISA table (vm/isa.h) with
// labels and register accounting, and executables built variant by variant.
// Library kiln_module_builder (compiler-bridge/builder/).
#ifndef KILN_COMPILER_MODULE_BUILDER_H_
#define KILN_COMPILER_MODULE_BUILDER_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/base/allocator.h"
#include "kiln/base/status.h"
#include "kiln/base/views.h"
#include "kiln/compiler/module_writer.h"
#include "kiln/vm/isa.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- function bodies ----

typedef struct kiln_function_builder_t kiln_function_builder_t;

// One builder encodes any number of bodies, one at a time, into `writer`.
kiln_status_t kiln_function_builder_create(kiln_module_writer_t* writer,
                                           kiln_allocator_t allocator,
                                           kiln_function_builder_t** out_builder);
void kiln_function_builder_destroy(kiln_function_builder_t* builder);

// Starts the body of declared function `ordinal`; its arguments occupy the
// first registers of each bank.
kiln_status_t kiln_function_builder_begin(kiln_function_builder_t* builder,
                                          uint32_t ordinal);

// Labels: made before or after the code that branches to them, bound once.
kiln_status_t kiln_function_builder_new_label(kiln_function_builder_t* builder,
                                              uint32_t* out_label);
kiln_status_t kiln_function_builder_bind_label(kiln_function_builder_t* builder,
                                               uint32_t label);
// True when `label` was bound in this body (lets a front end name its own
// unbound labels before end() refuses them).
bool kiln_function_builder_label_bound(const kiln_function_builder_t* builder,
                                       uint32_t label);

// Encodes `op` with one operand per kind character of its table row
// (registers, immediates or float bits, label ids for L, ordinals for
// d/s/g/G/h, KILN_VM_LIST_* for t). `return` (kind R) takes the function's
// result registers. Calls and br_table have their own entry points below.
kiln_status_t kiln_function_builder_op(kiln_function_builder_t* builder,
                                       kiln_vm_opcode_t op, const uint64_t* operands,
                                       size_t operand_count);
// call (ordinal = function) or call.import (ordinal = import); the lists are
// checked against the callee's signature.
kiln_status_t kiln_function_builder_call(kiln_function_builder_t* builder,
                                         kiln_vm_opcode_t op, uint32_t ordinal,
                                         const uint16_t* args, size_t arg_count,
                                         const uint16_t* results, size_t result_count);
kiln_status_t kiln_function_builder_br_table(kiln_function_builder_t* builder,
                                             uint16_t index_register,
                                             const uint32_t* labels, size_t label_count,
                                             uint32_t default_label);
// Where the next op will be encoded (for debug locations).
uint32_t kiln_function_builder_offset(const kiln_function_builder_t* builder);

// Resolves labels and defines the function. Register counts are the highest
// used (arguments included) unless given (KILN_FUNCTION_BUILDER_AUTO).
#define KILN_FUNCTION_BUILDER_AUTO UINT32_MAX
kiln_status_t kiln_function_builder_end(kiln_function_builder_t* builder,
                                        uint32_t i32_register_count,
                                        uint32_t ref_register_count);

// KILN_FB_OP(builder, KILN_VM_OP_ADD_I32, 0, 1, 2): operands as a list.
#define KILN_FB_OP(builder, op, ...)                                  \
  kiln_function_builder_op((builder), (op), (const uint64_t[]){__VA_ARGS__}, \
                           sizeof((const uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t))

// ---- executables ----

typedef struct kiln_executable_builder_t kiln_executable_builder_t;

kiln_status_t kiln_executable_builder_create(kiln_allocator_t allocator,
                                             kiln_executable_builder_t** out_builder);
void kiln_executable_builder_destroy(kiln_executable_builder_t* builder);

// Starts an executable (forgetting any unfinished one). Strings and SPIR-V
// are copied.
kiln_status_t kiln_executable_builder_begin(kiln_executable_builder_t* builder,
                                            kiln_string_view_t name);
// features: KILN_FORMAT_FEATURE_* bits; minima of 0 mean "any".
typedef struct kiln_executable_variant_desc_t {
  kiln_string_view_t target;
  uint32_t required_features;
  uint32_t min_subgroup_size;
  uint32_t min_shared_memory_bytes;
  uint32_t min_workgroup_invocations;
} kiln_executable_variant_desc_t;
kiln_status_t kiln_executable_builder_add_variant(
    kiln_executable_builder_t* builder, const kiln_executable_variant_desc_t* desc);
// Appends SPIR-V (little-endian bytes, a multiple of 4) to the variant.
kiln_status_t kiln_executable_builder_append_spirv(kiln_executable_builder_t* builder,
                                                   kiln_const_byte_span_t bytes);
kiln_status_t kiln_executable_builder_add_entry(kiln_executable_builder_t* builder,
                                                kiln_string_view_t name,
                                                const uint32_t workgroup_size[3],
                                                uint32_t push_constant_bytes);
// flags: KILN_FORMAT_BINDING_* (TEXEL_VEC4F32 needs READ_ONLY).
kiln_status_t kiln_executable_builder_add_binding(kiln_executable_builder_t* builder,
                                                  uint32_t set, uint32_t binding,
                                                  uint32_t flags);
kiln_status_t kiln_executable_builder_add_spec(kiln_executable_builder_t* builder,
                                               uint32_t id, uint32_t value);
// Adds the executable to `writer`; the builder is ready for the next one.
kiln_status_t kiln_executable_builder_finish(kiln_executable_builder_t* builder,
                                             kiln_module_writer_t* writer);

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_MODULE_BUILDER_H_
