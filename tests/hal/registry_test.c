// The driver registry: URIs, host-registered factories, duplicate and
// unknown drivers, unavailable drivers with their reason.
#include <stdio.h>
#include <string.h>

#include "kiln/hal/driver_registry.h"
#include "kiln_test.h"

static int g_create_calls;
static char g_last_path[64];

static kiln_status_t fake_available(void* self) {
  (void)self;
  return kiln_ok_status();
}

static kiln_status_t fake_unavailable(void* self) {
  (void)self;
  return kiln_make_status(KILN_STATUS_UNAVAILABLE, "no fake hardware here");
}

static kiln_status_t fake_enumerate(void* self, kiln_allocator_t allocator,
                                    kiln_hal_device_entry_t** out_entries,
                                    size_t* out_count) {
  (void)self;
  *out_entries = NULL;
  *out_count = 0;
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc(allocator, sizeof(**out_entries),
                                             (void**)out_entries));
  strcpy((*out_entries)[0].path, "0");
  *out_count = 1;
  return kiln_ok_status();
}

static kiln_status_t fake_create(void* self, kiln_string_view_t path,
                                 const kiln_hal_device_options_t* options,
                                 kiln_allocator_t allocator,
                                 kiln_hal_device_t** out_device) {
  (void)self;
  (void)options;
  (void)allocator;
  *out_device = NULL;
  ++g_create_calls;
  snprintf(g_last_path, sizeof(g_last_path), "%.*s", KILN_SV_ARG(path));
  return kiln_make_status(KILN_STATUS_UNIMPLEMENTED, "fake device '%.*s'",
                          KILN_SV_ARG(path));
}

static const kiln_hal_driver_factory_t kFake = {
    "fake", "a host's own driver", NULL, fake_available, fake_enumerate,
    fake_create};
static const kiln_hal_driver_factory_t kGone = {
    "gone", "never available", NULL, fake_unavailable, fake_enumerate,
    fake_create};

KILN_TEST(RegistryTest, SplitsUris) {
  kiln_string_view_t driver, path;
  KILN_ASSERT_OK(kiln_hal_device_uri_split(kiln_make_cstring_view("vulkan"),
                                           &driver, &path));
  KILN_EXPECT_TRUE(kiln_string_view_equal_cstring(driver, "vulkan"));
  KILN_EXPECT_EQ(path.size, 0);
  KILN_ASSERT_OK(kiln_hal_device_uri_split(kiln_make_cstring_view("vulkan://1"),
                                           &driver, &path));
  KILN_EXPECT_TRUE(kiln_string_view_equal_cstring(path, "1"));
  KILN_ASSERT_OK(kiln_hal_device_uri_split(
      kiln_make_cstring_view("vulkan://6d657361-3232-2e33-2e36-000000000000"),
      &driver, &path));
  KILN_EXPECT_EQ(path.size, 36);
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_hal_device_uri_split(kiln_make_cstring_view("vulkan:1"),
                                               &driver, &path));
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_hal_device_uri_split(kiln_make_cstring_view("://0"),
                                               &driver, &path));
}

KILN_TEST(RegistryTest, HostFactoriesCreateDevicesFromUris) {
  kiln_hal_driver_registry_t registry;
  kiln_hal_driver_registry_init(&registry);
  KILN_ASSERT_OK(kiln_hal_driver_registry_register(&registry, &kFake));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_ALREADY_EXISTS, "'fake'",
                             kiln_hal_driver_registry_register(&registry, &kFake));
  g_create_calls = 0;
  kiln_hal_device_t* device = (kiln_hal_device_t*)1;
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_UNIMPLEMENTED, "fake device '7'",
      kiln_hal_create_device(&registry, kiln_make_cstring_view("fake://7"), NULL,
                             kiln_allocator_system(), &device));
  KILN_EXPECT_EQ(g_create_calls, 1);
  KILN_EXPECT_STREQ(g_last_path, "7");
  KILN_EXPECT_TRUE(device == NULL);
}

KILN_TEST(RegistryTest, UnknownDriverListsRegisteredOnes) {
  kiln_hal_driver_registry_t registry;
  kiln_hal_driver_registry_init(&registry);
  KILN_ASSERT_OK(kiln_hal_driver_registry_register(&registry, &kFake));
  KILN_ASSERT_OK(kiln_hal_driver_registry_register(&registry, &kGone));
  kiln_hal_device_t* device = NULL;
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_NOT_FOUND, "no driver 'metal' (registered: fake, gone)",
      kiln_hal_create_device(&registry, kiln_make_cstring_view("metal"), NULL,
                             kiln_allocator_system(), &device));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_UNAVAILABLE, "no fake hardware here",
      kiln_hal_create_device(&registry, kiln_make_cstring_view("gone://0"), NULL,
                             kiln_allocator_system(), &device));
}

KILN_TEST(RegistryTest, RejectsIncompleteFactories) {
  kiln_hal_driver_registry_t registry;
  kiln_hal_driver_registry_init(&registry);
  kiln_hal_driver_factory_t incomplete = kFake;
  incomplete.create_device = NULL;
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_hal_driver_registry_register(&registry, &incomplete));
  KILN_EXPECT_EQ(registry.count, 0);
}
