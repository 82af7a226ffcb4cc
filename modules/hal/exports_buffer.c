// hal.buffer.* and hal.buffer_view.*: allocation, host transfers, views,
// shape checks and small element access.
#include <string.h>

#include "hal_module_state.h"
#include "kiln/base/size_math.h"

// (device, memory_type, usage, size) -> buffer.
static kiln_status_t kiln_hal_export_buffer_allocate(
    kiln_vm_context_t* context, void* opaque, const kiln_vm_value_t* args,
    kiln_vm_value_t* results) {
  kiln_hal_module_state_t* state = opaque;
  kiln_hal_device_t* device = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 0, &kiln_hal_device_ref_type,
                                    "buffer.allocate", (void**)&device));
  if (args[1].i32 < 0 || args[1].i32 > KILN_HAL_MEMORY_STAGING) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "hal.buffer.allocate: memory type %d is not 0 "
                            "(device local), 1 (host visible) or 2 (staging)",
                            args[1].i32);
  }
  if (args[3].i64 <= 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "hal.buffer.allocate: size %lld must be positive",
                            (long long)args[3].i64);
  }
  kiln_hal_buffer_params_t params = {
      .memory_type = (kiln_hal_memory_type_t)args[1].i32,
      .usage = args[2].i32 ? (kiln_hal_buffer_usage_t)args[2].i32
                           : KILN_HAL_BUFFER_USAGE_DEFAULT,
      .size = (uint64_t)args[3].i64,
      .memory_budget = state->options.memory_budget,
  };
  kiln_hal_buffer_t* buffer = NULL;
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_hal_buffer_allocate(device, &params, &buffer),
      "in hal.buffer.allocate");
  return kiln_hal_ref_wrap(state->allocator, &kiln_hal_buffer_ref_type, buffer,
                           &results[0].ref);
}

// (device, vm.buffer) -> an immutable device-local buffer holding the bytes
// (rounded up to 4 with zeros). Module rodata (weights) is uploaded once
// per shared cache, so every context of a model binds one copy; other
// vm.buffers get their own copy. Kernels may bind it read-only only.
static kiln_status_t kiln_hal_export_buffer_constant(
    kiln_vm_context_t* context, void* opaque, const kiln_vm_value_t* args,
    kiln_vm_value_t* results) {
  kiln_hal_module_state_t* state = opaque;
  const char* name = "buffer.constant";
  kiln_hal_device_t* device = NULL;
  kiln_vm_buffer_t* bytes = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_hal_arg(args, 0, &kiln_hal_device_ref_type, name, (void**)&device));
  KILN_RETURN_IF_ERROR(kiln_hal_arg_bytes(args, 1, name, &bytes));
  if (device != state->device) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "hal.%s: the device is not this context's device",
                            name);
  }
  kiln_hal_buffer_t* buffer = NULL;
  // Rodata views are read-only and keep their module alive: their bytes
  // never change, so one device copy serves every context.
  if (bytes->read_only && bytes->owner) {
    KILN_RETURN_IF_ERROR_ANNOTATE(
        kiln_hal_shared_cache_constant(state->options.shared_cache,
                                       bytes->owner, bytes->data,
                                       bytes->length, &buffer),
        "in hal.%s", name);
  } else {
    KILN_RETURN_IF_ERROR_ANNOTATE(
        kiln_hal_upload_constant(device, state->options.memory_budget,
                                 bytes->data, bytes->length, &buffer),
        "in hal.%s", name);
  }
  return kiln_hal_ref_wrap(state->allocator, &kiln_hal_buffer_ref_type, buffer,
                           &results[0].ref);
}

static kiln_status_t kiln_hal_export_buffer_length(kiln_vm_context_t* context,
                                                   void* opaque,
                                                   const kiln_vm_value_t* args,
                                                   kiln_vm_value_t* results) {
  kiln_hal_buffer_t* buffer = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 0, &kiln_hal_buffer_ref_type,
                                    "buffer.length", (void**)&buffer));
  results[0] = kiln_vm_value_i64((int64_t)kiln_hal_buffer_size(buffer));
  return kiln_ok_status();
}

