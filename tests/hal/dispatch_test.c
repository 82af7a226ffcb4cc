// Dispatches: bindings, push constants, specialization constants, many
// workgroups, several entry points, two descriptor sets, dependent chains
// with barriers, per-dispatch GPU times. References are computed in C; the
// float results are exact in fp32 for these inputs (tolerance 0).
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_device.h"

static kiln_hal_binding_t bind(uint32_t set, uint32_t binding,
                               kiln_hal_buffer_t* buffer) {
  kiln_hal_binding_t b = {set, binding, buffer, 0, 0, KILN_HAL_WHOLE_BUFFER};
  return b;
}

KILN_TEST(DispatchTest, ScaleAddOverManyWorkgroups) {
  kiln_hal_device_t* device = kiln_test_device_create();
  const uint32_t count = 100003;  // not a multiple of the workgroup size
  const size_t bytes = count * sizeof(float);
  float* input = malloc(bytes);
  float* output = malloc(bytes);
  KILN_ASSERT_TRUE(input && output);
  for (uint32_t i = 0; i < count; ++i) input[i] = (float)(i % 1000) * 0.5f - 7;
  kiln_hal_buffer_t* in = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                           KILN_HAL_BUFFER_USAGE_DEFAULT, bytes);
  kiln_hal_buffer_t* out = kiln_test_buffer(
      device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT, bytes);
  KILN_ASSERT_OK(kiln_hal_device_write_buffer(device, in, 0, input, bytes));
  kiln_hal_executable_t* executable =
      kiln_test_scale_add_executable(device, 0.25f);

  kiln_hal_command_buffer_t* cb = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  kiln_test_scale_push_t push = {3.0f, count};
  kiln_hal_binding_t bindings[] = {bind(0, 1, out), bind(0, 0, in)};
  kiln_hal_dispatch_t dispatch = {executable, 0, {(count + 63) / 64, 1, 1},
                                  &push, sizeof(push), bindings, 2};
  KILN_ASSERT_OK(kiln_hal_command_buffer_dispatch(cb, &dispatch));
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, NULL));
  KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, out, 0, output, bytes));
  uint32_t mismatches = 0;
  for (uint32_t i = 0; i < count; ++i) {
    float expected = input[i] * 3.0f + 0.25f;
    if (output[i] != expected) ++mismatches;
  }
  KILN_EXPECT_EQ(mismatches, 0);
  kiln_hal_command_buffer_release(cb);
  kiln_hal_executable_release(executable);
  kiln_hal_buffer_release(in);
  kiln_hal_buffer_release(out);
  free(input);
  free(output);
  kiln_test_device_release(device);
}

KILN_TEST(DispatchTest, SeveralEntryPointsOfOneModule) {
  kiln_hal_device_t* device = kiln_test_device_create();
  enum { kCount = 1000 };
  uint32_t values[kCount], expected[kCount];
  for (uint32_t i = 0; i < kCount; ++i) {
    values[i] = i;
    expected[i] = (i + 1) * 2 + 1;  // add_one, double_it, add_one
  }
  kiln_hal_buffer_t* data = kiln_test_buffer(
      device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT,
      sizeof(values));
  KILN_ASSERT_OK(kiln_hal_device_write_buffer(device, data, 0, values,
                                              sizeof(values)));
  kiln_hal_executable_t* executable = kiln_test_two_entries_executable(device);
  KILN_EXPECT_EQ(kiln_hal_executable_entry_point_count(executable), 2);
  uint32_t add_one = 9, double_it = 9;
  KILN_ASSERT_OK(kiln_hal_executable_lookup_entry_point(executable, "add_one",
                                                        &add_one));
  KILN_ASSERT_OK(kiln_hal_executable_lookup_entry_point(executable, "double_it",
                                                        &double_it));
  KILN_EXPECT_STATUS(KILN_STATUS_NOT_FOUND,
                     kiln_hal_executable_lookup_entry_point(executable, "main",
                                                            &add_one));
  KILN_ASSERT_OK(kiln_hal_executable_lookup_entry_point(executable, "add_one",
                                                        &add_one));
  kiln_hal_command_buffer_t* cb = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  uint32_t count = kCount;
  kiln_hal_binding_t binding = bind(0, 0, data);
  uint32_t order[] = {add_one, double_it, add_one};
  for (int i = 0; i < 3; ++i) {
    kiln_hal_dispatch_t dispatch = {executable, order[i], {(kCount + 63) / 64, 1, 1},
                                    &count, 4, &binding, 1};
    KILN_ASSERT_OK(kiln_hal_command_buffer_dispatch(cb, &dispatch));
    KILN_ASSERT_OK(kiln_hal_command_buffer_barrier(cb, KILN_HAL_STAGE_DISPATCH,
                                                   KILN_HAL_STAGE_DISPATCH));
  }
  KILN_EXPECT_EQ(kiln_hal_command_buffer_dispatch_count(cb), 3);
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, NULL));
  KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, data, 0, values,
                                             sizeof(values)));
  KILN_EXPECT_BYTES_EQ(values, expected, sizeof(values));
  kiln_hal_command_buffer_release(cb);
  kiln_hal_executable_release(executable);
  kiln_hal_buffer_release(data);
  kiln_test_device_release(device);
}

