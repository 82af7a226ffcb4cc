// A buffer view: a buffer range seen as a dense row-major tensor of one
// element type. Ref-counted; retains its buffer.
#ifndef KILN_HAL_BUFFER_VIEW_H_
#define KILN_HAL_BUFFER_VIEW_H_

#include "kiln/hal/types.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { KILN_HAL_MAX_RANK = 8 };

// Checks the shape (non-negative dims, no overflow) and that the tensor fits
// the buffer at `offset`.
kiln_status_t kiln_hal_buffer_view_create(kiln_hal_buffer_t* buffer,
                                          uint64_t offset,
                                          kiln_hal_element_type_t element_type,
                                          size_t rank, const int64_t* shape,
                                          kiln_allocator_t allocator,
                                          kiln_hal_buffer_view_t** out_view);
void kiln_hal_buffer_view_retain(kiln_hal_buffer_view_t* view);
void kiln_hal_buffer_view_release(kiln_hal_buffer_view_t* view);

kiln_hal_buffer_t* kiln_hal_buffer_view_buffer(
    const kiln_hal_buffer_view_t* view);
uint64_t kiln_hal_buffer_view_offset(const kiln_hal_buffer_view_t* view);
kiln_hal_element_type_t kiln_hal_buffer_view_element_type(
    const kiln_hal_buffer_view_t* view);
size_t kiln_hal_buffer_view_rank(const kiln_hal_buffer_view_t* view);
int64_t kiln_hal_buffer_view_dim(const kiln_hal_buffer_view_t* view,
                                 size_t index);
uint64_t kiln_hal_buffer_view_element_count(const kiln_hal_buffer_view_t* view);
uint64_t kiln_hal_buffer_view_byte_length(const kiln_hal_buffer_view_t* view);

// Computes element count and byte length of a shape with overflow checks.
kiln_status_t kiln_hal_shape_byte_length(kiln_hal_element_type_t element_type,
                                         size_t rank, const int64_t* shape,
                                         uint64_t* out_element_count,
                                         uint64_t* out_byte_length);

#ifdef __cplusplus
}
#endif

#endif  // KILN_HAL_BUFFER_VIEW_H_