// Shared by buffer.write/read: (buffer, offset, vm.buffer, vm offset, length).
static kiln_status_t kiln_hal_buffer_transfer(kiln_hal_module_state_t* state,
                                              const kiln_vm_value_t* args,
                                              bool write, const char* name) {
  kiln_hal_buffer_t* buffer = NULL;
  kiln_vm_buffer_t* bytes = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_hal_arg(args, 0, &kiln_hal_buffer_ref_type, name, (void**)&buffer));
  KILN_RETURN_IF_ERROR(kiln_hal_arg_bytes(args, 2, name, &bytes));
  KILN_RETURN_IF_ERROR(
      kiln_hal_check_bytes_range(bytes, args[3].i64, args[4].i64, name));
  if (!write && bytes->read_only) {
    return kiln_make_status(KILN_STATUS_PERMISSION_DENIED,
                            "hal.%s: the target vm.buffer is read-only", name);
  }
  uint64_t length;
  if (args[1].i64 < 0) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "hal.%s: negative buffer offset %lld", name,
                            (long long)args[1].i64);
  }
  KILN_RETURN_IF_ERROR(kiln_hal_buffer_check_range(
      buffer, name, (uint64_t)args[1].i64, (uint64_t)args[4].i64, &length));
  uint8_t* host = bytes->data + args[3].i64;
  if (write) {
    return kiln_hal_device_write_buffer(state->device, buffer,
                                        (uint64_t)args[1].i64, host, length);
  }
  return kiln_hal_device_read_buffer(state->device, buffer,
                                     (uint64_t)args[1].i64, host, length);
}

static kiln_status_t kiln_hal_export_buffer_write(kiln_vm_context_t* context,
                                                  void* opaque,
                                                  const kiln_vm_value_t* args,
                                                  kiln_vm_value_t* results) {
  return kiln_hal_buffer_transfer(opaque, args, true, "buffer.write");
}

static kiln_status_t kiln_hal_export_buffer_read(kiln_vm_context_t* context,
                                                 void* opaque,
                                                 const kiln_vm_value_t* args,
                                                 kiln_vm_value_t* results) {
  return kiln_hal_buffer_transfer(opaque, args, false, "buffer.read");
}

// Reads an i64 dims list into `shape`.
static kiln_status_t kiln_hal_dims_from_list(kiln_vm_list_t* list,
                                             const char* name,
                                             size_t* out_rank,
                                             int64_t* shape) {
  if (list->size > KILN_HAL_MAX_RANK) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "hal.%s: rank %u exceeds %d", name, list->size,
                            KILN_HAL_MAX_RANK);
  }
  memcpy(shape, list->data, list->size * sizeof(int64_t));
  *out_rank = list->size;
  return kiln_ok_status();
}

// (buffer, offset, element_type, dims i64 list) -> buffer_view.
static kiln_status_t kiln_hal_export_buffer_view_create(
    kiln_vm_context_t* context, void* opaque, const kiln_vm_value_t* args,
    kiln_vm_value_t* results) {
  kiln_hal_module_state_t* state = opaque;
  const char* name = "buffer_view.create";
  kiln_hal_buffer_t* buffer = NULL;
  kiln_vm_list_t* dims = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_hal_arg(args, 0, &kiln_hal_buffer_ref_type, name, (void**)&buffer));
  KILN_RETURN_IF_ERROR(
      kiln_hal_arg_list(args, 3, KILN_VM_LIST_I64, false, name, &dims));
  if (args[1].i64 < 0) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "hal.%s: negative offset", name);
  }
  if (args[2].i32 < 0 || args[2].i32 >= KILN_HAL_ELEMENT_TYPE_COUNT) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "hal.%s: unknown element type %d", name,
                            args[2].i32);
  }
  size_t rank = 0;
  int64_t shape[KILN_HAL_MAX_RANK];
  KILN_RETURN_IF_ERROR(kiln_hal_dims_from_list(dims, name, &rank, shape));
  kiln_hal_buffer_view_t* view = NULL;
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_hal_buffer_view_create(buffer, (uint64_t)args[1].i64,
                                  (kiln_hal_element_type_t)args[2].i32, rank,
                                  shape, state->allocator, &view),
      "in hal.%s", name);
  return kiln_hal_ref_wrap(state->allocator, &kiln_hal_buffer_view_ref_type,
                           view, &results[0].ref);
}

