// Untrusted kernels (issue 12): single edits to a real kernel's SPIR-V or
// to its declared interface once passed every check and then crashed
// lavapipe or corrupted the heap. Each class is refused here with a status
// naming the executable, variant and field; a valid kernel that indexes
// workgroup memory and its output out of bounds runs safely (the HAL's
// robust-access pass clamps it). Runs under the validation layer.
#include <stdlib.h>
#include <string.h>

#include "hal_internal.h"
#include "test_device.h"

enum {
  kOpEntryPoint = 15, kOpExecutionMode = 16, kOpDecorate = 71,
  kDecBinding = 33, kDecDescriptorSet = 34, kModeLocalSize = 17,
};

// Word index of the first literal of the first instruction `opcode` whose
// word 2 is `selector` (a decoration or an execution mode), or 0.
static size_t find_literal(const kiln_test_spirv_t* spirv, uint32_t opcode,
                           uint32_t selector, uint32_t nth) {
  for (size_t at = 5; at < spirv->word_count;) {
    uint32_t length = spirv->words[at] >> 16;
    if (length == 0) return 0;
    if ((spirv->words[at] & 0xffff) == opcode && length >= 4 &&
        spirv->words[at + 2] == selector && nth-- == 0) {
      return at + 3;
    }
    at += length;
  }
  return 0;
}

static const kiln_hal_binding_layout_t kScaleAddBindings[2] = {
    {0, 0, true, KILN_HAL_BINDING_STORAGE_BUFFER},
    {0, 1, false, KILN_HAL_BINDING_STORAGE_BUFFER},
};

// scale_add (literal LocalSize 64, bindings (0,0) read-only and (0,1),
// push {float, uint}, spec 0 = bias) with the caller's edits applied.
typedef struct scale_add_case_t {
  kiln_test_spirv_t spirv;
  kiln_hal_binding_layout_t bindings[2];
  kiln_hal_entry_point_spec_t entry;
  kiln_hal_specialization_constant_t constant;
  kiln_hal_executable_variant_spec_t variant;
  kiln_hal_executable_spec_t spec;
} scale_add_case_t;

static void scale_add_case_init(scale_add_case_t* c) {
  memset(c, 0, sizeof(*c));
  c->spirv = kiln_test_spirv_load("scale_add");
  memcpy(c->bindings, kScaleAddBindings, sizeof(c->bindings));
  c->entry = (kiln_hal_entry_point_spec_t){"main", {64, 1, 1}, 8, c->bindings,
                                           2, 0};
  c->constant = (kiln_hal_specialization_constant_t){0, 0};
  c->variant = (kiln_hal_executable_variant_spec_t){
      "unknown", 0, {0}, c->spirv.words, c->spirv.word_count, &c->entry, 1,
      &c->constant, 1};
  c->spec = (kiln_hal_executable_spec_t){"scale_add", &c->variant, 1};
}

// Creates the executable and expects a refusal with `code` whose message
// names the executable and contains `field`.
static void expect_refused(kiln_hal_device_t* device, scale_add_case_t* c,
                           kiln_status_code_t code, const char* field) {
  kiln_hal_executable_t* executable = NULL;
  kiln_status_t status =
      kiln_hal_executable_create(device, &c->spec, &executable);
  KILN_EXPECT_TRUE(executable == NULL);
  KILN_ASSERT_TRUE(status != NULL);
  KILN_EXPECT_EQ(kiln_status_code(status), code);
  char message[1024];
  kiln_status_format(status, message, sizeof(message));
  KILN_EXPECT_CONTAINS(message, "scale_add");
  KILN_EXPECT_CONTAINS(message, field);
  kiln_status_free(status);
  kiln_test_spirv_free(&c->spirv);
}

KILN_TEST(KernelInterfaceTest, UneditedKernelIsAccepted) {
  kiln_hal_device_t* device = kiln_test_device_create();
  scale_add_case_t c;
  scale_add_case_init(&c);
  kiln_hal_executable_t* executable = NULL;
  KILN_EXPECT_OK(kiln_hal_executable_create(device, &c.spec, &executable));
  kiln_hal_executable_release(executable);
  kiln_test_spirv_free(&c.spirv);
  kiln_test_device_release(device);
}

