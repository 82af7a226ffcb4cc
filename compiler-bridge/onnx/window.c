// Window geometry for Conv/ConvTranspose/pools (see window.h).
#include "window.h"

#include <string.h>

#include "kiln/base/size_math.h"

static kiln_status_t kiln_window_list(const kiln_graph_node_t* node,
                                      const char* name, size_t want,
                                      int64_t fallback, int64_t* values) {
  const int64_t* list = NULL;
  size_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_ints(node, name, &list, &count));
  if (!list) {
    for (size_t i = 0; i < want; ++i) values[i] = fallback;
    return kiln_ok_status();
  }
  if (count != want) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "node '%s' (op %s): %s has %zu values, expected "
                            "%zu",
                            node->name, node->op_type, name, count, want);
  }
  memcpy(values, list, want * sizeof(int64_t));
  return kiln_ok_status();
}

static kiln_status_t kiln_window_common(const kiln_graph_node_t* node,
                                        int32_t spatial, const int64_t* in,
                                        const int64_t* kernel,
                                        bool allow_dilations,
                                        kiln_window_t* w, const char** auto_pad) {
  memset(w, 0, sizeof(*w));
  if (spatial < 1 || spatial > KILN_WINDOW_MAX_SPATIAL) {
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                            "node '%s' (op %s): %d spatial dims; supported: "
                            "1 to %d",
                            node->name, node->op_type, (int)spatial,
                            KILN_WINDOW_MAX_SPATIAL);
  }
  w->spatial = spatial;
  memcpy(w->in, in, (size_t)spatial * sizeof(int64_t));
  int64_t from_attr[KILN_WINDOW_MAX_SPATIAL];
  const kiln_graph_attr_t* ks = kiln_graph_node_find_attr(node, "kernel_shape");
  if (ks || !kernel) {
    if (!ks) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "node '%s' (op %s): kernel_shape is required",
                              node->name, node->op_type);
    }
    KILN_RETURN_IF_ERROR(
        kiln_window_list(node, "kernel_shape", (size_t)spatial, 1, from_attr));
    for (int32_t i = 0; kernel && i < spatial; ++i) {
      if (from_attr[i] != kernel[i]) {
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "node '%s' (op %s): kernel_shape disagrees "
                                "with the weights",
                                node->name, node->op_type);
      }
    }
    kernel = from_attr;
  }
  memcpy(w->kernel, kernel, (size_t)spatial * sizeof(int64_t));
  KILN_RETURN_IF_ERROR(
      kiln_window_list(node, "strides", (size_t)spatial, 1, w->stride));
  if (allow_dilations) {
    KILN_RETURN_IF_ERROR(
        kiln_window_list(node, "dilations", (size_t)spatial, 1, w->dilation));
  } else {
    for (int32_t i = 0; i < spatial; ++i) w->dilation[i] = 1;
  }
  int64_t pads[2 * KILN_WINDOW_MAX_SPATIAL];
  KILN_RETURN_IF_ERROR(
      kiln_window_list(node, "pads", 2 * (size_t)spatial, 0, pads));
  for (int32_t i = 0; i < spatial; ++i) {
    w->pad_begin[i] = pads[i];
    w->pad_end[i] = pads[i + spatial];
    if (w->kernel[i] < 1 || w->stride[i] < 1 || w->dilation[i] < 1 ||
        pads[i] < 0 || pads[i + spatial] < 0 || w->kernel[i] > (1 << 20) ||
        w->stride[i] > (1 << 20) || w->dilation[i] > (1 << 20) ||
        pads[i] > (1 << 20) || pads[i + spatial] > (1 << 20)) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "node '%s' (op %s): kernel/stride/dilation must "
                              "be positive and pads non-negative (dim %d)",
                              node->name, node->op_type, (int)i);
    }
  }
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_string(node, "auto_pad", "NOTSET", auto_pad));
  if (strcmp(*auto_pad, "NOTSET") && strcmp(*auto_pad, "SAME_UPPER") &&
      strcmp(*auto_pad, "SAME_LOWER") && strcmp(*auto_pad, "VALID")) {
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                            "node '%s' (op %s): auto_pad='%s' is not "
                            "supported; supported: NOTSET, SAME_UPPER, "
                            "SAME_LOWER, VALID",
                            node->name, node->op_type, *auto_pad);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_window_resolve(const kiln_graph_node_t* node,
                                  int32_t spatial, const int64_t* in,
                                  const int64_t* kernel, bool allow_ceil,
                                  bool allow_dilations,
                                  kiln_window_t* w) {
  const char* auto_pad = "NOTSET";
  KILN_RETURN_IF_ERROR(kiln_window_common(node, spatial, in, kernel,
                                          allow_dilations, w, &auto_pad));
  int64_t ceil_mode = 0;
  if (allow_ceil) {
    KILN_RETURN_IF_ERROR(
        kiln_graph_node_attr_int(node, "ceil_mode", 0, &ceil_mode));
  }
  for (int32_t i = 0; i < spatial; ++i) {
    int64_t extent = (w->kernel[i] - 1) * w->dilation[i] + 1;
    if (strcmp(auto_pad, "SAME_UPPER") == 0 ||
        strcmp(auto_pad, "SAME_LOWER") == 0) {
      int64_t out = (w->in[i] + w->stride[i] - 1) / w->stride[i];
      int64_t total = (out - 1) * w->stride[i] + extent - w->in[i];
      if (total < 0) total = 0;
      bool upper = auto_pad[5] == 'U';
      w->pad_begin[i] = upper ? total / 2 : total - total / 2;
      w->pad_end[i] = total - w->pad_begin[i];
    } else if (strcmp(auto_pad, "VALID") == 0) {
      w->pad_begin[i] = w->pad_end[i] = 0;
    }
    int64_t span = w->in[i] + w->pad_begin[i] + w->pad_end[i] - extent;
    if (span < 0) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "node '%s' (op %s): window larger than the "
                              "padded input in dim %d",
                              node->name, node->op_type, (int)i);
    }
    int64_t out = ceil_mode ? (span + w->stride[i] - 1) / w->stride[i] + 1
                            : span / w->stride[i] + 1;
    // A ceil-mode window must start inside the input or its left padding.
    if (ceil_mode && (out - 1) * w->stride[i] >= w->in[i] + w->pad_begin[i]) {
      --out;
    }
    w->out[i] = out;
  }
  return kiln_ok_status();
}

