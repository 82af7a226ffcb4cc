#include "run.h"

#include <stdlib.h>
#include <string.h>

#include "kiln/base/file.h"
#include "kiln/base/time.h"
#include "kiln/format/module_reader.h"
#include "kiln/session.h"
#include "kiln/vm/buffer.h"
#include "npy.h"
#include "sessions.h"
#include "tensor_text.h"

void kiln_run_options_init(kiln_run_options_t* options) {
  memset(options, 0, sizeof(*options));
  options->expected_f16_threshold = 1e-3;
  options->expected_f32_threshold = 1e-4;
  options->expected_f64_threshold = 1e-4;
  options->output_max_element_count = 1024;
  options->slowest_dispatches = 10;
  options->call_count = 1;
}

// Host and HAL element types share their names ("f32", "i8", ...).
static kiln_status_t kiln_run_to_hal_type(kiln_element_type_t type,
                                          kiln_hal_element_type_t* out) {
  const char* name = kiln_element_type_name(type);
  return kiln_hal_element_type_parse(kiln_make_cstring_view(name), out);
}

static kiln_status_t kiln_run_from_hal_type(kiln_hal_element_type_t type,
                                            kiln_element_type_t* out) {
  const char* name = kiln_hal_element_type_name(type);
  return kiln_element_type_parse(kiln_make_cstring_view(name), out);
}

// The function to run: --function, else the main module's only export.
static kiln_status_t kiln_run_function_name(kiln_session_t* session,
                                            const char* requested,
                                            char* name, size_t size) {
  if (requested) {
    snprintf(name, size, "%s", requested);
    return kiln_ok_status();
  }
  const kiln_format_module_t* format =
      kiln_vm_module_format(kiln_session_main_module(session));
  if (!format || format->export_count != 1) {
    char list[1024] = "";
    size_t used = 0;
    for (uint32_t i = 0; format && i < format->export_count && used < sizeof(list); ++i) {
      used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%.*s",
                               i ? ", " : "",
                               KILN_SV_ARG(format->exports[i].name));
    }
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "--function is required: the module exports %u "
                            "functions (%s)",
                            format ? format->export_count : 0,
                            list[0] ? list : "none");
  }
  snprintf(name, size, "%.*s", KILN_SV_ARG(format->exports[0].name));
  return kiln_ok_status();
}

// Turns one parsed --input into the value the signature wants.
static kiln_status_t kiln_run_make_argument(kiln_session_t* session,
                                            char type, size_t index,
                                            kiln_input_value_t* input,
                                            kiln_vm_value_t* out) {
  memset(out, 0, sizeof(*out));
  if (type == KILN_VALUE_TYPE_REF) {
    if (input->kind == KILN_INPUT_NULL) return kiln_ok_status();
    if (input->kind != KILN_INPUT_TENSOR) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "input %zu: the function takes a tensor here "
                              "(e.g. 2x2xf32=1 2 3 4), not a plain number",
                              index);
    }
    kiln_hal_element_type_t element_type;
    KILN_RETURN_IF_ERROR(
        kiln_run_to_hal_type(input->tensor.element_type, &element_type));
    kiln_hal_buffer_view_t* view = NULL;
    KILN_RETURN_IF_ERROR_ANNOTATE(
        kiln_session_buffer_view_from_host(
            session, element_type, input->tensor.rank, input->tensor.dims,
            input->tensor.data, input->tensor.byte_size, &view),
        "uploading input %zu", index);
    kiln_status_t status = kiln_hal_module_wrap_buffer_view(
        kiln_session_allocator(session), view, &out->ref);
    kiln_hal_buffer_view_release(view);
    return status;
  }
  bool is_scalar_tensor = input->kind == KILN_INPUT_TENSOR &&
                          input->tensor.element_count == 1 &&
                          input->tensor.rank == 0;
  if (input->kind != KILN_INPUT_SCALAR && !is_scalar_tensor) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "input %zu: the function takes a scalar of type "
                            "'%c' here, e.g. --input=3",
                            index, type);
  }
  double f64 = is_scalar_tensor ? kiln_host_tensor_get_f64(&input->tensor, 0)
                                : input->scalar_f64;
  int64_t i64 = input->kind == KILN_INPUT_SCALAR && input->scalar_is_integer
                    ? input->scalar_i64
                    : (int64_t)f64;
  bool integral = input->kind == KILN_INPUT_SCALAR ? input->scalar_is_integer
                                                   : f64 == (double)(int64_t)f64;
  switch (type) {
    case KILN_VALUE_TYPE_I32:
      if (!integral || i64 < INT32_MIN || i64 > INT32_MAX) {
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "input %zu: expected an i32, got %.17g", index,
                                f64);
      }
      *out = kiln_vm_value_i32((int32_t)i64);
      return kiln_ok_status();
    case KILN_VALUE_TYPE_I64:
      if (!integral) {
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "input %zu: expected an i64, got %.17g", index,
                                f64);
      }
      *out = kiln_vm_value_i64(i64);
      return kiln_ok_status();
    case KILN_VALUE_TYPE_F32:
      *out = kiln_vm_value_f32((float)f64);
      return kiln_ok_status();
    default:
      *out = kiln_vm_value_f64(f64);
      return kiln_ok_status();
  }
}