KILN_TEST(KernelInterfaceTest, LocalSizeEditsAreRefused) {
  kiln_hal_device_t* device = kiln_test_device_create();
  // y (then z) = 0xffffffff; then x 64 -> 65, one bit within limits.
  // glslc also emits a WorkgroupSize built-in (64x1x1), which takes
  // precedence; a LocalSize beyond it is refused all the same.
  const uint32_t edits[][2] = {{1, 0xffffffffu}, {2, 0xffffffffu}, {0, 65}};
  for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); ++i) {
    scale_add_case_t c;
    scale_add_case_init(&c);
    size_t at = find_literal(&c.spirv, kOpExecutionMode, kModeLocalSize, 0);
    KILN_ASSERT_GT(at, 0);
    KILN_ASSERT_EQ(c.spirv.words[at], 64);
    c.spirv.words[at + edits[i][0]] = edits[i][1];
    // Refused by SPIR-V validation or by the interface check; either way
    // the message names the executable and variant 0.
    expect_refused(device, &c, KILN_STATUS_INVALID_ARGUMENT, "variant 0");
  }
  scale_add_case_t c;
  scale_add_case_init(&c);
  c.spirv.words[find_literal(&c.spirv, kOpExecutionMode, kModeLocalSize, 0)] =
      65;
  expect_refused(device, &c, KILN_STATUS_INVALID_ARGUMENT,
                 "entry point 'main': LocalSize 65x1x1 exceeds the "
                 "WorkgroupSize built-in 64x1x1");
  kiln_test_device_release(device);
}

KILN_TEST(KernelInterfaceTest, DeclaredWorkgroupBitFlipIsRefused) {
  kiln_hal_device_t* device = kiln_test_device_create();
  scale_add_case_t c;
  scale_add_case_init(&c);
  c.entry.workgroup_size[0] = 64 ^ 32;  // 96: within every device's limits
  expect_refused(device, &c, KILN_STATUS_INVALID_ARGUMENT,
                 "entry point 'main': workgroup size is 64x1x1");
  scale_add_case_init(&c);
  c.entry.workgroup_size[1] = 1 ^ 2;
  expect_refused(device, &c, KILN_STATUS_INVALID_ARGUMENT, "workgroup size");
  kiln_test_device_release(device);
}

KILN_TEST(KernelInterfaceTest, BindingAndSetEditsAreRefused) {
  kiln_hal_device_t* device = kiln_test_device_create();
  scale_add_case_t c;
  scale_add_case_init(&c);
  size_t at = find_literal(&c.spirv, kOpDecorate, kDecBinding, 1);
  KILN_ASSERT_GT(at, 0);
  c.spirv.words[at] = 65536;
  expect_refused(device, &c, KILN_STATUS_INVALID_ARGUMENT,
                 "binding 65536, which the module does not declare");
  scale_add_case_init(&c);
  at = find_literal(&c.spirv, kOpDecorate, kDecDescriptorSet, 0);
  KILN_ASSERT_GT(at, 0);
  c.spirv.words[at] = 104;
  expect_refused(device, &c, KILN_STATUS_INVALID_ARGUMENT, "set 104");
  // The declaration side: a binding the SPIR-V lacks, one set out of range.
  scale_add_case_init(&c);
  c.bindings[1].binding = 7;
  expect_refused(device, &c, KILN_STATUS_INVALID_ARGUMENT,
                 "set 0 binding 1, which the module does not declare");
  scale_add_case_init(&c);
  c.bindings[1].set = 104;
  expect_refused(device, &c, KILN_STATUS_INVALID_ARGUMENT, "set 104");
  scale_add_case_init(&c);
  c.entry.binding_count = 1;
  expect_refused(device, &c, KILN_STATUS_INVALID_ARGUMENT,
                 "does not declare");
  kiln_test_device_release(device);
}

KILN_TEST(KernelInterfaceTest, PushConstantSizeMismatchIsRefused) {
  kiln_hal_device_t* device = kiln_test_device_create();
  const uint32_t sizes[] = {0, 4, 12, 128};
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
    scale_add_case_t c;
    scale_add_case_init(&c);
    c.entry.push_constant_bytes = sizes[i];
    expect_refused(device, &c, KILN_STATUS_INVALID_ARGUMENT,
                   "push constants are 8 bytes in the SPIR-V");
  }
  kiln_test_device_release(device);
}

