// Contexts: import resolution, per-module state, the register stack and the
// host entry points.
#include <stdio.h>

#include "internal.h"
#include "kiln/base/time.h"

kiln_vm_context_options_t kiln_vm_context_options_default(void) {
  kiln_vm_context_options_t options;
  options.max_call_depth = 256;
  options.stack_i32_words = 64 * 1024;
  options.stack_refs = 16 * 1024;
  options.max_allocation_bytes = UINT64_C(1) << 30;
  return options;
}

// Finds export `name` of a module; *out_ordinal is a function ordinal for
// bytecode modules and an export index for native ones.
static bool kiln_vm_module_find_export(const kiln_vm_module_t* module,
                                       kiln_string_view_t name,
                                       uint32_t* out_ordinal,
                                       const kiln_format_signature_t** out_sig) {
  if (module->is_native) {
    for (size_t i = 0; i < module->native.export_count; ++i) {
      if (kiln_string_view_equal_cstring(name, module->native.exports[i].name)) {
        *out_ordinal = (uint32_t)i;
        *out_sig = &module->native_signatures[i];
        return true;
      }
    }
    return false;
  }
  const kiln_format_module_t* format = &module->format;
  for (uint32_t i = 0; i < format->export_count; ++i) {
    if (kiln_string_view_equal(name, format->exports[i].name)) {
      *out_ordinal = format->exports[i].function;
      *out_sig =
          &format->signatures[format->functions[*out_ordinal].signature];
      return true;
    }
  }
  return false;
}

static bool kiln_vm_signature_equal(const kiln_format_signature_t* a,
                                    const kiln_format_signature_t* b) {
  return a->arg_count == b->arg_count && a->result_count == b->result_count &&
         memcmp(a->types, b->types, (size_t)a->arg_count + a->result_count) == 0;
}

static kiln_status_t kiln_vm_context_resolve(kiln_vm_context_t* context,
                                             size_t index) {
  kiln_vm_module_state_t* state = &context->states[index];
  const kiln_format_module_t* format = &state->module->format;
  for (uint32_t i = 0; i < format->import_count; ++i) {
    const kiln_format_import_t* import = &format->imports[i];
    const kiln_format_signature_t* wanted =
        &format->signatures[import->signature];
    kiln_string_view_t module_name, export_name;
    bool qualified =
        kiln_string_view_split(import->name, '.', &module_name, &export_name);
    bool found = false;
    for (size_t m = 0; qualified && m < index && !found; ++m) {
      kiln_vm_module_t* candidate = context->states[m].module;
      if (!kiln_string_view_equal(candidate->name, module_name)) continue;
      uint32_t ordinal = 0;
      const kiln_format_signature_t* have = NULL;
      if (!kiln_vm_module_find_export(candidate, export_name, &ordinal, &have)) {
        continue;
      }
      if (!kiln_vm_signature_equal(wanted, have)) {
        return kiln_make_status(
            KILN_STATUS_INVALID_ARGUMENT,
            "module '%.*s' imports '%.*s' with signature '%.*s' but module "
            "'%.*s' exports it with signature '%.*s'",
            KILN_SV_ARG(state->module->name), KILN_SV_ARG(import->name),
            KILN_SV_ARG(wanted->text), KILN_SV_ARG(candidate->name),
            KILN_SV_ARG(have->text));
      }
      state->imports[i].target = &context->states[m];
      state->imports[i].ordinal = ordinal;
      found = true;
    }
    if (!found && !(import->flags & KILN_FORMAT_IMPORT_OPTIONAL)) {
      return kiln_make_status(KILN_STATUS_NOT_FOUND,
                              "module '%.*s' imports '%.*s' (signature "
                              "'%.*s'), which no earlier module exports",
                              KILN_SV_ARG(state->module->name),
                              KILN_SV_ARG(import->name),
                              KILN_SV_ARG(wanted->text));
    }
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_vm_context_init_state(kiln_vm_context_t* context,
                                                size_t index) {
  kiln_vm_module_state_t* state = &context->states[index];
  kiln_vm_module_t* module = state->module;
  if (module->is_native) {
    if (module->native.create_state) {
      KILN_RETURN_IF_ERROR(module->native.create_state(
          module->native.user_data, context, &state->native_state));
      state->native_state_made = true;
    }
    return kiln_ok_status();
  }
  const kiln_format_module_t* format = &module->format;
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc_array(
      context->allocator, format->global_word_count + 2u, sizeof(uint32_t),
      (void**)&state->global_words));
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc_array(
      context->allocator, format->global_ref_count + 1u, sizeof(void*),
      (void**)&state->global_refs));
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc_array(
      context->allocator, format->import_count + 1u,
      sizeof(kiln_vm_import_binding_t), (void**)&state->imports));
  return kiln_vm_context_resolve(context, index);
}

