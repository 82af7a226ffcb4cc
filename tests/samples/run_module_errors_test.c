// Every kind of user mistake gives one clear line naming what is wrong and
// a non-zero exit status, never a crash (these run under ASan/UBSan).
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln/base/byte_buffer.h"
#include "kiln/base/file.h"
#include "kiln/base/time.h"
#include "kiln/compiler/assembler.h"
#include "kiln_test.h"
#include "sample_runner.h"

static char output[1 << 16];

static size_t kiln_count_lines(const char* text) {
  size_t lines = 0;
  for (const char* p = text; *p; ++p) lines += *p == '\n';
  return lines;
}

// Runs the tool and expects failure with `message` in a single line.
static void kiln_expect_error(const char* args, int code, const char* message) {
  int actual = kiln_test_run_tool(args, output, sizeof(output));
  KILN_EXPECT_EQ(actual, code);
  KILN_EXPECT_CONTAINS(output, message);
  KILN_EXPECT_EQ(kiln_count_lines(output), 1);
  if (actual != code || !strstr(output, message)) printf("args: %s\n", args);
}

static const char* kiln_temp_file(const char* name, const void* data,
                                  size_t size) {
  static char paths[4][256];
  static int next = 0;
  char* path = paths[next++ % 4];
  snprintf(path, 256, "/tmp/kiln_errors_%d_%s", (int)getpid(), name);
  kiln_status_free(
      kiln_file_write_all(path, kiln_make_const_byte_span(data, size)));
  kiln_test_remove_at_exit(path);
  return path;
}

KILN_TEST(RunModuleErrors, BadModuleFiles) {
  char args[2048];
  kiln_expect_error("--module=/nonexistent/m.kiln", 1,
                    "cannot open '/nonexistent/m.kiln'");
  const char* text = kiln_temp_file("text.kiln", "hello world\n", 12);
  snprintf(args, sizeof(args), "--module=%s", text);
  kiln_expect_error(args, 1, "not a kiln module");
  // The real matmul module cut in half.
  kiln_file_contents_t module;
  KILN_ASSERT_OK(kiln_file_read_all(kiln_test_sample_path("matmul"),
                                    kiln_allocator_system(), &module));
  const char* half = kiln_temp_file("half.kiln", module.data, module.size / 2);
  kiln_file_contents_deinit(&module);
  snprintf(args, sizeof(args), "--module=%s", half);
  int code = kiln_test_run_tool(args, output, sizeof(output));
  KILN_EXPECT_EQ(code, 1);
  KILN_EXPECT_CONTAINS(output, "kiln-run-module: ");
  KILN_EXPECT_CONTAINS(output, half);
  KILN_EXPECT_EQ(kiln_count_lines(output), 1);
}

KILN_TEST(RunModuleErrors, FunctionAndArity) {
  char args[2048];
  snprintf(args, sizeof(args), "--module=%s --function=nope --input=1",
           kiln_test_sample_path("matmul"));
  kiln_expect_error(args, 1, "no function 'nope'; the module exports: predict");
  snprintf(args, sizeof(args), "--module=%s --input='2x2xf32=1'",
           kiln_test_sample_path("matmul"));
  kiln_expect_error(args, 1, "takes 2 inputs (signature 'rr_r'), got 1");
  snprintf(args, sizeof(args), "--module=%s --input=3 --input=4",
           kiln_test_sample_path("matmul"));
  kiln_expect_error(args, 1, "input 0: the function takes a tensor here");
}

KILN_TEST(RunModuleErrors, ShapeAndTypeMismatch) {
  char args[2048];
  snprintf(args, sizeof(args),
           "--module=%s --input='2x3xf32=1' --input='4x2xf32=1'",
           kiln_test_sample_path("matmul"));
  kiln_expect_error(args, 1, "input 1: expected 3x2xf32, got 4x2xf32");
  snprintf(args, sizeof(args),
           "--module=%s --input='2x3xf32=1' --input='3x2xi32=1'",
           kiln_test_sample_path("matmul"));
  kiln_expect_error(args, 1, "input 1: expected 3x2xf32, got 3x2xi32");
  snprintf(args, sizeof(args), "--module=%s --input='2x3xi32=1'",
           kiln_test_sample_path("softmax"));
  kiln_expect_error(args, 1, "softmax: the input must be a rank-2 f32 matrix");
}