#define KILN_HAL_VIEW_ARG(name)                                          \
  kiln_hal_buffer_view_t* view = NULL;                                   \
  KILN_RETURN_IF_ERROR(kiln_hal_arg(args, 0, &kiln_hal_buffer_view_ref_type, \
                                    name, (void**)&view))

static kiln_status_t kiln_hal_export_view_buffer(kiln_vm_context_t* context,
                                                 void* opaque,
                                                 const kiln_vm_value_t* args,
                                                 kiln_vm_value_t* results) {
  kiln_hal_module_state_t* state = opaque;
  KILN_HAL_VIEW_ARG("buffer_view.buffer");
  kiln_hal_buffer_t* buffer = kiln_hal_buffer_view_buffer(view);
  kiln_hal_buffer_retain(buffer);
  return kiln_hal_ref_wrap(state->allocator, &kiln_hal_buffer_ref_type, buffer,
                           &results[0].ref);
}

static kiln_status_t kiln_hal_export_view_offset(kiln_vm_context_t* context,
                                                 void* opaque,
                                                 const kiln_vm_value_t* args,
                                                 kiln_vm_value_t* results) {
  KILN_HAL_VIEW_ARG("buffer_view.offset");
  results[0] = kiln_vm_value_i64((int64_t)kiln_hal_buffer_view_offset(view));
  return kiln_ok_status();
}

static kiln_status_t kiln_hal_export_view_byte_length(
    kiln_vm_context_t* context, void* opaque, const kiln_vm_value_t* args,
    kiln_vm_value_t* results) {
  KILN_HAL_VIEW_ARG("buffer_view.byte_length");
  results[0] =
      kiln_vm_value_i64((int64_t)kiln_hal_buffer_view_byte_length(view));
  return kiln_ok_status();
}

static kiln_status_t kiln_hal_export_view_rank(kiln_vm_context_t* context,
                                               void* opaque,
                                               const kiln_vm_value_t* args,
                                               kiln_vm_value_t* results) {
  KILN_HAL_VIEW_ARG("buffer_view.rank");
  results[0] = kiln_vm_value_i32((int32_t)kiln_hal_buffer_view_rank(view));
  return kiln_ok_status();
}

static kiln_status_t kiln_hal_export_view_dim(kiln_vm_context_t* context,
                                              void* opaque,
                                              const kiln_vm_value_t* args,
                                              kiln_vm_value_t* results) {
  KILN_HAL_VIEW_ARG("buffer_view.dim");
  size_t rank = kiln_hal_buffer_view_rank(view);
  if (args[1].i32 < 0 || (size_t)args[1].i32 >= rank) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "hal.buffer_view.dim: dimension %d of a rank-%zu "
                            "view",
                            args[1].i32, rank);
  }
  results[0] = kiln_vm_value_i64(kiln_hal_buffer_view_dim(view, args[1].i32));
  return kiln_ok_status();
}

static kiln_status_t kiln_hal_export_view_element_type(
    kiln_vm_context_t* context, void* opaque, const kiln_vm_value_t* args,
    kiln_vm_value_t* results) {
  KILN_HAL_VIEW_ARG("buffer_view.element_type");
  results[0] =
      kiln_vm_value_i32((int32_t)kiln_hal_buffer_view_element_type(view));
  return kiln_ok_status();
}