// Reads a result buffer view back into a host tensor.
static kiln_status_t kiln_run_read_result(kiln_session_t* session,
                                          kiln_vm_ref_object_t* ref,
                                          size_t index,
                                          kiln_host_tensor_t* out) {
  char what[64];
  snprintf(what, sizeof(what), "result %zu", index);
  kiln_hal_buffer_view_t* view = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_module_unwrap_buffer_view(ref, what, &view));
  kiln_element_type_t type;
  KILN_RETURN_IF_ERROR(
      kiln_run_from_hal_type(kiln_hal_buffer_view_element_type(view), &type));
  int64_t dims[KILN_HOST_TENSOR_MAX_RANK];
  size_t rank = kiln_hal_buffer_view_rank(view);
  for (size_t i = 0; i < rank; ++i) dims[i] = kiln_hal_buffer_view_dim(view, i);
  KILN_RETURN_IF_ERROR(kiln_host_tensor_allocate(
      kiln_session_allocator(session), type, rank, dims, out));
  kiln_status_t status =
      kiln_session_buffer_view_to_host(session, view, out->data, out->byte_size);
  if (!kiln_status_is_ok(status)) kiln_host_tensor_deinit(out);
  return status;
}

static void kiln_run_print_scalar(FILE* out, char type, kiln_vm_value_t value) {
  switch (type) {
    case KILN_VALUE_TYPE_I32: fprintf(out, "i32=%d\n", value.i32); break;
    case KILN_VALUE_TYPE_I64: fprintf(out, "i64=%lld\n", (long long)value.i64); break;
    case KILN_VALUE_TYPE_F32: fprintf(out, "f32=%.9g\n", value.f32); break;
    default: fprintf(out, "f64=%.17g\n", value.f64); break;
  }
}

// Writes result `index` where --output says ("-", "@f.npy", "+f.npy",
// "@f.bin").
static kiln_status_t kiln_run_write_output(const char* target,
                                           const kiln_host_tensor_t* tensor,
                                           size_t max_elements, FILE* out) {
  size_t length = strlen(target);
  if (strcmp(target, "-") == 0) {
    kiln_tensor_print(out, tensor, max_elements);
    return kiln_ok_status();
  }
  bool is_npy = length > 4 && strcmp(target + length - 4, ".npy") == 0;
  if ((target[0] == '@' || target[0] == '+') && is_npy) {
    return kiln_npy_write_file(target + 1, tensor, target[0] == '+');
  }
  if (target[0] == '@' && length > 1) {
    return kiln_file_write_all(target + 1, kiln_make_const_byte_span(
                                               tensor->data, tensor->byte_size));
  }
  return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                          "--output='%s': expected '-', '@file.npy', "
                          "'+file.npy' or '@file.bin'",
                          target);
}

static double kiln_run_threshold(const kiln_run_options_t* options,
                                 kiln_element_type_t type) {
  switch (type) {
    case KILN_ELEMENT_F16:
    case KILN_ELEMENT_BF16: return options->expected_f16_threshold;
    case KILN_ELEMENT_F64: return options->expected_f64_threshold;
    default: return options->expected_f32_threshold;
  }
}

static int kiln_compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

// Prints one value of type `type` for --trace_execution.
static void kiln_run_trace_value(FILE* out, char type, kiln_vm_value_t value) {
  switch (type) {
    case KILN_VALUE_TYPE_I32: fprintf(out, "%d", value.i32); break;
    case KILN_VALUE_TYPE_I64: fprintf(out, "%lld", (long long)value.i64); break;
    case KILN_VALUE_TYPE_F32: fprintf(out, "%g", value.f32); break;
    case KILN_VALUE_TYPE_F64: fprintf(out, "%g", value.f64); break;
    default:
      fprintf(out, "%s", value.ref ? value.ref->type->name : "null");
      break;
  }
}

enum { KILN_RUN_MAX_TRACKED = 1024, KILN_RUN_MAX_PHASES = 32 };

// What --print_statistics learns about dispatches: the executable names
// (from executable.lookup), each recorded dispatch of the first command
// buffers recorded into before the first submission (one per GPU segment of
// a model with host ops, docs/partitioning.md), and GPU time summed per
// dispatch over all calls.
typedef struct kiln_run_dispatch_t {
  char executable[48];
  int32_t grid[3];
  double total_ns;
} kiln_run_dispatch_t;

