// Measures lavapipe's loop limiter: per mode, the count each lane reached.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vk_harness.h"

static uint32_t* load(const char* path, size_t* words) {
  FILE* f = fopen(path, "rb"); fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
  uint32_t* w = malloc(n); if (fread(w, 1, n, f) != (size_t)n) exit(1); fclose(f); *words = n / 4; return w;
}

static void run(kiln_vk_harness_t* h, kiln_kernel_spirv_t* spv, uint32_t wg, uint32_t mode,
                uint32_t n1, uint32_t n2, const char* what) {
  kiln_kernel_config_t cfg; memset(&cfg, 0, sizeof(cfg));
  cfg.workgroup_size[0] = wg; cfg.workgroup_size[1] = 1; cfg.workgroup_size[2] = 1;
  cfg.spec_count = 4; cfg.spec[2].id = 4; cfg.spec[2].value = 16; cfg.spec[3].id = 5; cfg.spec[3].value = 4; cfg.spec[0].id = 0; cfg.spec[0].value = wg; cfg.spec[1].id = 3; cfg.spec[1].value = mode;
  uint32_t ones[1024]; for (int i = 0; i < 1024; ++i) ones[i] = 1;
  kiln_vk_buffer_t *in = NULL, *out = NULL;
  kiln_vk_buffer_create(h, sizeof(ones), ones, &in);
  kiln_vk_buffer_create(h, wg * 2 * 4, NULL, &out);
  kiln_vk_buffer_t* bufs[2] = {in, out};
  uint32_t push[4] = {n1, n2 & 0xffff, n2 >> 16, 0};
  uint32_t grid[3] = {2, 1, 1};
  kiln_status_t st = kiln_vk_harness_dispatch(h, spv, &cfg, push, 16, bufs, 2, grid);
  if (!kiln_status_is_ok(st)) { printf("dispatch failed\n"); exit(1); }
  uint32_t res[256]; kiln_vk_buffer_read(h, out, res, wg * 2 * 4);
  printf("mode %u wg %2u n1 %6u n2 %6u %-44s lanes:", mode, wg, n1, n2, what);
  for (uint32_t i = 0; i < wg * 2; ++i) if (i < 3 || i == 8 || i == 9 || i == 16 || i == wg - 1 || i == wg) printf(" [%u]=%u", i, res[i]);
  printf("\n");
  kiln_vk_buffer_destroy(h, in); kiln_vk_buffer_destroy(h, out);
}

int main(int argc, char** argv) {
  kiln_vk_harness_t* h = NULL;
  if (!kiln_status_is_ok(kiln_vk_harness_create(&h))) return 1;
  printf("device %s\n", kiln_vk_harness_device_name(h));
  size_t words = 0; uint32_t* w = load(argc > 1 ? argv[1] : "loop_limit_probe.spv", &words);
  kiln_kernel_spirv_t spv = {"probe", w, words, 0, 0};
  for (uint32_t wg = 8; wg <= 64; wg *= 8) {
    run(h, &spv, wg, 0, 65534, 0, "one loop 65534");
    run(h, &spv, wg, 0, 65535, 0, "one loop 65535");
    run(h, &spv, wg, 0, 70000, 0, "one loop 70000");
    run(h, &spv, wg, 1, 40000, 40000, "two loops 40000+40000");
    run(h, &spv, wg, 1, 65535, 100, "two loops 65535+100");
    run(h, &spv, wg, 2, 300, 300, "nested 300x300");
    run(h, &spv, wg, 2, 200, 300, "nested 200x300");
    run(h, &spv, wg, 2, 100, 600, "nested 100x600");
    run(h, &spv, wg, 3, 0, 0, "constant 100000");
    run(h, &spv, wg, 4, 70000, 10, "lane0 70000 others 10");
    run(h, &spv, wg, 5, 70000, 0, "run-time 70000 x const 4");
    run(h, &spv, wg, 6, 40000, 0, "40000 x zero-trip inner");
    run(h, &spv, wg, 7, 5000, 0, "run-time 5000 x const 16");
    run(h, &spv, wg, 10, 30000, 1, "30000 x (1 x (0)): outer trips");
    run(h, &spv, wg, 10, 30000, 2, "30000 x (2 x (0)): outer trips");
    run(h, &spv, wg, 8, 5000, 0, "run-time 5000 x spec-const 16");
    run(h, &spv, wg, 9, 5000, 0, "gemm-like 5000 x spec 16x(4+4x4)");
  }
  printf("validation messages %u\n", kiln_vk_harness_message_count(h));
  kiln_vk_harness_destroy(h);
  return 0;
}
