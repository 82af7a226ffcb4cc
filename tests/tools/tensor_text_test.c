// The --input grammar, printing and comparison shared with iree-run-module.
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "kiln_test.h"
#include "npy.h"
#include "tensor_text.h"

static kiln_input_parser_t parser;

static void kiln_parse_ok(const char* text, kiln_input_value_t* value) {
  kiln_input_parser_init(&parser, kiln_allocator_system());
  KILN_ASSERT_OK(kiln_input_parser_parse(&parser, text, value));
}

static char* kiln_print_to_string(const kiln_host_tensor_t* tensor,
                                  size_t max_elements) {
  static char text[4096];
  FILE* stream = fmemopen(text, sizeof(text), "w");
  kiln_tensor_print(stream, tensor, max_elements);
  fclose(stream);
  return text;
}

KILN_TEST(TensorTextTest, ListWithBracketsAndCommas) {
  kiln_input_value_t value;
  kiln_parse_ok("2x2xi32=[1, 2][3 4]", &value);
  KILN_ASSERT_EQ(value.kind, KILN_INPUT_TENSOR);
  KILN_EXPECT_EQ(value.tensor.rank, 2);
  KILN_EXPECT_EQ(value.tensor.element_count, 4);
  int32_t expected[4] = {1, 2, 3, 4};
  KILN_EXPECT_BYTES_EQ(value.tensor.data, expected, sizeof(expected));
  KILN_EXPECT_STREQ(kiln_print_to_string(&value.tensor, 100),
                    "2x2xi32=[1 2][3 4]\n");
  kiln_input_value_deinit(&value);
  kiln_input_parser_deinit(&parser);
}

KILN_TEST(TensorTextTest, SplatZerosRankZeroAndScalars) {
  kiln_input_value_t value;
  kiln_parse_ok("1x3xf32=0.5", &value);
  for (int i = 0; i < 3; ++i) {
    KILN_EXPECT_NEAR(kiln_host_tensor_get_f64(&value.tensor, i), 0.5, 0);
  }
  kiln_input_value_deinit(&value);
  kiln_parse_ok("4xf32", &value);
  KILN_EXPECT_EQ(value.tensor.element_count, 4);
  KILN_EXPECT_NEAR(kiln_host_tensor_get_f64(&value.tensor, 3), 0, 0);
  kiln_input_value_deinit(&value);
  kiln_parse_ok("f32=1.5", &value);
  KILN_EXPECT_EQ(value.tensor.rank, 0);
  KILN_EXPECT_EQ(value.tensor.element_count, 1);
  KILN_EXPECT_STREQ(kiln_print_to_string(&value.tensor, 10), "f32=1.5\n");
  kiln_input_value_deinit(&value);
  kiln_parse_ok("-7", &value);
  KILN_EXPECT_EQ(value.kind, KILN_INPUT_SCALAR);
  KILN_EXPECT_TRUE(value.scalar_is_integer);
  KILN_EXPECT_EQ(value.scalar_i64, -7);
  kiln_parse_ok("2.25", &value);
  KILN_EXPECT_EQ(value.kind, KILN_INPUT_SCALAR);
  KILN_EXPECT_FALSE(value.scalar_is_integer);
  KILN_EXPECT_NEAR(value.scalar_f64, 2.25, 0);
  kiln_parse_ok("(null)", &value);
  KILN_EXPECT_EQ(value.kind, KILN_INPUT_NULL);
  kiln_input_parser_deinit(&parser);
}