KILN_TEST(KernelInterfaceTest, DescriptorTypeMismatchIsRefused) {
  kiln_hal_device_t* device = kiln_test_device_create();
  scale_add_case_t c;
  scale_add_case_init(&c);
  c.bindings[0].type = KILN_HAL_BINDING_UNIFORM_TEXEL_BUFFER_VEC4F32;
  expect_refused(device, &c, KILN_STATUS_INVALID_ARGUMENT,
                 "set 0 binding 0 is a read-only storage buffer in the SPIR-V but the "
                 "module declares a read-only uniform texel buffer");
  // A buffer the kernel writes declared read-only (barriers would be
  // skipped for it).
  scale_add_case_init(&c);
  c.bindings[1].read_only = true;
  expect_refused(device, &c, KILN_STATUS_INVALID_ARGUMENT,
                 "set 0 binding 1 is a storage buffer in the SPIR-V but the "
                 "module declares a read-only storage buffer");
  kiln_test_device_release(device);
}

KILN_TEST(KernelInterfaceTest, UnknownSpecConstantIdIsRefused) {
  kiln_hal_device_t* device = kiln_test_device_create();
  scale_add_case_t c;
  scale_add_case_init(&c);
  c.constant.id = 7;
  expect_refused(device, &c, KILN_STATUS_INVALID_ARGUMENT,
                 "specialization constant id 7 (value 0) is not declared");
  kiln_test_device_release(device);
}

// shared_oob: workgroup size = spec 0, shared float[spec 0] and
// float[spec 1], binding (0,0), push {uint stride, uint count}.
typedef struct shared_case_t {
  kiln_test_spirv_t spirv;
  kiln_hal_binding_layout_t binding;
  kiln_hal_entry_point_spec_t entry;
  kiln_hal_specialization_constant_t constants[2];
  kiln_hal_executable_variant_spec_t variant;
  kiln_hal_executable_spec_t spec;
} shared_case_t;

static void shared_case_init(shared_case_t* c, uint32_t workgroup,
                             uint32_t extra_floats) {
  memset(c, 0, sizeof(*c));
  c->spirv = kiln_test_spirv_load("shared_oob");
  c->binding = (kiln_hal_binding_layout_t){0, 0, false,
                                           KILN_HAL_BINDING_STORAGE_BUFFER};
  c->entry = (kiln_hal_entry_point_spec_t){
      "main", {workgroup, 1, 1}, 8, &c->binding, 1, 0};
  c->constants[0] = (kiln_hal_specialization_constant_t){0, workgroup};
  c->constants[1] = (kiln_hal_specialization_constant_t){1, extra_floats};
  c->variant = (kiln_hal_executable_variant_spec_t){
      "unknown", 0, {0}, c->spirv.words, c->spirv.word_count, &c->entry, 1,
      c->constants, 2};
  c->spec = (kiln_hal_executable_spec_t){"shared_oob", &c->variant, 1};
}

KILN_TEST(KernelInterfaceTest, SpecConstantWorkgroupOutOfRangeIsRefused) {
  kiln_hal_device_t* device = kiln_test_device_create();
  const uint32_t values[] = {0x10000, 0x80000000u, 0};
  for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); ++i) {
    // The spec constant alone edited: the SPIR-V's size differs from 64.
    shared_case_t c;
    shared_case_init(&c, 64, 64);
    c.constants[0].value = values[i];
    kiln_hal_executable_t* executable = NULL;
    KILN_EXPECT_STATUS_MESSAGE(
        KILN_STATUS_INVALID_ARGUMENT,
        "executable 'shared_oob' variant 0 ('unknown')",
        kiln_hal_executable_create(device, &c.spec, &executable));
    kiln_test_spirv_free(&c.spirv);
    // Declaration edited too: the device limits refuse it, or (0) the
    // description check does.
    shared_case_init(&c, values[i], 64);
    kiln_status_t status =
        kiln_hal_executable_create(device, &c.spec, &executable);
    KILN_EXPECT_TRUE(executable == NULL);
    KILN_EXPECT_TRUE(status != NULL);
    if (status) {
      char message[1024];
      kiln_status_format(status, message, sizeof(message));
      KILN_EXPECT_CONTAINS(message, "shared_oob");
      KILN_EXPECT_CONTAINS(message, "workgroup");
    }
    kiln_status_free(status);
    kiln_test_spirv_free(&c.spirv);
  }
  // One bit flipped in the value, within every limit.
  shared_case_t c;
  shared_case_init(&c, 64, 64);
  c.constants[0].value = 64 ^ 1;
  kiln_hal_executable_t* executable = NULL;
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "workgroup size is 65x1x1",
      kiln_hal_executable_create(device, &c.spec, &executable));
  kiln_test_spirv_free(&c.spirv);
  kiln_test_device_release(device);
}

