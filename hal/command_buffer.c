// Command buffer wrappers: state, range, usage and layout checks, so the
// driver records only valid commands.
#include "kiln/hal/command_buffer.h"

#include <string.h>

#include "kiln/hal/driver_api.h"

#define CB_VTABLE(c) ((const kiln_hal_command_buffer_vtable_t*)(c)->resource.vtable)

enum { kMaxBindingSlots = KILN_HAL_MAX_BINDING_SLOTS };

kiln_status_t kiln_hal_command_buffer_create(
    kiln_hal_device_t* device, kiln_hal_command_buffer_flags_t flags,
    kiln_hal_command_buffer_t** out_command_buffer) {
  *out_command_buffer = NULL;
  const kiln_hal_command_buffer_flags_t stamps =
      KILN_HAL_COMMAND_BUFFER_TIMESTAMPS | KILN_HAL_COMMAND_BUFFER_SPAN_TIMESTAMPS;
  if (flags & ~stamps) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "command_buffer_create: unknown flags 0x%x", flags);
  }
  if ((flags & stamps) && !device->info.timestamps) {
    return kiln_make_status(KILN_STATUS_UNAVAILABLE,
                            "command_buffer_create: device '%s' has no "
                            "timestamp queries on its queue",
                            device->info.name);
  }
  const kiln_hal_device_vtable_t* vtable = device->resource.vtable;
  return vtable->command_buffer_create(device, flags, out_command_buffer);
}

void kiln_hal_command_buffer_retain(kiln_hal_command_buffer_t* command_buffer) {
  if (command_buffer) kiln_hal_resource_retain(&command_buffer->resource);
}

void kiln_hal_command_buffer_release(
    kiln_hal_command_buffer_t* command_buffer) {
  if (command_buffer && kiln_hal_resource_release(&command_buffer->resource)) {
    CB_VTABLE(command_buffer)->destroy(command_buffer);
  }
}

static kiln_status_t require_recording(kiln_hal_command_buffer_t* cb,
                                       const char* what) {
  if (cb->state != KILN_HAL_COMMAND_BUFFER_STATE_RECORDING) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                            "%s: command buffer is not recording (call begin)",
                            what);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_hal_command_buffer_begin(kiln_hal_command_buffer_t* cb) {
  KILN_RETURN_IF_ERROR(CB_VTABLE(cb)->begin(cb));
  cb->state = KILN_HAL_COMMAND_BUFFER_STATE_RECORDING;
  cb->dispatch_count = 0;
  cb->slot_count = 0;
  memset(cb->written_slots, 0, sizeof(cb->written_slots));
  return kiln_ok_status();
}

kiln_status_t kiln_hal_command_buffer_end(kiln_hal_command_buffer_t* cb) {
  KILN_RETURN_IF_ERROR(require_recording(cb, "end"));
  KILN_RETURN_IF_ERROR(CB_VTABLE(cb)->end(cb));
  cb->state = KILN_HAL_COMMAND_BUFFER_STATE_EXECUTABLE;
  return kiln_ok_status();
}