kiln_status_t kiln_vm_context_create(kiln_vm_instance_t* instance,
                                     kiln_vm_module_t* const* modules,
                                     size_t module_count,
                                     const kiln_vm_context_options_t* options,
                                     kiln_vm_context_t** out_context) {
  *out_context = NULL;
  kiln_vm_context_options_t defaults = kiln_vm_context_options_default();
  if (!options) options = &defaults;
  if (options->max_call_depth == 0 || options->stack_i32_words == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "context options: call depth and stack size must "
                            "be positive");
  }
  kiln_vm_context_t* context = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc(
      instance->allocator, sizeof(*context), (void**)&context));
  context->instance = instance;
  context->allocator = instance->allocator;
  context->fuel = UINT64_MAX;
  context->frame_capacity = options->max_call_depth;
  context->i32_capacity = options->stack_i32_words;
  context->ref_capacity = options->stack_refs;
  context->max_allocation_bytes = options->max_allocation_bytes;
  kiln_status_t status = kiln_allocator_calloc_array(
      context->allocator, module_count ? module_count : 1,
      sizeof(kiln_vm_module_state_t), (void**)&context->states);
  if (!status) {
    status = kiln_allocator_calloc_array(context->allocator,
                                         context->i32_capacity + 2,
                                         sizeof(uint32_t),
                                         (void**)&context->i32_stack);
  }
  if (!status) {
    status = kiln_allocator_calloc_array(context->allocator,
                                         context->ref_capacity + 1,
                                         sizeof(void*),
                                         (void**)&context->ref_stack);
  }
  if (!status) {
    status = kiln_allocator_calloc_array(
        context->allocator, context->frame_capacity, sizeof(kiln_vm_frame_t),
        (void**)&context->frames);
  }
  for (size_t i = 0; !status && i < module_count; ++i) {
    if (!modules[i]) {
      status = kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "context module %zu is NULL", i);
      break;
    }
    context->states[i].module = modules[i];
    kiln_vm_module_retain(modules[i]);
    context->state_count = i + 1;
    status = kiln_vm_context_init_state(context, i);
  }
  if (status) {
    kiln_vm_context_destroy(context);
    return status;
  }
  *out_context = context;
  return kiln_ok_status();
}

void kiln_vm_context_destroy(kiln_vm_context_t* context) {
  if (!context) return;
  kiln_allocator_t allocator = context->allocator;
  // Reverse order: later modules may hold state built on earlier ones.
  for (size_t i = context->state_count; i-- > 0;) {
    kiln_vm_module_state_t* state = &context->states[i];
    kiln_vm_module_t* module = state->module;
    if (module->is_native) {
      if (state->native_state_made && module->native.destroy_state) {
        module->native.destroy_state(module->native.user_data,
                                     state->native_state);
      }
    } else {
      for (uint32_t g = 0; state->global_refs && g < module->format.global_ref_count;
           ++g) {
        kiln_vm_ref_release(state->global_refs[g]);
      }
      kiln_allocator_free(allocator, state->global_words);
      kiln_allocator_free(allocator, state->global_refs);
      kiln_allocator_free(allocator, state->imports);
    }
    kiln_vm_module_release(module);
  }
  kiln_allocator_free(allocator, context->states);
  kiln_allocator_free(allocator, context->i32_stack);
  kiln_allocator_free(allocator, context->ref_stack);
  kiln_allocator_free(allocator, context->frames);
  kiln_allocator_free(allocator, context);
}

kiln_status_t kiln_vm_context_find_function(kiln_vm_context_t* context,
                                            const char* name,
                                            kiln_vm_function_t* out_function) {
  memset(out_function, 0, sizeof(*out_function));
  kiln_string_view_t full = kiln_make_cstring_view(name);
  kiln_string_view_t module_name, export_name;
  bool qualified = kiln_string_view_split(full, '.', &module_name, &export_name);
  for (size_t pass = 0; pass < 2; ++pass) {
    // First a qualified match, then the whole text as a bare export name.
    if (pass == 0 && !qualified) continue;
    for (size_t i = context->state_count; i-- > 0;) {
      kiln_vm_module_t* module = context->states[i].module;
      if (pass == 0 && !kiln_string_view_equal(module->name, module_name)) {
        continue;
      }
      uint32_t ordinal = 0;
      const kiln_format_signature_t* signature = NULL;
      if (kiln_vm_module_find_export(module, pass == 0 ? export_name : full,
                                     &ordinal, &signature)) {
        out_function->module_index = (uint32_t)i;
        out_function->ordinal = ordinal;
        out_function->signature = signature;
        return kiln_ok_status();
      }
    }
  }
  return kiln_make_status(KILN_STATUS_NOT_FOUND,
                          "function '%s' is not exported by any module of the "
                          "context",
                          name);
}

kiln_status_t kiln_vm_call_native(kiln_vm_context_t* context,
                                  kiln_vm_module_state_t* state,
                                  uint32_t ordinal, const kiln_vm_value_t* args,
                                  kiln_vm_value_t* results) {
  const kiln_vm_native_export_t* entry = &state->module->native.exports[ordinal];
  kiln_status_t status = entry->fn(context, state->native_state, args, results);
  if (KILN_UNLIKELY(context->native_call_hook != NULL)) {
    context->native_call_hook(context->native_call_hook_data,
                              state->module->native.name, entry->name,
                              &state->module->native_signatures[ordinal], args,
                              results, status);
  }
  return status;
}

