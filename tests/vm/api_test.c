// The embedding API from C: native modules called from bytecode, import
// resolution errors, per-context state, ref types, cross-module calls,
// loading from a file and two contexts running on two threads.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kiln/base/file.h"
#include "kiln_test.h"
#include "../../vm/internal.h"
#include "vm_test_util.h"

static kiln_status_t kiln_load_source(kiln_vm_instance_t* instance, const char* source,
                                      kiln_vm_module_t** out) {
  kiln_byte_buffer_t bytes;
  KILN_RETURN_IF_ERROR(kiln_vm_test_assemble(source, &bytes));
  kiln_status_t status = kiln_vm_module_load_from_memory(
      instance, kiln_byte_buffer_span(&bytes), "api.kasm", NULL, out);
  kiln_byte_buffer_deinit(&bytes);
  return status;
}

KILN_TEST(VmApi, ImportSignatureMismatchNamesBoth) {
  kiln_vm_instance_t* instance = NULL;
  KILN_ASSERT_OK(kiln_vm_instance_create(kiln_allocator_system(), &instance));
  kiln_vm_module_t* host = NULL;
  KILN_ASSERT_OK(kiln_vm_test_host_module(instance, &host));
  kiln_vm_module_t* module = NULL;
  KILN_ASSERT_OK(kiln_load_source(instance,
                                  "module app\nimport host.add \"i_i\"\n"
                                  "func f \"v_v\"\n  return\nend\n", &module));
  kiln_vm_module_t* modules[2] = {host, module};
  kiln_vm_context_t* context = NULL;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "module 'app' imports 'host.add' with signature 'i_i' but "
                             "module 'host' exports it with signature 'ii_i'",
                             kiln_vm_context_create(instance, modules, 2, NULL, &context));
  KILN_EXPECT_TRUE(context == NULL);
  kiln_vm_module_release(module);
  KILN_ASSERT_OK(kiln_load_source(instance,
                                  "module app\nimport host.nothing \"i_i\"\n"
                                  "func f \"v_v\"\n  return\nend\n", &module));
  modules[1] = module;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_NOT_FOUND,
                             "module 'app' imports 'host.nothing' (signature 'i_i'), which "
                             "no earlier module exports",
                             kiln_vm_context_create(instance, modules, 2, NULL, &context));
  // Imports resolve only against earlier modules.
  modules[0] = module;
  modules[1] = host;
  KILN_EXPECT_STATUS(KILN_STATUS_NOT_FOUND,
                     kiln_vm_context_create(instance, modules, 2, NULL, &context));
  kiln_vm_module_release(module);
  kiln_vm_module_release(host);
  kiln_vm_instance_destroy(instance);
}

KILN_TEST(VmApi, PerContextNativeStateAndDirectNativeInvoke) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_OK(kiln_vm_test_env_init(&env,
      "import host.counter \"v_i\"\nfunc tick \"v_i\"\n  call.import host.counter -> i0\n"
      "  return i0\nend\nexport tick\n"));
  kiln_vm_module_t* modules[2] = {env.host, env.module};
  kiln_vm_context_t* second = NULL;
  KILN_ASSERT_OK(kiln_vm_context_create(env.instance, modules, 2, NULL, &second));
  kiln_vm_function_t tick, tick2, add;
  KILN_ASSERT_OK(kiln_vm_context_find_function(env.context, "tick", &tick));
  KILN_ASSERT_OK(kiln_vm_context_find_function(second, "tick", &tick2));
  kiln_vm_value_t r;
  for (int i = 1; i <= 3; ++i) {
    KILN_ASSERT_OK(kiln_vm_context_invoke(env.context, tick, NULL, 0, &r, 1));
    KILN_EXPECT_EQ(r.i32, i);
  }
  KILN_ASSERT_OK(kiln_vm_context_invoke(second, tick2, NULL, 0, &r, 1));
  KILN_EXPECT_EQ(r.i32, 1);  // its own state
  KILN_ASSERT_OK(kiln_vm_context_find_function(second, "host.add", &add));
  kiln_vm_value_t args[2] = {kiln_vm_value_i32(40), kiln_vm_value_i32(2)};
  KILN_ASSERT_OK(kiln_vm_context_invoke(second, add, args, 2, &r, 1));
  KILN_EXPECT_EQ(r.i32, 42);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "signature 'ii_i' takes 2 arguments and 1 results, got 1 and 1",
                             kiln_vm_context_invoke(second, add, args, 1, &r, 1));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_NOT_FOUND, "function 'nope' is not exported",
                             kiln_vm_context_find_function(second, "nope", &add));
  kiln_vm_context_destroy(second);
  kiln_vm_test_env_deinit(&env);
}

