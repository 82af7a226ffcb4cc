// The cpu native module (kiln/modules/cpu_ops_module.h): argument checks,
// device <-> host transfers and statistics around cpu_kernels.c.
#include "kiln/modules/cpu_ops_module.h"

#include <stdio.h>
#include <string.h>

#include "cpu_kernels.h"
#include "kiln/base/size_math.h"
#include "kiln/base/time.h"
#include "kiln/hal/buffer.h"
#include "kiln/hal/device.h"
#include "kiln/modules/hal_module.h"
#include "kiln/vm/list.h"
#include "kiln/vm/native_module.h"

typedef struct kiln_cpu_ops_t {
  kiln_allocator_t allocator;
  kiln_cpu_ops_stats_t* stats;  // may be NULL
} kiln_cpu_ops_t;

// One checked buffer range of a call: argument `index` (a hal.buffer) and
// the byte offset after it, `length` bytes.
typedef struct kiln_cpu_range_t {
  kiln_hal_buffer_t* buffer;
  uint64_t offset, length;
} kiln_cpu_range_t;

static kiln_status_t kiln_cpu_arg_range(const kiln_vm_value_t* args, size_t index,
                                        const char* op, uint64_t count, uint64_t element_size,
                                        kiln_cpu_range_t* out) {
  char what[96];
  snprintf(what, sizeof(what), "argument %zu of cpu.%s", index, op);
  memset(out, 0, sizeof(*out));
  KILN_RETURN_IF_ERROR(kiln_hal_module_unwrap_buffer(args[index].ref, what, &out->buffer));
  int64_t offset = args[index + 1].i64;
  uint64_t length = 0;
  if (offset < 0 || !kiln_u64_mul(count, element_size, &length) || length == 0 ||
      !kiln_range_fits((uint64_t)offset, length, kiln_hal_buffer_size(out->buffer))) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "%s: %llu elements of %llu bytes at offset %lld do not fit a "
                            "buffer of %llu bytes",
                            what, (unsigned long long)count, (unsigned long long)element_size,
                            (long long)offset,
                            (unsigned long long)kiln_hal_buffer_size(out->buffer));
  }
  out->offset = (uint64_t)offset;
  out->length = length;
  return kiln_ok_status();
}

// A count argument: positive and at most `limit`.
static kiln_status_t kiln_cpu_arg_count(const kiln_vm_value_t* args, size_t index,
                                        const char* op, const char* name, int64_t min,
                                        uint64_t* out) {
  int64_t value = args[index].i64;
  // 2^40 elements is beyond any buffer; it keeps products below 2^64.
  if (value < min || value > ((int64_t)1 << 40)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "argument %zu (%s) of cpu.%s is %lld; expected %lld to 2^40",
                            index, name, op, (long long)value, (long long)min);
  }
  *out = (uint64_t)value;
  return kiln_ok_status();
}

static kiln_status_t kiln_cpu_read(kiln_cpu_ops_t* ops, const kiln_cpu_range_t* range,
                                   void** out_data) {
  *out_data = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_malloc(ops->allocator, (size_t)range->length, out_data));
  kiln_status_t status =
      kiln_hal_device_read_buffer(kiln_hal_buffer_device(range->buffer), range->buffer,
                                  range->offset, *out_data, range->length);
  if (status) {
    kiln_allocator_free(ops->allocator, *out_data);
    *out_data = NULL;
    return status;
  }
  if (ops->stats) ops->stats->bytes_read += range->length;
  return kiln_ok_status();
}

static kiln_status_t kiln_cpu_write(kiln_cpu_ops_t* ops, const kiln_cpu_range_t* range,
                                    const void* data, uint64_t length) {
  if (length == 0) return kiln_ok_status();
  KILN_RETURN_IF_ERROR(kiln_hal_device_write_buffer(kiln_hal_buffer_device(range->buffer),
                                                    range->buffer, range->offset, data,
                                                    length));
  if (ops->stats) ops->stats->bytes_written += length;
  return kiln_ok_status();
}

// Scratch of `count` int64 (at least one).
static kiln_status_t kiln_cpu_alloc_i64(kiln_cpu_ops_t* ops, uint64_t count, int64_t** out) {
  size_t bytes = 0;
  if (!kiln_size_mul(count ? (size_t)count : 1, sizeof(int64_t), &bytes)) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "cpu ops: scratch too large");
  }
  return kiln_allocator_malloc(ops->allocator, bytes, (void**)out);
}

