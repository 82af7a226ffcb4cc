// Loads the test fixtures' SPIR-V, compiled by glslc into the build tree.
#ifndef KILN_TESTS_SPIRV_FIXTURE_UTIL_H_
#define KILN_TESTS_SPIRV_FIXTURE_UTIL_H_

#include <stdio.h>

#include "kiln/base/file.h"

// Reads "<fixture dir>/<name>.spv"; words point into contents.
static inline kiln_status_t kiln_test_load_fixture(const char* name,
                                                   kiln_file_contents_t* contents,
                                                   const uint32_t** out_words,
                                                   size_t* out_word_count) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s.spv", KILN_SPIRV_FIXTURE_DIR, name);
  KILN_RETURN_IF_ERROR(
      kiln_file_read_all(path, kiln_allocator_system(), contents));
  *out_words = (const uint32_t*)contents->data;
  *out_word_count = contents->size / 4;
  return kiln_ok_status();
}

#endif  // KILN_TESTS_SPIRV_FIXTURE_UTIL_H_
