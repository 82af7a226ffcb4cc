// kiln-benchmark-module: VM dispatch and call costs, each beside a plain C
// reference measured in the same run. Prints medians over repetitions.
//
//   loop      ns per op of a 3-op bytecode loop (add, compare, branch) and
//             of the same loop in C (an empty asm keeps the compiler from
//             folding it; one add + compare + branch per iteration)
//   call      ns per bytecode->bytecode call (loop with call minus loop)
//   native    ns per bytecode->native call (same difference)
//   invoke    ns per host->VM invocation of an empty function
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/time.h"
#include "kiln/compiler/assembler.h"
#include "kiln/vm/vm.h"

static const char kSource[] =
    "module bench\n"
    "import host.nop \"i_i\"\n"
    "func loop \"i_i\"\n  const.i32 i1 0\n  const.i32 i2 1\ntop:\n"
    "  add.i32 i1 i1 i2\n  lt.i32.s i3 i1 i0\n  cond_br i3 top done\ndone:\n  return i1\nend\n"
    "func empty \"i_i\"\n  return i0\nend\n"
    "func calls \"i_i\"\n  const.i32 i1 0\n  const.i32 i2 1\ntop:\n"
    "  call empty i1 -> i4\n  add.i32 i1 i1 i2\n  lt.i32.s i3 i1 i0\n  cond_br i3 top done\n"
    "done:\n  return i1\nend\n"
    "func natives \"i_i\"\n  const.i32 i1 0\n  const.i32 i2 1\ntop:\n"
    "  call.import host.nop i1 -> i4\n  add.i32 i1 i1 i2\n  lt.i32.s i3 i1 i0\n"
    "  cond_br i3 top done\ndone:\n  return i1\nend\n"
    "func nothing \"v_v\"\n  return\nend\n"
    "export loop\nexport calls\nexport natives\nexport nothing\n";

static kiln_status_t kiln_bench_nop(kiln_vm_context_t* context, void* state,
                                    const kiln_vm_value_t* args,
                                    kiln_vm_value_t* results) {
  results[0] = args[0];
  return kiln_ok_status();
}

static const kiln_vm_native_export_t kHostExports[] = {{"nop", "i_i", kiln_bench_nop}};

static int kiln_compare_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double kiln_median(double* samples, int count) {
  qsort(samples, (size_t)count, sizeof(double), kiln_compare_double);
  return samples[count / 2];
}

static __attribute__((noinline)) int32_t kiln_native_loop(int32_t n) {
  int32_t i = 0;
  while (i < n) {
    i += 1;
    __asm__ volatile("" : "+r"(i));
  }
  return i;
}

#define KILN_BENCH_REPEATS 15

// Nanoseconds of one invocation of `function` with argument n.
static kiln_status_t kiln_bench_once(kiln_vm_context_t* context,
                                     kiln_vm_function_t function, int32_t n,
                                     double* out_ns) {
  kiln_vm_value_t arg = kiln_vm_value_i32(n), result;
  int64_t start = kiln_time_now_ns();
  KILN_RETURN_IF_ERROR(kiln_vm_context_invoke(context, function, &arg, 1, &result, 1));
  *out_ns = (double)(kiln_time_now_ns() - start);
  if (result.i32 != n) {
    return kiln_make_status(KILN_STATUS_INTERNAL, "benchmark returned %d, expected %d",
                            result.i32, n);
  }
  return kiln_ok_status();
}

