// One argument or result crossing the host/VM or VM/native boundary.
#ifndef KILN_VM_VALUE_H_
#define KILN_VM_VALUE_H_

#include <stdint.h>

#include "kiln/format/signature.h"
#include "kiln/vm/ref.h"

#ifdef __cplusplus
extern "C" {
#endif

// The signature character (kiln_value_type_t) says which member is live.
typedef union kiln_vm_value_t {
  int32_t i32;
  int64_t i64;
  float f32;
  double f64;
  kiln_vm_ref_object_t* ref;
} kiln_vm_value_t;

static inline kiln_vm_value_t kiln_vm_value_i32(int32_t v) {
  kiln_vm_value_t value;
  value.i64 = 0;
  value.i32 = v;
  return value;
}
static inline kiln_vm_value_t kiln_vm_value_i64(int64_t v) {
  kiln_vm_value_t value;
  value.i64 = v;
  return value;
}
static inline kiln_vm_value_t kiln_vm_value_f32(float v) {
  kiln_vm_value_t value;
  value.i64 = 0;
  value.f32 = v;
  return value;
}
static inline kiln_vm_value_t kiln_vm_value_f64(double v) {
  kiln_vm_value_t value;
  value.f64 = v;
  return value;
}
static inline kiln_vm_value_t kiln_vm_value_ref(kiln_vm_ref_object_t* v) {
  kiln_vm_value_t value;
  value.i64 = 0;
  value.ref = v;
  return value;
}

#ifdef __cplusplus
}
#endif

#endif  // KILN_VM_VALUE_H_
