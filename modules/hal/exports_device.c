// hal.device, submission, fences and semaphores.
#include "hal_module_state.h"
#include "kiln/base/time.h"

static kiln_status_t kiln_hal_export_device(kiln_vm_context_t* context,
                                            void* opaque,
                                            const kiln_vm_value_t* args,
                                            kiln_vm_value_t* results) {
  kiln_hal_module_state_t* state = opaque;
  kiln_hal_device_retain(state->device);
  return kiln_hal_ref_wrap(state->allocator, &kiln_hal_device_ref_type,
                           state->device, &results[0].ref);
}

// Builds a binding table from a list of hal.buffer / hal.buffer_view refs.
// `entries` has room for list->size entries.
static kiln_status_t kiln_hal_binding_table_from_list(
    kiln_vm_list_t* list, const char* export_name,
    kiln_hal_binding_table_entry_t* entries) {
  kiln_vm_ref_object_t** refs = list->data;
  for (uint32_t i = 0; i < list->size; ++i) {
    kiln_status_t status = kiln_hal_resolve_buffer_like(
        refs[i], "binding table slot", &entries[i].buffer, &entries[i].offset,
        &entries[i].length);
    if (kiln_status_is_ok(status)) continue;
    // Named in full only on failure: formatting it for every slot of every
    // call was per-call host time.
    kiln_status_free(status);
    char what[160];
    snprintf(what, sizeof(what), "binding table slot %u of hal.%s", i,
             export_name);
    KILN_RETURN_IF_ERROR(kiln_hal_resolve_buffer_like(
        refs[i], what, &entries[i].buffer, &entries[i].offset,
        &entries[i].length));
  }
  return kiln_ok_status();
}

enum { KILN_HAL_MAX_TABLE_SLOTS = 256 };

// Shared by the submit exports: command buffer, optional table list, and
// optional waits/signals/fence.
static kiln_status_t kiln_hal_submit(kiln_hal_module_state_t* state,
                                     const kiln_vm_value_t* args,
                                     const char* export_name,
                                     const kiln_hal_semaphore_value_t* wait,
                                     const kiln_hal_semaphore_value_t* signal,
                                     kiln_hal_fence_t* fence) {
  kiln_hal_device_t* device = NULL;
  kiln_hal_command_buffer_t* command_buffer = NULL;
  kiln_vm_list_t* table_list = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 0, &kiln_hal_device_ref_type,
                                    export_name, (void**)&device));
  KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 1, &kiln_hal_command_buffer_ref_type,
                                    export_name, (void**)&command_buffer));
  KILN_RETURN_IF_ERROR(kiln_hal_arg_list(args, 2, KILN_VM_LIST_REF, true,
                                         export_name, &table_list));
  if (device != state->device) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "hal.%s: the device is not this context's device",
                            export_name);
  }
  uint32_t slots = table_list ? table_list->size : 0;
  uint32_t needed = kiln_hal_command_buffer_slot_count(command_buffer);
  if (slots < needed) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "hal.%s: the command buffer uses %u binding table "
                            "slots but the table has %u",
                            export_name, needed, slots);
  }
  if (slots > KILN_HAL_MAX_TABLE_SLOTS) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "hal.%s: binding table of %u slots exceeds %d",
                            export_name, slots, KILN_HAL_MAX_TABLE_SLOTS);
  }
  kiln_hal_binding_table_entry_t entries[KILN_HAL_MAX_TABLE_SLOTS];
  if (table_list) {
    KILN_RETURN_IF_ERROR(
        kiln_hal_binding_table_from_list(table_list, export_name, entries));
  }
  kiln_hal_binding_table_t table = {entries, slots};
  kiln_hal_submit_batch_t batch = {
      .waits = wait,
      .wait_count = wait ? 1 : 0,
      .command_buffers = &command_buffer,
      .binding_tables = &table,
      .command_buffer_count = 1,
      .signals = signal,
      .signal_count = signal ? 1 : 0,
      .fence = fence,
  };
  KILN_RETURN_IF_ERROR_ANNOTATE(kiln_hal_device_queue_submit(device, &batch),
                                "in hal.%s", export_name);
  return kiln_ok_status();
}