// Checks a transfer range: same device, usage bit, 4-byte alignment.
static kiln_status_t check_transfer(kiln_hal_command_buffer_t* cb,
                                    kiln_hal_buffer_t* buffer,
                                    const char* what, uint64_t offset,
                                    uint64_t length,
                                    kiln_hal_buffer_usage_t usage,
                                    uint64_t* out_length) {
  KILN_RETURN_IF_ERROR(
      kiln_hal_buffer_check_range(buffer, what, offset, length, out_length));
  if (buffer->device != cb->device) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: buffer belongs to another device", what);
  }
  if (!(buffer->params.usage & usage)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: buffer lacks %s usage", what,
                            usage == KILN_HAL_BUFFER_USAGE_TRANSFER_SRC
                                ? "TRANSFER_SRC"
                                : "TRANSFER_DST");
  }
  if (usage == KILN_HAL_BUFFER_USAGE_TRANSFER_DST && buffer->immutable) {
    return kiln_make_status(KILN_STATUS_PERMISSION_DENIED,
                            "%s: the buffer is immutable (shared constants)",
                            what);
  }
  if ((offset | *out_length) & 3) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: offset %llu and length %llu must be "
                            "multiples of 4",
                            what, (unsigned long long)offset,
                            (unsigned long long)*out_length);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_hal_command_buffer_fill(kiln_hal_command_buffer_t* cb,
                                           kiln_hal_buffer_t* target,
                                           uint64_t offset, uint64_t length,
                                           const void* pattern,
                                           size_t pattern_length) {
  KILN_RETURN_IF_ERROR(require_recording(cb, "fill"));
  uint64_t resolved = 0;
  KILN_RETURN_IF_ERROR(check_transfer(cb, target, "fill", offset, length,
                                      KILN_HAL_BUFFER_USAGE_TRANSFER_DST,
                                      &resolved));
  uint32_t word = 0;
  switch (pattern_length) {
    case 1: {
      uint8_t byte;
      memcpy(&byte, pattern, 1);
      word = byte * 0x01010101u;
      break;
    }
    case 2: {
      uint16_t half;
      memcpy(&half, pattern, 2);
      word = half | ((uint32_t)half << 16);
      break;
    }
    case 4:
      memcpy(&word, pattern, 4);
      break;
    default:
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "fill: pattern length %zu is not 1, 2 or 4",
                              pattern_length);
  }
  if (resolved == 0) return kiln_ok_status();
  return CB_VTABLE(cb)->fill(cb, target, offset, resolved, word);
}

kiln_status_t kiln_hal_command_buffer_update(kiln_hal_command_buffer_t* cb,
                                             const void* data,
                                             kiln_hal_buffer_t* target,
                                             uint64_t offset,
                                             uint64_t length) {
  KILN_RETURN_IF_ERROR(require_recording(cb, "update"));
  uint64_t resolved = 0;
  KILN_RETURN_IF_ERROR(check_transfer(cb, target, "update", offset, length,
                                      KILN_HAL_BUFFER_USAGE_TRANSFER_DST,
                                      &resolved));
  if (resolved && !data) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "update: data is NULL");
  }
  if (resolved == 0) return kiln_ok_status();
  return CB_VTABLE(cb)->update(cb, data, target, offset, resolved);
}

kiln_status_t kiln_hal_command_buffer_copy(kiln_hal_command_buffer_t* cb,
                                           kiln_hal_buffer_t* source,
                                           uint64_t source_offset,
                                           kiln_hal_buffer_t* target,
                                           uint64_t target_offset,
                                           uint64_t length) {
  KILN_RETURN_IF_ERROR(require_recording(cb, "copy"));
  uint64_t source_length = 0, target_length = 0;
  KILN_RETURN_IF_ERROR(check_transfer(cb, source, "copy source", source_offset,
                                      length,
                                      KILN_HAL_BUFFER_USAGE_TRANSFER_SRC,
                                      &source_length));
  KILN_RETURN_IF_ERROR(check_transfer(cb, target, "copy target", target_offset,
                                      length == KILN_HAL_WHOLE_BUFFER
                                          ? source_length
                                          : length,
                                      KILN_HAL_BUFFER_USAGE_TRANSFER_DST,
                                      &target_length));
  if (source == target &&
      source_offset < target_offset + target_length &&
      target_offset < source_offset + source_length) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "copy: source and target ranges overlap");
  }
  if (source_length == 0) return kiln_ok_status();
  return CB_VTABLE(cb)->copy(cb, source, source_offset, target, target_offset,
                             source_length);
}

kiln_status_t kiln_hal_command_buffer_barrier(kiln_hal_command_buffer_t* cb,
                                              kiln_hal_stages_t source,
                                              kiln_hal_stages_t target) {
  KILN_RETURN_IF_ERROR(require_recording(cb, "barrier"));
  const kiln_hal_stages_t all = KILN_HAL_STAGE_DISPATCH |
                                KILN_HAL_STAGE_TRANSFER | KILN_HAL_STAGE_HOST;
  if (!source || !target || ((source | target) & ~all)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "barrier: bad stage bits 0x%x -> 0x%x", source,
                            target);
  }
  return CB_VTABLE(cb)->barrier(cb, source, target);
}