KILN_TEST(TensorTextTest, MalformedInputsNameTheProblem) {
  kiln_input_parser_init(&parser, kiln_allocator_system());
  kiln_input_value_t value;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "got 3 values for a tensor of 4",
                             kiln_input_parser_parse(&parser, "2x2xf32=1 2 3", &value));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "unknown element type 'f31'",
                             kiln_input_parser_parse(&parser, "2xf31=1", &value));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "bad dimension '-2'",
                             kiln_input_parser_parse(&parser, "-2xf32=1", &value));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "'abc' is not a number",
                             kiln_input_parser_parse(&parser, "2xf32=1 abc", &value));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE, "does not fit in i8",
                             kiln_input_parser_parse(&parser, "1xi8=300", &value));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE, "would exceed",
                             kiln_input_parser_parse(&parser,
                                "4294967296x4294967296x16xf32", &value));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE, "would exceed 4294967296 bytes",
                             kiln_input_parser_parse(&parser, "222222x22222xf32=2", &value));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_NOT_FOUND, "'/nonexistent.npy'",
                             kiln_input_parser_parse(&parser, "@/nonexistent.npy", &value));
  kiln_input_parser_deinit(&parser);
}

KILN_TEST(TensorTextTest, AllocationOverflowIsAnError) {
  kiln_host_tensor_t tensor;
  int64_t dims[3] = {INT64_C(4294967296), INT64_C(4294967296), 16};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE, "overflows",
                             kiln_host_tensor_allocate(kiln_allocator_system(),
                                                       KILN_ELEMENT_F32, 3,
                                                       dims, &tensor));
}

KILN_TEST(TensorTextTest, PrintTruncatesAndNests) {
  kiln_host_tensor_t tensor;
  int64_t dims[3] = {2, 2, 2};
  KILN_ASSERT_OK(kiln_host_tensor_allocate(kiln_allocator_system(),
                                           KILN_ELEMENT_I64, 3, dims, &tensor));
  for (int i = 0; i < 8; ++i) kiln_host_tensor_set_i64(&tensor, i, i);
  KILN_EXPECT_STREQ(kiln_print_to_string(&tensor, 100),
                    "2x2x2xi64=[[0 1][2 3]][[4 5][6 7]]\n");
  KILN_EXPECT_STREQ(kiln_print_to_string(&tensor, 3),
                    "2x2x2xi64=[[0 1][2...\n");
  kiln_host_tensor_deinit(&tensor);
}

KILN_TEST(TensorTextTest, CompareReportsFirstDifference) {
  kiln_input_value_t a, b, c;
  kiln_input_parser_init(&parser, kiln_allocator_system());
  KILN_ASSERT_OK(kiln_input_parser_parse(&parser, "3xf32=1 2 3", &a));
  KILN_ASSERT_OK(kiln_input_parser_parse(&parser, "3xf32=1 2.00001 3.5", &b));
  KILN_ASSERT_OK(kiln_input_parser_parse(&parser, "3xi32=1 2 3", &c));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION,
                             "element 2 differs: got 3, expected 3.5",
                             kiln_tensor_compare(&a.tensor, &b.tensor, 1e-3));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION, "element 1",
                             kiln_tensor_compare(&a.tensor, &b.tensor, 1e-7));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION,
                             "expected a 3xi32 result, got 3xf32",
                             kiln_tensor_compare(&a.tensor, &c.tensor, 1));
  KILN_EXPECT_OK(kiln_tensor_compare(&a.tensor, &a.tensor, 0));
  kiln_input_value_deinit(&a);
  kiln_input_value_deinit(&b);
  kiln_input_value_deinit(&c);
  kiln_input_parser_deinit(&parser);
}

KILN_TEST(TensorTextTest, HalfFloatConversions) {
  KILN_EXPECT_EQ(kiln_f32_to_f16(1.0f), 0x3c00);
  KILN_EXPECT_EQ(kiln_f32_to_f16(-2.0f), 0xc000);
  KILN_EXPECT_EQ(kiln_f32_to_f16(65504.0f), 0x7bff);
  KILN_EXPECT_EQ(kiln_f32_to_f16(1e6f), 0x7c00);            // overflow -> inf
  KILN_EXPECT_EQ(kiln_f32_to_f16(5.9604645e-8f), 0x0001);   // smallest subnormal
  KILN_EXPECT_NEAR(kiln_f16_to_f32(0x0001), 5.9604645e-8, 1e-15);
  KILN_EXPECT_NEAR(kiln_f16_to_f32(0x3555), 0.33325195, 1e-8);
  KILN_EXPECT_EQ(kiln_f32_to_bf16(1.0f), 0x3f80);
  KILN_EXPECT_NEAR(kiln_bf16_to_f32(0x4049), 3.140625, 0);
  // Round to nearest even on the f16 boundary: 1 + 2^-11 ties to 1.0.
  KILN_EXPECT_EQ(kiln_f32_to_f16(1.00048828125f), 0x3c00);
}