void kiln_vm_context_set_native_call_hook(kiln_vm_context_t* context,
                                          kiln_vm_native_call_hook_t hook,
                                          void* user_data) {
  context->native_call_hook = hook;
  context->native_call_hook_data = user_data;
}

kiln_status_t kiln_vm_context_invoke(kiln_vm_context_t* context,
                                     kiln_vm_function_t function,
                                     const kiln_vm_value_t* args,
                                     size_t arg_count,
                                     kiln_vm_value_t* results,
                                     size_t result_count) {
  if (results && result_count) memset(results, 0, result_count * sizeof(*results));
  if (function.module_index >= context->state_count) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "invoke: function handle does not belong to this "
                            "context");
  }
  // The signature comes from the module, never from the handle, so a
  // forged handle cannot make the VM read or write past the caller's arrays.
  kiln_vm_module_t* target = context->states[function.module_index].module;
  uint32_t limit = target->is_native ? (uint32_t)target->native.export_count
                                     : target->format.function_count;
  if (function.ordinal >= limit) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "invoke: function ordinal %u out of range (%u)",
                            function.ordinal, limit);
  }
  const kiln_format_signature_t* signature =
      target->is_native
          ? &target->native_signatures[function.ordinal]
          : &target->format.signatures[target->format.functions[function.ordinal]
                                           .signature];
  if (arg_count != signature->arg_count ||
      result_count != signature->result_count ||
      (arg_count && !args) || (result_count && !results)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "invoke: signature '%.*s' takes %u arguments and "
                            "%u results, got %zu and %zu",
                            KILN_SV_ARG(signature->text), signature->arg_count,
                            signature->result_count, arg_count, result_count);
  }
  kiln_vm_module_state_t* state = &context->states[function.module_index];
  if (state->module->is_native) {
    kiln_status_t status =
        kiln_vm_call_native(context, state, function.ordinal, args, results);
    if (status) {
      for (size_t i = 0; i < result_count; ++i) {
        if (signature->types[arg_count + i] == KILN_VALUE_TYPE_REF) {
          kiln_vm_ref_release(results[i].ref);
        }
        results[i].i64 = 0;
      }
    }
    return status;
  }
  return kiln_vm_interpret(context, state, function.ordinal, args, results);
}

// Branches between two looks at the clock when a deadline is set: a tight
// loop reads it about every 0.1 ms.
enum { KILN_VM_FUEL_SLICE = 1 << 16 };

static void kiln_vm_split_fuel(kiln_vm_context_t* context, uint64_t total) {
  uint64_t slice = total;
  if (context->deadline_ns && slice > KILN_VM_FUEL_SLICE) {
    slice = KILN_VM_FUEL_SLICE;
  }
  context->fuel = slice;
  context->fuel_reserve = total - slice;
}

void kiln_vm_context_set_fuel(kiln_vm_context_t* context, uint64_t fuel) {
  kiln_vm_split_fuel(context, fuel);
}
uint64_t kiln_vm_context_fuel(const kiln_vm_context_t* context) {
  uint64_t total = context->fuel + context->fuel_reserve;
  return total < context->fuel ? UINT64_MAX : total;
}
void kiln_vm_context_set_deadline(kiln_vm_context_t* context,
                                  int64_t deadline_ns) {
  uint64_t total = kiln_vm_context_fuel(context);
  context->deadline_ns = deadline_ns;
  kiln_vm_split_fuel(context, total);
}
int64_t kiln_vm_context_deadline(const kiln_vm_context_t* context) {
  return context->deadline_ns;
}

uint64_t kiln_vm_refuel(kiln_vm_context_t* context) {
  if (context->fuel_reserve == 0) return 0;
  if (context->deadline_ns && kiln_time_now_ns() >= context->deadline_ns) {
    return 0;
  }
  uint64_t slice = context->fuel_reserve < KILN_VM_FUEL_SLICE
                       ? context->fuel_reserve
                       : KILN_VM_FUEL_SLICE;
  context->fuel_reserve -= slice;
  return slice;
}
void kiln_vm_context_set_user_data(kiln_vm_context_t* context,
                                   void* user_data) {
  context->user_data = user_data;
}
void* kiln_vm_context_user_data(const kiln_vm_context_t* context) {
  return context->user_data;
}
kiln_vm_instance_t* kiln_vm_context_instance(const kiln_vm_context_t* context) {
  return context->instance;
}
kiln_allocator_t kiln_vm_context_allocator(const kiln_vm_context_t* context) {
  return context->allocator;
}

size_t kiln_vm_context_module_count(const kiln_vm_context_t* context) {
  return context->state_count;
}

kiln_vm_module_t* kiln_vm_context_module_at(const kiln_vm_context_t* context,
                                            size_t index) {
  return index < context->state_count ? context->states[index].module : NULL;
}
