// Push constants of conv2d, depthwise_conv2d and conv_transpose2d.
// Mirrors kiln_kernel_conv2d_params_t (kernels_abi.h).
layout(push_constant) uniform Params {
  uint batch, in_channels, in_height, in_width;
  uint out_channels, out_height, out_width, groups;
  uint kernel_h, kernel_w, stride_h, stride_w;
  uint pad_top, pad_left, dilation_h, dilation_w;
  float alpha, beta;
  uint ci_begin, ci_end, kh_begin, kh_end;
} p;

// The reduction this dispatch sums (kernels_abi.h): input channels
// [p.ci_begin, kiln_ci_end(cig)) of the group, kernel rows [p.kh_begin,
// kiln_kh_end()). A split reduction keeps each invocation's loop passes
// under llvmpipe's limit (kernels_loops.h).
uint kiln_ci_end(uint cig) { return p.ci_end == 0 ? cig : min(p.ci_end, cig); }
uint kiln_kh_end() { return p.kh_end == 0 ? p.kernel_h : min(p.kh_end, p.kernel_h); }
