// kiln_model_t: modules loaded once, their pipelines and weights shared by
// every session made from the model (see session.h).
#include <pthread.h>
#include <string.h>

#include "kiln/vm/module.h"
#include "model_internal.h"

enum { KILN_MODEL_MAX_MODULES = 30 };  // a session adds hal and cpu in front

struct kiln_model_t {
  uint32_t references;  // atomic
  kiln_allocator_t base_allocator;  // the host's; holds this struct
  kiln_allocator_t allocator;       // counts against `budget`
  kiln_memory_budget_t* budget;
  kiln_hal_device_t* device;
  kiln_vm_instance_t* instance;     // the modules were loaded in it
  kiln_hal_shared_cache_t* cache;   // weights and pipelines, shared
  // Guards loading and `frozen`; a frozen model is never written again, so
  // sessions read `modules` without it.
  pthread_mutex_t mutex;
  bool frozen;
  kiln_vm_module_t* modules[KILN_MODEL_MAX_MODULES];
  size_t module_count;
};

void kiln_model_options_init(kiln_model_options_t* options) {
  memset(options, 0, sizeof(*options));
  options->allocator = kiln_allocator_system();
  options->memory_budget_bytes = KILN_SESSION_DEFAULT_MEMORY_BUDGET;
}

kiln_status_t kiln_model_create_with_budget(kiln_hal_device_t* device,
                                            kiln_allocator_t base_allocator,
                                            kiln_memory_budget_t* budget,
                                            kiln_model_t** out_model) {
  *out_model = NULL;
  if (!device) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kiln_model_create: no device");
  }
  kiln_model_t* model = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_calloc(base_allocator, sizeof(*model), (void**)&model));
  model->references = 1;
  model->base_allocator = base_allocator;
  model->budget = budget;
  kiln_memory_budget_retain(budget);
  model->allocator = kiln_memory_budget_allocator(budget);
  model->device = device;
  kiln_hal_device_retain(device);
  pthread_mutex_init(&model->mutex, NULL);
  kiln_status_t status =
      kiln_vm_instance_create(model->allocator, &model->instance);
  if (!status) {
    status = kiln_hal_shared_cache_create(device, model->allocator, budget,
                                          &model->cache);
  }
  if (status) {
    kiln_model_release(model);
    return status;
  }
  *out_model = model;
  return kiln_ok_status();
}

kiln_status_t kiln_model_create(kiln_hal_device_t* device,
                                const kiln_model_options_t* options,
                                kiln_model_t** out_model) {
  *out_model = NULL;
  kiln_memory_budget_t* budget = NULL;
  KILN_RETURN_IF_ERROR(kiln_memory_budget_create(
      options->memory_budget_bytes, options->allocator, &budget));
  kiln_status_t status = kiln_model_create_with_budget(
      device, options->allocator, budget, out_model);
  kiln_memory_budget_release(budget);  // the model holds its own reference
  return status;
}

void kiln_model_retain(kiln_model_t* model) {
  if (model) __atomic_fetch_add(&model->references, 1, __ATOMIC_RELAXED);
}

void kiln_model_release(kiln_model_t* model) {
  if (!model ||
      __atomic_sub_fetch(&model->references, 1, __ATOMIC_ACQ_REL) != 0) {
    return;
  }
  // The cache holds buffers and its own module references: it goes first.
  kiln_hal_shared_cache_release(model->cache);
  for (size_t i = model->module_count; i-- > 0;) {
    kiln_vm_module_release(model->modules[i]);
  }
  kiln_vm_instance_destroy(model->instance);
  kiln_hal_device_release(model->device);
  pthread_mutex_destroy(&model->mutex);
  kiln_memory_budget_release(model->budget);
  kiln_allocator_free(model->base_allocator, model);
}

kiln_hal_device_t* kiln_model_device(const kiln_model_t* model) {
  return model->device;
}

