// Reusable command buffers: record once with slot bindings, submit many
// times with different binding tables (new buffers, new lengths, buffers
// bound directly); each submission computes on the buffers its table names
// (reference: the same arithmetic in C).
#include <string.h>

#include "../../drivers/vulkan/vulkan_internal.h"
#include "test_device.h"

enum { kCount = 256 };

static void fill_input(kiln_hal_device_t* device, kiln_hal_buffer_t* buffer,
                       float base) {
  float values[kCount];
  for (int i = 0; i < kCount; ++i) values[i] = base + (float)i;
  KILN_ASSERT_OK(kiln_hal_device_write_buffer(device, buffer, 0, values,
                                              sizeof(values)));
}

static void expect_output(kiln_hal_device_t* device, kiln_hal_buffer_t* buffer,
                          float base) {
  float values[kCount];
  KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, buffer, 0, values,
                                             sizeof(values)));
  int mismatches = 0;
  for (int i = 0; i < kCount; ++i) {
    if (values[i] != (base + (float)i) * 2.0f + 1.0f) ++mismatches;
  }
  KILN_EXPECT_EQ(mismatches, 0);
}

// Records y = 2 x + 1 (scale_add) over kCount floats with both buffers
// as binding-table slots: slot 0 the input, slot 1 the output.
static void record_slot_scale(kiln_hal_device_t* device, kiln_hal_executable_t* executable,
                              kiln_hal_command_buffer_t** out_cb) {
  *out_cb = NULL;
  kiln_hal_command_buffer_t* cb = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  kiln_test_scale_push_t push = {2.0f, kCount};
  kiln_hal_binding_t bindings[] = {
      {0, 0, NULL, 0, 0, KILN_HAL_WHOLE_BUFFER},
      {0, 1, NULL, 1, 0, KILN_HAL_WHOLE_BUFFER},
  };
  kiln_hal_dispatch_t dispatch = {executable, 0, {kCount / 64, 1, 1}, &push,
                                  sizeof(push), bindings, 2};
  KILN_ASSERT_OK(kiln_hal_command_buffer_dispatch(cb, &dispatch));
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  *out_cb = cb;
}

KILN_TEST(CommandBufferTest, RecordOnceResubmitWithNewBindings) {
  kiln_hal_device_t* device = kiln_test_device_create();
  kiln_hal_executable_t* executable = kiln_test_scale_add_executable(device, 1.0f);
  kiln_hal_buffer_t* buffers[4];
  for (int i = 0; i < 4; ++i) {
    buffers[i] = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                  KILN_HAL_BUFFER_USAGE_DEFAULT, kCount * 4);
  }
  fill_input(device, buffers[0], 10);
  fill_input(device, buffers[2], -50);

  kiln_hal_command_buffer_t* cb = NULL;
  record_slot_scale(device, executable, &cb);
  KILN_ASSERT_TRUE(cb != NULL);
  KILN_EXPECT_EQ(kiln_hal_command_buffer_slot_count(cb), 2);

  kiln_hal_binding_table_entry_t first[] = {
      {buffers[0], 0, KILN_HAL_WHOLE_BUFFER}, {buffers[1], 0, KILN_HAL_WHOLE_BUFFER}};
  kiln_hal_binding_table_entry_t second[] = {
      {buffers[2], 0, KILN_HAL_WHOLE_BUFFER}, {buffers[3], 0, KILN_HAL_WHOLE_BUFFER}};
  kiln_hal_binding_table_t table_a = {first, 2};
  kiln_hal_binding_table_t table_b = {second, 2};
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, &table_a));
  expect_output(device, buffers[1], 10);
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, &table_b));
  expect_output(device, buffers[3], -50);
  // Same table again (no re-record), after changing the input's contents.
  fill_input(device, buffers[2], 7);
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, &table_b));
  expect_output(device, buffers[3], 7);

  // The table is checked at submit: too few entries, or a bad range.
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "binding table has 0 entries",
                             kiln_test_submit_and_wait(device, cb, NULL));
  kiln_hal_binding_table_entry_t bad[] = {
      {buffers[0], 0, KILN_HAL_WHOLE_BUFFER}, {buffers[1], 512, 1024}};
  kiln_hal_binding_table_t bad_table = {bad, 2};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE, "slot 1",
                             kiln_test_submit_and_wait(device, cb, &bad_table));
  // And the command buffer still works afterwards.
  fill_input(device, buffers[0], 3);
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, &table_a));
  expect_output(device, buffers[1], 3);

  kiln_hal_command_buffer_release(cb);
  kiln_hal_executable_release(executable);
  for (int i = 0; i < 4; ++i) kiln_hal_buffer_release(buffers[i]);
  kiln_test_device_release(device);
}