static void kiln_cpu_note(kiln_cpu_ops_t* ops, int64_t start_ns) {
  if (!ops->stats) return;
  ops->stats->calls++;
  ops->stats->host_ns += kiln_time_now_ns() - start_ns;
}

static kiln_status_t kiln_cpu_topk_fn(kiln_vm_context_t* context, void* state,
                                   const kiln_vm_value_t* args, kiln_vm_value_t* results) {
  (void)context;
  (void)results;
  kiln_cpu_ops_t* ops = state;
  int64_t start = kiln_time_now_ns();
  uint64_t outer = 0, n = 0, inner = 0, k = 0, total = 0, picked = 0;
  KILN_RETURN_IF_ERROR(kiln_cpu_arg_count(args, 6, "topk", "outer", 1, &outer));
  KILN_RETURN_IF_ERROR(kiln_cpu_arg_count(args, 7, "topk", "n", 1, &n));
  KILN_RETURN_IF_ERROR(kiln_cpu_arg_count(args, 8, "topk", "inner", 1, &inner));
  KILN_RETURN_IF_ERROR(kiln_cpu_arg_count(args, 9, "topk", "k", 1, &k));
  if (k > n) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "cpu.topk: k %llu is larger than the axis (%llu)",
                            (unsigned long long)k, (unsigned long long)n);
  }
  if (args[10].i32 & ~1) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "cpu.topk: unknown flags 0x%x",
                            (unsigned)args[10].i32);
  }
  if (!kiln_u64_mul(outer, n, &total) || !kiln_u64_mul(total, inner, &total) ||
      !kiln_u64_mul(outer, k, &picked) || !kiln_u64_mul(picked, inner, &picked)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "cpu.topk: shape overflows");
  }
  kiln_cpu_range_t x, values, indices;
  KILN_RETURN_IF_ERROR(kiln_cpu_arg_range(args, 0, "topk", total, 4, &x));
  KILN_RETURN_IF_ERROR(kiln_cpu_arg_range(args, 2, "topk", picked, 4, &values));
  KILN_RETURN_IF_ERROR(kiln_cpu_arg_range(args, 4, "topk", picked, 8, &indices));
  float* data = NULL;
  float* out_values = NULL;
  int64_t* out_indices = NULL;
  int64_t* scratch = NULL;
  kiln_status_t status = kiln_cpu_read(ops, &x, (void**)&data);
  if (!status) {
    status = kiln_allocator_malloc(ops->allocator, (size_t)values.length, (void**)&out_values);
  }
  if (!status) status = kiln_cpu_alloc_i64(ops, picked, &out_indices);
  if (!status) status = kiln_cpu_alloc_i64(ops, 2 * n, &scratch);
  if (!status) {
    kiln_cpu_topk(data, (size_t)outer, (size_t)n, (size_t)inner, (size_t)k, args[10].i32 & 1,
                  out_values, out_indices, scratch);
    status = kiln_cpu_write(ops, &values, out_values, values.length);
  }
  if (!status) status = kiln_cpu_write(ops, &indices, out_indices, indices.length);
  kiln_allocator_free(ops->allocator, scratch);
  kiln_allocator_free(ops->allocator, out_indices);
  kiln_allocator_free(ops->allocator, out_values);
  kiln_allocator_free(ops->allocator, data);
  kiln_cpu_note(ops, start);
  return status;
}

