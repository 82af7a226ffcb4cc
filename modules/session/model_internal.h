// What session.c needs of a kiln_model_t beyond the public API.
#ifndef KILN_MODULES_SESSION_MODEL_INTERNAL_H_
#define KILN_MODULES_SESSION_MODEL_INTERNAL_H_

#include "kiln/base/memory_budget.h"
#include "kiln/session.h"

// A model counted against `budget` (retained) instead of a budget of its
// own: the private model of a one-call session shares the session's.
kiln_status_t kiln_model_create_with_budget(kiln_hal_device_t* device,
                                            kiln_allocator_t base_allocator,
                                            kiln_memory_budget_t* budget,
                                            kiln_model_t** out_model);

// Freezes the model (no more modules; it is shared from now on) and returns
// its modules: borrowed, valid while the caller holds a reference.
void kiln_model_freeze(kiln_model_t* model, kiln_vm_module_t* const** out_modules,
                       size_t* out_count);
bool kiln_model_is_frozen(kiln_model_t* model);
kiln_hal_shared_cache_t* kiln_model_shared_cache(const kiln_model_t* model);

#endif  // KILN_MODULES_SESSION_MODEL_INTERNAL_H_