KILN_TEST(CommandBufferTest, ResubmitWithoutSlotsAndReRecord) {
  kiln_hal_device_t* device = kiln_test_device_create();
  kiln_hal_buffer_t* buffer = kiln_test_buffer(
      device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT, 64);
  kiln_hal_executable_t* executable = kiln_test_two_entries_executable(device);
  uint32_t zeros[16] = {0};
  KILN_ASSERT_OK(kiln_hal_device_write_buffer(device, buffer, 0, zeros, 64));
  kiln_hal_command_buffer_t* cb = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  uint32_t count = 16;
  kiln_hal_binding_t binding = {0, 0, buffer, 0, 0, KILN_HAL_WHOLE_BUFFER};
  kiln_hal_dispatch_t dispatch = {executable, 0, {1, 1, 1}, &count, 4, &binding, 1};
  KILN_ASSERT_OK(kiln_hal_command_buffer_dispatch(cb, &dispatch));
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  for (int i = 0; i < 5; ++i) {
    KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, NULL));
  }
  uint32_t values[16];
  KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, buffer, 0, values, 64));
  for (int i = 0; i < 16; ++i) KILN_EXPECT_EQ(values[i], 5);
  // Begin again: the old recording is discarded.
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  dispatch.entry_point = 1;  // double_it
  KILN_ASSERT_OK(kiln_hal_command_buffer_dispatch(cb, &dispatch));
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, NULL));
  KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, buffer, 0, values, 64));
  for (int i = 0; i < 16; ++i) KILN_EXPECT_EQ(values[i], 10);
  // The command buffer keeps its executable and buffer alive.
  kiln_hal_executable_release(executable);
  kiln_hal_buffer_release(buffer);
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, NULL));
  kiln_hal_command_buffer_release(cb);
  kiln_test_device_release(device);
}

// Immutable buffers (shared weights) bind only where the kernel's binding
// is read-only: as input they work; as the output they are refused at
// dispatch (direct binding) or at submit (slot), and every other write
// path refuses them too.
KILN_TEST(CommandBufferTest, ImmutableBuffersBindReadOnly) {
  kiln_hal_device_t* device = kiln_test_device_create();
  kiln_hal_executable_t* executable = kiln_test_scale_add_executable(device, 1.0f);
  kiln_hal_buffer_t* constant = kiln_test_buffer(
      device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT, kCount * 4);
  kiln_hal_buffer_t* output = kiln_test_buffer(
      device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT, kCount * 4);
  fill_input(device, constant, 5);
  kiln_hal_buffer_make_immutable(constant);
  KILN_EXPECT_TRUE(kiln_hal_buffer_is_immutable(constant));
  float values[kCount];
  memset(values, 0, sizeof(values));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_PERMISSION_DENIED, "immutable",
      kiln_hal_device_write_buffer(device, constant, 0, values, sizeof(values)));

  kiln_hal_command_buffer_t* cb = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  uint32_t zero = 0;
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_PERMISSION_DENIED, "immutable",
      kiln_hal_command_buffer_fill(cb, constant, 0, 16, &zero, 4));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_PERMISSION_DENIED, "immutable",
      kiln_hal_command_buffer_copy(cb, output, 0, constant, 0, 16));
  kiln_test_scale_push_t push = {2.0f, kCount};
  kiln_hal_binding_t writes_constant[] = {
      {0, 0, output, 0, 0, KILN_HAL_WHOLE_BUFFER},
      {0, 1, constant, 0, 0, KILN_HAL_WHOLE_BUFFER},
  };
  kiln_hal_dispatch_t dispatch = {executable, 0, {kCount / 64, 1, 1}, &push,
                                  sizeof(push), writes_constant, 2};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_PERMISSION_DENIED, "binding 1",
                             kiln_hal_command_buffer_dispatch(cb, &dispatch));
  // Through slots: read-only input slot 0, writable output slot 1.
  kiln_hal_binding_t slots[] = {
      {0, 0, NULL, 0, 0, KILN_HAL_WHOLE_BUFFER},
      {0, 1, NULL, 1, 0, KILN_HAL_WHOLE_BUFFER},
  };
  dispatch.bindings = slots;
  KILN_ASSERT_OK(kiln_hal_command_buffer_dispatch(cb, &dispatch));
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  kiln_hal_binding_table_entry_t reads[] = {
      {constant, 0, KILN_HAL_WHOLE_BUFFER}, {output, 0, KILN_HAL_WHOLE_BUFFER}};
  kiln_hal_binding_table_t reads_table = {reads, 2};
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, &reads_table));
  expect_output(device, output, 5);
  kiln_hal_binding_table_entry_t writes[] = {
      {output, 0, KILN_HAL_WHOLE_BUFFER}, {constant, 0, KILN_HAL_WHOLE_BUFFER}};
  kiln_hal_binding_table_t writes_table = {writes, 2};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_PERMISSION_DENIED, "slot 1",
                             kiln_test_submit_and_wait(device, cb, &writes_table));
  // The constant still holds what it was given.
  KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, constant, 0, values,
                                             sizeof(values)));
  KILN_EXPECT_EQ(values[3], 8.0f);

  kiln_hal_command_buffer_release(cb);
  kiln_hal_executable_release(executable);
  kiln_hal_buffer_release(constant);
  kiln_hal_buffer_release(output);
  kiln_test_device_release(device);
}