// Formats "2x3xf32" for messages.
static void kiln_hal_format_shape(size_t rank, const int64_t* shape,
                                  kiln_hal_element_type_t type, char* text,
                                  size_t size) {
  size_t used = 0;
  text[0] = 0;
  for (size_t i = 0; i < rank && used < size; ++i) {
    used += (size_t)snprintf(text + used, size - used, "%lldx",
                             (long long)shape[i]);
  }
  if (used < size) {
    snprintf(text + used, size - used, "%s", kiln_hal_element_type_name(type));
  }
}

// (view, argument index, element_type, dims list): traps when the view does
// not have exactly that type and shape, naming both.
static kiln_status_t kiln_hal_export_view_assert(kiln_vm_context_t* context,
                                                 void* opaque,
                                                 const kiln_vm_value_t* args,
                                                 kiln_vm_value_t* results) {
  const char* name = "buffer_view.assert";
  kiln_vm_list_t* dims = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_hal_arg_list(args, 3, KILN_VM_LIST_I64, false, name, &dims));
  size_t rank = 0;
  int64_t shape[KILN_HAL_MAX_RANK];
  KILN_RETURN_IF_ERROR(kiln_hal_dims_from_list(dims, name, &rank, shape));
  kiln_hal_element_type_t type = (kiln_hal_element_type_t)args[2].i32;
  char expected[160];
  kiln_hal_format_shape(rank, shape, type, expected, sizeof(expected));
  if (args[0].ref == NULL ||
      args[0].ref->type != &kiln_hal_buffer_view_ref_type) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "input %d: expected a %s buffer view, got %s",
                            args[1].i32, expected,
                            args[0].ref ? args[0].ref->type->name : "null");
  }
  kiln_hal_buffer_view_t* view = ((kiln_hal_ref_t*)args[0].ref)->object;
  size_t actual_rank = kiln_hal_buffer_view_rank(view);
  int64_t actual_shape[KILN_HAL_MAX_RANK];
  for (size_t i = 0; i < actual_rank && i < KILN_HAL_MAX_RANK; ++i) {
    actual_shape[i] = kiln_hal_buffer_view_dim(view, i);
  }
  bool match = actual_rank == rank &&
               kiln_hal_buffer_view_element_type(view) == type &&
               memcmp(actual_shape, shape, rank * sizeof(int64_t)) == 0;
  if (!match) {
    char actual[160];
    kiln_hal_format_shape(actual_rank, actual_shape,
                          kiln_hal_buffer_view_element_type(view), actual,
                          sizeof(actual));
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "input %d: expected %s, got %s", args[1].i32,
                            expected, actual);
  }
  return kiln_ok_status();
}

// Element access for small scalars: reads/writes one element by flat index.
static kiln_status_t kiln_hal_view_element(kiln_hal_buffer_view_t* view,
                                           int64_t index,
                                           kiln_hal_element_type_t want,
                                           const char* name,
                                           uint64_t* out_offset) {
  if (kiln_hal_buffer_view_element_type(view) != want) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "hal.%s: the view holds %s, not %s", name,
                            kiln_hal_element_type_name(
                                kiln_hal_buffer_view_element_type(view)),
                            kiln_hal_element_type_name(want));
  }
  uint64_t count = kiln_hal_buffer_view_element_count(view);
  if (index < 0 || (uint64_t)index >= count) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "hal.%s: element %lld of a view of %llu elements",
                            name, (long long)index, (unsigned long long)count);
  }
  *out_offset = kiln_hal_buffer_view_offset(view) + (uint64_t)index * 4;
  return kiln_ok_status();
}

static kiln_status_t kiln_hal_view_get32(kiln_hal_module_state_t* state,
                                         const kiln_vm_value_t* args,
                                         kiln_hal_element_type_t type,
                                         const char* name, void* out) {
  KILN_HAL_VIEW_ARG(name);
  uint64_t offset = 0;
  KILN_RETURN_IF_ERROR(
      kiln_hal_view_element(view, args[1].i64, type, name, &offset));
  return kiln_hal_device_read_buffer(
      state->device, kiln_hal_buffer_view_buffer(view), offset, out, 4);
}