// (device, command_buffer, table or null): submits and blocks until done.
static kiln_status_t kiln_hal_export_submit_and_wait(
    kiln_vm_context_t* context, void* opaque, const kiln_vm_value_t* args,
    kiln_vm_value_t* results) {
  kiln_hal_module_state_t* state = opaque;
  if (state->wait_fence) {
    KILN_RETURN_IF_ERROR(kiln_hal_fence_reset(state->wait_fence));
  } else {
    KILN_RETURN_IF_ERROR(kiln_hal_fence_create(state->device, &state->wait_fence));
  }
  kiln_status_t status = kiln_hal_submit(state, args, "device.submit_and_wait",
                                         NULL, NULL, state->wait_fence);
  if (kiln_status_is_ok(status)) {
    status = kiln_hal_fence_wait(state->wait_fence, KILN_INFINITE_TIMEOUT_NS);
  }
  if (!kiln_status_is_ok(status)) {  // a later call starts from a new fence
    kiln_hal_fence_release(state->wait_fence);
    state->wait_fence = NULL;
  }
  return status;
}

// (device, command_buffer, table or null, fence).
static kiln_status_t kiln_hal_export_queue_execute(
    kiln_vm_context_t* context, void* opaque, const kiln_vm_value_t* args,
    kiln_vm_value_t* results) {
  kiln_hal_fence_t* fence = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 3, &kiln_hal_fence_ref_type,
                                    "device.queue_execute", (void**)&fence));
  // A fence is one-shot: reusing it across calls starts from unsignalled.
  KILN_RETURN_IF_ERROR(kiln_hal_fence_reset(fence));
  return kiln_hal_submit(opaque, args, "device.queue_execute", NULL, NULL,
                         fence);
}

// (device, command_buffer, table or null, wait semaphore or null, wait value,
//  signal semaphore or null, signal value).
static kiln_status_t kiln_hal_export_queue_execute_timeline(
    kiln_vm_context_t* context, void* opaque, const kiln_vm_value_t* args,
    kiln_vm_value_t* results) {
  const char* name = "device.queue_execute_timeline";
  kiln_hal_semaphore_value_t wait = {NULL, (uint64_t)args[4].i64};
  kiln_hal_semaphore_value_t signal = {NULL, (uint64_t)args[6].i64};
  if (args[3].ref) {
    KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 3, &kiln_hal_semaphore_ref_type,
                                      name, (void**)&wait.semaphore));
  }
  if (args[5].ref) {
    KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 5, &kiln_hal_semaphore_ref_type,
                                      name, (void**)&signal.semaphore));
  }
  return kiln_hal_submit(opaque, args, name,
                         wait.semaphore ? &wait : NULL,
                         signal.semaphore ? &signal : NULL, NULL);
}

static kiln_status_t kiln_hal_export_fence_create(kiln_vm_context_t* context,
                                                  void* opaque,
                                                  const kiln_vm_value_t* args,
                                                  kiln_vm_value_t* results) {
  kiln_hal_module_state_t* state = opaque;
  kiln_hal_device_t* device = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 0, &kiln_hal_device_ref_type,
                                    "fence.create", (void**)&device));
  kiln_hal_fence_t* fence = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_fence_create(device, &fence));
  return kiln_hal_ref_wrap(state->allocator, &kiln_hal_fence_ref_type, fence,
                           &results[0].ref);
}

