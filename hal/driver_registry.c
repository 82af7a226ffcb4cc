// The driver registry and device creation from URIs.
#include "kiln/hal/driver_registry.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kiln/base/memory_budget.h"
#include "kiln/hal/driver_api.h"

static kiln_hal_driver_registry_t g_default_registry;
// One lock for every registry: registration is rare and short, and a lock
// per registry would change the public struct. Sessions created on several
// threads at once register the same drivers concurrently.
static pthread_mutex_t g_registry_lock = PTHREAD_MUTEX_INITIALIZER;

// The caller holds g_registry_lock.
static const kiln_hal_driver_factory_t* lookup_locked(
    const kiln_hal_driver_registry_t* registry, kiln_string_view_t name) {
  for (size_t i = 0; i < registry->count; ++i) {
    if (kiln_string_view_equal_cstring(name, registry->factories[i]->name)) {
      return registry->factories[i];
    }
  }
  return NULL;
}

kiln_hal_driver_registry_t* kiln_hal_driver_registry_default(void) {
  return &g_default_registry;
}

void kiln_hal_driver_registry_init(kiln_hal_driver_registry_t* registry) {
  memset(registry, 0, sizeof(*registry));
}

kiln_status_t kiln_hal_driver_registry_register(
    kiln_hal_driver_registry_t* registry,
    const kiln_hal_driver_factory_t* factory) {
  if (!factory || !factory->name || !factory->name[0] ||
      !factory->query_available || !factory->enumerate_devices ||
      !factory->create_device) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "driver factory is incomplete (needs a name and "
                            "all three functions)");
  }
  pthread_mutex_lock(&g_registry_lock);
  kiln_status_t status = kiln_ok_status();
  if (lookup_locked(registry, kiln_make_cstring_view(factory->name))) {
    status = kiln_make_status(KILN_STATUS_ALREADY_EXISTS,
                              "driver '%s' is already registered",
                              factory->name);
  } else if (registry->count == KILN_HAL_MAX_DRIVERS) {
    status = kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                              "driver registry is full (%d drivers)",
                              KILN_HAL_MAX_DRIVERS);
  } else {
    registry->factories[registry->count++] = factory;
  }
  pthread_mutex_unlock(&g_registry_lock);
  return status;
}

const kiln_hal_driver_factory_t* kiln_hal_driver_registry_lookup(
    const kiln_hal_driver_registry_t* registry, kiln_string_view_t name) {
  pthread_mutex_lock(&g_registry_lock);
  const kiln_hal_driver_factory_t* factory = lookup_locked(registry, name);
  pthread_mutex_unlock(&g_registry_lock);
  return factory;
}

kiln_status_t kiln_hal_device_uri_split(kiln_string_view_t uri,
                                        kiln_string_view_t* out_driver,
                                        kiln_string_view_t* out_path) {
  *out_driver = kiln_make_string_view(NULL, 0);
  *out_path = kiln_make_string_view(NULL, 0);
  size_t colon = kiln_string_view_find_char(uri, ':');
  kiln_string_view_t driver = uri;
  kiln_string_view_t path = kiln_make_string_view(NULL, 0);
  if (colon != SIZE_MAX) {
    kiln_string_view_t rest = kiln_string_view_substring(uri, colon, SIZE_MAX);
    if (!kiln_string_view_starts_with(rest, kiln_make_cstring_view("://"))) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "device URI '%.*s': expected 'driver' or "
                              "'driver://path'",
                              KILN_SV_ARG(uri));
    }
    driver = kiln_string_view_substring(uri, 0, colon);
    path = kiln_string_view_substring(rest, 3, SIZE_MAX);
  }
  if (driver.size == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "device URI '%.*s' names no driver",
                            KILN_SV_ARG(uri));
  }
  *out_driver = driver;
  *out_path = path;
  return kiln_ok_status();
}

kiln_status_t kiln_hal_create_device(
    const kiln_hal_driver_registry_t* registry, kiln_string_view_t uri,
    const kiln_hal_device_options_t* options, kiln_allocator_t allocator,
    kiln_hal_device_t** out_device) {
  *out_device = NULL;
  kiln_string_view_t driver, path;
  KILN_RETURN_IF_ERROR(kiln_hal_device_uri_split(uri, &driver, &path));
  pthread_mutex_lock(&g_registry_lock);
  const kiln_hal_driver_factory_t* factory = lookup_locked(registry, driver);
  char names[256] = "";
  size_t registered = registry->count;
  if (!factory) {
    size_t used = 0;
    for (size_t i = 0; i < registry->count && used < sizeof(names); ++i) {
      int n = snprintf(names + used, sizeof(names) - used, "%s%s",
                       i ? ", " : "", registry->factories[i]->name);
      if (n < 0) break;
      used += (size_t)n;
    }
  }
  pthread_mutex_unlock(&g_registry_lock);
  if (!factory) {
    return kiln_make_status(KILN_STATUS_NOT_FOUND,
                            "device URI '%.*s': no driver '%.*s' (registered: "
                            "%s)",
                            KILN_SV_ARG(uri), KILN_SV_ARG(driver),
                            registered ? names : "none");
  }
  KILN_RETURN_IF_ERROR_ANNOTATE(factory->query_available(factory->self),
                                "while creating device '%.*s'",
                                KILN_SV_ARG(uri));
  kiln_hal_device_options_t default_options;
  if (!options) {
    kiln_hal_device_options_init(&default_options);
    options = &default_options;
  }
  KILN_RETURN_IF_ERROR_ANNOTATE(
      factory->create_device(factory->self, path, options, allocator,
                             out_device),
      "while creating device '%.*s'", KILN_SV_ARG(uri));
  if (options->memory_budget) {
    kiln_memory_budget_retain(options->memory_budget);
    (*out_device)->memory_budget = options->memory_budget;
  }
  return kiln_ok_status();
}