// Each repetition runs every variant back to back, so the call figures are
// differences taken under the same machine load; medians over repetitions.
static kiln_status_t kiln_bench_run(kiln_vm_context_t* context, int32_t n) {
  kiln_vm_function_t loop, calls, natives, nothing;
  KILN_RETURN_IF_ERROR(kiln_vm_context_find_function(context, "loop", &loop));
  KILN_RETURN_IF_ERROR(kiln_vm_context_find_function(context, "calls", &calls));
  KILN_RETURN_IF_ERROR(kiln_vm_context_find_function(context, "natives", &natives));
  KILN_RETURN_IF_ERROR(kiln_vm_context_find_function(context, "nothing", &nothing));
  double vm_op[KILN_BENCH_REPEATS], c_op[KILN_BENCH_REPEATS], ratio[KILN_BENCH_REPEATS];
  double call[KILN_BENCH_REPEATS], native[KILN_BENCH_REPEATS], invoke[KILN_BENCH_REPEATS];
  const int invokes = n / 4 > 0 ? n / 4 : 1;
  for (int r = 0; r < KILN_BENCH_REPEATS; ++r) {
    double loop_ns, calls_ns, natives_ns;
    KILN_RETURN_IF_ERROR(kiln_bench_once(context, loop, n, &loop_ns));
    int64_t start = kiln_time_now_ns();
    int32_t got = kiln_native_loop(n);
    double c_ns = (double)(kiln_time_now_ns() - start);
    if (got != n) return kiln_make_status(KILN_STATUS_INTERNAL, "native loop miscounted");
    KILN_RETURN_IF_ERROR(kiln_bench_once(context, calls, n, &calls_ns));
    KILN_RETURN_IF_ERROR(kiln_bench_once(context, natives, n, &natives_ns));
    start = kiln_time_now_ns();
    for (int i = 0; i < invokes; ++i) {
      KILN_RETURN_IF_ERROR(kiln_vm_context_invoke(context, nothing, NULL, 0, NULL, 0));
    }
    invoke[r] = (double)(kiln_time_now_ns() - start) / invokes;
    vm_op[r] = loop_ns / (3.0 * n);
    c_op[r] = c_ns / (3.0 * n);
    ratio[r] = vm_op[r] / c_op[r];
    call[r] = (calls_ns - loop_ns) / n;
    native[r] = (natives_ns - loop_ns) / n;
  }
  printf("%-46s %10s %10s %8s\n", "measurement (median of 15)", "kiln", "plain C", "ratio");
  printf("%-46s %10.3f %10.3f %7.2fx\n", "3-op loop (add, compare, branch), ns/op",
         kiln_median(vm_op, KILN_BENCH_REPEATS), kiln_median(c_op, KILN_BENCH_REPEATS),
         kiln_median(ratio, KILN_BENCH_REPEATS));
  printf("%-46s %10.2f %10s %8s\n", "bytecode -> bytecode call, ns/call",
         kiln_median(call, KILN_BENCH_REPEATS), "-", "-");
  printf("%-46s %10.2f %10s %8s\n", "bytecode -> native call, ns/call",
         kiln_median(native, KILN_BENCH_REPEATS), "-", "-");
  printf("%-46s %10.2f %10s %8s\n", "host -> VM invoke of empty function, ns",
         kiln_median(invoke, KILN_BENCH_REPEATS), "-", "-");
  printf("(%d loop iterations per run; a call figure is the loop with the call minus "
         "the loop without it, in the same repetition)\n", n);
  return kiln_ok_status();
}

int main(int argc, char** argv) {
  int32_t n = argc > 1 ? atoi(argv[1]) : 2000000;
  if (n <= 0) {
    fprintf(stderr, "usage: kiln-benchmark-module [iterations]\n");
    return 2;
  }
  kiln_allocator_t allocator = kiln_allocator_system();
  kiln_vm_instance_t* instance = NULL;
  kiln_vm_module_t* host = NULL;
  kiln_vm_module_t* module = NULL;
  kiln_vm_context_t* context = NULL;
  kiln_byte_buffer_t bytes;
  kiln_byte_buffer_init(&bytes, allocator);
  kiln_vm_native_module_desc_t desc;
  memset(&desc, 0, sizeof(desc));
  desc.name = "host";
  desc.exports = kHostExports;
  desc.export_count = 1;
  kiln_status_t status = kiln_assembler_assemble(kiln_make_cstring_view(kSource),
                                                 "bench.kasm", allocator, &bytes);
  if (!status) status = kiln_vm_instance_create(allocator, &instance);
  if (!status) status = kiln_vm_module_create_native(instance, &desc, &host);
  if (!status) {
    status = kiln_vm_module_load_from_memory(instance, kiln_byte_buffer_span(&bytes),
                                             "bench.kasm", NULL, &module);
  }
  if (!status) {
    kiln_vm_module_t* modules[2] = {host, module};
    status = kiln_vm_context_create(instance, modules, 2, NULL, &context);
  }
  if (!status) status = kiln_bench_run(context, n);
  kiln_vm_context_destroy(context);
  kiln_vm_module_release(module);
  kiln_vm_module_release(host);
  if (instance) kiln_vm_instance_destroy(instance);
  kiln_byte_buffer_deinit(&bytes);
  if (status) {
    char* text = kiln_status_to_string(status);
    fprintf(stderr, "kiln-benchmark-module: %s\n", text);
    free(text);
    kiln_status_free(status);
    return 1;
  }
  return 0;
}
