// hal.command_buffer.*: recording transfers, dispatches and barriers.
#include <string.h>

#include "hal_module_state.h"

#define KILN_HAL_CB_ARG(name)                                              \
  kiln_hal_command_buffer_t* command_buffer = NULL;                        \
  KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 0,                               \
                                    &kiln_hal_command_buffer_ref_type,     \
                                    name, (void**)&command_buffer))

static kiln_status_t kiln_hal_nonnegative(int64_t value, const char* what,
                                          const char* name) {
  if (value < 0) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "hal.%s: %s is negative (%lld)",
                            name, what, (long long)value);
  }
  return kiln_ok_status();
}

// (device, flags) -> command buffer, already begun.
static kiln_status_t kiln_hal_export_cb_create(kiln_vm_context_t* context,
                                               void* opaque,
                                               const kiln_vm_value_t* args,
                                               kiln_vm_value_t* results) {
  kiln_hal_module_state_t* state = opaque;
  kiln_hal_device_t* device = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 0, &kiln_hal_device_ref_type,
                                    "command_buffer.create", (void**)&device));
  kiln_hal_command_buffer_flags_t flags =
      (kiln_hal_command_buffer_flags_t)args[1].i32;
  if (state->options.force_timestamps) {
    flags |= state->options.span_timestamps ? KILN_HAL_COMMAND_BUFFER_SPAN_TIMESTAMPS
                                            : KILN_HAL_COMMAND_BUFFER_TIMESTAMPS;
  }
  kiln_hal_command_buffer_t* command_buffer = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_hal_command_buffer_create(device, flags, &command_buffer));
  kiln_status_t status = kiln_hal_command_buffer_begin(command_buffer);
  if (!kiln_status_is_ok(status)) {
    kiln_hal_command_buffer_release(command_buffer);
    return status;
  }
  return kiln_hal_ref_wrap(state->allocator, &kiln_hal_command_buffer_ref_type,
                           command_buffer, &results[0].ref);
}

// (cb, target buffer, offset, length, pattern, pattern_length).
static kiln_status_t kiln_hal_export_cb_fill(kiln_vm_context_t* context,
                                             void* opaque,
                                             const kiln_vm_value_t* args,
                                             kiln_vm_value_t* results) {
  const char* name = "command_buffer.fill";
  KILN_HAL_CB_ARG(name);
  kiln_hal_buffer_t* target = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_hal_arg(args, 1, &kiln_hal_buffer_ref_type, name, (void**)&target));
  KILN_RETURN_IF_ERROR(kiln_hal_nonnegative(args[2].i64, "offset", name));
  KILN_RETURN_IF_ERROR(kiln_hal_nonnegative(args[3].i64, "length", name));
  int32_t pattern_length = args[5].i32;
  if (pattern_length != 1 && pattern_length != 2 && pattern_length != 4) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "hal.%s: pattern length %d is not 1, 2 or 4", name,
                            pattern_length);
  }
  uint32_t pattern = (uint32_t)args[4].i32;
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_hal_command_buffer_fill(command_buffer, target,
                                   (uint64_t)args[2].i64,
                                   (uint64_t)args[3].i64, &pattern,
                                   (size_t)pattern_length),
      "in hal.%s", name);
  return kiln_ok_status();
}

// (cb, source vm.buffer, source offset, target buffer, target offset, length).
static kiln_status_t kiln_hal_export_cb_update(kiln_vm_context_t* context,
                                               void* opaque,
                                               const kiln_vm_value_t* args,
                                               kiln_vm_value_t* results) {
  const char* name = "command_buffer.update";
  KILN_HAL_CB_ARG(name);
  kiln_vm_buffer_t* source = NULL;
  kiln_hal_buffer_t* target = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_arg_bytes(args, 1, name, &source));
  KILN_RETURN_IF_ERROR(
      kiln_hal_arg(args, 3, &kiln_hal_buffer_ref_type, name, (void**)&target));
  KILN_RETURN_IF_ERROR(
      kiln_hal_check_bytes_range(source, args[2].i64, args[5].i64, name));
  KILN_RETURN_IF_ERROR(kiln_hal_nonnegative(args[4].i64, "target offset", name));
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_hal_command_buffer_update(command_buffer, source->data + args[2].i64,
                                     target, (uint64_t)args[4].i64,
                                     (uint64_t)args[5].i64),
      "in hal.%s", name);
  return kiln_ok_status();
}