typedef struct kiln_run_hook_state_t {
  FILE* out;
  bool trace;       // --trace_execution
  bool statistics;  // --print_statistics: sum GPU time of submissions
  bool span;        // --span_timestamps: submissions timed whole, no dispatch times
  size_t slowest;   // --slowest_dispatches
  double gpu_ns;    // GPU time of the current call's recordings, end to end
  double dispatch_ns;  // the sum of its dispatches' own times
  // Command buffers the current call submitted (retained): their
  // timestamps are read after the call, outside its timed wall time.
  kiln_vm_ref_object_t* submitted[8];
  size_t submitted_count;
  uint64_t submissions;  // every submit_and_wait of every call (GPU segments)
  size_t executable_count;
  const void* executable_refs[64];
  char executable_names[64][48];
  // The first command buffers recorded into, each with its dispatches at
  // [first, first + count) of `dispatches` (recorded one after the other).
  const void* tracked[8];
  size_t tracked_first[8], tracked_count[8], tracked_buffers;
  size_t dispatch_count;
  kiln_run_dispatch_t dispatches[KILN_RUN_MAX_TRACKED];
  // Host time of warm calls by native call: each native call's return
  // minus the previous one's (or the call's start), so the bytecode run
  // before it counts with it; `phase_mark_ns` 0 while not measuring.
  int64_t phase_mark_ns;
  size_t phase_count;
  char phase_names[KILN_RUN_MAX_PHASES][48];
  // The name strings each phase was last seen with (the hook gets the same
  // pointers on every call): a match skips formatting the name, which is
  // inside the measured wall time.
  const char* phase_modules[KILN_RUN_MAX_PHASES];
  const char* phase_exports[KILN_RUN_MAX_PHASES];
  double phase_ns[KILN_RUN_MAX_PHASES];  // the current call's
  double* phase_calls;  // [phase][call]: each warm call's, for medians
  int phase_call;       // the current call's index into phase_calls
  int phase_capacity;   // calls per phase in phase_calls
} kiln_run_hook_state_t;

// Charges the time since the last mark to `name` (statistics, warm calls).
static void kiln_run_phase(kiln_run_hook_state_t* hook, const char* module_name,
                           const char* name) {
  if (!hook->phase_mark_ns) return;
  int64_t now = kiln_time_now_ns();
  size_t i = 0;
  while (i < hook->phase_count &&
         (hook->phase_modules[i] != module_name || hook->phase_exports[i] != name)) {
    ++i;
  }
  if (i == hook->phase_count) {  // not seen with these pointers: by name
    char full[48];
    snprintf(full, sizeof(full), "%s%s%s", module_name, module_name[0] ? "." : "", name);
    i = 0;
    while (i < hook->phase_count && strcmp(hook->phase_names[i], full) != 0) ++i;
    if (i == KILN_RUN_MAX_PHASES) {
      hook->phase_mark_ns = now;
      return;
    }
    if (i == hook->phase_count) {
      snprintf(hook->phase_names[i], sizeof(hook->phase_names[i]), "%s", full);
      hook->phase_ns[i] = 0;
      ++hook->phase_count;
      for (int c = 0; c < hook->phase_capacity; ++c) {
        hook->phase_calls[i * (size_t)hook->phase_capacity + c] = 0;
      }
    }
    hook->phase_modules[i] = module_name;
    hook->phase_exports[i] = name;
  }
  hook->phase_ns[i] += (double)(now - hook->phase_mark_ns);
  hook->phase_mark_ns = now;
}

// Ends the current call's phases: stores them for the medians.
static void kiln_run_phases_end_call(kiln_run_hook_state_t* hook) {
  if (hook->phase_calls && hook->phase_call < hook->phase_capacity) {
    for (size_t i = 0; i < hook->phase_count; ++i) {
      hook->phase_calls[i * (size_t)hook->phase_capacity + hook->phase_call] = hook->phase_ns[i];
      hook->phase_ns[i] = 0;
    }
    ++hook->phase_call;
  }
  hook->phase_mark_ns = 0;
}

// Median host us of a warm call by native call, biggest first.
static void kiln_run_print_phases(kiln_run_hook_state_t* hook, double gpu_ms) {
  const int calls = hook->phase_call;
  if (hook->phase_count == 0 || calls <= 0) return;
  fprintf(hook->out,
          "[statistics] host time of a warm call by native call (median us of calls 2..; "
          "each includes the bytecode since the previous one; median GPU span %.1f us):\n",
          gpu_ms * 1e3);
  double median[KILN_RUN_MAX_PHASES];
  for (size_t i = 0; i < hook->phase_count; ++i) {
    double* values = &hook->phase_calls[i * (size_t)hook->phase_capacity];
    qsort(values, (size_t)calls, sizeof(double), kiln_compare_doubles);
    median[i] = values[calls / 2];
  }
  bool shown[KILN_RUN_MAX_PHASES] = {false};
  for (size_t n = 0; n < hook->phase_count; ++n) {
    size_t best = hook->phase_count;
    for (size_t i = 0; i < hook->phase_count; ++i) {
      if (!shown[i] && (best == hook->phase_count || median[i] > median[best])) best = i;
    }
    shown[best] = true;
    fprintf(hook->out, "[statistics]   %9.1f  %s\n", median[best] / 1e3,
            hook->phase_names[best]);
  }
}