KILN_TEST(RunModuleErrors, MalformedInputs) {
  char args[2048];
  snprintf(args, sizeof(args), "--module=%s --input='2x2xf32=1 2 3'",
           kiln_test_sample_path("softmax"));
  kiln_expect_error(args, 1, "got 3 values for a tensor of 4 elements");
  snprintf(args, sizeof(args), "--module=%s --input='2x2xq8=1'",
           kiln_test_sample_path("softmax"));
  kiln_expect_error(args, 1, "unknown element type 'q8'");
  static const char complex_npy[] =
      "\x93NUMPY\x01\x00\x3a\x00{'descr': '<c8', 'fortran_order': False, "
      "'shape': (1,), }\n\x00\x00\x00\x00\x00\x00\x00\x00";
  const char* path = kiln_temp_file("c8.npy", complex_npy, sizeof(complex_npy) - 1);
  snprintf(args, sizeof(args), "--module=%s --input=@%s",
           kiln_test_sample_path("softmax"), path);
  kiln_expect_error(args, 1, "unsupported NumPy dtype '<c8'");
  static const char fortran_npy[] =
      "\x93NUMPY\x01\x00\x3d\x00{'descr': '<f4', 'fortran_order': True, "
      "'shape': (1, 1), }\n\x00\x00\x00\x00";
  path = kiln_temp_file("fortran.npy", fortran_npy, sizeof(fortran_npy) - 1);
  snprintf(args, sizeof(args), "--module=%s --input=@%s",
           kiln_test_sample_path("softmax"), path);
  kiln_expect_error(args, 1, "fortran-order .npy arrays are not supported");
  snprintf(args, sizeof(args), "--module=%s --input=@/nonexistent.npy",
           kiln_test_sample_path("softmax"));
  kiln_expect_error(args, 1, "cannot open '/nonexistent.npy'");
}

KILN_TEST(RunModuleErrors, DevicesAndFlags) {
  char args[2048];
  snprintf(args, sizeof(args), "--module=%s --device=vulkan://42 --input='1x1xf32=1'",
           kiln_test_sample_path("softmax"));
  int code = kiln_test_run_tool(args, output, sizeof(output));
  KILN_EXPECT_EQ(code, 1);
  KILN_EXPECT_CONTAINS(output, "42");
  KILN_EXPECT_EQ(kiln_count_lines(output), 1);
  snprintf(args, sizeof(args), "--module=%s --device=cuda --input='1x1xf32=1'",
           kiln_test_sample_path("softmax"));
  kiln_expect_error(args, 1, "vulkan");
  kiln_expect_error("--frobnicate", 2, "unknown flag '--frobnicate'");
  kiln_expect_error("--module", 2, "flag '--module' needs a value");
  kiln_expect_error("--call_count=0", 2, "must be between 1 and 1e9");
}

KILN_TEST(RunModuleErrors, HelpAndFlagfile) {
  int code = kiln_test_run_tool("--help", output, sizeof(output));
  KILN_EXPECT_EQ(code, 0);
  KILN_EXPECT_CONTAINS(output, "--expected_output=VALUE (repeatable)");
  char flags[2048];
  snprintf(flags, sizeof(flags),
           "# a flag file\n--module=%s\n\n--input=1x3xf32=0 0 0\n"
           "--expected_output=1x3xf32=0.3333333 0.3333333 0.3333333\n",
           kiln_test_sample_path("softmax"));
  const char* path = kiln_temp_file("flags.txt", flags, strlen(flags));
  char args[512];
  snprintf(args, sizeof(args), "--flagfile=%s", path);
  code = kiln_test_run_tool(args, output, sizeof(output));
  KILN_EXPECT_EQ(code, 0);
  KILN_EXPECT_CONTAINS(output, "[SUCCESS]");
}