// (cb, source buffer, source offset, target buffer, target offset, length).
static kiln_status_t kiln_hal_export_cb_copy(kiln_vm_context_t* context,
                                             void* opaque,
                                             const kiln_vm_value_t* args,
                                             kiln_vm_value_t* results) {
  const char* name = "command_buffer.copy";
  KILN_HAL_CB_ARG(name);
  kiln_hal_buffer_t* source = NULL;
  kiln_hal_buffer_t* target = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_hal_arg(args, 1, &kiln_hal_buffer_ref_type, name, (void**)&source));
  KILN_RETURN_IF_ERROR(
      kiln_hal_arg(args, 3, &kiln_hal_buffer_ref_type, name, (void**)&target));
  KILN_RETURN_IF_ERROR(kiln_hal_nonnegative(args[2].i64, "source offset", name));
  KILN_RETURN_IF_ERROR(kiln_hal_nonnegative(args[4].i64, "target offset", name));
  KILN_RETURN_IF_ERROR(kiln_hal_nonnegative(args[5].i64, "length", name));
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_hal_command_buffer_copy(command_buffer, source,
                                   (uint64_t)args[2].i64, target,
                                   (uint64_t)args[4].i64,
                                   (uint64_t)args[5].i64),
      "in hal.%s", name);
  return kiln_ok_status();
}

// (cb): makes all earlier dispatch/transfer writes visible to later
// dispatches, transfers and the host.
static kiln_status_t kiln_hal_export_cb_barrier(kiln_vm_context_t* context,
                                                void* opaque,
                                                const kiln_vm_value_t* args,
                                                kiln_vm_value_t* results) {
  KILN_HAL_CB_ARG("command_buffer.barrier");
  kiln_hal_stages_t all = KILN_HAL_STAGE_DISPATCH | KILN_HAL_STAGE_TRANSFER;
  return kiln_hal_command_buffer_barrier(command_buffer, all,
                                         all | KILN_HAL_STAGE_HOST);
}