// Checks one binding against the entry point's layout and the device limits;
// resolves its length when it names a buffer.
static kiln_status_t check_binding(kiln_hal_command_buffer_t* cb,
                                   const kiln_hal_entry_point_spec_t* entry,
                                   uint32_t index,
                                   const kiln_hal_binding_t* binding,
                                   uint64_t* out_length, uint32_t* io_slots) {
  const kiln_hal_device_info_t* info = &cb->device->info;
  bool in_layout = false, read_only = false;
  for (uint32_t i = 0; i < entry->binding_count; ++i) {
    if (entry->bindings[i].set == binding->set &&
        entry->bindings[i].binding == binding->binding) {
      in_layout = true;
      // Declared read-only means NonWritable in the SPIR-V (checked when
      // the pipeline was made), so the kernel cannot store through it.
      read_only = entry->bindings[i].read_only;
    }
  }
  if (!in_layout) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "dispatch '%s': binding %u (set %u, binding %u) "
                            "is not in the entry point's layout",
                            entry->name, index, binding->set,
                            binding->binding);
  }
  *out_length = binding->length;
  if (!binding->buffer) {
    if (binding->slot >= kMaxBindingSlots) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                              "dispatch '%s': binding %u uses slot %u (max %d)",
                              entry->name, index, binding->slot,
                              kMaxBindingSlots - 1);
    }
    if (binding->slot + 1 > *io_slots) *io_slots = binding->slot + 1;
    if (!read_only) {
      cb->written_slots[binding->slot / 64] |= UINT64_C(1) << (binding->slot % 64);
    }
    if (binding->offset % info->min_storage_buffer_offset_alignment) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "dispatch '%s': binding %u offset %llu is not a "
                              "multiple of %llu",
                              entry->name, index,
                              (unsigned long long)binding->offset,
                              (unsigned long long)
                                  info->min_storage_buffer_offset_alignment);
    }
    return kiln_ok_status();
  }
  if (binding->buffer->device != cb->device) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "dispatch '%s': binding %u buffer belongs to "
                            "another device",
                            entry->name, index);
  }
  if (!(binding->buffer->params.usage & KILN_HAL_BUFFER_USAGE_DISPATCH_STORAGE)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "dispatch '%s': binding %u buffer lacks "
                            "DISPATCH_STORAGE usage",
                            entry->name, index);
  }
  if (binding->buffer->immutable && !read_only) {
    return kiln_make_status(KILN_STATUS_PERMISSION_DENIED,
                            "dispatch '%s': binding %u (set %u, binding %u) "
                            "is writable but its buffer is immutable (shared "
                            "constants bind only to read-only bindings)",
                            entry->name, index, binding->set,
                            binding->binding);
  }
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_hal_buffer_check_range(binding->buffer, "dispatch binding",
                                  binding->offset, binding->length,
                                  out_length),
      "dispatch '%s' binding %u", entry->name, index);
  if (binding->offset % info->min_storage_buffer_offset_alignment) {
    return kiln_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "dispatch '%s': binding %u offset %llu is not a multiple of %llu",
        entry->name, index, (unsigned long long)binding->offset,
        (unsigned long long)info->min_storage_buffer_offset_alignment);
  }
  if (*out_length == 0 ||
      *out_length > info->limits.max_storage_buffer_range) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "dispatch '%s': binding %u length %llu is 0 or "
                            "above the device's storage range %llu (bind "
                            "large buffers as several ranges)",
                            entry->name, index,
                            (unsigned long long)*out_length,
                            (unsigned long long)
                                info->limits.max_storage_buffer_range);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_hal_command_buffer_dispatch(
    kiln_hal_command_buffer_t* cb, const kiln_hal_dispatch_t* dispatch) {
  KILN_RETURN_IF_ERROR(require_recording(cb, "dispatch"));
  kiln_hal_executable_t* executable = dispatch->executable;
  if (!executable || executable->device != cb->device) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "dispatch: executable is %s",
                            executable ? "from another device" : "NULL");
  }
  if (dispatch->entry_point >= executable->entry_point_count) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "dispatch: entry point %u of %u",
                            dispatch->entry_point,
                            executable->entry_point_count);
  }
  const kiln_hal_entry_point_spec_t* entry =
      &executable->entry_points[dispatch->entry_point];
  const kiln_hal_device_info_t* info = &cb->device->info;
  for (int axis = 0; axis < 3; ++axis) {
    if (dispatch->workgroup_count[axis] > info->max_workgroup_count[axis]) {
      return kiln_make_status(
          KILN_STATUS_OUT_OF_RANGE,
          "dispatch '%s': workgroup count %u on axis %c exceeds the device's "
          "%u",
          entry->name, dispatch->workgroup_count[axis], "xyz"[axis],
          info->max_workgroup_count[axis]);
    }
  }
  if (dispatch->push_constant_bytes != entry->push_constant_bytes ||
      (dispatch->push_constant_bytes && !dispatch->push_constants)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "dispatch '%s': %u push-constant bytes given, "
                            "the entry point takes %u",
                            entry->name, dispatch->push_constant_bytes,
                            entry->push_constant_bytes);
  }
  if (dispatch->binding_count != entry->binding_count ||
      (dispatch->binding_count && !dispatch->bindings)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "dispatch '%s': %u bindings given, the entry point "
                            "has %u",
                            entry->name, dispatch->binding_count,
                            entry->binding_count);
  }
  kiln_hal_binding_t resolved[KILN_HAL_MAX_BINDINGS_PER_DISPATCH];
  uint32_t slots = cb->slot_count;
  for (uint32_t i = 0; i < dispatch->binding_count; ++i) {
    for (uint32_t j = 0; j < i; ++j) {
      if (dispatch->bindings[j].set == dispatch->bindings[i].set &&
          dispatch->bindings[j].binding == dispatch->bindings[i].binding) {
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "dispatch '%s': set %u binding %u is bound "
                                "twice",
                                entry->name, dispatch->bindings[i].set,
                                dispatch->bindings[i].binding);
      }
    }
    resolved[i] = dispatch->bindings[i];
    KILN_RETURN_IF_ERROR(check_binding(cb, entry, i, &dispatch->bindings[i],
                                       &resolved[i].length, &slots));
  }
  kiln_hal_dispatch_t checked = *dispatch;
  checked.bindings = resolved;
  KILN_RETURN_IF_ERROR(CB_VTABLE(cb)->dispatch(cb, &checked));
  cb->slot_count = slots;
  cb->dispatch_count++;
  return kiln_ok_status();
}