// Slot bindings go through the command buffer's own buffers: a new output
// buffer each submit (as a compiled model's call allocates), entries of a
// new length (a shape change: translated again), and what the dispatch does
// not write keeps the caller's contents.
KILN_TEST(CommandBufferTest, NewBuffersEverySubmitAndNewLengths) {
  kiln_hal_device_t* device = kiln_test_device_create();
  kiln_hal_executable_t* executable = kiln_test_scale_add_executable(device, 1.0f);
  kiln_hal_buffer_t* input = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                              KILN_HAL_BUFFER_USAGE_DEFAULT, kCount * 4);
  kiln_hal_command_buffer_t* cb = NULL;
  record_slot_scale(device, executable, &cb);
  KILN_ASSERT_TRUE(cb != NULL);
  for (int call = 0; call < 4; ++call) {
    fill_input(device, input, (float)(call * 100));
    kiln_hal_buffer_t* output = kiln_test_buffer(
        device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT, kCount * 4);
    kiln_hal_binding_table_entry_t entries[] = {
        {input, 0, KILN_HAL_WHOLE_BUFFER}, {output, 0, KILN_HAL_WHOLE_BUFFER}};
    kiln_hal_binding_table_t table = {entries, 2};
    KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, &table));
    expect_output(device, output, (float)(call * 100));
    kiln_hal_buffer_release(output);  // the command buffer may still hold it
  }
  // Longer entries: the dispatch writes the first kCount floats; the rest
  // of the output keeps the sentinel the caller put there.
  kiln_hal_buffer_t* big_in = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                               KILN_HAL_BUFFER_USAGE_DEFAULT, kCount * 8);
  kiln_hal_buffer_t* big_out = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                                KILN_HAL_BUFFER_USAGE_DEFAULT, kCount * 8);
  fill_input(device, big_in, -3);
  float sentinel[kCount];
  for (int i = 0; i < kCount; ++i) sentinel[i] = 1234.5f + (float)i;
  KILN_ASSERT_OK(kiln_hal_device_write_buffer(device, big_out, kCount * 4, sentinel,
                                              sizeof(sentinel)));
  kiln_hal_binding_table_entry_t big[] = {{big_in, 0, KILN_HAL_WHOLE_BUFFER},
                                          {big_out, 0, KILN_HAL_WHOLE_BUFFER}};
  kiln_hal_binding_table_t big_table = {big, 2};
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, &big_table));
  expect_output(device, big_out, -3);
  float tail[kCount];
  KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, big_out, kCount * 4, tail, sizeof(tail)));
  KILN_EXPECT_EQ(memcmp(tail, sentinel, sizeof(tail)), 0);
  // Sub-ranges at an offset, then back to the first length.
  kiln_hal_binding_table_entry_t shifted[] = {{big_in, 0, kCount * 4},
                                              {big_out, kCount * 4, kCount * 4}};
  kiln_hal_binding_table_t shifted_table = {shifted, 2};
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, &shifted_table));
  float values[kCount];
  KILN_ASSERT_OK(
      kiln_hal_device_read_buffer(device, big_out, kCount * 4, values, sizeof(values)));
  int mismatches = 0;
  for (int i = 0; i < kCount; ++i) {
    if (values[i] != (-3 + (float)i) * 2.0f + 1.0f) ++mismatches;
  }
  KILN_EXPECT_EQ(mismatches, 0);
  kiln_hal_command_buffer_release(cb);
  kiln_hal_executable_release(executable);
  kiln_hal_buffer_release(input);
  kiln_hal_buffer_release(big_in);
  kiln_hal_buffer_release(big_out);
  kiln_test_device_release(device);
}