KILN_TEST(RunModuleFlags, TraceAndStatistics) {
  char args[2048];
  snprintf(args, sizeof(args),
           "--module=%s --input='2x32xf32=0.25' --trace_execution "
           "--print_statistics --call_count=3",
           kiln_test_sample_path("mlp"));
  int code = kiln_test_run_tool(args, output, sizeof(output));
  KILN_EXPECT_EQ(code, 0);
  // Weights upload only on the first of the three calls.
  KILN_EXPECT_CONTAINS(output, "[trace] hal.buffer.constant(hal.device, vm.buffer)");
  KILN_EXPECT_CONTAINS(output, "[trace] hal.command_buffer.dispatch(hal.command_buffer, hal.executable, 0, ");
  const char* first = strstr(output, "hal.buffer.constant(");
  size_t writes = 0;
  for (const char* p = first; p; p = strstr(p + 1, "hal.buffer.constant(")) ++writes;
  KILN_EXPECT_EQ(writes, 4);  // w1, b1, w2, b2 once, not per call
  KILN_EXPECT_CONTAINS(output, "[statistics] calls: 3, median wall time: ");
  KILN_EXPECT_CONTAINS(output, "[statistics] warm call (median of calls 2..3): ");
  KILN_EXPECT_CONTAINS(output, "[statistics] median GPU time of a call (timestamps): ");
  KILN_EXPECT_CONTAINS(output, "[statistics] peak device memory in buffers: ");
  KILN_EXPECT_TRUE(strstr(output, "GPU time of a call (timestamps): 0.000 ms") == NULL);
  // Where a warm call's host time goes, by native call.
  KILN_EXPECT_CONTAINS(output, "[statistics] host time of a warm call by native call");
  KILN_EXPECT_CONTAINS(output, "  hal.device.submit_and_wait\n");
  // ... and inside that submit: prepare, queue submit, fence wait.
  KILN_EXPECT_CONTAINS(output, "[statistics] submissions of a warm call (median us of "
                               "calls 2..): 1 submission(s); preparing (binding tables, "
                               "slot copies) ");
  KILN_EXPECT_CONTAINS(output, ", fence wait ");
}

// --no_timestamps: the statistics without GPU timestamps (no GPU times).
KILN_TEST(RunModuleFlags, StatisticsWithoutTimestamps) {
  char args[2048];
  snprintf(args, sizeof(args),
           "--module=%s --input='2x32xf32=0.25' --print_statistics --no_timestamps "
           "--call_count=3",
           kiln_test_sample_path("mlp"));
  int code = kiln_test_run_tool(args, output, sizeof(output));
  KILN_EXPECT_EQ(code, 0);
  KILN_EXPECT_CONTAINS(output, "[statistics] calls: 3, median wall time: ");
  KILN_EXPECT_CONTAINS(output, "[statistics] GPU time: not measured (--no_timestamps)");
  KILN_EXPECT_TRUE(strstr(output, "(timestamps)") == NULL);
  KILN_EXPECT_CONTAINS(output, "  hal.device.submit_and_wait\n");
}

// The profile's list of slowest dispatches: every one of the mlp's by
// default (fewer than 10), one with --slowest_dispatches=1; 0 is refused.
static size_t count_listed_dispatches(const char* text) {
  size_t lines = 0;
  for (const char* p = strstr(text, " grid "); p; p = strstr(p + 1, " grid ")) ++lines;
  return lines;
}

