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

#define KILN_BENCH_REPEATS 9

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

// Median nanoseconds of one invocation of `name` with argument n.
static kiln_status_t kiln_bench_vm(kiln_vm_context_t* context, const char* name,
                                   int32_t n, double* out_ns) {
  kiln_vm_function_t function;
  KILN_RETURN_IF_ERROR(kiln_vm_context_find_function(context, name, &function));
  double samples[KILN_BENCH_REPEATS];
  for (int r = 0; r < KILN_BENCH_REPEATS; ++r) {
    kiln_vm_value_t arg = kiln_vm_value_i32(n), result;
    int64_t start = kiln_time_now_ns();
    KILN_RETURN_IF_ERROR(kiln_vm_context_invoke(context, function, &arg, 1, &result, 1));
    samples[r] = (double)(kiln_time_now_ns() - start);
    if (result.i32 != n) {
      return kiln_make_status(KILN_STATUS_INTERNAL, "%s returned %d, expected %d", name,
                              result.i32, n);
    }
  }
  *out_ns = kiln_median(samples, KILN_BENCH_REPEATS);
  return kiln_ok_status();
}

static kiln_status_t kiln_bench_run(kiln_vm_context_t* context, int32_t n) {
  double vm_loop, vm_calls, vm_natives;
  KILN_RETURN_IF_ERROR(kiln_bench_vm(context, "loop", n, &vm_loop));
  KILN_RETURN_IF_ERROR(kiln_bench_vm(context, "calls", n, &vm_calls));
  KILN_RETURN_IF_ERROR(kiln_bench_vm(context, "natives", n, &vm_natives));
  double samples[KILN_BENCH_REPEATS];
  for (int r = 0; r < KILN_BENCH_REPEATS; ++r) {
    int64_t start = kiln_time_now_ns();
    int32_t got = kiln_native_loop(n);
    samples[r] = (double)(kiln_time_now_ns() - start);
    if (got != n) return kiln_make_status(KILN_STATUS_INTERNAL, "native loop miscounted");
  }
  double c_loop = kiln_median(samples, KILN_BENCH_REPEATS);

  kiln_vm_function_t nothing;
  KILN_RETURN_IF_ERROR(kiln_vm_context_find_function(context, "nothing", &nothing));
  const int invokes = n / 4 > 0 ? n / 4 : 1;
  for (int r = 0; r < KILN_BENCH_REPEATS; ++r) {
    int64_t start = kiln_time_now_ns();
    for (int i = 0; i < invokes; ++i) {
      KILN_RETURN_IF_ERROR(kiln_vm_context_invoke(context, nothing, NULL, 0, NULL, 0));
    }
    samples[r] = (double)(kiln_time_now_ns() - start) / invokes;
  }
  double invoke = kiln_median(samples, KILN_BENCH_REPEATS);

  double ops = 3.0 * n;
  double vm_op = vm_loop / ops, c_op = c_loop / ops;
  double call = (vm_calls - vm_loop) / n, native = (vm_natives - vm_loop) / n;
  printf("%-44s %12s %12s %8s\n", "measurement (median of 9)", "kiln", "plain C", "ratio");
  printf("%-44s %12.3f %12.3f %7.2fx\n", "3-op loop (add, compare, branch), ns/op", vm_op,
         c_op, vm_op / c_op);
  printf("%-44s %12.2f %12s %8s\n", "bytecode -> bytecode call, ns/call", call, "-", "-");
  printf("%-44s %12.2f %12s %8s\n", "bytecode -> native call, ns/call", native, "-", "-");
  printf("%-44s %12.2f %12s %8s\n", "host -> VM invoke of empty function, ns", invoke, "-",
         "-");
  printf("(%d loop iterations per run; call figures are the loop with the call minus "
         "the loop without it)\n", n);
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