static kiln_status_t kiln_cpu_nonzero_fn(kiln_vm_context_t* context, void* state,
                                         const kiln_vm_value_t* args,
                                         kiln_vm_value_t* results) {
  (void)context;
  kiln_cpu_ops_t* ops = state;
  int64_t start = kiln_time_now_ns();
  int32_t element = args[2].i32;
  if (element < 0 || element >= KILN_CPU_ELEMENT_COUNT) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "argument 2 (element) of cpu.nonzero is %d; expected 0 (f32), "
                            "1 (i64), 2 (i32) or 3 (bool)",
                            element);
  }
  KILN_RETURN_IF_ERROR(
      kiln_vm_ref_check(args[3].ref, &kiln_vm_list_type, "argument 3 (dims) of cpu.nonzero"));
  const kiln_vm_list_t* dims = (const kiln_vm_list_t*)args[3].ref;
  if (dims->element_type != KILN_VM_LIST_I64 || dims->size == 0 || dims->size > 8) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "argument 3 (dims) of cpu.nonzero must be an i64 list of 1 to 8 "
                            "dims");
  }
  const int64_t* d = (const int64_t*)dims->data;
  uint64_t count = 1, bound = 0, capacity = 0;
  for (uint32_t i = 0; i < dims->size; ++i) {
    if (d[i] < 1 || !kiln_u64_mul(count, (uint64_t)d[i], &count) || count > ((uint64_t)1 << 40)) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "cpu.nonzero: dim %u (%lld) is not positive or the shape "
                              "overflows",
                              i, (long long)d[i]);
    }
  }
  KILN_RETURN_IF_ERROR(kiln_cpu_arg_count(args, 6, "nonzero", "bound", 1, &bound));
  if (!kiln_u64_mul(bound, dims->size, &capacity)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "cpu.nonzero: bound overflows");
  }
  kiln_cpu_range_t x, out;
  KILN_RETURN_IF_ERROR(kiln_cpu_arg_range(args, 0, "nonzero", count,
                                          kiln_cpu_element_size(element), &x));
  KILN_RETURN_IF_ERROR(kiln_cpu_arg_range(args, 4, "nonzero", capacity, 8, &out));
  void* data = NULL;
  int64_t* coords = NULL;
  kiln_status_t status = kiln_cpu_read(ops, &x, &data);
  size_t found = 0;
  if (!status) {
    found = kiln_cpu_nonzero_count(data, element, (size_t)count);
    if (found > bound) {
      status = kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                                "cpu.nonzero: %zu nonzero elements exceed the bound %llu",
                                found, (unsigned long long)bound);
    }
  }
  if (!status) status = kiln_cpu_alloc_i64(ops, found * dims->size, &coords);
  if (!status) {
    kiln_cpu_nonzero(data, element, d, dims->size, found, coords);
    status = kiln_cpu_write(ops, &out, coords, (uint64_t)found * dims->size * 8);
  }
  kiln_allocator_free(ops->allocator, coords);
  kiln_allocator_free(ops->allocator, data);
  kiln_cpu_note(ops, start);
  if (!status) results[0].i64 = (int64_t)found;
  return status;
}

static kiln_status_t kiln_cpu_nms_fn(kiln_vm_context_t* context, void* state,
                                     const kiln_vm_value_t* args, kiln_vm_value_t* results) {
  (void)context;
  kiln_cpu_ops_t* ops = state;
  int64_t start = kiln_time_now_ns();
  uint64_t batches = 0, spatial = 0, classes = 0, max_per_class = 0;
  KILN_RETURN_IF_ERROR(kiln_cpu_arg_count(args, 6, "nms", "batches", 1, &batches));
  KILN_RETURN_IF_ERROR(kiln_cpu_arg_count(args, 7, "nms", "spatial", 1, &spatial));
  KILN_RETURN_IF_ERROR(kiln_cpu_arg_count(args, 8, "nms", "classes", 1, &classes));
  KILN_RETURN_IF_ERROR(kiln_cpu_arg_count(args, 9, "nms", "max_per_class", 0, &max_per_class));
  if (args[12].i32 & ~3) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "cpu.nms: unknown flags 0x%x",
                            (unsigned)args[12].i32);
  }
  uint64_t box_count = 0, score_count = 0, rows = 0;
  uint64_t per_class = max_per_class < spatial ? max_per_class : spatial;
  if (!kiln_u64_mul(batches, spatial, &box_count) || !kiln_u64_mul(box_count, 4, &box_count) ||
      !kiln_u64_mul(batches, classes, &score_count) ||
      !kiln_u64_mul(score_count, spatial, &score_count) ||
      !kiln_u64_mul(batches, classes, &rows) || !kiln_u64_mul(rows, per_class, &rows)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "cpu.nms: shape overflows");
  }
  kiln_cpu_range_t boxes, scores, out;
  KILN_RETURN_IF_ERROR(kiln_cpu_arg_range(args, 0, "nms", box_count, 4, &boxes));
  KILN_RETURN_IF_ERROR(kiln_cpu_arg_range(args, 2, "nms", score_count, 4, &scores));
  // The output holds every row NMS could select (at least one).
  KILN_RETURN_IF_ERROR(kiln_cpu_arg_range(args, 4, "nms", rows ? rows * 3 : 1, 8, &out));
  float* box_data = NULL;
  float* score_data = NULL;
  int64_t *selected = NULL, *order = NULL, *keep = NULL;
  kiln_status_t status = kiln_cpu_read(ops, &boxes, (void**)&box_data);
  if (!status) status = kiln_cpu_read(ops, &scores, (void**)&score_data);
  if (!status) status = kiln_cpu_alloc_i64(ops, rows * 3, &selected);
  if (!status) status = kiln_cpu_alloc_i64(ops, spatial, &order);
  if (!status) status = kiln_cpu_alloc_i64(ops, spatial, &keep);
  size_t found = 0;
  if (!status) {
    found = kiln_cpu_nms(box_data, score_data, (size_t)batches, (size_t)spatial,
                         (size_t)classes, (size_t)per_class, args[10].f32, args[12].i32 & 2,
                         args[11].f32, args[12].i32 & 1, selected, (size_t)rows, order, keep);
    status = kiln_cpu_write(ops, &out, selected, (uint64_t)found * 3 * 8);
  }
  kiln_allocator_free(ops->allocator, keep);
  kiln_allocator_free(ops->allocator, order);
  kiln_allocator_free(ops->allocator, selected);
  kiln_allocator_free(ops->allocator, score_data);
  kiln_allocator_free(ops->allocator, box_data);
  kiln_cpu_note(ops, start);
  if (!status) results[0].i64 = (int64_t)found;
  return status;
}

