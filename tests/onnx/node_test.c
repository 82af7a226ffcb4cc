// Runs every ONNX node test in Debian's libonnx-testdata through the
// importer, the passes and the reference executor, against the stored
// outputs (reference: ONNX's numpy implementations; rtol 1e-3, atol 1e-5).
// Every test is either passed or refused at import; none may be accepted
// and wrong.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_test.h"
#include "onnx_test_util.h"

#define KILN_NODE_TEST_ROOT "/usr/share/libonnx-testdata/data/node"
// Raise this when more ops land; a drop means a regression.
#define KILN_NODE_TEST_MIN_PASSED 562

static int kiln_compare_names(const void* a, const void* b) {
  return strcmp(*(const char* const*)a, *(const char* const*)b);
}

KILN_TEST(OnnxNodeTest, AcceptedTestsPassAndOthersAreRefused) {
  // KILN_NODE_TEST_ROOT / KILN_NODE_TEST_MIN_PASSED select another suite
  // (kiln's own, scripts/export_node_tests.py) and its floor.
  const char* root_path = getenv("KILN_NODE_TEST_ROOT");
  if (!root_path) root_path = KILN_NODE_TEST_ROOT;
  const char* floor_text = getenv("KILN_NODE_TEST_MIN_PASSED");
  size_t min_passed = floor_text ? (size_t)strtoul(floor_text, NULL, 10) : KILN_NODE_TEST_MIN_PASSED;
  DIR* root = opendir(root_path);
  KILN_ASSERT_TRUE(root != NULL);  // libonnx-testdata must be installed
  char* names[4096];
  size_t count = 0;
  struct dirent* entry;
  while ((entry = readdir(root)) && count < 4096) {
    if (strncmp(entry->d_name, "test_", 5) != 0) continue;
    names[count++] = strdup(entry->d_name);
  }
  closedir(root);
  qsort(names, count, sizeof(names[0]), kiln_compare_names);
  size_t passed = 0, unsupported = 0, refused = 0, failed = 0, skipped = 0;
  const char* filter = getenv("KILN_NODE_TEST_FILTER");
  bool verbose = getenv("KILN_NODE_TEST_VERBOSE") != NULL;
  for (size_t i = 0; i < count; ++i) {
    if (filter && !strstr(names[i], filter)) {
      free(names[i]);
      continue;
    }
    char dir[1024], message[2048];
    snprintf(dir, sizeof(dir), "%s/%s", root_path, names[i]);
    kiln_node_test_result_t result =
        kiln_onnx_run_node_test(dir, 1e-3, 1e-5, message, sizeof(message));
    switch (result) {
      case KILN_NODE_TEST_PASSED:
        // kiln's own suites name the forms that must be refused.
        if (strstr(names[i], "test_refused_")) {
          ++failed;
          KILN_ADD_FAILURE("accepted but must be refused: %s", names[i]);
          break;
        }
        ++passed;
        if (verbose) printf("PASS %s\n", names[i]);
        break;
      case KILN_NODE_TEST_UNSUPPORTED:
        ++unsupported;
        if (verbose) printf("UNSUPPORTED %s: %s\n", names[i], message);
        break;
      case KILN_NODE_TEST_REFUSED:
        ++refused;
        if (verbose) printf("REFUSED %s: %s\n", names[i], message);
        break;
      case KILN_NODE_TEST_SKIPPED:
        ++skipped;
        printf("SKIPPED %s: %s\n", names[i], message);
        break;
      case KILN_NODE_TEST_FAILED:
        ++failed;
        KILN_ADD_FAILURE("accepted but wrong: %s: %s", names[i], message);
        break;
    }
    free(names[i]);
  }
  printf("ONNX node tests: %zu passed, %zu failed, %zu unsupported, %zu "
         "refused (invalid for static shapes), %zu skipped (size limit)\n",
         passed, failed, unsupported, refused, skipped);
  KILN_EXPECT_EQ(failed, 0u);
  if (!filter) KILN_EXPECT_GE(passed, min_passed);
}
