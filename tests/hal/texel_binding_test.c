// Texel bindings (KILN_HAL_BINDING_UNIFORM_TEXEL_BUFFER_VEC4F32): the
// driver views a bound buffer range as vec4 f32 texels. Checked against a
// C reference (exact: x * 2 + w is exact in fp32 for these inputs), with
// direct buffers and binding-table slots, at non-zero offsets, with a
// range that ends mid-texel at the end of its buffer, through push
// descriptors (one set) and descriptor sets (two sets), and resubmitted
// with a new table (views are remade). Misuse is rejected with a message.
#include <stdlib.h>
#include <string.h>

#include "test_device.h"

enum { kCount = 1001, kWCount = 5, kXOffsetFloats = 12 };

typedef struct texel_push_t {
  uint32_t count, w_count;
} texel_push_t;

static kiln_status_t texel_executable(kiln_hal_device_t* device, uint32_t w_set,
                                      kiln_hal_executable_t** out) {
  kiln_test_spirv_t spirv = kiln_test_spirv_load(w_set ? "texel_scale_set1" : "texel_scale_set0");
  const kiln_hal_binding_layout_t layouts[3] = {
      {0, 0, true, KILN_HAL_BINDING_UNIFORM_TEXEL_BUFFER_VEC4F32},
      {w_set, 1, true, KILN_HAL_BINDING_UNIFORM_TEXEL_BUFFER_VEC4F32},
      {w_set, 2, false, KILN_HAL_BINDING_STORAGE_BUFFER},
  };
  kiln_hal_entry_point_spec_t entry = {"main", {64, 1, 1}, sizeof(texel_push_t), layouts, 3, 0};
  kiln_hal_executable_variant_spec_t variant = {
      "unknown", 0, {0}, spirv.words, spirv.word_count, &entry, 1, NULL, 0};
  kiln_hal_executable_spec_t spec = {"texel_scale", &variant, 1};
  kiln_status_t status = kiln_hal_executable_create(device, &spec, out);
  kiln_test_spirv_free(&spirv);
  return status;
}

static void fill_inputs(float* x, float* w, float x_bias) {
  for (uint32_t i = 0; i < kCount; ++i) x[i] = (float)(i % 97) * 0.25f - 3.0f + x_bias;
  for (uint32_t i = 0; i < kWCount; ++i) w[i] = (float)i * 10.0f + 1.0f;
}

// Counts mismatches of out against x * 2 + w, and checks the texel count.
static uint32_t check_output(const float* out, const float* x, const float* w) {
  uint32_t mismatches = 0;
  for (uint32_t i = 0; i < kCount; ++i) {
    if (out[i] != x[i] * 2.0f + w[i % kWCount]) ++mismatches;
  }
  // x's view: kCount floats rounded up to whole texels.
  KILN_EXPECT_EQ(out[kCount], (float)((kCount + 3) / 4));
  return mismatches;
}

