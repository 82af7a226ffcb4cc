// Every trap returns a status naming the function and bytecode offset, the
// context stays usable afterwards, and unwound frames release their refs
// (LeakSanitizer checks that).
#include <stdlib.h>

#include "kiln/base/time.h"
#include "kiln_test.h"
#include "../../vm/internal.h"
#include "vm_test_util.h"

static const char kTrapSource[] =
    "import host.fail \"i_v\"\n"
    "import optional host.absent \"v_v\"\n"
    "func div32 \"ii_i\"\n  div.i32.s i2 i0 i1\n  return i2\nend\n"
    "func rem32 \"ii_i\"\n  rem.i32.u i2 i0 i1\n  return i2\nend\n"
    "func div64 \"II_I\"\n  div.i64.s I4 I0 I2\n  return I4\nend\n"
    "func null_list \"v_i\"\n  list.alloc r1 i32 i0\n  list.size i0 r0\n  return i0\nend\n"
    "func wrong_type \"v_i\"\n  const.i64 I0 4\n  buffer.alloc r0 I0\n  list.size i2 r0\n  return i2\nend\n"
    "func list_oob \"i_i\"\n  list.alloc r0 i32 i0\n  list.resize r0 i0\n  list.get.i32 i1 r0 i0\n  return i1\nend\n"
    "func list_type \"v_v\"\n  const.i32 i0 1\n  list.alloc r0 i64 i0\n  list.resize r0 i0\n"
    "  const.i32 i1 0\n  list.get.i32 i2 r0 i1\n  return\nend\n"
    "func recurse \"i_i\"\n  list.alloc r0 ref i0\n  addi.i32 i0 i0 1\n  call recurse i0 -> i1\n  return i1\nend\n"
    "func spin \"v_v\"\nloop:\n  br loop\nend\n"
    "func fails \"v_v\"\n  fail \"model input has the wrong shape\"\nend\n"
    "func host_fail \"i_v\"\n  call.import host.fail i0\n  return\nend\n"
    "func absent \"v_v\"\n  call.import host.absent\n  return\nend\n"
    "rodata ro align 16 raw hex \"00112233\"\n"
    "func ro_store \"v_v\"\n  buffer.rodata r0 ro\n  const.i64 I0 0\n  const.i32 i2 1\n"
    "  buffer.store.i8 r0 I0 i2\n  return\nend\n"
    "func buffer_oob \"I_i\"\n  buffer.rodata r0 ro\n  buffer.load.i32 i2 r0 I0\n  return i2\nend\n"
    "export div32\nexport rem32\nexport div64\nexport null_list\nexport wrong_type\n"
    "export list_oob\nexport list_type\nexport recurse\nexport spin\nexport fails\n"
    "export host_fail\nexport absent\nexport ro_store\nexport buffer_oob\n";

KILN_TEST(VmTraps, IntegerDivision) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_OK(kiln_vm_test_env_init(&env, kTrapSource));
  kiln_vm_value_t args[2] = {kiln_vm_value_i32(7), kiln_vm_value_i32(0)}, r;
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT,
      "trap in function 'div32' of module '' at bytecode offset 0: integer division by zero",
      kiln_vm_test_call(&env, "div32", args, 2, &r, 1));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "'rem32' of module '' at bytecode offset 0: integer division by zero",
                             kiln_vm_test_call(&env, "rem32", args, 2, &r, 1));
  args[0] = kiln_vm_value_i32(INT32_MIN);
  args[1] = kiln_vm_value_i32(-1);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "INT32_MIN / -1",
                             kiln_vm_test_call(&env, "div32", args, 2, &r, 1));
  kiln_vm_value_t wide[2] = {kiln_vm_value_i64(INT64_MIN), kiln_vm_value_i64(-1)};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "INT64_MIN / -1",
                             kiln_vm_test_call(&env, "div64", wide, 2, &r, 1));
  wide[1] = kiln_vm_value_i64(0);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "division by zero",
                             kiln_vm_test_call(&env, "div64", wide, 2, &r, 1));
  // The context still works.
  args[0] = kiln_vm_value_i32(-9);
  args[1] = kiln_vm_value_i32(2);
  KILN_ASSERT_OK(kiln_vm_test_call(&env, "div32", args, 2, &r, 1));
  KILN_EXPECT_EQ(r.i32, -4);
  KILN_EXPECT_EQ(env.context->depth, 0);
  kiln_vm_test_env_deinit(&env);
}