typedef struct kiln_test_handle_t {
  kiln_vm_ref_object_t header;
  int* destroyed;
} kiln_test_handle_t;

static void kiln_test_handle_destroy(kiln_vm_ref_object_t* object) {
  kiln_test_handle_t* handle = (kiln_test_handle_t*)object;
  ++*handle->destroyed;
  free(handle);
}
static const kiln_vm_ref_type_t kiln_test_handle_type = {"test.handle",
                                                         kiln_test_handle_destroy};

KILN_TEST(VmApi, HostRefTypesFlowThroughBytecode) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_OK(kiln_vm_test_env_init(&env,
      "import host.echo_ref \"r_r\"\nglobals 0 1\n"
      "func keep \"r_r\"\n  call.import host.echo_ref r0 -> r1\n  global.store.ref 0 r1\n"
      "  return r1\nend\nexport keep\n"));
  KILN_ASSERT_OK(kiln_vm_instance_register_ref_type(env.instance, &kiln_test_handle_type));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_ALREADY_EXISTS, "'test.handle' is already registered",
                             kiln_vm_instance_register_ref_type(env.instance,
                                                                &kiln_test_handle_type));
  KILN_EXPECT_TRUE(kiln_vm_instance_lookup_ref_type(
                       env.instance, kiln_make_cstring_view("test.handle")) ==
                   &kiln_test_handle_type);
  KILN_EXPECT_TRUE(kiln_vm_instance_lookup_ref_type(env.instance,
                                                    kiln_make_cstring_view("vm.list")) ==
                   &kiln_vm_list_type);
  int destroyed = 0;
  kiln_test_handle_t* handle = (kiln_test_handle_t*)calloc(1, sizeof(*handle));
  kiln_vm_ref_object_init(&handle->header, &kiln_test_handle_type);
  handle->destroyed = &destroyed;
  kiln_vm_value_t arg = kiln_vm_value_ref(&handle->header), r;
  KILN_ASSERT_OK(kiln_vm_test_call(&env, "keep", &arg, 1, &r, 1));
  KILN_EXPECT_TRUE(r.ref == &handle->header);
  KILN_EXPECT_OK(kiln_vm_ref_check(r.ref, &kiln_test_handle_type, "result"));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "result: expected a vm.list ref, got test.handle",
                             kiln_vm_ref_check(r.ref, &kiln_vm_list_type, "result"));
  KILN_EXPECT_EQ(handle->header.ref_count, 3);  // ours, the result, the global
  kiln_vm_ref_release(r.ref);
  kiln_vm_ref_release(&handle->header);
  KILN_EXPECT_EQ(destroyed, 0);
  kiln_vm_test_env_deinit(&env);  // the global's reference goes with the context
  KILN_EXPECT_EQ(destroyed, 1);
}