// A table buffer the caller released is held only by the command buffer's
// slot copies: the next allocation of its size and kind gets it back, but
// only once its submission is known finished (a fence waited for), and never
// one of another size. Computing into it again gives the right values.
KILN_TEST(CommandBufferTest, ReleasedTableBufferReusedOnlyAfterItsSubmission) {
  kiln_hal_device_t* device = kiln_test_device_create();
  kiln_hal_executable_t* executable = kiln_test_scale_add_executable(device, 1.0f);
  kiln_hal_buffer_t* input = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                              KILN_HAL_BUFFER_USAGE_DEFAULT, kCount * 4);
  fill_input(device, input, 5);
  kiln_hal_command_buffer_t* cb = NULL;
  record_slot_scale(device, executable, &cb);
  KILN_ASSERT_TRUE(cb != NULL);

  kiln_hal_buffer_t* first = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                              KILN_HAL_BUFFER_USAGE_DEFAULT, kCount * 4);
  kiln_hal_binding_table_entry_t entries[] = {{input, 0, KILN_HAL_WHOLE_BUFFER},
                                              {first, 0, KILN_HAL_WHOLE_BUFFER}};
  kiln_hal_binding_table_t table = {entries, 2};
  kiln_hal_fence_t* fence = NULL;
  KILN_ASSERT_OK(kiln_hal_fence_create(device, &fence));
  kiln_hal_submit_batch_t batch = {
      .command_buffers = &cb, .binding_tables = &table, .command_buffer_count = 1,
      .fence = fence};
  KILN_ASSERT_OK(kiln_hal_device_queue_submit(device, &batch));
  kiln_hal_buffer_t* const released = first;
  kiln_hal_buffer_release(first);  // the pending copies still hold it
  // Not known finished: a new buffer.
  kiln_hal_buffer_t* second = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                               KILN_HAL_BUFFER_USAGE_DEFAULT, kCount * 4);
  KILN_EXPECT_TRUE(second != released);
  KILN_ASSERT_OK(kiln_hal_fence_wait(fence, KILN_INFINITE_TIMEOUT_NS));
  // Finished now, but another size is not served by it.
  kiln_hal_buffer_t* other = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                              KILN_HAL_BUFFER_USAGE_DEFAULT, kCount * 8);
  KILN_EXPECT_TRUE(other != released);
  kiln_hal_buffer_t* third = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                              KILN_HAL_BUFFER_USAGE_DEFAULT, kCount * 4);
  KILN_EXPECT_TRUE(third == released);
  // Held by the caller again: computing into it (the recorded copies) works.
  fill_input(device, input, -20);
  entries[1].buffer = third;
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, &table));
  expect_output(device, third, -20);
  kiln_hal_fence_release(fence);
  kiln_hal_command_buffer_release(cb);
  kiln_hal_executable_release(executable);
  kiln_hal_buffer_release(input);
  kiln_hal_buffer_release(second);
  kiln_hal_buffer_release(other);
  kiln_hal_buffer_release(third);
  kiln_test_device_release(device);
}

// Table buffers that cannot be copied (no transfer usage) are bound
// directly, translating again when the table changes.
KILN_TEST(CommandBufferTest, BuffersWithoutTransferUsageBindDirectly) {
  kiln_hal_device_t* device = kiln_test_device_create();
  kiln_hal_executable_t* executable = kiln_test_scale_add_executable(device, 1.0f);
  const kiln_hal_buffer_usage_t usage =
      KILN_HAL_BUFFER_USAGE_DISPATCH_STORAGE | KILN_HAL_BUFFER_USAGE_MAPPING;
  kiln_hal_buffer_t* buffers[3];
  for (int i = 0; i < 3; ++i) {
    buffers[i] = kiln_test_buffer(device, KILN_HAL_MEMORY_HOST_VISIBLE, usage, kCount * 4);
  }
  kiln_hal_command_buffer_t* cb = NULL;
  record_slot_scale(device, executable, &cb);
  KILN_ASSERT_TRUE(cb != NULL);
  for (int call = 0; call < 2; ++call) {
    fill_input(device, buffers[0], (float)call);
    kiln_hal_binding_table_entry_t entries[] = {
        {buffers[0], 0, KILN_HAL_WHOLE_BUFFER}, {buffers[1 + call], 0, KILN_HAL_WHOLE_BUFFER}};
    kiln_hal_binding_table_t table = {entries, 2};
    KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, &table));
    expect_output(device, buffers[1 + call], (float)call);
  }
  kiln_hal_command_buffer_release(cb);
  kiln_hal_executable_release(executable);
  for (int i = 0; i < 3; ++i) kiln_hal_buffer_release(buffers[i]);
  kiln_test_device_release(device);
}

