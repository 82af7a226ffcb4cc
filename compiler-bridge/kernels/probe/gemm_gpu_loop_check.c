// gemm.comp (the GPU variant, hopper config) on lavapipe at k around the
// loop-pass model's limit: checks the model's claim for the tiled kernel.
// Build against tests/spirv/gpu/vk_harness.c, volk_impl.c and the kernels
// and base libraries of a build (see the kernels README).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vk_harness.h"
#include "kiln/compiler/kernels_loops.h"
int main(void) {
  kiln_vk_harness_t* h = NULL;
  if (!kiln_status_is_ok(kiln_vk_harness_create(&h))) return 1;
  kiln_kernel_arch_caps_t caps;
  kiln_kernel_arch_caps_for_arch("hopper", &caps);
  caps.max_shared_memory_bytes = 32768;  // lavapipe's
  kiln_kernel_config_t cfg;
  if (!kiln_status_is_ok(kiln_kernel_config_select(KILN_KERNEL_GEMM, &caps, KILN_KERNEL_STORAGE_FP32, &cfg))) return 2;
  kiln_kernel_spirv_t spv;
  if (!kiln_status_is_ok(kiln_kernel_get_spirv(KILN_KERNEL_GEMM, cfg.variant, &spv))) return 3;
  const uint32_t ks[] = {60000, 80000, 88000, 96000, 120000};
  for (int t = 0; t < 5; ++t) {
    uint32_t m = 1, n = 1, k = ks[t];
    float* a = malloc(k * 4); float* b = malloc(k * 4);
    for (uint32_t i = 0; i < k; ++i) { a[i] = 1.0f; b[i] = 1.0f; }
    kiln_kernel_gemm_params_t p; memset(&p, 0, sizeof(p));
    p.m = m, p.n = n, p.k = k, p.batch = 1, p.a_row_stride = k, p.a_col_stride = 1;
    p.b_row_stride = n, p.b_col_stride = 1, p.c_row_stride = n, p.scale = 1.0f;
    uint32_t grid[3]; kiln_kernel_grid_gemm(&cfg, &p, grid);
    uint64_t passes = 0; kiln_kernel_loop_passes(&cfg, &p, grid, &passes);
    kiln_vk_buffer_t *ba, *bb, *bc;
    kiln_vk_buffer_create(h, k * 4, a, &ba); kiln_vk_buffer_create(h, k * 4, b, &bb);
    kiln_vk_buffer_create(h, 16, NULL, &bc);
    kiln_vk_buffer_t* bufs[5] = {ba, bb, ba, ba, bc};
    kiln_status_t st = kiln_vk_harness_dispatch(h, &spv, &cfg, &p, sizeof(p), bufs, 5, grid);
    float c = -1; kiln_vk_buffer_read(h, bc, &c, 4);
    printf("gemm GPU variant wg %ux%u k %u: model %llu passes (%s budget), result %.0f (%s)%s\n",
           cfg.workgroup_size[0], cfg.workgroup_size[1], k, (unsigned long long)passes,
           passes <= KILN_KERNEL_LOOP_PASS_BUDGET ? "within" : "over", c,
           c == (float)k ? "right" : "WRONG", kiln_status_is_ok(st) ? "" : " dispatch failed");
    kiln_vk_buffer_destroy(h, ba); kiln_vk_buffer_destroy(h, bb); kiln_vk_buffer_destroy(h, bc);
    free(a); free(b);
  }
  printf("validation messages %u\n", kiln_vk_harness_message_count(h));
  kiln_vk_harness_destroy(h);
  return 0;
}