KILN_TEST(KernelInterfaceTest, SharedMemoryAfterSpecializationIsLimited) {
  kiln_hal_device_t* device = kiln_test_device_create();
  uint32_t limit =
      kiln_hal_device_info(device)->limits.max_shared_memory_bytes;
  shared_case_t c;
  // 64 floats of scratch plus `extra` floats: one float over the limit.
  uint32_t extra = limit / 4 - 64 + 1;
  shared_case_init(&c, 64, extra);
  kiln_hal_executable_t* executable = NULL;
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_OUT_OF_RANGE, "bytes of workgroup memory after specialization",
      kiln_hal_executable_create(device, &c.spec, &executable));
  kiln_test_spirv_free(&c.spirv);
  shared_case_init(&c, 64, extra - 1);  // exactly the limit: accepted
  KILN_EXPECT_OK(kiln_hal_executable_create(device, &c.spec, &executable));
  kiln_hal_executable_release(executable);
  kiln_test_spirv_free(&c.spirv);
  kiln_test_device_release(device);
}

// Runs `executable` (shared_oob's interface) with `stride` over one
// workgroup of 64 into `out` (64 floats) while `guard`, allocated right
// after it, must stay untouched.
static void run_executable(kiln_hal_device_t* device,
                           kiln_hal_executable_t* executable, uint32_t stride,
                           float out_values[64]) {
  const size_t bytes = 64 * sizeof(float);
  kiln_hal_buffer_t* out = kiln_test_buffer(
      device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT, bytes);
  kiln_hal_buffer_t* guard = kiln_test_buffer(
      device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT,
      16 * bytes);
  float zeros[64] = {0}, guard_values[16 * 64], guard_after[16 * 64];
  for (size_t i = 0; i < 16 * 64; ++i) guard_values[i] = -1.0f - (float)i;
  KILN_ASSERT_OK(kiln_hal_device_write_buffer(device, out, 0, zeros, bytes));
  KILN_ASSERT_OK(kiln_hal_device_write_buffer(device, guard, 0, guard_values,
                                              sizeof(guard_values)));
  kiln_hal_command_buffer_t* cb = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  uint32_t push[2] = {stride, 64};
  kiln_hal_binding_t binding = {0, 0, out, 0, 0, KILN_HAL_WHOLE_BUFFER};
  kiln_hal_dispatch_t dispatch = {executable, 0, {1, 1, 1}, push,
                                  sizeof(push), &binding, 1};
  KILN_ASSERT_OK(kiln_hal_command_buffer_dispatch(cb, &dispatch));
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, NULL));
  KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, out, 0, out_values, bytes));
  KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, guard, 0, guard_after,
                                             sizeof(guard_after)));
  KILN_EXPECT_BYTES_EQ(guard_after, guard_values, sizeof(guard_values));
  kiln_hal_command_buffer_release(cb);
  kiln_hal_buffer_release(guard);
  kiln_hal_buffer_release(out);
}

static void run_shared_oob(kiln_hal_device_t* device, uint32_t stride,
                           float out_values[64]) {
  shared_case_t c;
  shared_case_init(&c, 64, 64);
  kiln_hal_executable_t* executable = NULL;
  KILN_ASSERT_OK(kiln_hal_executable_create(device, &c.spec, &executable));
  kiln_test_spirv_free(&c.spirv);
  run_executable(device, executable, stride, out_values);
  kiln_hal_executable_release(executable);
}

KILN_TEST(KernelInterfaceTest, OutOfBoundsSharedIndexRunsSafely) {
  kiln_hal_device_t* device = kiln_test_device_create();
  float values[64];
  // In bounds: out[i] = i + 1 exactly.
  run_shared_oob(device, 1, values);
  for (uint32_t i = 0; i < 64; ++i) KILN_EXPECT_EQ(values[i], (float)(i + 1));
  // Every invocation but 0 indexes 64K+ floats past both shared arrays and
  // the output: the clamped accesses land on their last elements, so
  // out[0] = 1 exactly and out[63] holds one invocation's value; nothing
  // else in the process (or the guard buffer) is written. Indices of 2^31
  // and above count as negative and clamp to element 0 (0xffffffff), where
  // invocations race: any of their values is right.
  const uint32_t strides[] = {0x00010000u, 0x01000000u, 0xffffffffu};
  for (size_t s = 0; s < sizeof(strides) / sizeof(strides[0]); ++s) {
    run_shared_oob(device, strides[s], values);
    if (strides[s] < 0x02000000u) KILN_EXPECT_EQ(values[0], 1.0f);
    KILN_EXPECT_GE(values[0], 1.0f);
    KILN_EXPECT_LE(values[0], 64.0f);
    KILN_EXPECT_GE(values[63], 0.0f);
    KILN_EXPECT_LE(values[63], 64.0f);
  }
  kiln_test_device_release(device);
}