KILN_TEST(VmTraps, NullAndWrongRefs) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_OK(kiln_vm_test_env_init(&env, kTrapSource));
  kiln_vm_value_t r;
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_FAILED_PRECONDITION,
      "'null_list' of module '' at bytecode offset 6: expected a vm.list in r0, got null",
      kiln_vm_test_call(&env, "null_list", NULL, 0, &r, 1));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION,
                             "expected a vm.list in r0, got vm.buffer",
                             kiln_vm_test_call(&env, "wrong_type", NULL, 0, &r, 1));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION,
                             "has element type 1, the op needs 0",
                             kiln_vm_test_call(&env, "list_type", NULL, 0, NULL, 0));
  kiln_vm_test_env_deinit(&env);
}

KILN_TEST(VmTraps, ListIndexOutOfRange) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_OK(kiln_vm_test_env_init(&env, kTrapSource));
  kiln_vm_value_t arg = kiln_vm_value_i32(3), r;
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_OUT_OF_RANGE,
      "'list_oob' of module '' at bytecode offset 11: list index 3 out of range (size 3)",
      kiln_vm_test_call(&env, "list_oob", &arg, 1, &r, 1));
  kiln_vm_test_env_deinit(&env);
}

KILN_TEST(VmTraps, CallDepthLimit) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_OK(kiln_vm_test_env_init(&env, kTrapSource));
  kiln_vm_value_t arg = kiln_vm_value_i32(0), r;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_RESOURCE_EXHAUSTED,
                             "call stack exhausted calling 'recurse' (depth 256",
                             kiln_vm_test_call(&env, "recurse", &arg, 1, &r, 1));
  KILN_EXPECT_EQ(env.context->depth, 0);
  KILN_EXPECT_EQ(env.context->ref_top, 0);
  kiln_vm_test_env_deinit(&env);
}

KILN_TEST(VmTraps, FuelStopsRunawayLoops) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_OK(kiln_vm_test_env_init(&env, kTrapSource));
  kiln_vm_context_set_fuel(env.context, 1000);
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_RESOURCE_EXHAUSTED,
      "trap in function 'spin' of module '' at bytecode offset 0: fuel exhausted",
      kiln_vm_test_call(&env, "spin", NULL, 0, NULL, 0));
  KILN_EXPECT_EQ_U64(kiln_vm_context_fuel(env.context), 0);
  kiln_vm_test_env_deinit(&env);
}

KILN_TEST(VmTraps, DeadlineStopsRunawayLoops) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_OK(kiln_vm_test_env_init(&env, kTrapSource));
  int64_t start = kiln_time_now_ns();
  kiln_vm_context_set_deadline(env.context, start + 50 * 1000000);
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_DEADLINE_EXCEEDED,
      "trap in function 'spin' of module '' at bytecode offset 0: deadline "
      "exceeded",
      kiln_vm_test_call(&env, "spin", NULL, 0, NULL, 0));
  int64_t elapsed_ms = (kiln_time_now_ns() - start) / 1000000;
  KILN_EXPECT_GE(elapsed_ms, 50);
  KILN_EXPECT_LT(elapsed_ms, 5000);  // stopped soon after, not at fuel's end
  // Fuel and a deadline together: whichever comes first stops the loop, and
  // the fuel count stays exact across slices.
  kiln_vm_context_set_deadline(env.context, kiln_time_now_ns() + 60000000000ll);
  kiln_vm_context_set_fuel(env.context, 200000);
  KILN_EXPECT_EQ_U64(kiln_vm_context_fuel(env.context), 200000);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_RESOURCE_EXHAUSTED, "fuel exhausted",
                             kiln_vm_test_call(&env, "spin", NULL, 0, NULL, 0));
  KILN_EXPECT_EQ_U64(kiln_vm_context_fuel(env.context), 0);
  kiln_vm_context_set_deadline(env.context, 0);
  KILN_EXPECT_EQ(kiln_vm_context_deadline(env.context), 0);
  kiln_vm_test_env_deinit(&env);
}