KILN_TEST(VmApi, BytecodeImportsFromAnotherModuleAndFileLoad) {
  kiln_vm_instance_t* instance = NULL;
  KILN_ASSERT_OK(kiln_vm_instance_create(kiln_allocator_system(), &instance));
  kiln_byte_buffer_t bytes;
  KILN_ASSERT_OK(kiln_vm_test_assemble(
      "module lib\nglobals 1 0\nfunc triple \"I_I\"\n  add.i64 I2 I0 I0\n  add.i64 I2 I2 I0\n"
      "  global.load.i32 i4 0\n  addi.i32 i4 i4 1\n  global.store.i32 0 i4\n  return I2\nend\n"
      "export triple\n", &bytes));
  char path[] = "/tmp/kiln_vm_api_XXXXXX";
  int fd = mkstemp(path);
  KILN_ASSERT_GE(fd, 0);
  close(fd);
  KILN_ASSERT_OK(kiln_file_write_all(path, kiln_byte_buffer_span(&bytes)));
  kiln_byte_buffer_deinit(&bytes);
  kiln_vm_module_t* lib = NULL;
  KILN_ASSERT_OK(kiln_vm_module_load_from_file(instance, path, NULL, &lib));
  remove(path);
  kiln_vm_module_t* app = NULL;
  KILN_ASSERT_OK(kiln_load_source(instance,
      "module app\nimport lib.triple \"I_I\"\nfunc nine \"I_I\"\n"
      "  call.import lib.triple I0 -> I2\n  call.import lib.triple I2 -> I4\n  return I4\nend\n"
      "export nine\n", &app));
  kiln_vm_module_t* modules[2] = {lib, app};
  kiln_vm_context_t* context = NULL;
  KILN_ASSERT_OK(kiln_vm_context_create(instance, modules, 2, NULL, &context));
  kiln_vm_function_t nine;
  KILN_ASSERT_OK(kiln_vm_context_find_function(context, "app.nine", &nine));
  kiln_vm_value_t arg = kiln_vm_value_i64(-7), r;
  KILN_ASSERT_OK(kiln_vm_context_invoke(context, nine, &arg, 1, &r, 1));
  KILN_EXPECT_EQ(r.i64, -63);
  KILN_EXPECT_EQ(context->states[0].global_words[0], 2);  // lib's own globals
  kiln_vm_context_destroy(context);
  kiln_vm_module_release(app);
  kiln_vm_module_release(lib);
  kiln_vm_instance_destroy(instance);
}

KILN_TEST(VmApi, NativeModuleDescriptorsAreChecked) {
  kiln_vm_instance_t* instance = NULL;
  KILN_ASSERT_OK(kiln_vm_instance_create(kiln_allocator_system(), &instance));
  static const kiln_vm_native_export_t kBad[] = {{"f", "q_v", NULL}};
  kiln_vm_native_module_desc_t desc;
  memset(&desc, 0, sizeof(desc));
  desc.name = "bad";
  desc.exports = kBad;
  desc.export_count = 1;
  kiln_vm_module_t* module = NULL;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "export 0 needs a name, a signature",
                             kiln_vm_module_create_native(instance, &desc, &module));
  KILN_EXPECT_TRUE(module == NULL);
  kiln_vm_instance_destroy(instance);
}

typedef struct kiln_thread_job_t {
  kiln_vm_context_t* context;
  int32_t n;
  int64_t result;
  int failures;
} kiln_thread_job_t;

static void* kiln_thread_main(void* arg) {
  kiln_thread_job_t* job = (kiln_thread_job_t*)arg;
  kiln_vm_function_t sum;
  kiln_status_t status = kiln_vm_context_find_function(job->context, "sum", &sum);
  for (int round = 0; !status && round < 200; ++round) {
    kiln_vm_value_t in = kiln_vm_value_i32(job->n), out;
    status = kiln_vm_context_invoke(job->context, sum, &in, 1, &out, 1);
    if (!status && out.i64 != (int64_t)job->n * (job->n - 1) / 2) ++job->failures;
    job->result = out.i64;
  }
  if (status) {
    ++job->failures;
    kiln_status_free(status);
  }
  return NULL;
}