// (cb, executable, entry point, x, y, z, bindings ref list, ranges i64 list
//  or null, push constants vm.buffer or null). Bindings follow the entry
// point's binding order; each is a hal.buffer, a hal.buffer_view or null
// (null: the binding table slot given in ranges, else its own index).
// ranges holds 3 values per binding: offset, length (-1 = to the end), slot.
static kiln_status_t kiln_hal_export_cb_dispatch(kiln_vm_context_t* context,
                                                 void* opaque,
                                                 const kiln_vm_value_t* args,
                                                 kiln_vm_value_t* results) {
  const char* name = "command_buffer.dispatch";
  KILN_HAL_CB_ARG(name);
  kiln_hal_executable_t* executable = NULL;
  kiln_vm_list_t* buffers = NULL;
  kiln_vm_list_t* ranges = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 1, &kiln_hal_executable_ref_type,
                                    name, (void**)&executable));
  KILN_RETURN_IF_ERROR(
      kiln_hal_arg_list(args, 6, KILN_VM_LIST_REF, false, name, &buffers));
  KILN_RETURN_IF_ERROR(
      kiln_hal_arg_list(args, 7, KILN_VM_LIST_I64, true, name, &ranges));
  uint32_t entry = (uint32_t)args[2].i32;
  if (args[2].i32 < 0 ||
      entry >= kiln_hal_executable_entry_point_count(executable)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "hal.%s: entry point %d of an executable with %u",
                            name, args[2].i32,
                            kiln_hal_executable_entry_point_count(executable));
  }
  const kiln_hal_entry_point_spec_t* spec =
      kiln_hal_executable_entry_point(executable, entry);
  if (buffers->size != spec->binding_count) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "hal.%s: entry point '%s' has %u bindings but %u "
                            "buffers were given",
                            name, spec->name, spec->binding_count,
                            buffers->size);
  }
  if (ranges && ranges->size != 3 * buffers->size) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "hal.%s: ranges must hold 3 values per binding "
                            "(%u), got %u",
                            name, 3 * buffers->size, ranges->size);
  }
  if (spec->binding_count > KILN_HAL_MAX_BINDINGS_PER_DISPATCH) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "hal.%s: too many bindings",
                            name);
  }
  kiln_hal_binding_t bindings[KILN_HAL_MAX_BINDINGS_PER_DISPATCH];
  kiln_vm_ref_object_t** refs = buffers->data;
  const int64_t* range_values = ranges ? ranges->data : NULL;
  for (uint32_t i = 0; i < spec->binding_count; ++i) {
    kiln_hal_binding_t* binding = &bindings[i];
    memset(binding, 0, sizeof(*binding));
    binding->set = spec->bindings[i].set;
    binding->binding = spec->bindings[i].binding;
    int64_t offset = range_values ? range_values[3 * i] : 0;
    int64_t length = range_values ? range_values[3 * i + 1] : -1;
    int64_t slot = range_values ? range_values[3 * i + 2] : (int64_t)i;
    if (offset < 0 || length < -1 || slot < 0 || slot > UINT32_MAX) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                              "hal.%s: binding %u has a bad range (offset "
                              "%lld, length %lld, slot %lld)",
                              name, i, (long long)offset, (long long)length,
                              (long long)slot);
    }
    binding->offset = (uint64_t)offset;
    binding->length = length < 0 ? KILN_HAL_WHOLE_BUFFER : (uint64_t)length;
    binding->slot = (uint32_t)slot;
    if (refs[i] != NULL) {
      char what[160];
      snprintf(what, sizeof(what), "binding %u of hal.%s", i, name);
      uint64_t base_offset = 0, view_length = 0;
      KILN_RETURN_IF_ERROR(kiln_hal_resolve_buffer_like(
          refs[i], what, &binding->buffer, &base_offset, &view_length));
      binding->offset += base_offset;
      if (length < 0 && refs[i]->type == &kiln_hal_buffer_view_ref_type) {
        binding->length = view_length;
      }
    }
  }
  kiln_vm_buffer_t* push = NULL;
  if (args[8].ref) {
    KILN_RETURN_IF_ERROR(kiln_hal_arg_bytes(args, 8, name, &push));
  }
  kiln_hal_dispatch_t dispatch = {
      .executable = executable,
      .entry_point = entry,
      .workgroup_count = {(uint32_t)args[3].i32, (uint32_t)args[4].i32,
                          (uint32_t)args[5].i32},
      .push_constants = push ? push->data : NULL,
      .push_constant_bytes = push ? (uint32_t)push->length : 0,
      .bindings = bindings,
      .binding_count = spec->binding_count,
  };
  if (push && push->length > KILN_HAL_MAX_PUSH_CONSTANT_BYTES) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "hal.%s: %llu bytes of push constants exceed %d",
                            name, (unsigned long long)push->length,
                            KILN_HAL_MAX_PUSH_CONSTANT_BYTES);
  }
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_hal_command_buffer_dispatch(command_buffer, &dispatch),
      "in hal.%s of '%s'", name, spec->name);
  return kiln_ok_status();
}

static kiln_status_t kiln_hal_export_cb_finalize(kiln_vm_context_t* context,
                                                 void* opaque,
                                                 const kiln_vm_value_t* args,
                                                 kiln_vm_value_t* results) {
  KILN_HAL_CB_ARG("command_buffer.finalize");
  return kiln_hal_command_buffer_end(command_buffer);
}

const kiln_vm_native_export_t kiln_hal_command_buffer_exports[] = {
    {"command_buffer.create", "ri_r", kiln_hal_export_cb_create},
    {"command_buffer.fill", "rrIIii_v", kiln_hal_export_cb_fill},
    {"command_buffer.update", "rrIrII_v", kiln_hal_export_cb_update},
    {"command_buffer.copy", "rrIrII_v", kiln_hal_export_cb_copy},
    {"command_buffer.barrier", "r_v", kiln_hal_export_cb_barrier},
    {"command_buffer.dispatch", "rriiiirrr_v", kiln_hal_export_cb_dispatch},
    {"command_buffer.finalize", "r_v", kiln_hal_export_cb_finalize},
};
const size_t kiln_hal_command_buffer_export_count =
    sizeof(kiln_hal_command_buffer_exports) /
    sizeof(kiln_hal_command_buffer_exports[0]);
