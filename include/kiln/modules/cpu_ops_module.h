// The "cpu" native VM module: ops the GPU path does not take, run on the
// host between GPU segments of a compiled model (docs/partitioning.md).
// Bytecode imports them as "cpu.<name>"; every buffer argument is a
// hal.buffer ref with a byte offset, and every size and offset is checked
// against the buffers before anything is read or written (modules are
// untrusted). Data moves through kiln_hal_device_read_buffer /
// write_buffer, so device-local and immutable (read-only) buffers work.
//
//   cpu.topk     rIrIrIIIIIi_v  (x, x_off, values, values_off, indices,
//                indices_off, outer, n, inner, k, flags: 1 largest)
//   cpu.nonzero  rIirrII_I      (x, x_off, element, dims (i64 list), out,
//                out_off, bound) -> found; out is int64 [rank][found]
//   cpu.nms      rIrIrIIIIIffi_I (boxes, off, scores, off, out, off,
//                batches, spatial, classes, max_per_class, iou, score,
//                flags: 1 center_point_box, 2 score threshold given)
//                -> rows; out is int64 [rows][3]
//   cpu.elementwise rIrIrIrIiir_v (out, off, a, off, b, off, c, off, op,
//                element, shape: i64 list [rank, dims, strides of a, b, c]);
//                op 0-4 Equal Less Greater LessOrEqual GreaterOrEqual (bool
//                out), 5-8 Not And Or Xor (bool), 9 Where (bool condition),
//                10 copy (a reshape of bool data)
#ifndef KILN_MODULES_CPU_OPS_MODULE_H_
#define KILN_MODULES_CPU_OPS_MODULE_H_

#include <stdint.h>

#include "kiln/vm/instance.h"
#include "kiln/vm/module.h"

#ifdef __cplusplus
extern "C" {
#endif

// What the module did (summed over its calls), for --print_statistics.
typedef struct kiln_cpu_ops_stats_t {
  uint64_t calls;
  uint64_t bytes_read;     // device -> host
  uint64_t bytes_written;  // host -> device
  int64_t host_ns;         // wall time inside the ops, transfers included
} kiln_cpu_ops_stats_t;

// `stats` (may be NULL) is caller-owned and must outlive the module.
kiln_status_t kiln_cpu_ops_module_create(kiln_vm_instance_t* instance,
                                         kiln_cpu_ops_stats_t* stats,
                                         kiln_vm_module_t** out_module);

#ifdef __cplusplus
}
#endif

#endif  // KILN_MODULES_CPU_OPS_MODULE_H_