static uint32_t next_random(uint32_t* state) {
  uint32_t x = *state;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return *state = x;
}

// One random bit flipped (or one word replaced) anywhere in a real kernel:
// refused with a status, or accepted and then built by the driver and run
// without incident. Deterministic (fixed-seed xorshift).
KILN_TEST(KernelInterfaceTest, RandomSpirvEditsAreRefusedOrSafe) {
  kiln_hal_device_t* device = kiln_test_device_create();
  const kiln_hal_device_info_t* info = kiln_hal_device_info(device);
  uint32_t state = 0x2545f491;
  int accepted = 0, built = 0;
  for (int round = 0; round < 1500; ++round) {
    shared_case_t c;
    shared_case_init(&c, 64, 64);
    uint32_t r = next_random(&state);
    size_t word = 5 + next_random(&state) % (c.spirv.word_count - 5);
    if (r & 1) {
      c.spirv.words[word] ^= 1u << (next_random(&state) % 32);
    } else {
      static const uint32_t kValues[] = {0, 1, 2, 3, 4, 64, 65, 104, 65536,
                                         0x7fffffff, 0x80000000u, 0xffffffffu};
      c.spirv.words[word] = kValues[next_random(&state) % 12];
    }
    kiln_status_t status = kiln_hal_executable_check_variant(
        info, &c.spec, 0, kiln_allocator_system());
    if (!status) {
      ++accepted;
      // Build the first accepted edits for real and run them once.
      if (built < 40) {
        ++built;
        kiln_hal_executable_t* executable = NULL;
        status = kiln_hal_executable_create(device, &c.spec, &executable);
        if (!status) {
          float values[64];
          run_executable(device, executable, 0x01000000u, values);
          kiln_hal_executable_release(executable);
        }
      }
    }
    kiln_status_free(status);
    kiln_test_spirv_free(&c.spirv);
  }
  KILN_EXPECT_GT(accepted, 0);  // the edits do reach accepted modules
  kiln_test_device_release(device);
}

// A 9-float tensor bound with its exact length: the write to its partial
// last vec4 (element 8) lands there, not on element 4 (the descriptor range
// is rounded to whole vec4s inside the buffer).
KILN_TEST(KernelInterfaceTest, PartialLastVec4IsWrittenInPlace) {
  kiln_hal_device_t* device = kiln_test_device_create();
  kiln_test_spirv_t spirv = kiln_test_spirv_load("vec4_tail");
  kiln_hal_binding_layout_t binding = {0, 0, false,
                                       KILN_HAL_BINDING_STORAGE_BUFFER};
  kiln_hal_entry_point_spec_t entry = {"main", {64, 1, 1}, 4, &binding, 1, 0};
  kiln_hal_executable_variant_spec_t variant = {
      "unknown", 0, {0}, spirv.words, spirv.word_count, &entry, 1, NULL, 0};
  kiln_hal_executable_spec_t spec = {"vec4_tail", &variant, 1};
  kiln_hal_executable_t* executable = NULL;
  KILN_ASSERT_OK(kiln_hal_executable_create(device, &spec, &executable));
  kiln_test_spirv_free(&spirv);
  enum { kCount = 9 };
  float values[kCount] = {0}, expected[kCount];
  for (uint32_t i = 0; i < kCount; ++i) expected[i] = (float)(i + 1);
  kiln_hal_buffer_t* out = kiln_test_buffer(
      device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT,
      sizeof(values));
  KILN_ASSERT_OK(kiln_hal_device_write_buffer(device, out, 0, values,
                                              sizeof(values)));
  kiln_hal_command_buffer_t* cb = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  uint32_t count = kCount;
  kiln_hal_binding_t b = {0, 0, out, 0, 0, sizeof(values)};
  kiln_hal_dispatch_t dispatch = {executable, 0, {1, 1, 1}, &count, 4, &b, 1};
  KILN_ASSERT_OK(kiln_hal_command_buffer_dispatch(cb, &dispatch));
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, NULL));
  KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, out, 0, values,
                                             sizeof(values)));
  KILN_EXPECT_BYTES_EQ(values, expected, sizeof(values));
  kiln_hal_command_buffer_release(cb);
  kiln_hal_buffer_release(out);
  kiln_hal_executable_release(executable);
  kiln_test_device_release(device);
}