KILN_TEST(NpyTest, WriteAppendAndReadBack) {
  char path[256];
  snprintf(path, sizeof(path), "/tmp/kiln_npy_test_%d.npy", (int)getpid());
  kiln_input_value_t a, b;
  kiln_input_parser_init(&parser, kiln_allocator_system());
  KILN_ASSERT_OK(kiln_input_parser_parse(&parser, "2x3xf32=[1 2 3][4 5 6]", &a));
  KILN_ASSERT_OK(kiln_input_parser_parse(&parser, "i64=-9", &b));
  KILN_ASSERT_OK(kiln_npy_write_file(path, &a.tensor, false));
  KILN_ASSERT_OK(kiln_npy_write_file(path, &b.tensor, true));
  char first[300], second[300], again[300];
  snprintf(first, sizeof(first), "@%s", path);
  snprintf(second, sizeof(second), "+%s", path);
  kiln_input_value_t r1, r2, r3;
  KILN_ASSERT_OK(kiln_input_parser_parse(&parser, second, &r1));  // first "next"
  KILN_ASSERT_OK(kiln_input_parser_parse(&parser, second, &r2));
  KILN_EXPECT_OK(kiln_tensor_compare(&r1.tensor, &a.tensor, 0));
  KILN_EXPECT_OK(kiln_tensor_compare(&r2.tensor, &b.tensor, 0));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "no .npy array at offset",
                             kiln_input_parser_parse(&parser, second, &r3));
  snprintf(again, sizeof(again), "%s", first);
  KILN_ASSERT_OK(kiln_input_parser_parse(&parser, again, &r3));  // "@" restarts
  KILN_EXPECT_OK(kiln_tensor_compare(&r3.tensor, &a.tensor, 0));
  kiln_input_value_deinit(&a);
  kiln_input_value_deinit(&b);
  kiln_input_value_deinit(&r1);
  kiln_input_value_deinit(&r2);
  kiln_input_value_deinit(&r3);
  kiln_input_parser_deinit(&parser);
  unlink(path);
}

// `SHAPExTYPE=@x.npy` (the brief's own example) reads the .npy array when
// its shape and type match, and names both when they do not; a raw file
// still needs exactly the tensor's bytes.
KILN_TEST(NpyTest, TypedInputFromNpyFileMustMatch) {
  char path[256], raw[256], text[400];
  snprintf(path, sizeof(path), "/tmp/kiln_npy_typed_%d.npy", (int)getpid());
  snprintf(raw, sizeof(raw), "/tmp/kiln_raw_typed_%d.bin", (int)getpid());
  kiln_input_value_t a, got;
  kiln_input_parser_init(&parser, kiln_allocator_system());
  KILN_ASSERT_OK(kiln_input_parser_parse(&parser, "2x3xf32=[1 2 3][4 5 6]", &a));
  KILN_ASSERT_OK(kiln_npy_write_file(path, &a.tensor, false));
  snprintf(text, sizeof(text), "2x3xf32=@%s", path);
  KILN_ASSERT_OK(kiln_input_parser_parse(&parser, text, &got));
  KILN_EXPECT_OK(kiln_tensor_compare(&got.tensor, &a.tensor, 0));
  kiln_input_value_deinit(&got);
  snprintf(text, sizeof(text), "3x2xf32=@%s", path);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "holds 2x3xf32 but the input says 3x2xf32",
                             kiln_input_parser_parse(&parser, text, &got));
  snprintf(text, sizeof(text), "2x3xi32=@%s", path);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "but the input says 2x3xi32",
                             kiln_input_parser_parse(&parser, text, &got));
  FILE* file = fopen(raw, "wb");
  KILN_ASSERT_TRUE(file != NULL);
  fwrite(a.tensor.data, 1, a.tensor.byte_size, file);
  fclose(file);
  snprintf(text, sizeof(text), "2x3xf32=@%s", raw);
  KILN_ASSERT_OK(kiln_input_parser_parse(&parser, text, &got));
  KILN_EXPECT_OK(kiln_tensor_compare(&got.tensor, &a.tensor, 0));
  kiln_input_value_deinit(&got);
  snprintf(text, sizeof(text), "2x2xf32=@%s", raw);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "holds 24 bytes but the tensor needs 16",
                             kiln_input_parser_parse(&parser, text, &got));
  kiln_input_value_deinit(&a);
  kiln_input_parser_deinit(&parser);
  unlink(path);
  unlink(raw);
}

