// Push constants of conv2d, depthwise_conv2d and conv_transpose2d.
// Mirrors kiln_kernel_conv2d_params_t (kernels_abi.h).
layout(push_constant) uniform Params {
  uint batch, in_channels, in_height, in_width;
  uint out_channels, out_height, out_width, groups;
  uint kernel_h, kernel_w, stride_h, stride_w;
  uint pad_top, pad_left, dilation_h, dilation_w;
  float alpha, beta;
} p;