KILN_TEST(VmTraps, FailImportErrorsAndReadOnly) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_OK(kiln_vm_test_env_init(&env, kTrapSource));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_ABORTED,
                             "'fails' of module '' at bytecode offset 0: fail: "
                             "model input has the wrong shape",
                             kiln_vm_test_call(&env, "fails", NULL, 0, NULL, 0));
  kiln_vm_value_t arg = kiln_vm_value_i32(5);
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_UNAVAILABLE,
      "host.fail called with 5; in import 'host.fail' called from function "
      "'host_fail' of module '' at bytecode offset 0",
      kiln_vm_test_call(&env, "host_fail", &arg, 1, NULL, 0));
  arg = kiln_vm_value_i32(0);
  KILN_EXPECT_OK(kiln_vm_test_call(&env, "host_fail", &arg, 1, NULL, 0));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION,
                             "optional import 'host.absent' is not available",
                             kiln_vm_test_call(&env, "absent", NULL, 0, NULL, 0));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_PERMISSION_DENIED,
                             "store into a read-only buffer",
                             kiln_vm_test_call(&env, "ro_store", NULL, 0, NULL, 0));
  kiln_vm_value_t offset = kiln_vm_value_i64(1), r;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE,
                             "buffer access [1, +4) outside a 4-byte buffer",
                             kiln_vm_test_call(&env, "buffer_oob", &offset, 1, &r, 1));
  offset = kiln_vm_value_i64(-1);
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_vm_test_call(&env, "buffer_oob", &offset, 1, &r, 1));
  offset = kiln_vm_value_i64(0);
  KILN_ASSERT_OK(kiln_vm_test_call(&env, "buffer_oob", &offset, 1, &r, 1));
  KILN_EXPECT_EQ((uint32_t)r.i32, 0x33221100u);
  kiln_vm_test_env_deinit(&env);
}

KILN_TEST(VmTraps, AllocationLimit) {
  kiln_vm_test_env_t env;
  KILN_ASSERT_OK(kiln_vm_test_env_init(&env,
      "func big \"I_v\"\n  buffer.alloc r0 I0\n  return\nend\n"
      "func many \"i_v\"\n  list.alloc r0 i64 i0\n  return\nend\nexport big\nexport many\n"));
  kiln_vm_context_options_t options = kiln_vm_context_options_default();
  options.max_allocation_bytes = 64;
  kiln_vm_module_t* modules[2] = {env.host, env.module};
  kiln_vm_context_t* context = NULL;
  KILN_ASSERT_OK(kiln_vm_context_create(env.instance, modules, 2, &options, &context));
  kiln_vm_function_t big, many;
  KILN_ASSERT_OK(kiln_vm_context_find_function(context, "big", &big));
  KILN_ASSERT_OK(kiln_vm_context_find_function(context, "many", &many));
  kiln_vm_value_t arg = kiln_vm_value_i64(64);
  KILN_EXPECT_OK(kiln_vm_context_invoke(context, big, &arg, 1, NULL, 0));
  arg = kiln_vm_value_i64(65);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_RESOURCE_EXHAUSTED,
                             "buffer.alloc of 65 bytes exceeds the allocation limit of 64",
                             kiln_vm_context_invoke(context, big, &arg, 1, NULL, 0));
  arg = kiln_vm_value_i32(9);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_RESOURCE_EXHAUSTED,
                             "list.alloc of 9 elements exceeds the allocation limit",
                             kiln_vm_context_invoke(context, many, &arg, 1, NULL, 0));
  kiln_vm_context_destroy(context);
  kiln_vm_test_env_deinit(&env);
}