KILN_TEST(VmApi, TwoContextsRunOnTwoThreads) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_OK(kiln_vm_test_env_init(&env,
      "import host.make_list \"i_r\"\nimport host.list_sum \"r_I\"\n"
      "func sum \"i_I\"\n  call.import host.make_list i0 -> r0\n"
      "  call.import host.list_sum r0 -> I2\n  return I2\nend\nexport sum\n"));
  kiln_vm_module_t* modules[2] = {env.host, env.module};
  kiln_vm_context_t* second = NULL;
  KILN_ASSERT_OK(kiln_vm_context_create(env.instance, modules, 2, NULL, &second));
  kiln_thread_job_t jobs[2] = {{env.context, 1000, 0, 0}, {second, 777, 0, 0}};
  pthread_t threads[2];
  for (int i = 0; i < 2; ++i) pthread_create(&threads[i], NULL, kiln_thread_main, &jobs[i]);
  for (int i = 0; i < 2; ++i) pthread_join(threads[i], NULL);
  KILN_EXPECT_EQ(jobs[0].failures, 0);
  KILN_EXPECT_EQ(jobs[1].failures, 0);
  KILN_EXPECT_EQ(jobs[0].result, 499500);
  KILN_EXPECT_EQ(jobs[1].result, 301476);
  kiln_vm_context_destroy(second);
  kiln_vm_test_env_deinit(&env);
}

// Every allocation the load/context/run path makes fails in turn; each
// failure must surface as a status and leave nothing allocated.
KILN_TEST(VmApi, AllocationFailuresAreCleanAtEveryPoint) {
  kiln_file_contents_t source;
  KILN_ASSERT_OK(kiln_file_read_all(KILN_VM_TESTDATA "/features.kasm",
                                    kiln_allocator_system(), &source));
  kiln_byte_buffer_t bytes;
  KILN_ASSERT_OK(kiln_vm_test_assemble((const char*)source.data, &bytes));
  kiln_file_contents_deinit(&source);
  bool succeeded = false;
  size_t budget = 0;
  for (budget = 0; budget < 500 && !succeeded; ++budget) {
    kiln_counting_allocator_t counting;
    kiln_counting_allocator_init(&counting, kiln_allocator_system(), budget);
    kiln_allocator_t allocator = kiln_counting_allocator(&counting);
    kiln_vm_instance_t* instance = NULL;
    kiln_vm_module_t* host = NULL;
    kiln_vm_module_t* module = NULL;
    kiln_vm_context_t* context = NULL;
    kiln_status_t status = kiln_vm_instance_create(allocator, &instance);
    if (!status) status = kiln_vm_test_host_module(instance, &host);
    if (!status) {
      status = kiln_vm_module_load_from_memory(instance, kiln_byte_buffer_span(&bytes),
                                               "features", NULL, &module);
    }
    if (!status) {
      kiln_vm_module_t* modules[2] = {host, module};
      status = kiln_vm_context_create(instance, modules, 2, NULL, &context);
    }
    if (!status) {
      kiln_vm_function_t main_fn;
      status = kiln_vm_context_find_function(context, "main", &main_fn);
      kiln_vm_value_t arg = kiln_vm_value_i32(3), r[4];
      if (!status) status = kiln_vm_context_invoke(context, main_fn, &arg, 1, r, 4);
      if (!status) {
        KILN_EXPECT_EQ(r[0].i32, 6);
        succeeded = true;
      }
    }
    kiln_status_free(status);
    kiln_vm_context_destroy(context);
    kiln_vm_module_release(module);
    kiln_vm_module_release(host);
    if (instance) kiln_vm_instance_destroy(instance);
    if (counting.live_blocks != 0) {
      KILN_ADD_FAILURE("budget %zu: %zu blocks leaked", budget, counting.live_blocks);
    }
  }
  KILN_EXPECT_TRUE(succeeded);
  KILN_EXPECT_GT(budget, 20);  // many failure points were exercised
  kiln_byte_buffer_deinit(&bytes);
}