KILN_TEST(DispatchTest, BindingsInTwoDescriptorSetsWithOffsets) {
  kiln_hal_device_t* device = kiln_test_device_create();
  uint64_t alignment =
      kiln_hal_device_info(device)->min_storage_buffer_offset_alignment;
  enum { kCount = 77 };
  uint64_t offset = alignment > 256 ? alignment : 256;
  kiln_hal_buffer_t* buffer = kiln_test_buffer(
      device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT,
      offset * 4 + kCount * 4);
  uint32_t input[kCount], output[kCount];
  for (uint32_t i = 0; i < kCount; ++i) input[i] = 1000 + 3 * i;
  KILN_ASSERT_OK(kiln_hal_device_write_buffer(device, buffer, offset, input,
                                              sizeof(input)));
  kiln_test_spirv_t spirv = kiln_test_spirv_load("two_sets");
  kiln_hal_binding_layout_t layout[] = {{0, 0, true}, {1, 3, false}};
  kiln_hal_entry_point_spec_t entry = {"main", {32, 1, 1}, 4, layout, 2, 0};
  kiln_hal_executable_variant_spec_t variant = {
      "unknown", 0, {0}, spirv.words, spirv.word_count, &entry, 1, NULL, 0};
  kiln_hal_executable_spec_t spec = {"two_sets", &variant, 1};
  kiln_hal_executable_t* executable = NULL;
  KILN_ASSERT_OK(kiln_hal_executable_create(device, &spec, &executable));
  kiln_test_spirv_free(&spirv);

  kiln_hal_command_buffer_t* cb = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  uint32_t count = kCount;
  kiln_hal_binding_t bindings[] = {
      {0, 0, buffer, 0, offset, kCount * 4},
      {1, 3, buffer, 0, offset * 3, kCount * 4},
  };
  kiln_hal_dispatch_t dispatch = {executable, 0, {3, 1, 1}, &count, 4, bindings, 2};
  KILN_ASSERT_OK(kiln_hal_command_buffer_dispatch(cb, &dispatch));
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, NULL));
  KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, buffer, offset * 3, output,
                                             sizeof(output)));
  for (uint32_t i = 0; i < kCount; ++i) KILN_EXPECT_EQ(output[i], input[i] + i);
  kiln_hal_command_buffer_release(cb);
  kiln_hal_executable_release(executable);
  kiln_hal_buffer_release(buffer);
  kiln_test_device_release(device);
}

// x -> x * 1.5 + 0.25 eight times, ping-ponging between two buffers with a
// barrier between dependent dispatches.
KILN_TEST(DispatchTest, DependentChainWithBarriers) {
  kiln_hal_device_t* device = kiln_test_device_create();
  enum { kCount = 4096, kSteps = 8 };
  float values[kCount], reference[kCount];
  for (int i = 0; i < kCount; ++i) reference[i] = values[i] = (float)(i % 64) / 8;
  kiln_hal_buffer_t* buffers[2];
  for (int b = 0; b < 2; ++b) {
    buffers[b] = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                  KILN_HAL_BUFFER_USAGE_DEFAULT, sizeof(values));
  }
  kiln_hal_executable_t* executable =
      kiln_test_scale_add_executable(device, 0.25f);
  kiln_hal_command_buffer_t* cb = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  KILN_ASSERT_OK(kiln_hal_command_buffer_update(cb, values, buffers[0], 0,
                                                sizeof(values)));
  KILN_ASSERT_OK(kiln_hal_command_buffer_barrier(cb, KILN_HAL_STAGE_TRANSFER,
                                                 KILN_HAL_STAGE_DISPATCH));
  kiln_test_scale_push_t push = {1.5f, kCount};
  for (int step = 0; step < kSteps; ++step) {
    kiln_hal_binding_t bindings[] = {bind(0, 0, buffers[step % 2]),
                                     bind(0, 1, buffers[(step + 1) % 2])};
    kiln_hal_dispatch_t dispatch = {executable, 0, {kCount / 64, 1, 1}, &push,
                                    sizeof(push), bindings, 2};
    KILN_ASSERT_OK(kiln_hal_command_buffer_dispatch(cb, &dispatch));
    KILN_ASSERT_OK(kiln_hal_command_buffer_barrier(cb, KILN_HAL_STAGE_DISPATCH,
                                                   KILN_HAL_STAGE_DISPATCH |
                                                       KILN_HAL_STAGE_TRANSFER));
    for (int i = 0; i < kCount; ++i) reference[i] = reference[i] * 1.5f + 0.25f;
  }
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, NULL));
  KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, buffers[kSteps % 2], 0,
                                             values, sizeof(values)));
  // fp32 FMA contraction on the device may differ in the last bit.
  for (int i = 0; i < kCount; ++i) {
    KILN_EXPECT_NEAR(values[i], reference[i], fabsf(reference[i]) * 1e-6 + 1e-6);
  }
  kiln_hal_command_buffer_release(cb);
  kiln_hal_executable_release(executable);
  for (int b = 0; b < 2; ++b) kiln_hal_buffer_release(buffers[b]);
  kiln_test_device_release(device);
}

