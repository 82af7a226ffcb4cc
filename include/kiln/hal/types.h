// Plain types shared by the HAL headers: object handles, element types,
// memory types and usage bits.
#ifndef KILN_HAL_TYPES_H_
#define KILN_HAL_TYPES_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/base/allocator.h"
#include "kiln/base/status.h"
#include "kiln/base/views.h"

#ifdef __cplusplus
extern "C" {
#endif

// Ref-counted objects; each starts with a kiln_hal_resource_t.
typedef struct kiln_hal_device_t kiln_hal_device_t;
typedef struct kiln_hal_buffer_t kiln_hal_buffer_t;
typedef struct kiln_hal_buffer_view_t kiln_hal_buffer_view_t;
typedef struct kiln_hal_command_buffer_t kiln_hal_command_buffer_t;
typedef struct kiln_hal_executable_t kiln_hal_executable_t;
typedef struct kiln_hal_semaphore_t kiln_hal_semaphore_t;
typedef struct kiln_hal_fence_t kiln_hal_fence_t;

// Length meaning "from the offset to the end of the buffer".
#define KILN_HAL_WHOLE_BUFFER UINT64_MAX

typedef enum kiln_hal_memory_type_e {
  // Working memory; may not be mappable (read/write go through staging).
  KILN_HAL_MEMORY_DEVICE_LOCAL = 0,
  // Mappable memory the device can use directly (coherent).
  KILN_HAL_MEMORY_HOST_VISIBLE = 1,
  // Mappable, host-cached memory for uploads and readbacks.
  KILN_HAL_MEMORY_STAGING = 2,
} kiln_hal_memory_type_t;

typedef enum kiln_hal_buffer_usage_bits_e {
  KILN_HAL_BUFFER_USAGE_TRANSFER_SRC = 1u << 0,
  KILN_HAL_BUFFER_USAGE_TRANSFER_DST = 1u << 1,
  KILN_HAL_BUFFER_USAGE_DISPATCH_STORAGE = 1u << 2,
  KILN_HAL_BUFFER_USAGE_MAPPING = 1u << 3,
  KILN_HAL_BUFFER_USAGE_TRANSFER =
      KILN_HAL_BUFFER_USAGE_TRANSFER_SRC | KILN_HAL_BUFFER_USAGE_TRANSFER_DST,
  KILN_HAL_BUFFER_USAGE_DEFAULT =
      KILN_HAL_BUFFER_USAGE_TRANSFER | KILN_HAL_BUFFER_USAGE_DISPATCH_STORAGE,
} kiln_hal_buffer_usage_bits_t;
typedef uint32_t kiln_hal_buffer_usage_t;

typedef enum kiln_hal_element_type_e {
  KILN_HAL_ELEMENT_F16 = 0,
  KILN_HAL_ELEMENT_BF16,
  KILN_HAL_ELEMENT_F32,
  KILN_HAL_ELEMENT_F64,
  KILN_HAL_ELEMENT_I8,
  KILN_HAL_ELEMENT_I16,
  KILN_HAL_ELEMENT_I32,
  KILN_HAL_ELEMENT_I64,
  KILN_HAL_ELEMENT_U8,
  KILN_HAL_ELEMENT_U16,
  KILN_HAL_ELEMENT_U32,
  KILN_HAL_ELEMENT_U64,
  KILN_HAL_ELEMENT_BOOL,  // one byte per element
  KILN_HAL_ELEMENT_TYPE_COUNT,
} kiln_hal_element_type_t;

// Bytes per element; 0 for an invalid type.
size_t kiln_hal_element_type_size(kiln_hal_element_type_t type);
// "f32", "i8", ...; "invalid" for an invalid type.
const char* kiln_hal_element_type_name(kiln_hal_element_type_t type);
kiln_status_t kiln_hal_element_type_parse(kiln_string_view_t name,
                                          kiln_hal_element_type_t* out_type);

#ifdef __cplusplus
}
#endif

#endif  // KILN_HAL_TYPES_H_
