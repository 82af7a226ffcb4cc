// Sessions sharing one device and one model (issue 12): N threads, each with
// its own session made from one kiln_model_t of the MLP sample, run at once.
// Every result must equal the single-session result bit for bit (same
// kernels on the same kind of device) and a plain C forward pass within
// 1e-4; the weights (4 rodata segments) are uploaded once however many
// sessions run, and the pipeline is built once. Lifetimes: the model and
// the device may be released before their sessions. CI runs this binary
// under ThreadSanitizer (scripts/test.sh) and ASan/LSan (meson test).
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../samples/mlp/mlp_weights.h"
#include "kiln/hal/buffer.h"
#include "kiln/session.h"
#include "kiln_test.h"
#include "sample_runner.h"

enum { kShareThreads = 4, kShareCalls = 3, kRows = 5 };
enum { kInputs = kRows * KILN_MLP_IN, kOutputs = kRows * KILN_MLP_OUT };

static void kiln_share_input(int seed, float* x) {
  for (int i = 0; i < kInputs; ++i) {
    x[i] = (float)((i * 7 + seed * 13) % 17) / 8.0f - 1.0f;
  }
}

// The plain C forward pass: relu(x W1 + b1) W2 + b2.
static void kiln_share_reference(const float* x, float* y) {
  for (int r = 0; r < kRows; ++r) {
    float hidden[KILN_MLP_HIDDEN];
    for (int h = 0; h < KILN_MLP_HIDDEN; ++h) {
      double sum = kiln_mlp_weight(1, (uint32_t)h);
      for (int k = 0; k < KILN_MLP_IN; ++k) {
        sum += (double)x[r * KILN_MLP_IN + k] *
               kiln_mlp_weight(0, (uint32_t)(k * KILN_MLP_HIDDEN + h));
      }
      hidden[h] = sum > 0 ? (float)sum : 0.0f;
    }
    for (int o = 0; o < KILN_MLP_OUT; ++o) {
      double sum = kiln_mlp_weight(3, (uint32_t)o);
      for (int h = 0; h < KILN_MLP_HIDDEN; ++h) {
        sum += (double)hidden[h] *
               kiln_mlp_weight(2, (uint32_t)(h * KILN_MLP_OUT + o));
      }
      y[r * KILN_MLP_OUT + o] = (float)sum;
    }
  }
}

// predict(x) on `session` into y.
static kiln_status_t kiln_share_predict(kiln_session_t* session, int seed,
                                        float* y) {
  static const int64_t shape[2] = {kRows, KILN_MLP_IN};
  float x[kInputs];
  kiln_share_input(seed, x);
  kiln_vm_function_t predict;
  KILN_RETURN_IF_ERROR(kiln_session_lookup(session, "predict", &predict));
  kiln_vm_value_t arg, result;
  memset(&arg, 0, sizeof(arg));
  memset(&result, 0, sizeof(result));
  kiln_hal_buffer_view_t* view = NULL;
  kiln_status_t status = kiln_session_buffer_view_from_host(
      session, KILN_HAL_ELEMENT_F32, 2, shape, x, sizeof(x), &view);
  if (!status) {
    status = kiln_hal_module_wrap_buffer_view(kiln_session_allocator(session),
                                              view, &arg.ref);
  }
  kiln_hal_buffer_view_release(view);
  if (!status) status = kiln_session_invoke(session, predict, &arg, 1, &result, 1);
  kiln_hal_buffer_view_t* out = NULL;
  if (!status) status = kiln_hal_module_unwrap_buffer_view(result.ref, "y", &out);
  if (!status) {
    status = kiln_session_buffer_view_to_host(session, out, y,
                                              kOutputs * sizeof(float));
  }
  kiln_vm_ref_release(arg.ref);
  kiln_vm_ref_release(result.ref);
  return status;
}

static void kiln_share_options(kiln_session_options_t* options) {
  kiln_session_options_init(options);
  const char* device = getenv("KILN_TEST_DEVICE");
  if (device) options->device_uri = device;
}