KILN_TEST(RunModuleFlags, SlowestDispatches) {
  char args[2048];
  snprintf(args, sizeof(args), "--module=%s --input='2x32xf32=0.25' --print_statistics",
           kiln_test_sample_path("mlp"));
  KILN_EXPECT_EQ(kiln_test_run_tool(args, output, sizeof(output)), 0);
  const size_t all = count_listed_dispatches(output);
  KILN_EXPECT_GT(all, 1);
  snprintf(args, sizeof(args),
           "--module=%s --input='2x32xf32=0.25' --print_statistics --slowest_dispatches=1",
           kiln_test_sample_path("mlp"));
  KILN_EXPECT_EQ(kiln_test_run_tool(args, output, sizeof(output)), 0);
  KILN_EXPECT_EQ(count_listed_dispatches(output), 1);
  snprintf(args, sizeof(args), "--module=%s --slowest_dispatches=0",
           kiln_test_sample_path("mlp"));
  KILN_EXPECT_NE(kiln_test_run_tool(args, output, sizeof(output)), 0);
  KILN_EXPECT_CONTAINS(output, "flag '--slowest_dispatches' must be between 1 and 1e9");
}

// --span_timestamps: a GPU time per call from one timestamp pair per
// submission, no per-dispatch profile; refused without statistics or with
// --no_timestamps.
KILN_TEST(RunModuleFlags, StatisticsWithSpanTimestamps) {
  char args[2048];
  snprintf(args, sizeof(args),
           "--module=%s --input='2x32xf32=0.25' --print_statistics --span_timestamps "
           "--call_count=3",
           kiln_test_sample_path("mlp"));
  int code = kiln_test_run_tool(args, output, sizeof(output));
  KILN_EXPECT_EQ(code, 0);
  KILN_EXPECT_CONTAINS(output, "[statistics] median GPU time of a call (span timestamps): ");
  KILN_EXPECT_TRUE(strstr(output, "(span timestamps): 0.000 ms") == NULL);
  KILN_EXPECT_TRUE(strstr(output, "(timestamps)") == NULL);
  KILN_EXPECT_TRUE(strstr(output, "slowest (mean GPU ms per call)") == NULL);
  KILN_EXPECT_CONTAINS(output, " dispatches per call\n");
  const char* bad[] = {"--print_statistics --span_timestamps --no_timestamps",
                       "--span_timestamps"};
  for (size_t i = 0; i < 2; ++i) {
    snprintf(args, sizeof(args), "--module=%s --input='2x32xf32=0.25' %s",
             kiln_test_sample_path("mlp"), bad[i]);
    code = kiln_test_run_tool(args, output, sizeof(output));
    KILN_EXPECT_NE(code, 0);
    KILN_EXPECT_CONTAINS(output, "--span_timestamps needs --print_statistics");
  }
}

// --sessions: more sessions on the first one's model at once (one thread
// each), every result checked against the first session's; the weights are
// uploaded once for all of them.
KILN_TEST(RunModuleFlags, SessionsShareOneModel) {
  char args[2048];
  snprintf(args, sizeof(args),
           "--module=%s --input='3x32xf32=0.25' --sessions=3 --call_count=2",
           kiln_test_sample_path("mlp"));
  int code = kiln_test_run_tool(args, output, sizeof(output));
  KILN_EXPECT_EQ(code, 0);
  KILN_EXPECT_CONTAINS(output, "[sessions] 3 more sessions on one device and one model, 2 "
                               "call(s) each at once: every result equals the first "
                               "session's; weights uploaded 4 time(s) (11048 bytes), 1 "
                               "pipeline(s) built");
  snprintf(args, sizeof(args), "--module=%s --input='3x32xf32=0.25' --sessions=65",
           kiln_test_sample_path("mlp"));
  code = kiln_test_run_tool(args, output, sizeof(output));
  KILN_EXPECT_NE(code, 0);
  KILN_EXPECT_CONTAINS(output, "--sessions=65: between 1 and 64");
}

// Untrusted files and runaway modules (issue 12). The runner's timeout turns
// a hang into exit 124, so a regression fails instead of stalling.
static const char* kiln_fifo(const char* name) {
  static char paths[4][256];
  static int next = 0;
  char* path = paths[next++ % 4];
  snprintf(path, 256, "/tmp/kiln_errors_%d_%s", (int)getpid(), name);
  unlink(path);
  KILN_EXPECT_EQ(mkfifo(path, 0600), 0);
  return path;
}

