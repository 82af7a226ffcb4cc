#include "sample_runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kiln_test.h"
#include "npy.h"

float kiln_test_rng_uniform(kiln_test_rng_t* rng, float lo, float hi) {
  uint64_t x = rng->state ? rng->state : 0x9e3779b97f4a7c15ull;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  rng->state = x;
  return lo + (hi - lo) * (float)((x >> 40) & 0xffffff) / 16777216.0f;
}

kiln_host_tensor_t kiln_test_f32_tensor(size_t rank, const int64_t* dims) {
  kiln_host_tensor_t tensor;
  kiln_status_t status = kiln_host_tensor_allocate(
      kiln_allocator_system(), KILN_ELEMENT_F32, rank, dims, &tensor);
  if (status) {
    kiln_status_free(status);
    abort();
  }
  return tensor;
}

float* kiln_test_f32_data(kiln_host_tensor_t* tensor) {
  return (float*)tensor->data;
}

static char kiln_exit_paths[256][512];
static size_t kiln_exit_path_count = 0;

static void kiln_remove_exit_paths(void) {
  for (size_t i = 0; i < kiln_exit_path_count; ++i) unlink(kiln_exit_paths[i]);
}

void kiln_test_remove_at_exit(const char* path) {
  for (size_t i = 0; i < kiln_exit_path_count; ++i) {
    if (strcmp(kiln_exit_paths[i], path) == 0) return;
  }
  if (kiln_exit_path_count == 0) atexit(kiln_remove_exit_paths);
  if (kiln_exit_path_count == sizeof(kiln_exit_paths) / sizeof(kiln_exit_paths[0])) return;
  snprintf(kiln_exit_paths[kiln_exit_path_count++], sizeof(kiln_exit_paths[0]), "%s", path);
}

const char* kiln_test_npy_argument(const kiln_host_tensor_t* tensor,
                                   int slot) {
  static char arguments[8][512];
  const kiln_test_case_t* test = kiln_test_current();
  snprintf(arguments[slot], sizeof(arguments[slot]),
           "@/tmp/kiln_%d_%s_%s_%d.npy", (int)getpid(),
           test ? test->suite : "x", test ? test->name : "x", slot);
  kiln_status_t status = kiln_npy_write_file(arguments[slot] + 1, tensor, false);
  kiln_test_remove_at_exit(arguments[slot] + 1);
  if (status) {
    kiln_status_free(status);
    KILN_ADD_FAILURE("cannot write %s", arguments[slot] + 1);
  }
  return arguments[slot];
}

int kiln_test_run_tool(const char* args, char* output, size_t output_size) {
  const char* tool = getenv("KILN_RUN_MODULE");
  if (!tool) {
    snprintf(output, output_size, "KILN_RUN_MODULE is not set");
    return -1;
  }
  size_t length = strlen(tool) + strlen(args) + 96;
  char* command = malloc(length);
  // A hang (e.g. opening a FIFO) must fail the test, not stall CI: timeout
  // exits 124 and the caller's expected exit code cannot match.
  snprintf(command, length, "timeout -k 5 120 '%s' %s 2>&1", tool, args);
  FILE* pipe = popen(command, "r");
  free(command);
  if (!pipe) return -1;
  size_t used = fread(output, 1, output_size - 1, pipe);
  output[used] = 0;
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char* kiln_test_sample_path(const char* name) {
  static char path[1024];
  const char* dir = getenv("KILN_SAMPLES_DIR");
  snprintf(path, sizeof(path), "%s/%s.kiln", dir ? dir : ".", name);
  return path;
}
