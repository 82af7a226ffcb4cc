// Buffer views: shape and element type over a buffer range.
#include "kiln/hal/buffer_view.h"

#include <string.h>

#include "kiln/base/size_math.h"
#include "kiln/hal/buffer.h"
#include "kiln/hal/driver_api.h"

struct kiln_hal_buffer_view_t {
  uint32_t ref_count;
  kiln_allocator_t allocator;
  kiln_hal_buffer_t* buffer;
  uint64_t offset;
  kiln_hal_element_type_t element_type;
  size_t rank;
  int64_t shape[KILN_HAL_MAX_RANK];
  uint64_t element_count;
  uint64_t byte_length;
};

kiln_status_t kiln_hal_shape_byte_length(kiln_hal_element_type_t element_type,
                                         size_t rank, const int64_t* shape,
                                         uint64_t* out_element_count,
                                         uint64_t* out_byte_length) {
  *out_element_count = 0;
  *out_byte_length = 0;
  size_t element_size = kiln_hal_element_type_size(element_type);
  if (element_size == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "invalid element type %d", (int)element_type);
  }
  if (rank > KILN_HAL_MAX_RANK) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "rank %zu exceeds the maximum of %d", rank,
                            KILN_HAL_MAX_RANK);
  }
  uint64_t count = 1;
  for (size_t i = 0; i < rank; ++i) {
    if (shape[i] < 0) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "dimension %zu is negative (%lld)", i,
                              (long long)shape[i]);
    }
    if (!kiln_u64_mul(count, (uint64_t)shape[i], &count)) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                              "element count overflows at dimension %zu", i);
    }
  }
  uint64_t bytes = 0;
  if (!kiln_u64_mul(count, element_size, &bytes)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "byte length of %llu elements overflows",
                            (unsigned long long)count);
  }
  *out_element_count = count;
  *out_byte_length = bytes;
  return kiln_ok_status();
}

kiln_status_t kiln_hal_buffer_view_create(kiln_hal_buffer_t* buffer,
                                          uint64_t offset,
                                          kiln_hal_element_type_t element_type,
                                          size_t rank, const int64_t* shape,
                                          kiln_allocator_t allocator,
                                          kiln_hal_buffer_view_t** out_view) {
  *out_view = NULL;
  if (!buffer) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "buffer_view_create: buffer is NULL");
  }
  uint64_t count = 0, bytes = 0;
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_hal_shape_byte_length(element_type, rank, shape, &count, &bytes),
      "buffer_view_create");
  uint64_t checked = 0;
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_hal_buffer_check_range(buffer, "buffer_view_create", offset, bytes,
                                  &checked),
      "a %s tensor of %llu elements", kiln_hal_element_type_name(element_type),
      (unsigned long long)count);
  kiln_hal_buffer_view_t* view = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_calloc(allocator, sizeof(*view), (void**)&view));
  view->ref_count = 1;
  view->allocator = allocator;
  view->buffer = buffer;
  kiln_hal_buffer_retain(buffer);
  view->offset = offset;
  view->element_type = element_type;
  view->rank = rank;
  if (rank) memcpy(view->shape, shape, rank * sizeof(shape[0]));
  view->element_count = count;
  view->byte_length = bytes;
  *out_view = view;
  return kiln_ok_status();
}

void kiln_hal_buffer_view_retain(kiln_hal_buffer_view_t* view) {
  if (view) __atomic_fetch_add(&view->ref_count, 1, __ATOMIC_RELAXED);
}

void kiln_hal_buffer_view_release(kiln_hal_buffer_view_t* view) {
  if (!view || __atomic_sub_fetch(&view->ref_count, 1, __ATOMIC_ACQ_REL)) {
    return;
  }
  kiln_hal_buffer_release(view->buffer);
  kiln_allocator_free(view->allocator, view);
}

kiln_hal_buffer_t* kiln_hal_buffer_view_buffer(
    const kiln_hal_buffer_view_t* view) {
  return view->buffer;
}
uint64_t kiln_hal_buffer_view_offset(const kiln_hal_buffer_view_t* view) {
  return view->offset;
}
kiln_hal_element_type_t kiln_hal_buffer_view_element_type(
    const kiln_hal_buffer_view_t* view) {
  return view->element_type;
}
size_t kiln_hal_buffer_view_rank(const kiln_hal_buffer_view_t* view) {
  return view->rank;
}
int64_t kiln_hal_buffer_view_dim(const kiln_hal_buffer_view_t* view,
                                 size_t index) {
  return index < view->rank ? view->shape[index] : 0;
}
uint64_t kiln_hal_buffer_view_element_count(
    const kiln_hal_buffer_view_t* view) {
  return view->element_count;
}
uint64_t kiln_hal_buffer_view_byte_length(const kiln_hal_buffer_view_t* view) {
  return view->byte_length;
}
