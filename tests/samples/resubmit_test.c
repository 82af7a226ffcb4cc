// The record-once sample, driven through the embedding API (kiln_session_t):
// three calls with different inputs must each give their own products,
// although the command buffer was recorded only on the first call.
#include <stdlib.h>

#include "kiln/session.h"
#include "kiln_test.h"
#include "sample_runner.h"

static kiln_session_t* kiln_open_session(void) {
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  const char* device = getenv("KILN_TEST_DEVICE");
  if (device) options.device_uri = device;
  options.enable_validation = true;
  kiln_session_t* session = NULL;
  kiln_status_t status = kiln_session_create(&options, &session);
  if (status) {
    KILN_EXPECT_OK(status);
    return NULL;
  }
  return session;
}

KILN_TEST(ResubmitTest, EachCallSeesItsOwnInputs) {
  kiln_session_t* session = kiln_open_session();
  KILN_ASSERT_TRUE(session != NULL);
  KILN_ASSERT_OK(kiln_session_load_module_file(
      session, kiln_test_sample_path("resubmit")));
  kiln_vm_function_t predict;
  KILN_ASSERT_OK(kiln_session_lookup(session, "predict", &predict));
  static float lhs[1024], rhs[1024], out[1024];
  int64_t shape[1] = {1024};
  for (int call = 0; call < 3; ++call) {
    for (int i = 0; i < 1024; ++i) {
      lhs[i] = (float)(i + call);
      rhs[i] = (float)(call + 1) * 0.5f;
    }
    kiln_hal_buffer_view_t *a = NULL, *b = NULL;
    KILN_ASSERT_OK(kiln_session_buffer_view_from_host(
        session, KILN_HAL_ELEMENT_F32, 1, shape, lhs, sizeof(lhs), &a));
    KILN_ASSERT_OK(kiln_session_buffer_view_from_host(
        session, KILN_HAL_ELEMENT_F32, 1, shape, rhs, sizeof(rhs), &b));
    kiln_vm_value_t args[2], results[1];
    KILN_ASSERT_OK(kiln_hal_module_wrap_buffer_view(
        kiln_session_allocator(session), a, &args[0].ref));
    KILN_ASSERT_OK(kiln_hal_module_wrap_buffer_view(
        kiln_session_allocator(session), b, &args[1].ref));
    KILN_ASSERT_OK(kiln_session_invoke(session, predict, args, 2, results, 1));
    kiln_hal_buffer_view_t* result = NULL;
    KILN_ASSERT_OK(
        kiln_hal_module_unwrap_buffer_view(results[0].ref, "result", &result));
    KILN_ASSERT_OK(
        kiln_session_buffer_view_to_host(session, result, out, sizeof(out)));
    for (int i = 0; i < 1024; i += 97) {
      KILN_EXPECT_NEAR(out[i], lhs[i] * rhs[i], 0);
    }
    KILN_EXPECT_NEAR(out[1023], lhs[1023] * rhs[1023], 0);
    kiln_vm_ref_release(args[0].ref);
    kiln_vm_ref_release(args[1].ref);
    kiln_vm_ref_release(results[0].ref);
    kiln_hal_buffer_view_release(a);
    kiln_hal_buffer_view_release(b);
  }
  kiln_hal_pipeline_cache_stats_t stats;
  KILN_ASSERT_OK(kiln_hal_device_pipeline_cache_stats(
      kiln_session_device(session), &stats));
  KILN_EXPECT_EQ(stats.pipelines_created, 1);  // built once, reused
  KILN_EXPECT_EQ(kiln_hal_device_validation_message_count(
                     kiln_session_device(session)), 0);
  kiln_session_destroy(session);
}

KILN_TEST(ResubmitTest, WrongShapeIsATrapNamingTheInput) {
  kiln_session_t* session = kiln_open_session();
  KILN_ASSERT_TRUE(session != NULL);
  KILN_ASSERT_OK(kiln_session_load_module_file(
      session, kiln_test_sample_path("resubmit")));
  kiln_vm_function_t predict;
  KILN_ASSERT_OK(kiln_session_lookup(session, "predict", &predict));
  static float data[10];
  int64_t shape[1] = {10};
  kiln_hal_buffer_view_t* view = NULL;
  KILN_ASSERT_OK(kiln_session_buffer_view_from_host(
      session, KILN_HAL_ELEMENT_F32, 1, shape, data, sizeof(data), &view));
  kiln_vm_value_t args[2], results[1];
  KILN_ASSERT_OK(kiln_hal_module_wrap_buffer_view(
      kiln_session_allocator(session), view, &args[0].ref));
  args[1].ref = args[0].ref;
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "input 0: expected 1024xf32, got 10xf32",
      kiln_session_invoke(session, predict, args, 2, results, 1));
  kiln_vm_ref_release(args[0].ref);
  kiln_hal_buffer_view_release(view);
  kiln_session_destroy(session);
}