// Per seed, from one plain (one-call) session: what every shared session
// must reproduce exactly. Checked against the C reference here.
static float g_expected[kShareThreads * kShareCalls][kOutputs];

static void kiln_share_expect(void) {
  kiln_session_options_t options;
  kiln_share_options(&options);
  kiln_session_t* session = NULL;
  KILN_ASSERT_OK(kiln_session_create(&options, &session));
  KILN_ASSERT_OK(
      kiln_session_load_module_file(session, kiln_test_sample_path("mlp")));
  for (int seed = 0; seed < kShareThreads * kShareCalls; ++seed) {
    KILN_ASSERT_OK(kiln_share_predict(session, seed, g_expected[seed]));
    float x[kInputs], y[kOutputs];
    kiln_share_input(seed, x);
    kiln_share_reference(x, y);
    for (int i = 0; i < kOutputs; ++i) {
      KILN_ASSERT_NEAR(g_expected[seed][i], y[i], 1e-4);
    }
  }
  // The one-call path is device + private model + session: its weights
  // went through the same cache, once.
  kiln_hal_shared_cache_stats_t stats =
      kiln_model_statistics(kiln_session_model(session));
  KILN_EXPECT_EQ_U64(stats.constant_uploads, 4);
  KILN_EXPECT_EQ_U64(stats.executables_built, 1);
  kiln_session_destroy(session);
}

typedef struct kiln_share_worker_t {
  pthread_barrier_t* start;
  kiln_model_t* model;
  int thread;
  kiln_status_t status;
} kiln_share_worker_t;

static void* kiln_share_worker_main(void* arg) {
  kiln_share_worker_t* worker = arg;
  kiln_session_options_t options;
  kiln_share_options(&options);
  options.model = worker->model;
  pthread_barrier_wait(worker->start);  // create and run all at once
  kiln_session_t* session = NULL;
  kiln_status_t status = kiln_session_create(&options, &session);
  for (int call = 0; call < kShareCalls && !status; ++call) {
    int seed = worker->thread * kShareCalls + call;
    float y[kOutputs];
    status = kiln_share_predict(session, seed, y);
    for (int i = 0; i < kOutputs && !status; ++i) {
      if (memcmp(&y[i], &g_expected[seed][i], sizeof(float)) != 0) {
        status = kiln_make_status(KILN_STATUS_INTERNAL,
                                  "thread %d seed %d: element %d is %.9g, "
                                  "the single session gave %.9g",
                                  worker->thread, seed, i, y[i],
                                  g_expected[seed][i]);
      }
    }
  }
  kiln_session_destroy(session);
  worker->status = status;
  return NULL;
}

static const uint64_t kWeightBytes =
    4ull * (KILN_MLP_IN * KILN_MLP_HIDDEN + KILN_MLP_HIDDEN +
            KILN_MLP_HIDDEN * KILN_MLP_OUT + KILN_MLP_OUT);

KILN_TEST(SessionShare, ThreadsShareOneDeviceAndOneModel) {
  kiln_share_expect();
  kiln_session_options_t options;
  kiln_share_options(&options);
  kiln_hal_device_t* device = NULL;
  KILN_ASSERT_OK(kiln_session_device_create(&options, &device));
  kiln_model_options_t model_options;
  kiln_model_options_init(&model_options);
  kiln_model_t* model = NULL;
  KILN_ASSERT_OK(kiln_model_create(device, &model_options, &model));
  KILN_ASSERT_OK(kiln_model_load_module_file(model, kiln_test_sample_path("mlp")));
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, kShareThreads);
  kiln_share_worker_t workers[kShareThreads];
  pthread_t threads[kShareThreads];
  for (int i = 0; i < kShareThreads; ++i) {
    workers[i] = (kiln_share_worker_t){&start, model, i, kiln_ok_status()};
    KILN_ASSERT_EQ(pthread_create(&threads[i], NULL, kiln_share_worker_main,
                                  &workers[i]), 0);
  }
  for (int i = 0; i < kShareThreads; ++i) {
    pthread_join(threads[i], NULL);
    KILN_EXPECT_OK(workers[i].status);
  }
  pthread_barrier_destroy(&start);
  // Four sessions, one upload of each of the 4 weight segments (every
  // segment is a multiple of 4 bytes) and one pipeline.
  kiln_hal_shared_cache_stats_t stats = kiln_model_statistics(model);
  KILN_EXPECT_EQ_U64(stats.constant_uploads, 4);
  KILN_EXPECT_EQ_U64(stats.constant_bytes, kWeightBytes);
  KILN_EXPECT_EQ_U64(stats.executables_built, 1);
  // The model's budget holds the weights once; with every session gone,
  // they are the only device buffers left.
  KILN_EXPECT_GE(kiln_model_memory_in_use(model), kWeightBytes);
  KILN_EXPECT_EQ_U64(kiln_hal_device_memory_stats(device).live_bytes,
                     kWeightBytes);
  KILN_EXPECT_EQ_U64(kiln_hal_device_validation_message_count(device), 0);
  kiln_model_release(model);
  KILN_EXPECT_EQ_U64(kiln_hal_device_memory_stats(device).live_bytes, 0);
  kiln_hal_device_release(device);
}

