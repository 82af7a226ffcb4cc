// --sessions=N (see sessions.h).
#include "sessions.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/time.h"

typedef struct kiln_run_worker_t {
  const kiln_run_sessions_t* run;
  int index;
  kiln_status_t status;
} kiln_run_worker_t;

// The bytes of a buffer-view result, read through `session`.
static kiln_status_t kiln_run_read_view(kiln_session_t* session,
                                        kiln_vm_ref_object_t* ref,
                                        uint8_t** out_bytes,
                                        uint64_t* out_length) {
  *out_bytes = NULL;
  kiln_hal_buffer_view_t* view = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_module_unwrap_buffer_view(ref, "result", &view));
  uint64_t length = kiln_hal_buffer_view_byte_length(view);
  uint8_t* bytes = malloc(length ? (size_t)length : 1);
  if (!bytes) return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  kiln_status_t status = kiln_session_buffer_view_to_host(session, view, bytes, length);
  if (status) {
    free(bytes);
    return status;
  }
  *out_bytes = bytes;
  *out_length = length;
  return kiln_ok_status();
}

// Result i of `results` (from `session`) against the first session's.
static kiln_status_t kiln_run_compare(const kiln_run_sessions_t* run,
                                      kiln_session_t* session, int index,
                                      int call, size_t i,
                                      const kiln_vm_value_t* result) {
  char type = run->signature->types[run->signature->arg_count + i];
  const kiln_vm_value_t* want = &run->results[i];
  if (type != 'r') {
    if (memcmp(&result->i64, &want->i64, type == 'I' || type == 'F' ? 8 : 4) != 0) {
      return kiln_make_status(KILN_STATUS_INTERNAL,
                              "session %d call %d: result %zu differs from the "
                              "first session's",
                              index, call, i);
    }
    return kiln_ok_status();
  }
  uint8_t *mine = NULL, *theirs = NULL;
  uint64_t mine_length = 0, theirs_length = 0;
  kiln_status_t status = kiln_run_read_view(session, result->ref, &mine, &mine_length);
  if (!status) {
    status = kiln_run_read_view(run->first, want->ref, &theirs, &theirs_length);
  }
  if (!status && mine_length != theirs_length) {
    status = kiln_make_status(KILN_STATUS_INTERNAL,
                              "session %d call %d: result %zu has %llu bytes, the "
                              "first session's %llu",
                              index, call, i, (unsigned long long)mine_length,
                              (unsigned long long)theirs_length);
  }
  for (uint64_t b = 0; !status && b < mine_length; ++b) {
    if (mine[b] != theirs[b]) {
      status = kiln_make_status(KILN_STATUS_INTERNAL,
                                "session %d call %d: result %zu differs from the "
                                "first session's at byte %llu",
                                index, call, i, (unsigned long long)b);
    }
  }
  free(mine);
  free(theirs);
  return status;
}

static void* kiln_run_worker_main(void* arg) {
  kiln_run_worker_t* worker = arg;
  const kiln_run_sessions_t* run = worker->run;
  kiln_session_options_t options = *run->options;
  options.model = kiln_session_model(run->first);
  kiln_session_t* session = NULL;
  kiln_status_t status = kiln_session_create(&options, &session);
  kiln_vm_function_t function;
  if (!status) status = kiln_session_lookup(session, run->function, &function);
  size_t result_count = run->signature->result_count;
  kiln_vm_value_t results[KILN_FORMAT_MAX_SIGNATURE_VALUES];
  for (int call = 0; call < run->calls && !status; ++call) {
    memset(results, 0, sizeof(results));
    status = kiln_session_invoke(session, function, run->args,
                                 run->signature->arg_count, results, result_count);
    for (size_t i = 0; i < result_count && !status; ++i) {
      status = kiln_run_compare(run, session, worker->index, call, i, &results[i]);
    }
    for (size_t i = 0; i < result_count; ++i) {
      if (run->signature->types[run->signature->arg_count + i] == 'r') {
        kiln_vm_ref_release(results[i].ref);
      }
    }
  }
  kiln_session_destroy(session);
  worker->status = status;
  return NULL;
}

kiln_status_t kiln_run_shared_sessions(const kiln_run_sessions_t* run,
                                       FILE* out) {
  if (run->sessions < 1 || run->sessions > KILN_RUN_MAX_SESSIONS) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "--sessions=%d: between 1 and %d", run->sessions,
                            KILN_RUN_MAX_SESSIONS);
  }
  kiln_run_worker_t workers[KILN_RUN_MAX_SESSIONS];
  pthread_t threads[KILN_RUN_MAX_SESSIONS];
  int started = 0;
  kiln_status_t status = kiln_ok_status();
  int64_t start_ns = kiln_time_now_ns();
  for (; started < run->sessions; ++started) {
    workers[started] = (kiln_run_worker_t){run, started + 1, kiln_ok_status()};
    if (pthread_create(&threads[started], NULL, kiln_run_worker_main,
                       &workers[started]) != 0) {
      status = kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                                "--sessions: cannot start thread %d", started + 1);
      break;
    }
  }
  for (int i = 0; i < started; ++i) {
    pthread_join(threads[i], NULL);
    if (!status) {
      status = workers[i].status;
    } else {
      kiln_status_free(workers[i].status);
    }
  }
  KILN_RETURN_IF_ERROR(status);
  double ms = (kiln_time_now_ns() - start_ns) / 1e6;
  kiln_hal_shared_cache_stats_t stats =
      kiln_model_statistics(kiln_session_model(run->first));
  kiln_hal_memory_stats_t memory =
      kiln_hal_device_memory_stats(kiln_session_device(run->first));
  fprintf(out,
          "[sessions] %d more sessions on one device and one model, %d "
          "call(s) each at once: every result equals the first session's; "
          "weights uploaded %llu time(s) (%llu bytes), %llu pipeline(s) "
          "built; %.3f ms; peak device memory in buffers %.3f MiB\n",
          run->sessions, run->calls, (unsigned long long)stats.constant_uploads,
          (unsigned long long)stats.constant_bytes,
          (unsigned long long)stats.executables_built, ms,
          memory.peak_bytes / (1024.0 * 1024.0));
  return kiln_ok_status();
}