static kiln_status_t kiln_parse_npy_bytes(const char* bytes, size_t size) {
  kiln_host_tensor_t tensor;
  size_t offset = 0;
  kiln_status_t status =
      kiln_npy_parse(kiln_make_const_byte_span(bytes, size), "x.npy", &offset,
                     kiln_allocator_system(), &tensor);
  if (kiln_status_is_ok(status)) kiln_host_tensor_deinit(&tensor);
  return status;
}

// Builds a version-1.0 .npy image from header text and payload bytes.
static size_t kiln_make_npy(const char* header, const void* payload,
                            size_t payload_size, char* out) {
  size_t header_size = strlen(header);
  memcpy(out, "\x93NUMPY\x01\x00", 8);
  out[8] = (char)(header_size & 0xff);
  out[9] = (char)(header_size >> 8);
  memcpy(out + 10, header, header_size);
  if (payload_size) memcpy(out + 10 + header_size, payload, payload_size);
  return 10 + header_size + payload_size;
}

KILN_TEST(NpyTest, RejectsBadFiles) {
  static char image[512];
  const float one = 1.0f;
  size_t size = kiln_make_npy(
      "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }\n", NULL, 0, image);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_UNIMPLEMENTED, "fortran-order",
                             kiln_parse_npy_bytes(image, size));
  size = kiln_make_npy(
      "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }\n", NULL, 0, image);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_UNIMPLEMENTED, "unsupported NumPy dtype '<c8'",
                             kiln_parse_npy_bytes(image, size));
  size = kiln_make_npy(
      "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n", NULL, 0, image);
  KILN_EXPECT_STATUS(KILN_STATUS_UNIMPLEMENTED, kiln_parse_npy_bytes(image, size));
  // Header promises 2 floats but the data holds one.
  size = kiln_make_npy(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", &one, 4, image);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE,
                             "promises 8 bytes of data but only 4 follow",
                             kiln_parse_npy_bytes(image, size));
  size = kiln_make_npy(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }\n", NULL, 0, image);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "bad dimension '-3'",
                             kiln_parse_npy_bytes(image, size));
  size = kiln_make_npy("{'fortran_order': False, 'shape': (2,), }\n", NULL, 0, image);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "no 'descr'",
                             kiln_parse_npy_bytes(image, size));
  // A valid one parses.
  float two[2] = {1.0f, 2.0f};
  size = kiln_make_npy(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", two, 8, image);
  KILN_EXPECT_OK(kiln_parse_npy_bytes(image, size));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "bad magic",
                             kiln_parse_npy_bytes("PK\x03\x04 not numpy", 16));
  static const char huge_header[] = "\x93NUMPY\x01\x00\xff\xff{";
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_parse_npy_bytes(huge_header, sizeof(huge_header) - 1));
}