// The model and device released first, sessions destroyed in either order
// afterwards: references keep everything alive; LSan checks nothing leaks.
KILN_TEST(SessionShare, ModelReleasedBeforeItsSessions) {
  kiln_session_options_t options;
  kiln_share_options(&options);
  kiln_hal_device_t* device = NULL;
  KILN_ASSERT_OK(kiln_session_device_create(&options, &device));
  kiln_model_options_t model_options;
  kiln_model_options_init(&model_options);
  kiln_model_t* model = NULL;
  KILN_ASSERT_OK(kiln_model_create(device, &model_options, &model));
  KILN_ASSERT_OK(kiln_model_load_module_file(model, kiln_test_sample_path("mlp")));
  options.model = model;
  kiln_session_t* sessions[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 3; ++i) {
    KILN_ASSERT_OK(kiln_session_create(&options, &sessions[i]));
  }
  // Frozen once shared: neither the model nor its sessions take modules.
  KILN_EXPECT_STATUS(KILN_STATUS_FAILED_PRECONDITION,
                     kiln_model_load_module_file(model, kiln_test_sample_path("mlp")));
  KILN_EXPECT_STATUS(KILN_STATUS_FAILED_PRECONDITION,
                     kiln_session_load_module_file(sessions[0],
                                                   kiln_test_sample_path("mlp")));
  kiln_model_release(model);
  kiln_hal_device_release(device);
  float y[kOutputs];
  KILN_EXPECT_OK(kiln_share_predict(sessions[1], 0, y));
  kiln_session_destroy(sessions[1]);
  KILN_EXPECT_OK(kiln_share_predict(sessions[2], 1, y));
  kiln_session_destroy(sessions[0]);
  KILN_EXPECT_OK(kiln_share_predict(sessions[2], 2, y));
  kiln_session_destroy(sessions[2]);
}

// Shared weights cannot be written: host writes and mapping are refused
// (a writable dispatch binding or binding-table slot is refused too; see
// hal/command_buffer.c and the hal tests).
KILN_TEST(SessionShare, ConstantsAreImmutable) {
  kiln_session_options_t options;
  kiln_share_options(&options);
  kiln_hal_device_t* device = NULL;
  KILN_ASSERT_OK(kiln_session_device_create(&options, &device));
  const float data[4] = {1, 2, 3, 4};
  kiln_hal_buffer_t* buffer = NULL;
  KILN_ASSERT_OK(kiln_hal_upload_constant(device, NULL, data, sizeof(data), &buffer));
  KILN_EXPECT_TRUE(kiln_hal_buffer_is_immutable(buffer));
  float back[4] = {0, 0, 0, 0};
  KILN_EXPECT_OK(kiln_hal_device_read_buffer(device, buffer, 0, back, sizeof(back)));
  KILN_EXPECT_BYTES_EQ(back, data, sizeof(data));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_PERMISSION_DENIED, "immutable",
                             kiln_hal_device_write_buffer(device, buffer, 0, data, 4));
  kiln_hal_buffer_release(buffer);
  kiln_hal_device_release(device);
}