// Splits the submissions of a warm call (median of calls 2..): host time
// preparing them, in the driver's submit call, and blocked on fences; the
// wait minus the GPU span is the device's queue latency and wake-up.
static void kiln_run_print_submit_split(FILE* out, kiln_hal_submit_stats_t* stats,
                                        int calls, double gpu_span_ns) {
  if (calls < 2) return;
  double* values = calloc((size_t)calls, sizeof(double));
  if (!values) return;
  double median[3];
  for (int part = 0; part < 3; ++part) {
    for (int c = 1; c < calls; ++c) {
      const kiln_hal_submit_stats_t* s = &stats[c];
      uint64_t ns = part == 0 ? s->prepare_ns : part == 1 ? s->queue_ns : s->fence_wait_ns;
      values[c - 1] = (double)ns;
    }
    qsort(values, (size_t)calls - 1, sizeof(double), kiln_compare_doubles);
    median[part] = values[(calls - 1) / 2];
  }
  free(values);
  fprintf(out,
          "[statistics] submissions of a warm call (median us of calls 2..): %llu "
          "submission(s); preparing (binding tables, slot copies) %.1f, queue submit %.1f, "
          "fence wait %.1f (GPU span %.1f)\n",
          (unsigned long long)stats[calls - 1].submissions, median[0] / 1e3, median[1] / 1e3,
          median[2] / 1e3, gpu_span_ns / 1e3);
}

static void kiln_run_note_dispatch(kiln_run_hook_state_t* hook,
                                   const kiln_vm_value_t* args) {
  size_t t = 0;
  while (t < hook->tracked_buffers && hook->tracked[t] != args[0].ref) ++t;
  if (t == hook->tracked_buffers) {
    // Buffers recorded before the first submission (a compiled model's
    // segments); a program recording anew each call keeps its first.
    if (t == 8 || (t > 0 && hook->submissions > 0)) return;
    hook->tracked[t] = args[0].ref;
    hook->tracked_first[t] = hook->dispatch_count;
    hook->tracked_count[t] = 0;
    hook->tracked_buffers++;
  }
  // Only the last buffer tracked may still grow (recording is sequential).
  if (t + 1 != hook->tracked_buffers || hook->dispatch_count == KILN_RUN_MAX_TRACKED) return;
  hook->tracked_count[t]++;
  kiln_run_dispatch_t* dispatch = &hook->dispatches[hook->dispatch_count++];
  snprintf(dispatch->executable, sizeof(dispatch->executable), "?");
  for (size_t i = 0; i < hook->executable_count; ++i) {
    if (hook->executable_refs[i] == args[1].ref) {
      snprintf(dispatch->executable, sizeof(dispatch->executable), "%s",
               hook->executable_names[i]);
    }
  }
  for (int d = 0; d < 3; ++d) dispatch->grid[d] = args[3 + d].i32;
}

static void kiln_run_note_executable(kiln_run_hook_state_t* hook,
                                     const kiln_vm_value_t* args,
                                     const kiln_vm_value_t* results) {
  if (hook->executable_count == 64) return;
  const kiln_vm_buffer_t* name = (const kiln_vm_buffer_t*)args[1].ref;
  size_t i = hook->executable_count++;
  hook->executable_refs[i] = results[0].ref;
  snprintf(hook->executable_names[i], sizeof(hook->executable_names[i]),
           "%.*s", (int)(name->length < 47 ? name->length : 47),
           (const char*)name->data);
}

static int kiln_run_compare_dispatch_time(const void* a, const void* b) {
  double x = ((const kiln_run_dispatch_t*)a)->total_ns;
  double y = ((const kiln_run_dispatch_t*)b)->total_ns;
  return x < y ? 1 : x > y ? -1 : 0;
}

// The dispatches that took the most GPU time, summed over all calls.
static void kiln_run_print_top_dispatches(kiln_run_hook_state_t* hook,
                                          int calls) {
  if (hook->dispatch_count == 0) return;
  qsort(hook->dispatches, hook->dispatch_count, sizeof(hook->dispatches[0]),
        kiln_run_compare_dispatch_time);
  size_t shown = hook->dispatch_count < hook->slowest ? hook->dispatch_count : hook->slowest;
  fprintf(hook->out, "[statistics] %zu dispatches per call; slowest (mean GPU ms per call):\n",
          hook->dispatch_count);
  for (size_t i = 0; i < shown; ++i) {
    const kiln_run_dispatch_t* d = &hook->dispatches[i];
    fprintf(hook->out, "[statistics]   %9.3f  %s grid %dx%dx%d\n",
            d->total_ns / calls / 1e6, d->executable, d->grid[0], d->grid[1],
            d->grid[2]);
  }
  // The same time summed per executable: where a model's time goes by kernel.
  typedef struct {
    const char* name;
    double ns;
    size_t count;
  } kiln_run_kernel_sum_t;
  kiln_run_kernel_sum_t sums[64];
  size_t sum_count = 0;
  for (size_t i = 0; i < hook->dispatch_count; ++i) {
    const kiln_run_dispatch_t* d = &hook->dispatches[i];
    size_t s = 0;
    while (s < sum_count && strcmp(sums[s].name, d->executable) != 0) ++s;
    if (s == sum_count) {
      if (sum_count == 64) continue;
      sums[sum_count++] = (kiln_run_kernel_sum_t){d->executable, 0.0, 0};
    }
    sums[s].ns += d->total_ns;
    sums[s].count++;
  }
  for (size_t i = 1; i < sum_count; ++i) {  // insertion sort, most time first
    kiln_run_kernel_sum_t x = sums[i];
    size_t j = i;
    for (; j > 0 && sums[j - 1].ns < x.ns; --j) sums[j] = sums[j - 1];
    sums[j] = x;
  }
  fprintf(hook->out, "[statistics] by executable (mean GPU ms per call, dispatches):\n");
  for (size_t s = 0; s < sum_count; ++s) {
    fprintf(hook->out, "[statistics]   %9.3f  %4zu  %s\n", sums[s].ns / calls / 1e6,
            sums[s].count, sums[s].name);
  }
}

