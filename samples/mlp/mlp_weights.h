// The MLP sample's weights: a deterministic formula, so the module generator
// (make_mlp_module.c) and the test's plain C reference agree without
// shipping binary data. Layer 1: 32 -> 64 with ReLU; layer 2: 64 -> 10.
#ifndef KILN_SAMPLES_MLP_WEIGHTS_H_
#define KILN_SAMPLES_MLP_WEIGHTS_H_

#include <stdint.h>

enum { KILN_MLP_IN = 32, KILN_MLP_HIDDEN = 64, KILN_MLP_OUT = 10 };

// A small integer hash mapped to [-0.5, 0.5): varied signs and magnitudes.
static inline float kiln_mlp_weight(uint32_t tensor, uint32_t index) {
  uint32_t x = index * 2654435761u + tensor * 40503u + 12345u;
  x ^= x >> 15;
  x *= 2246822519u;
  x ^= x >> 13;
  return (float)(x % 1000u) / 1000.0f - 0.5f;
}

// tensor 0: W1 [32][64], 1: b1 [64], 2: W2 [64][10], 3: b2 [10].
static const uint32_t kiln_mlp_sizes[4] = {
    KILN_MLP_IN * KILN_MLP_HIDDEN, KILN_MLP_HIDDEN,
    KILN_MLP_HIDDEN * KILN_MLP_OUT, KILN_MLP_OUT};

#endif  // KILN_SAMPLES_MLP_WEIGHTS_H_
