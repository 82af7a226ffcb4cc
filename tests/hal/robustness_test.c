// Untrusted text and SPIR-V never crash: random triples either parse (and
// then round-trip) or fail with INVALID_ARGUMENT; random and truncated
// SPIR-V words are scanned within bounds (AddressSanitizer checks that).
// Deterministic (fixed-seed xorshift), so a failure reproduces.
#include <stdlib.h>
#include <string.h>

#include "hal_internal.h"
#include "kiln/hal/target_triple.h"
#include "kiln_test.h"

static uint32_t next_random(uint32_t* state) {
  uint32_t x = *state;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return *state = x;
}

KILN_TEST(RobustnessTest, RandomTriplesParseOrFailCleanly) {
  static const char* pieces[] = {"hopper", "h100", "linux", "android30",
                                 "android", "-", "-", "unknown", "cpu",
                                 "llvmpipe", "x", "99", "", "valhall", "g78",
                                 "--", "rdna1", "5700xt"};
  uint32_t state = 0x12345678;
  size_t parsed = 0;
  for (int round = 0; round < 20000; ++round) {
    char text[96] = "";
    int count = 1 + (int)(next_random(&state) % 6);
    for (int i = 0; i < count; ++i) {
      const char* piece = pieces[next_random(&state) % (sizeof(pieces) / sizeof(pieces[0]))];
      if (strlen(text) + strlen(piece) < sizeof(text)) strcat(text, piece);
    }
    kiln_target_triple_t triple;
    kiln_status_t status =
        kiln_target_triple_parse(kiln_make_cstring_view(text), &triple);
    if (status) {
      KILN_EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INVALID_ARGUMENT);
      kiln_status_free(status);
      continue;
    }
    ++parsed;
    char formatted[KILN_TARGET_TRIPLE_TEXT_CAPACITY];
    kiln_target_triple_format(&triple, formatted, sizeof(formatted));
    kiln_target_triple_t again;
    KILN_ASSERT_OK(kiln_target_triple_parse(kiln_make_cstring_view(formatted), &again));
    KILN_EXPECT_TRUE(kiln_target_triple_equal(&triple, &again));
  }
  KILN_EXPECT_GT(parsed, 100);  // the generator does hit valid triples
}

KILN_TEST(RobustnessTest, RandomSpirvIsScannedWithinBounds) {
  uint32_t state = 0x9e3779b9;
  for (int round = 0; round < 5000; ++round) {
    size_t count = next_random(&state) % 40;
    // Exactly `count` words on the heap, so any overread is caught.
    uint32_t* words = count ? malloc(count * sizeof(uint32_t)) : NULL;
    for (size_t i = 0; i < count; ++i) {
      uint32_t r = next_random(&state);
      // Bias towards plausible headers and OpEntryPoint instructions.
      if (i == 0) r = (r & 3) ? 0x07230203 : r;
      if (i >= 5 && (r & 7) == 0) r = ((r >> 16) % 8) << 16 | 15;
      words[i] = r;
    }
    (void)kiln_hal_spirv_has_compute_entry_point(words, count, "main");
    free(words);
  }
}