uint64_t kiln_model_memory_in_use(const kiln_model_t* model) {
  return kiln_memory_budget_used(model->budget);
}

kiln_hal_shared_cache_stats_t kiln_model_statistics(kiln_model_t* model) {
  return kiln_hal_shared_cache_stats(model->cache);
}

kiln_hal_shared_cache_t* kiln_model_shared_cache(const kiln_model_t* model) {
  return model->cache;
}

kiln_vm_module_t* kiln_model_main_module(kiln_model_t* model) {
  pthread_mutex_lock(&model->mutex);
  kiln_vm_module_t* module =
      model->module_count ? model->modules[model->module_count - 1] : NULL;
  pthread_mutex_unlock(&model->mutex);
  return module;
}

void kiln_model_freeze(kiln_model_t* model,
                       kiln_vm_module_t* const** out_modules,
                       size_t* out_count) {
  pthread_mutex_lock(&model->mutex);
  model->frozen = true;
  *out_modules = model->modules;
  *out_count = model->module_count;
  pthread_mutex_unlock(&model->mutex);
}

bool kiln_model_is_frozen(kiln_model_t* model) {
  pthread_mutex_lock(&model->mutex);
  bool frozen = model->frozen;
  pthread_mutex_unlock(&model->mutex);
  return frozen;
}

typedef enum kiln_model_source_e {
  KILN_MODEL_NATIVE,
  KILN_MODEL_FILE,
  KILN_MODEL_MEMORY,
} kiln_model_source_t;

// Loads one module of any source (mutex held by the caller).
static kiln_status_t kiln_model_add_locked(
    kiln_model_t* model, kiln_model_source_t source,
    const kiln_vm_native_module_desc_t* desc, const char* path,
    kiln_const_byte_span_t bytes) {
  if (model->frozen) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                            "modules must be added before the first session "
                            "(or lookup) uses the model");
  }
  if (model->module_count == KILN_MODEL_MAX_MODULES) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "a model holds at most %d modules",
                            KILN_MODEL_MAX_MODULES);
  }
  kiln_vm_module_t** slot = &model->modules[model->module_count];
  switch (source) {
    case KILN_MODEL_NATIVE:
      KILN_RETURN_IF_ERROR(
          kiln_vm_module_create_native(model->instance, desc, slot));
      break;
    case KILN_MODEL_FILE:
      KILN_RETURN_IF_ERROR(
          kiln_vm_module_load_from_file(model->instance, path, NULL, slot));
      break;
    case KILN_MODEL_MEMORY:
      KILN_RETURN_IF_ERROR(kiln_vm_module_load_from_memory(
          model->instance, bytes, path, NULL, slot));
      break;
  }
  model->module_count++;
  return kiln_ok_status();
}

static kiln_status_t kiln_model_add(kiln_model_t* model,
                                    kiln_model_source_t source,
                                    const kiln_vm_native_module_desc_t* desc,
                                    const char* path,
                                    kiln_const_byte_span_t bytes) {
  pthread_mutex_lock(&model->mutex);
  kiln_status_t status = kiln_model_add_locked(model, source, desc, path, bytes);
  pthread_mutex_unlock(&model->mutex);
  return status;
}

kiln_status_t kiln_model_add_native_module(
    kiln_model_t* model, const kiln_vm_native_module_desc_t* desc) {
  return kiln_model_add(model, KILN_MODEL_NATIVE, desc, NULL,
                        kiln_make_const_byte_span(NULL, 0));
}

kiln_status_t kiln_model_load_module_file(kiln_model_t* model,
                                          const char* path) {
  return kiln_model_add(model, KILN_MODEL_FILE, NULL, path,
                        kiln_make_const_byte_span(NULL, 0));
}

kiln_status_t kiln_model_load_module_memory(kiln_model_t* model,
                                            kiln_const_byte_span_t bytes,
                                            const char* what) {
  return kiln_model_add(model, KILN_MODEL_MEMORY, NULL, what, bytes);
}