static void run_direct(uint32_t w_set) {
  kiln_hal_device_t* device = kiln_test_device_create();
  float* x = calloc(kXOffsetFloats + kCount, sizeof(float));
  float w[kWCount];
  float* out = calloc(kCount + 1, sizeof(float));
  KILN_ASSERT_TRUE(x && out);
  fill_inputs(x + kXOffsetFloats, w, 0.0f);
  // x starts 48 bytes in and its range ends exactly at the buffer's end,
  // 4 bytes into a texel; w is 20 bytes: a texel and a quarter.
  const uint64_t x_bytes = (kXOffsetFloats + kCount) * sizeof(float);
  kiln_hal_buffer_t* xb = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                           KILN_HAL_BUFFER_USAGE_DEFAULT, x_bytes);
  kiln_hal_buffer_t* wb = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                           KILN_HAL_BUFFER_USAGE_DEFAULT, sizeof(w));
  kiln_hal_buffer_t* ob = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                           KILN_HAL_BUFFER_USAGE_DEFAULT,
                                           (kCount + 1) * sizeof(float));
  KILN_ASSERT_OK(kiln_hal_device_write_buffer(device, xb, 0, x, x_bytes));
  KILN_ASSERT_OK(kiln_hal_device_write_buffer(device, wb, 0, w, sizeof(w)));
  kiln_hal_executable_t* executable = NULL;
  KILN_ASSERT_OK(texel_executable(device, w_set, &executable));
  kiln_hal_command_buffer_t* cb = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  texel_push_t push = {kCount, kWCount};
  kiln_hal_binding_t bindings[] = {
      {0, 0, xb, 0, kXOffsetFloats * sizeof(float), kCount * sizeof(float)},
      {w_set, 1, wb, 0, 0, KILN_HAL_WHOLE_BUFFER},
      {w_set, 2, ob, 0, 0, KILN_HAL_WHOLE_BUFFER},
  };
  kiln_hal_dispatch_t dispatch = {executable, 0, {(kCount + 1 + 63) / 64, 1, 1},
                                  &push, sizeof(push), bindings, 3};
  KILN_ASSERT_OK(kiln_hal_command_buffer_dispatch(cb, &dispatch));
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  // Twice: the recording (and its views) is reused.
  for (int round = 0; round < 2; ++round) {
    memset(out, 0, (kCount + 1) * sizeof(float));
    KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, NULL));
    KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, ob, 0, out,
                                               (kCount + 1) * sizeof(float)));
    KILN_EXPECT_EQ(check_output(out, x + kXOffsetFloats, w), 0);
  }
  kiln_hal_command_buffer_release(cb);
  kiln_hal_executable_release(executable);
  kiln_hal_buffer_release(xb);
  kiln_hal_buffer_release(wb);
  kiln_hal_buffer_release(ob);
  free(x);
  free(out);
  kiln_test_device_release(device);
}

KILN_TEST(TexelBindingTest, DirectBuffersPushDescriptors) { run_direct(0); }
KILN_TEST(TexelBindingTest, DirectBuffersDescriptorSets) { run_direct(1); }

KILN_TEST(TexelBindingTest, TableSlotsResubmittedWithNewBuffers) {
  kiln_hal_device_t* device = kiln_test_device_create();
  float x[2][kCount], w[2][kWCount];
  fill_inputs(x[0], w[0], 0.0f);
  fill_inputs(x[1], w[1], 100.0f);
  w[1][3] = -7.5f;
  // One buffer per round holding [pad | x | w] at texel-aligned offsets.
  const uint64_t x_at = 64, w_at = x_at + ((kCount * 4 + 15) & ~15u);
  const uint64_t bytes = w_at + sizeof(w[0]);
  kiln_hal_buffer_t* in[2];
  for (int r = 0; r < 2; ++r) {
    in[r] = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                             KILN_HAL_BUFFER_USAGE_DEFAULT, bytes);
    KILN_ASSERT_OK(kiln_hal_device_write_buffer(device, in[r], x_at, x[r], sizeof(x[r])));
    KILN_ASSERT_OK(kiln_hal_device_write_buffer(device, in[r], w_at, w[r], sizeof(w[r])));
  }
  kiln_hal_buffer_t* ob = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                           KILN_HAL_BUFFER_USAGE_DEFAULT,
                                           (kCount + 1) * sizeof(float));
  kiln_hal_executable_t* executable = NULL;
  KILN_ASSERT_OK(texel_executable(device, 0, &executable));
  kiln_hal_command_buffer_t* cb = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  texel_push_t push = {kCount, kWCount};
  // Slot 0: the input buffer; x and w are ranges of it.
  kiln_hal_binding_t bindings[] = {
      {0, 0, NULL, 0, x_at, kCount * sizeof(float)},
      {0, 1, NULL, 0, w_at, sizeof(w[0])},
      {0, 2, ob, 0, 0, KILN_HAL_WHOLE_BUFFER},
  };
  kiln_hal_dispatch_t dispatch = {executable, 0, {(kCount + 1 + 63) / 64, 1, 1},
                                  &push, sizeof(push), bindings, 3};
  KILN_ASSERT_OK(kiln_hal_command_buffer_dispatch(cb, &dispatch));
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  float out[kCount + 1];
  for (int round = 0; round < 4; ++round) {
    const int r = round & 1;
    kiln_hal_binding_table_entry_t entry = {in[r], 0, KILN_HAL_WHOLE_BUFFER};
    kiln_hal_binding_table_t table = {&entry, 1};
    KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, &table));
    KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, ob, 0, out, sizeof(out)));
    KILN_EXPECT_EQ(check_output(out, x[r], w[r]), 0);
  }
  kiln_hal_command_buffer_release(cb);
  kiln_hal_executable_release(executable);
  kiln_hal_buffer_release(in[0]);
  kiln_hal_buffer_release(in[1]);
  kiln_hal_buffer_release(ob);
  kiln_test_device_release(device);
}