// (fence, timeout_ns): a negative timeout waits forever.
static kiln_status_t kiln_hal_export_fence_await(kiln_vm_context_t* context,
                                                 void* opaque,
                                                 const kiln_vm_value_t* args,
                                                 kiln_vm_value_t* results) {
  kiln_hal_fence_t* fence = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 0, &kiln_hal_fence_ref_type,
                                    "fence.await", (void**)&fence));
  int64_t timeout = args[1].i64 < 0 ? KILN_INFINITE_TIMEOUT_NS : args[1].i64;
  KILN_RETURN_IF_ERROR_ANNOTATE(kiln_hal_fence_wait(fence, timeout),
                                "in hal.fence.await");
  return kiln_ok_status();
}

static kiln_status_t kiln_hal_export_semaphore_create(
    kiln_vm_context_t* context, void* opaque, const kiln_vm_value_t* args,
    kiln_vm_value_t* results) {
  kiln_hal_module_state_t* state = opaque;
  kiln_hal_device_t* device = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 0, &kiln_hal_device_ref_type,
                                    "semaphore.create", (void**)&device));
  kiln_hal_semaphore_t* semaphore = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_hal_semaphore_create(device, (uint64_t)args[1].i64, &semaphore));
  return kiln_hal_ref_wrap(state->allocator, &kiln_hal_semaphore_ref_type,
                           semaphore, &results[0].ref);
}

static kiln_status_t kiln_hal_export_semaphore_query(
    kiln_vm_context_t* context, void* opaque, const kiln_vm_value_t* args,
    kiln_vm_value_t* results) {
  kiln_hal_semaphore_t* semaphore = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 0, &kiln_hal_semaphore_ref_type,
                                    "semaphore.query", (void**)&semaphore));
  uint64_t value = 0;
  KILN_RETURN_IF_ERROR(kiln_hal_semaphore_query(semaphore, &value));
  results[0] = kiln_vm_value_i64((int64_t)value);
  return kiln_ok_status();
}

static kiln_status_t kiln_hal_export_semaphore_signal(
    kiln_vm_context_t* context, void* opaque, const kiln_vm_value_t* args,
    kiln_vm_value_t* results) {
  kiln_hal_semaphore_t* semaphore = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 0, &kiln_hal_semaphore_ref_type,
                                    "semaphore.signal", (void**)&semaphore));
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_hal_semaphore_signal(semaphore, (uint64_t)args[1].i64),
      "in hal.semaphore.signal");
  return kiln_ok_status();
}

// (semaphore, value, timeout_ns): a negative timeout waits forever.
static kiln_status_t kiln_hal_export_semaphore_await(
    kiln_vm_context_t* context, void* opaque, const kiln_vm_value_t* args,
    kiln_vm_value_t* results) {
  kiln_hal_semaphore_t* semaphore = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 0, &kiln_hal_semaphore_ref_type,
                                    "semaphore.await", (void**)&semaphore));
  int64_t timeout = args[2].i64 < 0 ? KILN_INFINITE_TIMEOUT_NS : args[2].i64;
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_hal_semaphore_wait(semaphore, (uint64_t)args[1].i64, timeout),
      "in hal.semaphore.await");
  return kiln_ok_status();
}

const kiln_vm_native_export_t kiln_hal_device_exports[] = {
    {"device", "v_r", kiln_hal_export_device},
    {"device.submit_and_wait", "rrr_v", kiln_hal_export_submit_and_wait},
    {"device.queue_execute", "rrrr_v", kiln_hal_export_queue_execute},
    {"device.queue_execute_timeline", "rrrrIrI_v",
     kiln_hal_export_queue_execute_timeline},
    {"fence.create", "r_r", kiln_hal_export_fence_create},
    {"fence.await", "rI_v", kiln_hal_export_fence_await},
    {"semaphore.create", "rI_r", kiln_hal_export_semaphore_create},
    {"semaphore.query", "r_I", kiln_hal_export_semaphore_query},
    {"semaphore.signal", "rI_v", kiln_hal_export_semaphore_signal},
    {"semaphore.await", "rII_v", kiln_hal_export_semaphore_await},
};
const size_t kiln_hal_device_export_count =
    sizeof(kiln_hal_device_exports) / sizeof(kiln_hal_device_exports[0]);