// The broadcast description of cpu.elementwise: an i64 list [rank, dims,
// strides of a, b, c] (each rank long).
static kiln_status_t kiln_cpu_arg_broadcast(const kiln_vm_value_t* args, size_t index,
                                            kiln_cpu_broadcast_t* out, uint64_t* out_count) {
  KILN_RETURN_IF_ERROR(kiln_vm_ref_check(args[index].ref, &kiln_vm_list_type,
                                         "argument 10 (shape) of cpu.elementwise"));
  const kiln_vm_list_t* list = (const kiln_vm_list_t*)args[index].ref;
  const int64_t* v = (const int64_t*)list->data;
  if (list->element_type != KILN_VM_LIST_I64 || list->size == 0 || v[0] < 0 || v[0] > 8 ||
      list->size != 1 + 4 * (uint32_t)v[0]) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "argument 10 (shape) of cpu.elementwise must be an i64 list "
                            "[rank <= 8, dims, strides of 3 operands]");
  }
  memset(out, 0, sizeof(*out));
  out->rank = (size_t)v[0];
  uint64_t count = 1;
  for (size_t d = 0; d < out->rank; ++d) {
    out->dims[d] = v[1 + d];
    if (out->dims[d] < 1 || !kiln_u64_mul(count, (uint64_t)out->dims[d], &count) ||
        count > ((uint64_t)1 << 40)) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "cpu.elementwise: dim %zu (%lld) is not positive or the shape "
                              "overflows",
                              d, (long long)out->dims[d]);
    }
    for (size_t k = 0; k < 3; ++k) {
      out->strides[k][d] = v[1 + (k + 1) * out->rank + d];
      if (out->strides[k][d] < 0 || out->strides[k][d] > ((int64_t)1 << 40)) {
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "cpu.elementwise: stride %lld of operand %zu is outside 0..2^40",
                                (long long)out->strides[k][d], k);
      }
    }
  }
  *out_count = count;
  return kiln_ok_status();
}

// Elements operand k spans: one past its largest offset (strides <= 2^40
// and dims <= 2^40 keep every term and the sum of 8 below 2^84: checked).
static kiln_status_t kiln_cpu_extent(const kiln_cpu_broadcast_t* shape, size_t k,
                                     uint64_t* out) {
  uint64_t extent = 1;
  for (size_t d = 0; d < shape->rank; ++d) {
    uint64_t term = 0;
    if (!kiln_u64_mul((uint64_t)(shape->dims[d] - 1), (uint64_t)shape->strides[k][d], &term) ||
        !kiln_u64_add(extent, term, &extent)) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "cpu.elementwise: operand %zu overflows",
                              k);
    }
  }
  *out = extent;
  return kiln_ok_status();
}