uint32_t kiln_hal_command_buffer_dispatch_count(
    const kiln_hal_command_buffer_t* cb) {
  return cb->dispatch_count;
}

uint32_t kiln_hal_command_buffer_slot_count(
    const kiln_hal_command_buffer_t* cb) {
  return cb->slot_count;
}

kiln_status_t kiln_hal_command_buffer_dispatch_time_ns(
    kiln_hal_command_buffer_t* cb, uint32_t dispatch_index, double* out_ns) {
  *out_ns = 0;
  if (!(cb->flags & KILN_HAL_COMMAND_BUFFER_TIMESTAMPS)) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                            "dispatch_time_ns: command buffer was created "
                            "without KILN_HAL_COMMAND_BUFFER_TIMESTAMPS");
  }
  if (dispatch_index >= cb->dispatch_count) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "dispatch_time_ns: dispatch %u of %u",
                            dispatch_index, cb->dispatch_count);
  }
  return CB_VTABLE(cb)->dispatch_time_ns(cb, dispatch_index, out_ns);
}

kiln_status_t kiln_hal_command_buffer_total_time_ns(kiln_hal_command_buffer_t* cb,
                                                    double* out_ns) {
  *out_ns = 0;
  if (!(cb->flags &
        (KILN_HAL_COMMAND_BUFFER_TIMESTAMPS | KILN_HAL_COMMAND_BUFFER_SPAN_TIMESTAMPS))) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                            "total_time_ns: command buffer was created "
                            "without timestamps");
  }
  return CB_VTABLE(cb)->dispatch_time_ns(cb, cb->dispatch_count, out_ns);
}