// Whether `cb` binds its table directly (false on drivers other than
// Vulkan's, which have no slot copies to skip).
static bool binds_directly(kiln_hal_device_t* device, kiln_hal_command_buffer_t* cb) {
  return strcmp(kiln_hal_device_info(device)->driver, "vulkan") == 0 &&
         kiln_vk_command_buffer_binds_table(cb);
}

// A table submitted twice in a row, of whole device-local buffers, is bound
// directly from the second submission (no slot copies) until the table
// changes; a table that changes every call, whose entries are parts of a
// buffer, or that names one buffer twice (in place), keeps the copies. Every submission computes on the buffers its
// table names, whichever way they are bound, through each switch.
KILN_TEST(CommandBufferTest, RepeatedTableBindsDirectlyUntilItChanges) {
  kiln_hal_device_t* device = kiln_test_device_create();
  const bool vulkan = strcmp(kiln_hal_device_info(device)->driver, "vulkan") == 0;
  kiln_hal_executable_t* executable = kiln_test_scale_add_executable(device, 1.0f);
  kiln_hal_buffer_t* buffers[4];
  for (int i = 0; i < 4; ++i) {
    buffers[i] = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                  KILN_HAL_BUFFER_USAGE_DEFAULT, kCount * 4);
  }
  kiln_hal_buffer_t* wide = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                             KILN_HAL_BUFFER_USAGE_DEFAULT, kCount * 8);
  kiln_hal_command_buffer_t* cb = NULL;
  record_slot_scale(device, executable, &cb);
  KILN_ASSERT_TRUE(cb != NULL);
  kiln_hal_binding_table_entry_t a_entries[] = {{buffers[0], 0, KILN_HAL_WHOLE_BUFFER},
                                                {buffers[1], 0, kCount * 4}};
  kiln_hal_binding_table_entry_t b_entries[] = {{buffers[2], 0, KILN_HAL_WHOLE_BUFFER},
                                                {buffers[3], 0, KILN_HAL_WHOLE_BUFFER}};
  // The output a part of a buffer (its second half): never bound directly.
  kiln_hal_binding_table_entry_t part_entries[] = {{buffers[0], 0, KILN_HAL_WHOLE_BUFFER},
                                                   {wide, kCount * 4, kCount * 4}};
  // In place: one buffer the input and the output.
  kiln_hal_binding_table_entry_t same_entries[] = {{buffers[3], 0, KILN_HAL_WHOLE_BUFFER},
                                                   {buffers[3], 0, KILN_HAL_WHOLE_BUFFER}};
  const kiln_hal_binding_table_t a = {a_entries, 2}, b = {b_entries, 2};
  const kiln_hal_binding_table_t part = {part_entries, 2}, same = {same_entries, 2};
  const struct {
    const kiln_hal_binding_table_t* table;
    bool direct;  // expected after the submission
  } kCalls[] = {{&a, false}, {&a, true}, {&a, true},         {&b, false},
                {&a, false}, {&b, false}, {&b, true},        {&part, false},
                {&part, false}, {&same, false}, {&same, false},
                {&a, false},    {&a, true}};
  for (size_t call = 0; call < sizeof(kCalls) / sizeof(kCalls[0]); ++call) {
    const kiln_hal_binding_table_t* table = kCalls[call].table;
    const float base = (float)call * 10.0f - 40.0f;
    fill_input(device, table->entries[0].buffer, base);
    KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, table));
    float values[kCount];
    KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, table->entries[1].buffer,
                                               table->entries[1].offset, values,
                                               sizeof(values)));
    int mismatches = 0;
    for (int i = 0; i < kCount; ++i) {
      if (values[i] != (base + (float)i) * 2.0f + 1.0f) ++mismatches;
    }
    KILN_EXPECT_EQ(mismatches, 0);
    if (vulkan) KILN_EXPECT_EQ(binds_directly(device, cb), kCalls[call].direct);
  }
  kiln_hal_command_buffer_release(cb);
  kiln_hal_executable_release(executable);
  for (int i = 0; i < 4; ++i) kiln_hal_buffer_release(buffers[i]);
  kiln_hal_buffer_release(wide);
  kiln_test_device_release(device);
}