KILN_TEST(TexelBindingTest, MisalignedTableOffsetIsRejected) {
  kiln_hal_device_t* device = kiln_test_device_create();
  kiln_hal_buffer_t* in = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                           KILN_HAL_BUFFER_USAGE_DEFAULT, 4096);
  kiln_hal_buffer_t* ob = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                           KILN_HAL_BUFFER_USAGE_DEFAULT, 4096);
  kiln_hal_executable_t* executable = NULL;
  KILN_ASSERT_OK(texel_executable(device, 0, &executable));
  kiln_hal_command_buffer_t* cb = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  texel_push_t push = {16, 4};
  kiln_hal_binding_t bindings[] = {
      {0, 0, NULL, 0, 0, 256},
      {0, 1, NULL, 0, 256, 16},
      {0, 2, ob, 0, 0, KILN_HAL_WHOLE_BUFFER},
  };
  kiln_hal_dispatch_t dispatch = {executable, 0, {1, 1, 1}, &push, sizeof(push), bindings, 3};
  KILN_ASSERT_OK(kiln_hal_command_buffer_dispatch(cb, &dispatch));
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  // A table entry 4 bytes in: no texel view can start there.
  kiln_hal_binding_table_entry_t entry = {in, 4, 1024};
  kiln_hal_binding_table_t table = {&entry, 1};
  kiln_status_t status = kiln_test_submit_and_wait(device, cb, &table);
  KILN_EXPECT_EQ(kiln_status_consume_code(status), KILN_STATUS_INVALID_ARGUMENT);
  // The same recording still runs with an aligned entry.
  entry.offset = 16;
  KILN_EXPECT_OK(kiln_test_submit_and_wait(device, cb, &table));
  kiln_hal_command_buffer_release(cb);
  kiln_hal_executable_release(executable);
  kiln_hal_buffer_release(in);
  kiln_hal_buffer_release(ob);
  kiln_test_device_release(device);
}

KILN_TEST(TexelBindingTest, SpecRejectsWritableOrUnknownTypes) {
  kiln_test_spirv_t spirv = kiln_test_spirv_load("texel_scale_set0");
  kiln_hal_binding_layout_t layout = {0, 0, false, KILN_HAL_BINDING_UNIFORM_TEXEL_BUFFER_VEC4F32};
  kiln_hal_entry_point_spec_t entry = {"main", {64, 1, 1}, 0, &layout, 1, 0};
  kiln_hal_executable_variant_spec_t variant = {
      "unknown", 0, {0}, spirv.words, spirv.word_count, &entry, 1, NULL, 0};
  kiln_hal_executable_spec_t spec = {"texel", &variant, 1};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "but is not read-only",
                             kiln_hal_executable_spec_verify(&spec));
  layout.read_only = true;
  KILN_EXPECT_OK(kiln_hal_executable_spec_verify(&spec));
  layout.type = (kiln_hal_binding_type_t)7;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "(unknown)",
                             kiln_hal_executable_spec_verify(&spec));
  kiln_test_spirv_free(&spirv);
}