// Adds the timestamped dispatch times of a just-completed submission.
static void kiln_run_add_gpu_time(kiln_run_hook_state_t* hook,
                                  kiln_vm_ref_object_t* ref) {
  kiln_hal_command_buffer_t* command_buffer = NULL;
  kiln_status_t status =
      kiln_hal_module_unwrap_command_buffer(ref, "statistics", &command_buffer);
  uint32_t count =
      status ? 0 : kiln_hal_command_buffer_dispatch_count(command_buffer);
  size_t t = 0;
  while (t < hook->tracked_buffers && hook->tracked[t] != ref) ++t;
  bool tracked = t < hook->tracked_buffers && count == hook->tracked_count[t];
  for (uint32_t i = 0; i < (hook->span ? 0 : count) && !status; ++i) {
    double ns = 0;
    status = kiln_hal_command_buffer_dispatch_time_ns(command_buffer, i, &ns);
    hook->dispatch_ns += ns;
    if (tracked) hook->dispatches[hook->tracked_first[t] + i].total_ns += ns;
  }
  double total_ns = 0;
  if (!status) status = kiln_hal_command_buffer_total_time_ns(command_buffer, &total_ns);
  hook->gpu_ns += total_ns;
  kiln_status_free(status);
}

// Observes every call into a native module: traces it, and (statistics)
// collects GPU time after each blocking submission.
static void kiln_run_native_hook(void* user_data, const char* module_name,
                                 const char* export_name,
                                 const kiln_format_signature_t* signature,
                                 const kiln_vm_value_t* args,
                                 const kiln_vm_value_t* results,
                                 kiln_status_t status) {
  kiln_run_hook_state_t* hook = user_data;
  kiln_run_phase(hook, module_name, export_name);
  if (hook->statistics && !status && strcmp(module_name, "hal") == 0) {
    if (strcmp(export_name, "device.submit_and_wait") == 0) {
      hook->submissions++;
      if (hook->submitted_count < 8) {
        kiln_vm_ref_retain(args[1].ref);
        hook->submitted[hook->submitted_count++] = args[1].ref;
      }
    } else if (strcmp(export_name, "command_buffer.dispatch") == 0) {
      kiln_run_note_dispatch(hook, args);
    } else if (strcmp(export_name, "executable.lookup") == 0) {
      kiln_run_note_executable(hook, args, results);
    }
  }
  if (!hook->trace) return;
  FILE* out = hook->out;
  fprintf(out, "[trace] %s.%s(", module_name, export_name);
  for (size_t i = 0; i < signature->arg_count; ++i) {
    if (i) fputs(", ", out);
    kiln_run_trace_value(out, signature->types[i], args[i]);
  }
  fputs(")", out);
  if (status) {
    fprintf(out, " -> trap %s\n",
            kiln_status_code_name(kiln_status_code(status)));
    return;
  }
  for (size_t i = 0; i < signature->result_count; ++i) {
    fputs(i ? ", " : " -> ", out);
    kiln_run_trace_value(out, signature->types[signature->arg_count + i],
                         results[i]);
  }
  fputc('\n', out);
}

typedef struct kiln_run_state_t {
  const kiln_run_options_t* options;
  FILE* out;
  kiln_session_t* session;
  kiln_input_parser_t parser;
  kiln_input_value_t inputs[KILN_RUN_MAX_VALUES];
  kiln_vm_value_t args[KILN_RUN_MAX_VALUES];
  kiln_vm_value_t results[KILN_RUN_MAX_VALUES];
  const kiln_format_signature_t* signature;
  kiln_host_tensor_t result_tensors[KILN_RUN_MAX_VALUES];
  kiln_input_value_t expected[KILN_RUN_MAX_VALUES];
  kiln_run_hook_state_t hook;  // large: the state is heap-allocated
} kiln_run_state_t;

static void kiln_run_release_values(kiln_vm_value_t* values, const char* types,
                                    size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (types[i] == KILN_VALUE_TYPE_REF) kiln_vm_ref_release(values[i].ref);
    memset(&values[i], 0, sizeof(values[i]));
  }
}