static kiln_status_t kiln_hal_view_set32(kiln_hal_module_state_t* state,
                                         const kiln_vm_value_t* args,
                                         kiln_hal_element_type_t type,
                                         const char* name, const void* value) {
  KILN_HAL_VIEW_ARG(name);
  uint64_t offset = 0;
  KILN_RETURN_IF_ERROR(
      kiln_hal_view_element(view, args[1].i64, type, name, &offset));
  return kiln_hal_device_write_buffer(
      state->device, kiln_hal_buffer_view_buffer(view), offset, value, 4);
}

static kiln_status_t kiln_hal_export_view_get_f32(kiln_vm_context_t* context,
                                                  void* opaque,
                                                  const kiln_vm_value_t* args,
                                                  kiln_vm_value_t* results) {
  float value = 0;
  KILN_RETURN_IF_ERROR(kiln_hal_view_get32(opaque, args, KILN_HAL_ELEMENT_F32,
                                           "buffer_view.get_f32", &value));
  results[0] = kiln_vm_value_f32(value);
  return kiln_ok_status();
}

static kiln_status_t kiln_hal_export_view_get_i32(kiln_vm_context_t* context,
                                                  void* opaque,
                                                  const kiln_vm_value_t* args,
                                                  kiln_vm_value_t* results) {
  int32_t value = 0;
  KILN_RETURN_IF_ERROR(kiln_hal_view_get32(opaque, args, KILN_HAL_ELEMENT_I32,
                                           "buffer_view.get_i32", &value));
  results[0] = kiln_vm_value_i32(value);
  return kiln_ok_status();
}

static kiln_status_t kiln_hal_export_view_set_f32(kiln_vm_context_t* context,
                                                  void* opaque,
                                                  const kiln_vm_value_t* args,
                                                  kiln_vm_value_t* results) {
  float value = args[2].f32;
  return kiln_hal_view_set32(opaque, args, KILN_HAL_ELEMENT_F32,
                             "buffer_view.set_f32", &value);
}

static kiln_status_t kiln_hal_export_view_set_i32(kiln_vm_context_t* context,
                                                  void* opaque,
                                                  const kiln_vm_value_t* args,
                                                  kiln_vm_value_t* results) {
  int32_t value = args[2].i32;
  return kiln_hal_view_set32(opaque, args, KILN_HAL_ELEMENT_I32,
                             "buffer_view.set_i32", &value);
}

const kiln_vm_native_export_t kiln_hal_buffer_exports[] = {
    {"buffer.allocate", "riiI_r", kiln_hal_export_buffer_allocate},
    {"buffer.constant", "rr_r", kiln_hal_export_buffer_constant},
    {"buffer.length", "r_I", kiln_hal_export_buffer_length},
    {"buffer.write", "rIrII_v", kiln_hal_export_buffer_write},
    {"buffer.read", "rIrII_v", kiln_hal_export_buffer_read},
    {"buffer_view.create", "rIir_r", kiln_hal_export_buffer_view_create},
    {"buffer_view.buffer", "r_r", kiln_hal_export_view_buffer},
    {"buffer_view.offset", "r_I", kiln_hal_export_view_offset},
    {"buffer_view.byte_length", "r_I", kiln_hal_export_view_byte_length},
    {"buffer_view.rank", "r_i", kiln_hal_export_view_rank},
    {"buffer_view.dim", "ri_I", kiln_hal_export_view_dim},
    {"buffer_view.element_type", "r_i", kiln_hal_export_view_element_type},
    {"buffer_view.assert", "riir_v", kiln_hal_export_view_assert},
    {"buffer_view.get_f32", "rI_f", kiln_hal_export_view_get_f32},
    {"buffer_view.get_i32", "rI_i", kiln_hal_export_view_get_i32},
    {"buffer_view.set_f32", "rIf_v", kiln_hal_export_view_set_f32},
    {"buffer_view.set_i32", "rIi_v", kiln_hal_export_view_set_i32},
};
const size_t kiln_hal_buffer_export_count =
    sizeof(kiln_hal_buffer_exports) / sizeof(kiln_hal_buffer_exports[0]);
