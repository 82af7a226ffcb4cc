// The thread contract of session.h (issue 12): sessions created at once on
// several threads, sessions sharing one device, and one session called from
// several threads (calls take turns). Every result is checked against a
// plain C product. CI also runs this binary under ThreadSanitizer
// (scripts/test.sh).
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/session.h"
#include "kiln_test.h"
#include "sample_runner.h"

enum { kThreads = 4, kCalls = 3, kLength = 1000 };

// predict(a, b) = a * b elementwise (samples/elementwise_mul) on `session`;
// INTERNAL names the first wrong element.
static kiln_status_t kiln_multiply_once(kiln_session_t* session,
                                        kiln_vm_function_t predict, int seed) {
  static const int64_t shape[1] = {kLength};
  float a[kLength], b[kLength], c[kLength];
  for (int i = 0; i < kLength; ++i) {
    a[i] = (float)(seed * 1000 + i) * 0.25f;
    b[i] = (float)(1 + (i + seed) % 7);
  }
  kiln_vm_value_t args[2];
  memset(args, 0, sizeof(args));
  kiln_vm_value_t result;
  memset(&result, 0, sizeof(result));
  kiln_status_t status = kiln_ok_status();
  for (int k = 0; k < 2 && !status; ++k) {
    kiln_hal_buffer_view_t* view = NULL;
    status = kiln_session_buffer_view_from_host(session, KILN_HAL_ELEMENT_F32,
                                                1, shape, k ? b : a,
                                                sizeof(a), &view);
    if (!status) {
      status = kiln_hal_module_wrap_buffer_view(kiln_session_allocator(session),
                                                view, &args[k].ref);
    }
    kiln_hal_buffer_view_release(view);
  }
  if (!status) status = kiln_session_invoke(session, predict, args, 2, &result, 1);
  kiln_hal_buffer_view_t* out = NULL;
  if (!status) {
    status = kiln_hal_module_unwrap_buffer_view(result.ref, "result", &out);
  }
  if (!status) status = kiln_session_buffer_view_to_host(session, out, c, sizeof(c));
  for (int i = 0; i < kLength && !status; ++i) {
    if (c[i] != a[i] * b[i]) {  // one rounding on both sides: exact
      status = kiln_make_status(KILN_STATUS_INTERNAL,
                                "seed %d: element %d is %g, reference %g",
                                seed, i, c[i], a[i] * b[i]);
    }
  }
  kiln_vm_ref_release(args[0].ref);
  kiln_vm_ref_release(args[1].ref);
  kiln_vm_ref_release(result.ref);
  return status;
}

static void kiln_thread_options(kiln_session_options_t* options) {
  kiln_session_options_init(options);
  const char* device = getenv("KILN_TEST_DEVICE");
  if (device) options->device_uri = device;
}

// Filled before any thread starts: kiln_test_sample_path returns a static
// buffer, which threads must not share.
static char g_module_path[1024];

static kiln_status_t kiln_open_sample(kiln_session_t* session,
                                      kiln_vm_function_t* out_predict) {
  KILN_RETURN_IF_ERROR(kiln_session_load_module_file(session, g_module_path));
  return kiln_session_lookup(session, "predict", out_predict);
}

typedef struct kiln_worker_t {
  pthread_barrier_t* start;
  kiln_session_t* session;      // shared session, or NULL: make one
  kiln_hal_device_t* device;    // device to share, or NULL
  kiln_vm_function_t predict;   // with `session`
  int seed;
  kiln_status_t status;
  uint64_t validation_messages;
} kiln_worker_t;

static void* kiln_worker_main(void* arg) {
  kiln_worker_t* worker = arg;
  pthread_barrier_wait(worker->start);  // all threads start together
  kiln_session_t* session = worker->session;
  kiln_vm_function_t predict = worker->predict;
  kiln_status_t status = kiln_ok_status();
  if (!session) {
    kiln_session_options_t options;
    kiln_thread_options(&options);
    options.shared_device = worker->device;
    status = kiln_session_create(&options, &session);
    if (!status) status = kiln_open_sample(session, &predict);
  }
  for (int call = 0; call < kCalls && !status; ++call) {
    status = kiln_multiply_once(session, predict, worker->seed * 10 + call);
  }
  if (!worker->session && session) {
    worker->validation_messages = kiln_hal_device_validation_message_count(
        kiln_session_device(session));
    kiln_session_destroy(session);
  }
  worker->status = status;
  return NULL;
}

static void kiln_run_workers(kiln_session_t* session,
                             kiln_vm_function_t predict,
                             kiln_hal_device_t* device) {
  snprintf(g_module_path, sizeof(g_module_path), "%s",
           kiln_test_sample_path("elementwise_mul"));
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, kThreads);
  kiln_worker_t workers[kThreads];
  pthread_t threads[kThreads];
  for (int i = 0; i < kThreads; ++i) {
    workers[i] = (kiln_worker_t){&start, session, device, predict, i + 1,
                                 kiln_ok_status(), 0};
    KILN_ASSERT_EQ(pthread_create(&threads[i], NULL, kiln_worker_main,
                                  &workers[i]), 0);
  }
  for (int i = 0; i < kThreads; ++i) {
    pthread_join(threads[i], NULL);
    KILN_EXPECT_OK(workers[i].status);
    KILN_EXPECT_EQ_U64(workers[i].validation_messages, 0);
  }
  pthread_barrier_destroy(&start);
}

KILN_TEST(SessionThreads, SessionsCreatedAtOnce) {
  kiln_run_workers(NULL, (kiln_vm_function_t){0}, NULL);
}

KILN_TEST(SessionThreads, SessionsShareOneDevice) {
  kiln_session_options_t options;
  kiln_thread_options(&options);
  kiln_session_t* owner = NULL;
  KILN_ASSERT_OK(kiln_session_create(&options, &owner));
  kiln_hal_device_t* device = kiln_session_device(owner);
  kiln_run_workers(NULL, (kiln_vm_function_t){0}, device);
  KILN_EXPECT_EQ_U64(kiln_hal_device_validation_message_count(device), 0);
  kiln_session_destroy(owner);
}

KILN_TEST(SessionThreads, OneSessionCalledFromManyThreads) {
  kiln_session_options_t options;
  kiln_thread_options(&options);
  kiln_session_t* session = NULL;
  KILN_ASSERT_OK(kiln_session_create(&options, &session));
  snprintf(g_module_path, sizeof(g_module_path), "%s",
           kiln_test_sample_path("elementwise_mul"));
  kiln_vm_function_t predict;
  KILN_ASSERT_OK(kiln_open_sample(session, &predict));
  kiln_run_workers(session, predict, NULL);
  KILN_EXPECT_EQ_U64(kiln_hal_device_validation_message_count(
                         kiln_session_device(session)), 0);
  kiln_session_destroy(session);
}