KILN_TEST(RunModuleErrors, FifosAreRefusedWithoutBlocking) {
  char args[2048];
  const char* fifo = kiln_fifo("m.kiln");
  snprintf(args, sizeof(args), "--module=%s", fifo);
  kiln_expect_error(args, 1, "is not a regular file (a FIFO)");
  unlink(fifo);
  fifo = kiln_fifo("x.npy");
  snprintf(args, sizeof(args), "--module=%s --input=@%s",
           kiln_test_sample_path("softmax"), fifo);
  kiln_expect_error(args, 1, "is not a regular file (a FIFO)");
  snprintf(args, sizeof(args), "--module=%s --input=2x4xf32=@%s",
           kiln_test_sample_path("softmax"), fifo);
  kiln_expect_error(args, 1, "is not a regular file (a FIFO)");
  unlink(fifo);
  // A FIFO as the pipeline cache is a miss (never read) and the run works.
  fifo = kiln_fifo("cache.bin");
  snprintf(args, sizeof(args),
           "--module=%s --input='2x4xf32=1' --pipeline_cache=%s",
           kiln_test_sample_path("softmax"), fifo);
  KILN_EXPECT_EQ(kiln_test_run_tool(args, output, sizeof(output)), 0);
  unlink(fifo);
}

KILN_TEST(RunModuleErrors, NpyShapeIsCheckedAgainstTheFile) {
  // 128 bytes whose header asks for 600M floats (2.4 GB).
  static const char huge_npy[] =
      "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, "
      "'shape': (600000000,), }"
      "                                                    \n";
  KILN_ASSERT_EQ(sizeof(huge_npy) - 1, 128);
  const char* path = kiln_temp_file("huge.npy", huge_npy, sizeof(huge_npy) - 1);
  char args[2048];
  snprintf(args, sizeof(args), "--module=%s --input=@%s",
           kiln_test_sample_path("softmax"), path);
  kiln_expect_error(args, 1,
                    "header promises 2400000000 bytes of data but only 0 "
                    "follow");
  // A text shape beyond the memory budget is refused before allocating.
  snprintf(args, sizeof(args),
           "--module=%s --memory_budget_mb=16 --input=8x1048576xf32=0",
           kiln_test_sample_path("softmax"));
  kiln_expect_error(args, 1,
                    "tensor needs 33554432 bytes, more than the host tensor "
                    "limit of 16777216 bytes");
}

static const char* kiln_spin_module(void) {
  kiln_byte_buffer_t bytes;
  kiln_byte_buffer_init(&bytes, kiln_allocator_system());
  KILN_EXPECT_OK(kiln_assembler_assemble(
      kiln_make_cstring_view("module spin\nfunc spin \"v_v\"\nloop:\n"
                             "  br loop\nend\nexport spin\n"),
      "spin.kasm", kiln_allocator_system(), &bytes));
  const char* path = kiln_temp_file("spin.kiln", bytes.data, bytes.size);
  kiln_byte_buffer_deinit(&bytes);
  return path;
}

KILN_TEST(RunModuleErrors, FuelAndDeadlineStopInfiniteLoops) {
  const char* module = kiln_spin_module();
  char args[2048];
  snprintf(args, sizeof(args), "--module=%s --fuel=1000000", module);
  kiln_expect_error(args, 1,
                    "trap in function 'spin' of module 'spin' at bytecode "
                    "offset 0: fuel exhausted; the session's fuel limit is "
                    "1000000");
  int64_t start = kiln_time_now_ns();
  snprintf(args, sizeof(args), "--module=%s --deadline_ms=200", module);
  kiln_expect_error(args, 1,
                    "trap in function 'spin' of module 'spin' at bytecode "
                    "offset 0: deadline exceeded; the session's deadline is "
                    "200 ms");
  KILN_EXPECT_LT((kiln_time_now_ns() - start) / 1000000, 60000);
  snprintf(args, sizeof(args), "--module=%s --fuel=0", module);
  kiln_expect_error(args, 2, "flag '--fuel' must be between 1 and 2^62");
  unlink(module);
}