KILN_TEST(DispatchTest, TimestampsGivePerDispatchTimes) {
  kiln_hal_device_t* device = kiln_test_device_create();
  if (!kiln_hal_device_info(device)->timestamps) {
    kiln_test_device_release(device);
    return;  // the device has no timestamps: nothing to measure
  }
  enum { kCount = 1 << 16 };
  kiln_hal_buffer_t* in = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                           KILN_HAL_BUFFER_USAGE_DEFAULT,
                                           kCount * 4);
  kiln_hal_buffer_t* out = kiln_test_buffer(
      device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT,
      kCount * 4);
  kiln_hal_executable_t* executable = kiln_test_scale_add_executable(device, 0);
  kiln_hal_command_buffer_t* cb = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(
      device, KILN_HAL_COMMAND_BUFFER_TIMESTAMPS, &cb));
  double ns = -1;
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  kiln_test_scale_push_t push = {2.0f, kCount};
  kiln_hal_binding_t bindings[] = {bind(0, 0, in), bind(0, 1, out)};
  kiln_hal_dispatch_t dispatch = {executable, 0, {kCount / 64, 1, 1}, &push,
                                  sizeof(push), bindings, 2};
  for (int i = 0; i < 3; ++i) {
    KILN_ASSERT_OK(kiln_hal_command_buffer_dispatch(cb, &dispatch));
  }
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION, "not been submitted",
                             kiln_hal_command_buffer_dispatch_time_ns(cb, 0, &ns));
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, NULL));
  double longest = 0;
  for (uint32_t i = 0; i < 3; ++i) {
    KILN_ASSERT_OK(kiln_hal_command_buffer_dispatch_time_ns(cb, i, &ns));
    KILN_EXPECT_GT(ns, 0);
    KILN_EXPECT_LT(ns, 10e9);
    if (ns > longest) longest = ns;
  }
  // The whole recording spans at least its longest dispatch.
  double total = 0;
  KILN_ASSERT_OK(kiln_hal_command_buffer_total_time_ns(cb, &total));
  KILN_EXPECT_GE(total, longest);
  KILN_EXPECT_LT(total, 10e9);
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_hal_command_buffer_dispatch_time_ns(cb, 3, &ns));
  kiln_hal_command_buffer_release(cb);
  // Span timestamps: the whole recording only, no per-dispatch times.
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(
      device, KILN_HAL_COMMAND_BUFFER_SPAN_TIMESTAMPS, &cb));
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  for (int i = 0; i < 3; ++i) {
    KILN_ASSERT_OK(kiln_hal_command_buffer_dispatch(cb, &dispatch));
  }
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, NULL));
  KILN_ASSERT_OK(kiln_hal_command_buffer_total_time_ns(cb, &total));
  KILN_EXPECT_GT(total, 0);
  KILN_EXPECT_LT(total, 10e9);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION, "without",
                             kiln_hal_command_buffer_dispatch_time_ns(cb, 0, &ns));
  kiln_hal_command_buffer_release(cb);
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_hal_command_buffer_create(device, 1u << 5, &cb));
  kiln_hal_executable_release(executable);
  kiln_hal_buffer_release(in);
  kiln_hal_buffer_release(out);
  kiln_test_device_release(device);
}