kiln_status_t kiln_window_resolve_transpose(const kiln_graph_node_t* node,
                                            int32_t spatial, const int64_t* in,
                                            const int64_t* kernel,
                                            kiln_window_t* w) {
  const char* auto_pad = "NOTSET";
  KILN_RETURN_IF_ERROR(
      kiln_window_common(node, spatial, in, kernel, true, w, &auto_pad));
  int64_t output_padding[KILN_WINDOW_MAX_SPATIAL];
  KILN_RETURN_IF_ERROR(kiln_window_list(node, "output_padding",
                                        (size_t)spatial, 0, output_padding));
  const kiln_graph_attr_t* shape_attr =
      kiln_graph_node_find_attr(node, "output_shape");
  int64_t output_shape[KILN_WINDOW_MAX_SPATIAL];
  bool has_shape = false;
  if (shape_attr) {
    // output_shape may list all dims or only the spatial ones.
    const int64_t* list = NULL;
    size_t count = 0;
    KILN_RETURN_IF_ERROR(
        kiln_graph_node_attr_ints(node, "output_shape", &list, &count));
    if (count != (size_t)spatial && count != (size_t)spatial + 2) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "node '%s' (op %s): output_shape has %zu values",
                              node->name, node->op_type, count);
    }
    memcpy(output_shape, list + (count - (size_t)spatial),
           (size_t)spatial * sizeof(int64_t));
    has_shape = true;
  }
  bool same = strcmp(auto_pad, "SAME_UPPER") == 0 ||
              strcmp(auto_pad, "SAME_LOWER") == 0;
  for (int32_t i = 0; i < spatial; ++i) {
    if (output_padding[i] < 0 || output_padding[i] >= (1 << 20)) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "node '%s' (op %s): bad output_padding",
                              node->name, node->op_type);
    }
    int64_t extent = (w->kernel[i] - 1) * w->dilation[i] + 1;
    int64_t full = w->stride[i] * (w->in[i] - 1) + output_padding[i] + extent;
    if (has_shape || same) {
      int64_t target = has_shape ? output_shape[i] : w->in[i] * w->stride[i];
      int64_t total = full - target;
      if (total < -(1 << 20)) {
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "node '%s' (op %s): output_shape far larger than "
                                "the full transposed convolution",
                                node->name, node->op_type);
      }
      // As ONNX's reference, with Python's floor division: an output_shape
      // past the full result (total < 0) gives negative pads, i.e. output
      // positions no input reaches (zeros, plus bias).
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      bool upper = strcmp(auto_pad, "SAME_UPPER") == 0;
      w->pad_begin[i] = upper ? half : total - half;
      w->pad_end[i] = total - w->pad_begin[i];
    } else if (strcmp(auto_pad, "VALID") == 0) {
      w->pad_begin[i] = w->pad_end[i] = 0;
    }
    w->out[i] = full - w->pad_begin[i] - w->pad_end[i];
    if (w->out[i] < 0) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "node '%s' (op %s): negative output size",
                              node->name, node->op_type);
    }
  }
  return kiln_ok_status();
}