// Prints results, writes --output targets, compares --expected_output.
static kiln_status_t kiln_run_report(kiln_run_state_t* run, int* exit_code) {
  const kiln_run_options_t* options = run->options;
  const char* result_types = run->signature->types + run->signature->arg_count;
  size_t result_count = run->signature->result_count;
  if (options->expected_output_count &&
      options->expected_output_count != result_count) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%zu --expected_output values for a function with "
                            "%zu results",
                            options->expected_output_count, result_count);
  }
  bool all_matched = true;
  for (size_t i = 0; i < result_count; ++i) {
    char type = result_types[i];
    bool is_view = type == KILN_VALUE_TYPE_REF && run->results[i].ref &&
                   run->results[i].ref->type == &kiln_hal_buffer_view_ref_type;
    if (type == KILN_VALUE_TYPE_REF && !is_view) {
      fprintf(run->out, "result[%zu]: %s\n", i,
              run->results[i].ref ? run->results[i].ref->type->name : "(null)");
      if (i < options->expected_output_count) {
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "result %zu is not a buffer view and cannot "
                                "be compared",
                                i);
      }
      continue;
    }
    if (type != KILN_VALUE_TYPE_REF) {
      fprintf(run->out, "result[%zu]: ", i);
      kiln_run_print_scalar(run->out, type, run->results[i]);
      continue;
    }
    KILN_RETURN_IF_ERROR(kiln_run_read_result(run->session, run->results[i].ref,
                                              i, &run->result_tensors[i]));
    const kiln_host_tensor_t* tensor = &run->result_tensors[i];
    fprintf(run->out, "result[%zu]: hal.buffer_view\n", i);
    if (i < options->output_count) {
      KILN_RETURN_IF_ERROR_ANNOTATE(
          kiln_run_write_output(options->outputs[i], tensor,
                                options->output_max_element_count, run->out),
          "writing result %zu", i);
    } else {
      kiln_tensor_print(run->out, tensor, options->output_max_element_count);
    }
    if (i < options->expected_output_count) {
      KILN_RETURN_IF_ERROR_ANNOTATE(
          kiln_input_parser_parse(&run->parser, options->expected_outputs[i],
                                  &run->expected[i]),
          "in --expected_output %zu", i);
      if (run->expected[i].kind != KILN_INPUT_TENSOR) {
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "--expected_output %zu must be a tensor", i);
      }
      kiln_status_t mismatch = kiln_tensor_compare(
          tensor, &run->expected[i].tensor,
          kiln_run_threshold(options, tensor->element_type));
      if (!kiln_status_is_ok(mismatch)) {
        char* text = kiln_status_to_string(mismatch);
        fprintf(run->out, "[FAILED] result[%zu]: %s\n", i, text);
        free(text);
        kiln_status_free(mismatch);
        all_matched = false;
      }
    }
  }
  if (options->expected_output_count) {
    if (all_matched) {
      fprintf(run->out,
              "[SUCCESS] all function outputs matched their expected values.\n");
    } else {
      *exit_code = 1;
    }
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_run_inner(kiln_run_state_t* run, int* exit_code) {
  const kiln_run_options_t* options = run->options;
  if (options->module_count == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "no --module given (try --help)");
  }
  if (options->span_timestamps && (options->no_timestamps || !options->print_statistics)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "--span_timestamps needs --print_statistics and no "
                            "--no_timestamps");
  }
  int64_t start_ns = kiln_time_now_ns();
  kiln_session_options_t session_options;
  kiln_session_options_init(&session_options);
  if (options->device) session_options.device_uri = options->device;
  session_options.enable_validation = options->validation;
  session_options.pipeline_cache_path = options->pipeline_cache;
  session_options.gpu_timestamps = options->print_statistics && !options->no_timestamps;
  session_options.gpu_timestamps_span = options->span_timestamps;
  session_options.fuel = options->fuel;
  if (options->deadline_ms > UINT32_MAX) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "--deadline_ms=%llu is more than %u",
                            (unsigned long long)options->deadline_ms,
                            UINT32_MAX);
  }
  session_options.deadline_ms = (uint32_t)options->deadline_ms;
  if (options->memory_budget_mb) {
    if (options->memory_budget_mb > (UINT64_MAX >> 20)) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                              "--memory_budget_mb=%llu is too large",
                              (unsigned long long)options->memory_budget_mb);
    }
    session_options.memory_budget_bytes = options->memory_budget_mb << 20;
  }
  // Inputs are host tensors first: none may exceed the budget either.
  uint64_t tensor_limit = session_options.memory_budget_bytes
                              ? session_options.memory_budget_bytes
                              : UINT64_MAX;
  kiln_host_tensor_set_limit(tensor_limit < SIZE_MAX ? (size_t)tensor_limit
                                                     : SIZE_MAX - 1);
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_session_create(&session_options, &run->session),
      "creating device '%s'", session_options.device_uri);
  int64_t device_ns = kiln_time_now_ns();
  for (size_t i = 0; i < options->module_count; ++i) {
    KILN_RETURN_IF_ERROR(
        kiln_session_load_module_file(run->session, options->modules[i]));
  }
  int64_t load_ns = kiln_time_now_ns();
  char name[256];
  KILN_RETURN_IF_ERROR(kiln_run_function_name(run->session, options->function,
                                              name, sizeof(name)));
  kiln_vm_function_t function;
  KILN_RETURN_IF_ERROR(kiln_session_lookup(run->session, name, &function));
  run->hook.out = run->out;
  run->hook.trace = options->trace_execution;
  run->hook.statistics = options->print_statistics;
  run->hook.span = options->span_timestamps;
  run->hook.slowest = options->slowest_dispatches;
  if (options->trace_execution || options->print_statistics) {
    kiln_vm_context_set_native_call_hook(kiln_session_context(run->session),
                                         kiln_run_native_hook, &run->hook);
  }
  run->signature = function.signature;
  size_t arg_count = run->signature->arg_count;
  if (options->input_count != arg_count) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "function '%s' takes %zu inputs (signature "
                            "'%.*s'), got %zu --input values",
                            name, arg_count,
                            KILN_SV_ARG(run->signature->text),
                            options->input_count);
  }
  if (run->signature->result_count > KILN_RUN_MAX_VALUES) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "too many results");
  }
  for (size_t i = 0; i < arg_count; ++i) {
    KILN_RETURN_IF_ERROR(kiln_input_parser_parse(
        &run->parser, options->inputs[i], &run->inputs[i]));
    KILN_RETURN_IF_ERROR(kiln_run_make_argument(
        run->session, run->signature->types[i], i, &run->inputs[i],
        &run->args[i]));
  }
  int calls = options->call_count > 0 ? options->call_count : 1;
  double* call_ns = calloc((size_t)calls, sizeof(double));
  double* gpu_ns = calloc((size_t)calls, sizeof(double));
  double* dispatch_ns = calloc((size_t)calls, sizeof(double));
  // Each call's submit stats (kiln_run_print_submit_split).
  kiln_hal_submit_stats_t* submit_stats = calloc((size_t)calls, sizeof(*submit_stats));
  if (!call_ns || !gpu_ns || !dispatch_ns || !submit_stats) {
    free(call_ns);
    free(gpu_ns);
    free(dispatch_ns);
    free(submit_stats);
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  }
  // Per-phase host times of the warm calls (statistics; skipped if out of
  // memory).
  if (options->print_statistics && calls > 1) {
    run->hook.phase_capacity = calls - 1;
    run->hook.phase_calls = calloc((size_t)KILN_RUN_MAX_PHASES * (size_t)(calls - 1),
                                   sizeof(double));
    if (!run->hook.phase_calls) run->hook.phase_capacity = 0;
  }
  kiln_status_t status = kiln_ok_status();
  const char* result_types = run->signature->types + arg_count;
  for (int c = 0; c < calls && kiln_status_is_ok(status); ++c) {
    // Keep the last call's results; drop earlier ones.
    kiln_run_release_values(run->results, result_types,
                            run->signature->result_count);
    run->hook.gpu_ns = 0;
    run->hook.dispatch_ns = 0;
    kiln_hal_device_t* device = kiln_session_device(run->session);
    kiln_hal_submit_stats_t before = kiln_hal_device_submit_stats(device);
    int64_t t0 = kiln_time_now_ns();
    run->hook.phase_mark_ns = run->hook.statistics && c > 0 ? t0 : 0;
    status = kiln_session_invoke(run->session, function, run->args, arg_count,
                                 run->results, run->signature->result_count);
    kiln_run_phase(&run->hook, "", "(after the last native call)");
    if (run->hook.phase_mark_ns) kiln_run_phases_end_call(&run->hook);
    call_ns[c] = (double)(kiln_time_now_ns() - t0);
    kiln_hal_submit_stats_t after = kiln_hal_device_submit_stats(device);
    submit_stats[c] = (kiln_hal_submit_stats_t){
        after.submissions - before.submissions, after.prepare_ns - before.prepare_ns,
        after.queue_ns - before.queue_ns, after.fence_wait_ns - before.fence_wait_ns};
    for (size_t i = 0; i < run->hook.submitted_count; ++i) {
      kiln_run_add_gpu_time(&run->hook, run->hook.submitted[i]);
      kiln_vm_ref_release(run->hook.submitted[i]);
    }
    run->hook.submitted_count = 0;
    gpu_ns[c] = run->hook.gpu_ns;
    dispatch_ns[c] = run->hook.dispatch_ns;
  }
  // Printed once the call succeeded, so a trap is reported as one line.
  if (kiln_status_is_ok(status)) {
    fprintf(run->out, "EXEC @%s\n", name);
    status = kiln_run_report(run, exit_code);
  }
  if (kiln_status_is_ok(status) && options->print_statistics) {
    double first = call_ns[0];
    // The warm call: median of calls 2..N (recorded once, one submission).
    double warm = 0;
    if (calls > 1) {
      qsort(call_ns + 1, (size_t)calls - 1, sizeof(double), kiln_compare_doubles);
      warm = call_ns[1 + (calls - 1) / 2];
    }
    qsort(call_ns, (size_t)calls, sizeof(double), kiln_compare_doubles);
    fprintf(run->out, "[statistics] device creation: %.3f ms\n",
            (device_ns - start_ns) / 1e6);
    fprintf(run->out, "[statistics] module load + verify: %.3f ms\n",
            (load_ns - device_ns) / 1e6);
    fprintf(run->out,
            "[statistics] first call (records, builds pipelines): %.3f ms\n",
            first / 1e6);
    if (calls > 1) {
      fprintf(run->out, "[statistics] warm call (median of calls 2..%d): %.3f ms\n", calls,
              warm / 1e6);
    }
    fprintf(run->out, "[statistics] calls: %d, median wall time: %.3f ms\n",
            calls, call_ns[calls / 2] / 1e6);
    qsort(gpu_ns, (size_t)calls, sizeof(double), kiln_compare_doubles);
    qsort(dispatch_ns, (size_t)calls, sizeof(double), kiln_compare_doubles);
    if (options->no_timestamps) {
      fprintf(run->out, "[statistics] GPU time: not measured (--no_timestamps)\n");
    } else if (options->span_timestamps) {
      fprintf(run->out,
              "[statistics] median GPU time of a call (span timestamps): %.3f ms (first "
              "command to last of each submission, no per-dispatch stamps)\n",
              gpu_ns[calls / 2] / 1e6);
      fprintf(run->out, "[statistics] %zu dispatches per call\n", run->hook.dispatch_count);
    } else {
      fprintf(run->out,
              "[statistics] median GPU time of a call (timestamps): %.3f ms (first "
              "command to last; its dispatches alone: %.3f ms)\n",
              gpu_ns[calls / 2] / 1e6, dispatch_ns[calls / 2] / 1e6);
      kiln_run_print_top_dispatches(&run->hook, calls);
    }
    kiln_run_print_phases(&run->hook, gpu_ns[calls / 2] / 1e6);
    kiln_run_print_submit_split(run->out, submit_stats, calls, gpu_ns[calls / 2]);
    // The GPU/host split of a partitioned model (docs/partitioning.md).
    kiln_cpu_ops_stats_t host = kiln_session_cpu_ops_stats(run->session);
    fprintf(run->out,
            "[statistics] split per call: %.1f GPU segments (submissions), %.1f host ops; "
            "host time %.3f ms, bytes moved %.1f KiB (device->host %.1f, host->device "
            "%.1f)\n",
            (double)run->hook.submissions / calls, (double)host.calls / calls,
            host.host_ns / 1e6 / calls,
            (host.bytes_read + host.bytes_written) / 1024.0 / calls,
            host.bytes_read / 1024.0 / calls, host.bytes_written / 1024.0 / calls);
    kiln_hal_memory_stats_t memory =
        kiln_hal_device_memory_stats(kiln_session_device(run->session));
    fprintf(run->out, "[statistics] peak device memory in buffers: %.3f MiB\n",
            memory.peak_bytes / (1024.0 * 1024.0));
    kiln_hal_pipeline_cache_stats_t cache;
    kiln_status_t cache_status = kiln_hal_device_pipeline_cache_stats(
        kiln_session_device(run->session), &cache);
    if (kiln_status_is_ok(cache_status)) {
      fprintf(run->out,
              "[statistics] pipelines created: %llu (cache file %s)\n",
              (unsigned long long)cache.pipelines_created,
              cache.loaded ? "used" : "not used");
    }
    kiln_status_free(cache_status);
  }
  if (kiln_status_is_ok(status) && *exit_code == 0 && options->sessions > 0) {
    kiln_run_sessions_t sessions = {
        run->session, &session_options, name,     run->signature,
        run->args,    run->results,     options->sessions, calls};
    status = kiln_run_shared_sessions(&sessions, run->out);
  }
  // With the validation layer on, any message is a failure (tests rely on
  // this to hold every run to zero messages).
  kiln_hal_device_t* device = kiln_session_device(run->session);
  uint64_t messages = kiln_hal_device_validation_message_count(device);
  if (kiln_status_is_ok(status) && messages > 0) {
    status = kiln_make_status(
        KILN_STATUS_INTERNAL,
        "the Vulkan validation layer reported %llu messages; the last: %s",
        (unsigned long long)messages,
        kiln_hal_device_last_validation_message(device));
  }
  if (kiln_status_is_ok(status) && options->pipeline_cache) {
    status = kiln_hal_device_pipeline_cache_save(
        kiln_session_device(run->session), options->pipeline_cache);
  }
  free(run->hook.phase_calls);
  run->hook.phase_calls = NULL;
  free(call_ns);
  free(gpu_ns);
  free(dispatch_ns);
  free(submit_stats);
  return status;
}

kiln_status_t kiln_run(const kiln_run_options_t* options, FILE* out,
                       int* out_exit_code) {
  *out_exit_code = 0;
  kiln_run_state_t* run = calloc(1, sizeof(*run));
  if (!run) return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "out of memory");
  run->options = options;
  run->out = out;
  kiln_input_parser_init(&run->parser, kiln_allocator_system());
  kiln_status_t status = kiln_run_inner(run, out_exit_code);
  if (run->signature) {
    kiln_run_release_values(run->args, run->signature->types,
                            run->signature->arg_count);
    kiln_run_release_values(run->results,
                            run->signature->types + run->signature->arg_count,
                            run->signature->result_count);
  }
  for (size_t i = 0; i < KILN_RUN_MAX_VALUES; ++i) {
    kiln_input_value_deinit(&run->inputs[i]);
    kiln_input_value_deinit(&run->expected[i]);
    kiln_host_tensor_deinit(&run->result_tensors[i]);
  }
  kiln_input_parser_deinit(&run->parser);
  kiln_session_destroy(run->session);
  free(run);
  return status;
}
