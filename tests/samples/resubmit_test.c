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

// One call of the sample on inputs made from `call`; *out_result holds its
// result view (the caller releases it).
static void kiln_resubmit_call(kiln_session_t* session, kiln_vm_function_t predict, int call,
                               kiln_vm_value_t* out_result) {
  static float lhs[1024], rhs[1024];
  int64_t shape[1] = {1024};
  for (int i = 0; i < 1024; ++i) {
    lhs[i] = (float)(i * (call + 1));
    rhs[i] = (float)(call + 2);
  }
  kiln_hal_buffer_view_t *a = NULL, *b = NULL;
  KILN_ASSERT_OK(kiln_session_buffer_view_from_host(session, KILN_HAL_ELEMENT_F32, 1, shape,
                                                    lhs, sizeof(lhs), &a));
  KILN_ASSERT_OK(kiln_session_buffer_view_from_host(session, KILN_HAL_ELEMENT_F32, 1, shape,
                                                    rhs, sizeof(rhs), &b));
  kiln_vm_value_t args[2];
  KILN_ASSERT_OK(kiln_hal_module_wrap_buffer_view(kiln_session_allocator(session), a,
                                                  &args[0].ref));
  KILN_ASSERT_OK(kiln_hal_module_wrap_buffer_view(kiln_session_allocator(session), b,
                                                  &args[1].ref));
  kiln_hal_buffer_view_release(a);
  kiln_hal_buffer_view_release(b);
  KILN_EXPECT_OK(kiln_session_invoke(session, predict, args, 2, out_result, 1));
  kiln_vm_ref_release(args[0].ref);
  kiln_vm_ref_release(args[1].ref);
}

// Expects the result of call `call` in `result`; returns its buffer.
static kiln_hal_buffer_t* kiln_resubmit_check(kiln_session_t* session, kiln_vm_value_t result,
                                              int call) {
  kiln_hal_buffer_view_t* view = NULL;
  KILN_EXPECT_OK(kiln_hal_module_unwrap_buffer_view(result.ref, "result", &view));
  if (!view) return NULL;
  static float out[1024];
  KILN_EXPECT_OK(kiln_session_buffer_view_to_host(session, view, out, sizeof(out)));
  int wrong = 0;
  for (int i = 0; i < 1024; ++i) {
    wrong += out[i] != (float)(i * (call + 1)) * (float)(call + 2);
  }
  KILN_EXPECT_EQ(wrong, 0);
  return kiln_hal_buffer_view_buffer(view);
}

// A call whose caller released the last result gets that result's buffer
// back as its output (and its inputs' buffers, released too), so nothing is
// recorded again; a result still held is never reused: it keeps its values
// through later calls.
KILN_TEST(ResubmitTest, ReleasedResultsAreReusedHeldOnesKept) {
  kiln_session_t* session = kiln_open_session();
  KILN_ASSERT_TRUE(session != NULL);
  KILN_ASSERT_OK(kiln_session_load_module_file(session, kiln_test_sample_path("resubmit")));
  kiln_vm_function_t predict;
  KILN_ASSERT_OK(kiln_session_lookup(session, "predict", &predict));
  kiln_hal_device_t* device = kiln_session_device(session);
  kiln_vm_value_t held = {0}, result = {0};
  kiln_hal_buffer_t* last = NULL;
  kiln_hal_submit_stats_t before = {0};
  for (int call = 0; call < 6; ++call) {
    if (call == 2) before = kiln_hal_device_submit_stats(device);
    kiln_resubmit_call(session, predict, call, &result);
    kiln_hal_buffer_t* buffer = kiln_resubmit_check(session, result, call);
    if (call == 1 || call == 2) {
      KILN_EXPECT_TRUE(buffer == last);  // the released result's buffer
    }
    if (call == 3) {
      KILN_EXPECT_TRUE(buffer != last);  // call 2's result is still held
    }
    last = buffer;
    if (call == 2) {
      held = result;  // kept through calls 3..5
    } else {
      kiln_vm_ref_release(result.ref);
    }
  }
  kiln_hal_submit_stats_t after = kiln_hal_device_submit_stats(device);
  KILN_EXPECT_EQ(after.submissions - before.submissions, 4);  // one per call
  kiln_resubmit_check(session, held, 2);
  kiln_vm_ref_release(held.ref);
  KILN_EXPECT_EQ(kiln_hal_device_validation_message_count(device), 0);
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