size_t kiln_window_out_count(const kiln_window_t* w) {
  size_t count = 1;
  for (int32_t i = 0; i < w->spatial; ++i) count *= (size_t)w->out[i];
  return count;
}

size_t kiln_window_kernel_count(const kiln_window_t* w) {
  size_t count = 1;
  for (int32_t i = 0; i < w->spatial; ++i) count *= (size_t)w->kernel[i];
  return count;
}

kiln_status_t kiln_window_table(const kiln_window_t* w,
                                kiln_allocator_t allocator,
                                int64_t** out_table) {
  *out_table = NULL;
  size_t outs = kiln_window_out_count(w);
  size_t kernels = kiln_window_kernel_count(w);
  size_t entries = 0;
  if (!kiln_size_mul(outs, kernels, &entries) || entries > ((size_t)1 << 31)) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "window table of %zu x %zu entries is too large",
                            outs, kernels);
  }
  int64_t* table = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_malloc(
      allocator, (entries ? entries : 1) * sizeof(int64_t), (void**)&table));
  int64_t o[KILN_WINDOW_MAX_SPATIAL] = {0};
  size_t e = 0;
  for (size_t oi = 0; oi < outs; ++oi) {
    int64_t k[KILN_WINDOW_MAX_SPATIAL] = {0};
    for (size_t ki = 0; ki < kernels; ++ki) {
      int64_t offset = 0;
      int64_t state = 0;  // 0 inside, PAD, or OUTSIDE
      for (int32_t d = 0; d < w->spatial; ++d) {
        int64_t pos = o[d] * w->stride[d] + k[d] * w->dilation[d] -
                      w->pad_begin[d];
        if (pos < 0 || pos >= w->in[d]) {
          bool beyond = pos >= w->in[d] + w->pad_end[d];
          if (beyond) state = KILN_WINDOW_OUTSIDE;
          else if (state == 0) state = KILN_WINDOW_PAD;
        }
        offset = offset * w->in[d] + pos;
      }
      table[e++] = state ? state : offset;
      for (int32_t d = w->spatial; d-- > 0;) {
        if (++k[d] < w->kernel[d]) break;
        k[d] = 0;
      }
    }
    for (int32_t d = w->spatial; d-- > 0;) {
      if (++o[d] < w->out[d]) break;
      o[d] = 0;
    }
  }
  *out_table = table;
  return kiln_ok_status();
}