static kiln_status_t kiln_cpu_elementwise_fn(kiln_vm_context_t* context, void* state,
                                             const kiln_vm_value_t* args,
                                             kiln_vm_value_t* results) {
  (void)context;
  (void)results;
  kiln_cpu_ops_t* ops = state;
  int64_t start = kiln_time_now_ns();
  int32_t op = args[8].i32, element = args[9].i32;
  if (op < 0 || op >= KILN_CPU_ELEMENTWISE_COUNT) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "argument 8 (op) of cpu.elementwise is %d; expected 0 to %d", op,
                            KILN_CPU_ELEMENTWISE_COUNT - 1);
  }
  if (element < 0 || element >= KILN_CPU_ELEMENT_COUNT) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "argument 9 (element) of cpu.elementwise is %d; expected 0 to 3",
                            element);
  }
  kiln_cpu_broadcast_t shape;
  uint64_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_cpu_arg_broadcast(args, 10, &shape, &count));
  const size_t arity = kiln_cpu_elementwise_arity(op);
  const uint64_t size = kiln_cpu_element_size(element);
  bool logic = op >= KILN_CPU_NOT && op <= KILN_CPU_XOR;
  kiln_cpu_range_t out, in[3];
  const bool typed_out = op == KILN_CPU_WHERE || op == KILN_CPU_COPY;
  KILN_RETURN_IF_ERROR(kiln_cpu_arg_range(args, 0, "elementwise", count, typed_out ? size : 1,
                                          &out));
  for (size_t k = 0; k < arity; ++k) {
    uint64_t extent = 0;
    KILN_RETURN_IF_ERROR(kiln_cpu_extent(&shape, k, &extent));
    // Bool bytes: logic operands and Where's condition.
    uint64_t element_size = logic || (op == KILN_CPU_WHERE && k == 0) ? 1 : size;
    KILN_RETURN_IF_ERROR(kiln_cpu_arg_range(args, 2 + 2 * k, "elementwise", extent,
                                            element_size, &in[k]));
  }
  void* data[3] = {NULL, NULL, NULL};
  void* result = NULL;
  kiln_status_t status = kiln_ok_status();
  for (size_t k = 0; k < arity && !status; ++k) status = kiln_cpu_read(ops, &in[k], &data[k]);
  if (!status) status = kiln_allocator_malloc(ops->allocator, (size_t)out.length, &result);
  if (!status) {
    kiln_cpu_elementwise(op, &shape, element, (const void* const*)data, result);
    status = kiln_cpu_write(ops, &out, result, out.length);
  }
  kiln_allocator_free(ops->allocator, result);
  for (size_t k = 0; k < 3; ++k) kiln_allocator_free(ops->allocator, data[k]);
  kiln_cpu_note(ops, start);
  return status;
}

static const kiln_vm_native_export_t kiln_cpu_exports[] = {
    {"topk", "rIrIrIIIIIi_v", kiln_cpu_topk_fn},
    {"nonzero", "rIirrII_I", kiln_cpu_nonzero_fn},
    {"nms", "rIrIrIIIIIffi_I", kiln_cpu_nms_fn},
    {"elementwise", "rIrIrIrIiir_v", kiln_cpu_elementwise_fn},
};

static kiln_status_t kiln_cpu_create_state(void* user_data, kiln_vm_context_t* context,
                                           void** out_state) {
  (void)context;
  *out_state = user_data;  // nothing per context: the stats are the module's
  return kiln_ok_status();
}

static void kiln_cpu_destroy_user_data(void* user_data) {
  kiln_cpu_ops_t* ops = user_data;
  kiln_allocator_free(ops->allocator, ops);
}

kiln_status_t kiln_cpu_ops_module_create(kiln_vm_instance_t* instance,
                                         kiln_cpu_ops_stats_t* stats,
                                         kiln_vm_module_t** out_module) {
  *out_module = NULL;
  kiln_allocator_t allocator = kiln_vm_instance_allocator(instance);
  kiln_cpu_ops_t* ops = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc(allocator, sizeof(*ops), (void**)&ops));
  ops->allocator = allocator;
  ops->stats = stats;
  kiln_vm_native_module_desc_t desc = {
      .name = "cpu",
      .exports = kiln_cpu_exports,
      .export_count = sizeof(kiln_cpu_exports) / sizeof(kiln_cpu_exports[0]),
      .user_data = ops,
      .create_state = kiln_cpu_create_state,
      .destroy_user_data = kiln_cpu_destroy_user_data,
  };
  return kiln_vm_module_create_native(instance, &desc, out_module);
}