// A native function may call back into the same context (modules/hal will
// not need to, but callbacks must not corrupt the running frames).
static kiln_status_t kiln_reenter(kiln_vm_context_t* context, void* state,
                                  const kiln_vm_value_t* args, kiln_vm_value_t* results) {
  kiln_vm_function_t inner;
  KILN_RETURN_IF_ERROR(kiln_vm_context_find_function(context, "app.square", &inner));
  return kiln_vm_context_invoke(context, inner, args, 1, results, 1);
}
static const kiln_vm_native_export_t kReenterExports[] = {{"reenter", "i_i", kiln_reenter}};

KILN_TEST(VmApi, NativeMayReenterTheContext) {
  kiln_vm_instance_t* instance = NULL;
  KILN_ASSERT_OK(kiln_vm_instance_create(kiln_allocator_system(), &instance));
  kiln_vm_native_module_desc_t desc;
  memset(&desc, 0, sizeof(desc));
  desc.name = "cb";
  desc.exports = kReenterExports;
  desc.export_count = 1;
  kiln_vm_module_t* native = NULL;
  KILN_ASSERT_OK(kiln_vm_module_create_native(instance, &desc, &native));
  kiln_vm_module_t* app = NULL;
  KILN_ASSERT_OK(kiln_load_source(instance,
      "module app\nimport cb.reenter \"i_i\"\n"
      "func square \"i_i\"\n  mul.i32 i1 i0 i0\n  return i1\nend\n"
      "func outer \"i_i\"\n  list.alloc r0 i32 i0\n  addi.i32 i1 i0 1\n"
      "  call.import cb.reenter i1 -> i2\n  list.size i3 r0\n  add.i32 i2 i2 i3\n"
      "  return i2\nend\nexport square\nexport outer\n", &app));
  kiln_vm_module_t* modules[2] = {native, app};
  kiln_vm_context_t* context = NULL;
  KILN_ASSERT_OK(kiln_vm_context_create(instance, modules, 2, NULL, &context));
  kiln_vm_function_t outer;
  KILN_ASSERT_OK(kiln_vm_context_find_function(context, "outer", &outer));
  kiln_vm_context_set_fuel(context, 100);
  kiln_vm_value_t arg = kiln_vm_value_i32(4), r;
  KILN_ASSERT_OK(kiln_vm_context_invoke(context, outer, &arg, 1, &r, 1));
  KILN_EXPECT_EQ(r.i32, 25 + 0);  // (4+1)^2 + size of an empty list
  KILN_EXPECT_EQ_U64(kiln_vm_context_fuel(context), 99);  // one import call
  KILN_EXPECT_EQ(context->depth, 0);
  kiln_vm_context_destroy(context);
  kiln_vm_module_release(app);
  kiln_vm_module_release(native);
  kiln_vm_instance_destroy(instance);
}

KILN_TEST(VmApi, ForgedFunctionHandlesAreRejected) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_OK(kiln_vm_test_env_init(&env, "func f \"i_i\"\n  return i0\nend\nexport f\n"));
  kiln_vm_function_t function;
  KILN_ASSERT_OK(kiln_vm_context_find_function(env.context, "f", &function));
  kiln_vm_value_t arg = kiln_vm_value_i32(1), r[3];
  function.ordinal = 7;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "function ordinal 7 out of range",
                             kiln_vm_context_invoke(env.context, function, &arg, 1, r, 1));
  function.ordinal = 0;
  function.module_index = 9;
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_vm_context_invoke(env.context, function, &arg, 1, r, 1));
  // A handle whose signature pointer lies is checked against the module's.
  static const kiln_format_signature_t kLie = {{"i_iii", 5}, 1, 3, {'i', 'i', 'i', 'i'}};
  function.module_index = 1;
  function.signature = &kLie;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "signature 'i_i' takes 1 arguments and 1 results, got 1 and 3",
                             kiln_vm_context_invoke(env.context, function, &arg, 1, r, 3));
  kiln_vm_test_env_deinit(&env);
}
