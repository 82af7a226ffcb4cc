#!/usr/bin/python3
"""Writes node tests for the op versions of opsets 18-22 and for model-local
functions, in libonnx-testdata's layout (<out>/test_*/model.onnx,
test_data_set_0/input_N.pb, output_N.pb), offline with Debian's onnx 1.12:
its helper builds models for any opset number; check_model is skipped (it
knows opsets up to 17). Expected outputs come from numpy (float64, rounded to
float32), independently of kiln. Tests named test_refused_* must be refused
(UNIMPLEMENTED) by kiln, never run.

With --upgrade MODELS_DIR it also writes opset-18/20/21 copies of
scripts/export_models.py's exports (MODELS_DIR/<name>_opsetNN), rewriting
each op whose form changed after opset 17 (Reduce* axes attribute -> input);
their reference stays the opset-17 original's PyTorch output.

Usage: make_opset_models.py [OUTDIR] [--stamp FILE] [--upgrade MODELS_DIR]
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(18)
DTYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
          np.dtype(np.int32): TensorProto.INT32, np.dtype(np.bool_): TensorProto.BOOL}
IR_VERSION = {6: 3, 9: 4, 10: 5, 18: 8, 19: 9, 20: 9, 21: 10, 22: 10}


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def f32(a):
    return np.asarray(a, dtype=np.float64).astype(np.float32)


def ints(*values):
    return np.array(values, dtype=np.int64)


def write(out_dir, name, nodes, inputs, outputs, initializers=(), opset=18, functions=(),
          extra_opsets=()):
    """inputs/outputs: lists of (name, array); initializers: (name, array)."""
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, DTYPES[a.dtype], a.shape) for n, a in inputs],
        [helper.make_tensor_value_info(n, DTYPES[a.dtype], a.shape) for n, a in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers])
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in extra_opsets]
    model = helper.make_model(graph, opset_imports=opsets, functions=list(functions))
    model.ir_version = IR_VERSION[opset]
    directory = os.path.join(out_dir, "test_" + name)
    data = os.path.join(directory, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(directory, "model.onnx"))
    for kind, tensors in (("input", inputs), ("output", outputs)):
        for i, (n, a) in enumerate(tensors):
            with open(os.path.join(data, "%s_%d.pb" % (kind, i)), "wb") as f:
                f.write(numpy_helper.from_array(np.array(a, order="C"), n).SerializeToString())


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, **attrs)


# ---- references --------------------------------------------------------------

def resize_linear_axis(x, axis, out_size, scale):
    """half_pixel linear interpolation along one axis (ONNX's formula)."""
    n = x.shape[axis]
    pos = (np.arange(out_size) + 0.5) / scale - 0.5
    pos = np.clip(pos, 0, n - 1)
    lo = np.floor(pos).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    w = pos - lo
    a = np.take(x, lo, axis=axis)
    b = np.take(x, hi, axis=axis)
    shape = [1] * x.ndim
    shape[axis] = out_size
    w = w.reshape(shape)
    return a * (1 - w) + b * w


def resize_nearest_axis(x, axis, out_size, scale):
    """asymmetric coordinates, floor nearest mode."""
    idx = np.floor(np.arange(out_size) / scale).astype(np.int64)
    return np.take(x, np.minimum(idx, x.shape[axis] - 1), axis=axis)


def avg_pool2d(x, k, stride, pads, dilation, include_pad):
    n, c, h, w = x.shape
    hp, wp = h + pads[0] + pads[2], w + pads[1] + pads[3]
    xp = np.zeros((n, c, hp, wp))
    inside = np.zeros((hp, wp))
    xp[:, :, pads[0]:pads[0] + h, pads[1]:pads[1] + w] = x
    inside[pads[0]:pads[0] + h, pads[1]:pads[1] + w] = 1
    eh, ew = dilation[0] * (k[0] - 1) + 1, dilation[1] * (k[1] - 1) + 1
    oh, ow = (hp - eh) // stride[0] + 1, (wp - ew) // stride[1] + 1
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            rows = i * stride[0] + dilation[0] * np.arange(k[0])
            cols = j * stride[1] + dilation[1] * np.arange(k[1])
            win = xp[:, :, rows][:, :, :, cols]
            count = k[0] * k[1] if include_pad else inside[np.ix_(rows, cols)].sum()
            y[:, :, i, j] = win.sum(axis=(2, 3)) / count
    return y


def gelu(x, tanh=False):
    x = x.astype(np.float64)
    if tanh:
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))


# ---- the version changes ---------------------------------------------------------

def reduce_tests(out):
    x = rand(2, 3, 4)
    x64 = x.astype(np.float64)
    cases = [
        ("ReduceMean", np.mean, [1], 1), ("ReduceSum", np.sum, [-1], 0),
        ("ReduceMax", np.max, [1, 2], 1), ("ReduceMin", np.min, [0], 0),
        ("ReduceProd", np.prod, [2], 1),
    ]
    for op, fn, axes, keep in cases:
        y = f32(fn(x64, axis=tuple(axes), keepdims=bool(keep)))
        write(out, "opset18_%s_axes_input" % op.lower(),
              [node(op, ["x", "axes"], ["y"], keepdims=keep)], [("x", x)], [("y", y)],
              [("axes", ints(*axes))])
    # No axes: everything; an empty axes tensor likewise; noop keeps x.
    write(out, "opset18_reducemin_all", [node("ReduceMin", ["x"], ["y"])], [("x", x)],
          [("y", f32(np.min(x64, keepdims=True)))])
    write(out, "opset18_reducesum_empty_axes", [node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
          [("x", x)], [("y", f32(np.sum(x64)))], [("axes", np.zeros((0,), np.int64))])
    write(out, "opset18_reducemean_noop", [node("ReduceMean", ["x"], ["y"], noop_with_empty_axes=1)],
          [("x", x)], [("y", x)])
    write(out, "opset20_reducemax_axes_input", [node("ReduceMax", ["x", "axes"], ["y"], keepdims=0)],
          [("x", x)], [("y", f32(np.max(x64, axis=0)))], [("axes", ints(0))], opset=20)
    # Opset-18 reductions have no axes attribute.
    write(out, "refused_opset18_reducemean_axes_attribute",
          [node("ReduceMean", ["x"], ["y"], axes=[1])], [("x", x)],
          [("y", f32(np.mean(x64, axis=1, keepdims=True)))])


def reduce_family_tests(out):
    """ReduceL1/L2/LogSum/LogSumExp/SumSquare (issue 13), axes as input."""
    x = rand(2, 3, 4)
    x64 = x.astype(np.float64)
    pos = np.abs(x) + 0.1

    def lse(a, axis, keep):
        m = np.max(a, axis=axis, keepdims=True)
        y = m + np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True))
        return y if keep else np.squeeze(y, axis=axis)
    cases = [
        ("ReduceL1", x, lambda a, ax, k: np.sum(np.abs(a), axis=ax, keepdims=k), [1], 1),
        ("ReduceL2", x, lambda a, ax, k: np.sqrt(np.sum(a * a, axis=ax, keepdims=k)), [-1], 0),
        ("ReduceSumSquare", x, lambda a, ax, k: np.sum(a * a, axis=ax, keepdims=k), [0, 1], 1),
        ("ReduceLogSum", pos, lambda a, ax, k: np.log(np.sum(a, axis=ax, keepdims=k)), [2], 0),
        # Values near 150: exp overflows float32 unless shifted by the max.
        ("ReduceLogSumExp", x * 50, lse, [1], 1),
    ]
    for op, a, fn, axes, keep in cases:
        y = f32(fn(a.astype(np.float64), tuple(axes), bool(keep)))
        write(out, "opset18_%s_axes_input" % op.lower(),
              [node(op, ["x", "axes"], ["y"], keepdims=keep)], [("x", a)], [("y", y)],
              [("axes", ints(*axes))])
    # Non-adjacent axes (one reduction per run) and all axes.
    write(out, "opset18_reducel2_split_axes", [node("ReduceL2", ["x", "axes"], ["y"], keepdims=0)],
          [("x", x)], [("y", f32(np.sqrt(np.sum(x64 * x64, axis=(0, 2)))))], [("axes", ints(0, 2))])
    write(out, "opset18_reducelogsumexp_all", [node("ReduceLogSumExp", ["x"], ["y"], keepdims=0)],
          [("x", x * 50)], [("y", f32(lse(x64 * 50, None, False)))])
    write(out, "opset18_reducelogsum_split_axes", [node("ReduceLogSum", ["x", "axes"], ["y"])],
          [("x", pos)], [("y", f32(np.log(np.sum(pos.astype(np.float64), axis=(0, 2),
                                                 keepdims=True))))], [("axes", ints(0, 2))])
    write(out, "refused_opset18_reducel1_noop_empty_axes",
          [node("ReduceL1", ["x"], ["y"], noop_with_empty_axes=1)], [("x", x)], [("y", x)])
    xm = rand(3, 5) * 4
    xm64 = xm.astype(np.float64)
    write(out, "opset18_mish", [node("Mish", ["x"], ["y"])], [("x", xm)],
          [("y", f32(xm64 * np.tanh(np.log1p(np.exp(xm64)))))])


def group_norm_tests(out):
    """GroupNormalization: scale/bias per group (opset 18) or per channel (21)."""
    def group_norm(x, groups, scale, bias, eps, per_channel):
        n, c = x.shape[:2]
        xr = x.astype(np.float64).reshape(n, groups, -1)
        y = (xr - xr.mean(-1, keepdims=True)) / np.sqrt(xr.var(-1, keepdims=True) + eps)
        y = y.reshape(x.shape)
        s, b = (scale, bias) if per_channel else (np.repeat(scale, c // groups),
                                                  np.repeat(bias, c // groups))
        shape = (1, c) + (1,) * (x.ndim - 2)
        return f32(y * s.astype(np.float64).reshape(shape) + b.astype(np.float64).reshape(shape))
    for name, shape, groups, opset in (("opset18_groupnorm", (2, 4, 3, 3), 2, 18),
                                       ("opset21_groupnorm_one_group", (2, 6, 5), 1, 21),
                                       ("opset21_groupnorm_groups_equal_channels",
                                        (1, 4, 2, 3, 2), 4, 21),
                                       ("opset21_groupnorm_two_groups", (2, 6, 4, 4), 2, 21)):
        x = rand(*shape) * 2 + 0.5
        count = shape[1] if opset >= 21 else groups
        scale, bias = rand(count), rand(count)
        write(out, name, [node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=groups,
                               epsilon=1e-3)],
              [("x", x)], [("y", group_norm(x, groups, scale, bias, 1e-3, opset >= 21))],
              [("s", scale), ("b", bias)], opset=opset)
    x = rand(1, 6, 4)
    write(out, "refused_opset21_groupnorm_not_dividing",
          [node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=4)], [("x", x)],
          [("y", x)], [("s", rand(6)), ("b", rand(6))], opset=21)


def center_crop_pad_tests(out):
    """CenterCropPad-18: crop or zero-pad around the centre."""
    def reference(x, shape, axes):
        y = x
        for a, target in zip(axes, shape):
            dim = y.shape[a]
            if target < dim:
                start = (dim - target) // 2
                y = np.take(y, np.arange(start, start + target), axis=a)
            elif target > dim:
                before = (target - dim) // 2
                widths = [(0, 0)] * y.ndim
                widths[a] = (before, target - dim - before)
                y = np.pad(y, widths)
        return y
    x = rand(3, 7, 6)
    write(out, "opset18_centercroppad_crop_and_pad", [node("CenterCropPad", ["x", "s"], ["y"])],
          [("x", x)], [("y", reference(x, [3, 4, 9], [0, 1, 2]))], [("s", ints(3, 4, 9))])
    write(out, "opset18_centercroppad_axes", [node("CenterCropPad", ["x", "s"], ["y"],
                                                   axes=[-1, 1])],
          [("x", x)], [("y", reference(x, [3, 10], [2, 1]))], [("s", ints(3, 10))])


def legacy_tests(out):
    """Op versions before opset 11 whose attributes became inputs (Clip-6,
    Pad-2, Slice-1) and Resize-10, mapped onto the current forms."""
    x = rand(3, 4) * 3
    x64 = x.astype(np.float64)
    write(out, "opset6_clip_attributes", [node("Clip", ["x"], ["y"], min=-1.0, max=1.5)],
          [("x", x)], [("y", f32(np.clip(x64, -1.0, 1.5)))], opset=6)
    write(out, "opset6_clip_min_only", [node("Clip", ["x"], ["y"], min=0.25)],
          [("x", x)], [("y", f32(np.maximum(x64, 0.25)))], opset=6)
    x4 = rand(1, 2, 3, 4)
    write(out, "opset9_pad_constant_value",
          [node("Pad", ["x"], ["y"], pads=[0, 0, 1, 2, 0, 1, 0, 1], value=1.5)],
          [("x", x4)], [("y", np.pad(x4, ((0, 0), (0, 1), (1, 0), (2, 1)), constant_values=1.5))],
          opset=9)
    write(out, "opset9_pad_reflect",
          [node("Pad", ["x"], ["y"], mode="reflect", pads=[0, 0, 2, 1, 0, 0, 1, 3])],
          [("x", x4)], [("y", np.pad(x4, ((0, 0), (0, 0), (2, 1), (1, 3)), mode="reflect"))],
          opset=9)
    x3 = rand(3, 4, 5)
    write(out, "opset9_slice_axes", [node("Slice", ["x"], ["y"], starts=[1, 0], ends=[3, -1],
                                           axes=[0, 2])],
          [("x", x3)], [("y", x3[1:3, :, 0:-1])], opset=9)
    write(out, "opset9_slice_no_axes", [node("Slice", ["x"], ["y"], starts=[0, 1], ends=[2, 1000])],
          [("x", x3)], [("y", x3[0:2, 1:])], opset=9)
    xr = rand(1, 2, 3, 4)
    xr64 = xr.astype(np.float64)
    y = resize_nearest_axis(resize_nearest_axis(xr64, 2, 6, 2.0), 3, 12, 3.0)
    write(out, "opset10_resize_nearest", [node("Resize", ["x", "scales"], ["y"], mode="nearest")],
          [("x", xr)], [("y", f32(y))], [("scales", np.array([1, 1, 2, 3], np.float32))], opset=10)

    def linear_asymmetric(a, axis, out_size, scale):
        n = a.shape[axis]
        p = np.clip(np.arange(out_size) / scale, 0, n - 1)
        lo = np.floor(p).astype(np.int64)
        hi = np.minimum(lo + 1, n - 1)
        shape = [1] * a.ndim
        shape[axis] = out_size
        w = (p - lo).reshape(shape)
        return np.take(a, lo, axis=axis) * (1 - w) + np.take(a, hi, axis=axis) * w
    y = linear_asymmetric(linear_asymmetric(xr64, 2, 6, 2.0), 3, 10, 2.5)
    write(out, "opset10_resize_linear", [node("Resize", ["x", "scales"], ["y"], mode="linear")],
          [("x", xr)], [("y", f32(y))], [("scales", np.array([1, 1, 2, 2.5], np.float32))],
          opset=10)
    write(out, "refused_opset10_resize_downsample",
          [node("Resize", ["x", "scales"], ["y"], mode="nearest")],
          [("x", xr)], [("y", xr[:, :, :1, :2])], [("scales", np.array([1, 1, 0.5, 0.5], np.float32))],
          opset=10)
    # The attributes are inputs from opset 11 on.
    write(out, "refused_opset18_clip_attributes", [node("Clip", ["x"], ["y"], min=-1.0, max=1.5)],
          [("x", x)], [("y", f32(np.clip(x64, -1.0, 1.5)))], opset=18)


def split_tests(out):
    x = rand(7, 4)
    write(out, "opset18_split_num_outputs_uneven",
          [node("Split", ["x"], ["a", "b", "c"], axis=0, num_outputs=3)], [("x", x)],
          [("a", x[:3]), ("b", x[3:6]), ("c", x[6:])])
    y = rand(2, 6)
    write(out, "opset18_split_num_outputs_even",
          [node("Split", ["x"], ["a", "b"], axis=-1, num_outputs=2)], [("x", y)],
          [("a", y[:, :3]), ("b", y[:, 3:])])
    write(out, "opset18_split_sizes_input", [node("Split", ["x", "s"], ["a", "b"], axis=1)],
          [("x", y)], [("a", y[:, :2]), ("b", y[:, 2:])], [("s", ints(2, 4))])


def pad_tests(out):
    x = rand(2, 3, 4)
    y = np.pad(x, ((0, 0), (1, 2), (0, 1)), constant_values=0.5)
    write(out, "opset18_pad_axes", [node("Pad", ["x", "pads", "value", "axes"], ["y"])],
          [("x", x)], [("y", y)],
          [("pads", ints(1, 0, 2, 1)), ("value", np.array(0.5, np.float32)), ("axes", ints(1, 2))])
    y = np.pad(x, ((0, 0), (0, 0), (2, 1)), mode="edge")
    write(out, "opset19_pad_axes_edge",
          [node("Pad", ["x", "pads", "", "axes"], ["y"], mode="edge")], [("x", x)], [("y", y)],
          [("pads", ints(2, 1)), ("axes", ints(-1))], opset=19)
    y = np.pad(x, ((0, 0), (1, 1), (2, 2)), mode="reflect")
    write(out, "opset21_pad_reflect", [node("Pad", ["x", "pads"], ["y"], mode="reflect")],
          [("x", x)], [("y", y)], [("pads", ints(0, 1, 2, 0, 1, 2))], opset=21)
    write(out, "refused_opset19_pad_wrap", [node("Pad", ["x", "pads"], ["y"], mode="wrap")],
          [("x", x)], [("y", np.pad(x, ((0, 0), (1, 1), (0, 0)), mode="wrap"))],
          [("pads", ints(0, 1, 0, 0, 1, 0))], opset=19)


def resize_tests(out):
    x = rand(1, 2, 3, 4)
    x64 = x.astype(np.float64)
    y = resize_nearest_axis(resize_nearest_axis(x64, 2, 6, 2.0), 3, 8, 2.0)
    write(out, "opset18_resize_axes_scales_nearest",
          [node("Resize", ["x", "", "scales"], ["y"], axes=[2, 3], mode="nearest",
                coordinate_transformation_mode="asymmetric", nearest_mode="floor")],
          [("x", x)], [("y", f32(y))], [("scales", np.array([2, 2], np.float32))])
    y = resize_linear_axis(x64, 3, 10, 10 / 4)
    write(out, "opset18_resize_axes_sizes_linear",
          [node("Resize", ["x", "", "", "sizes"], ["y"], axes=[-1], mode="linear")],
          [("x", x)], [("y", f32(y))], [("sizes", ints(10))])
    # antialias changes nothing when upsampling.
    y = resize_linear_axis(resize_linear_axis(x64, 2, 6, 2.0), 3, 8, 2.0)
    write(out, "opset19_resize_antialias_upsample",
          [node("Resize", ["x", "", "scales"], ["y"], mode="linear", antialias=1)],
          [("x", x)], [("y", f32(y))], [("scales", np.array([1, 1, 2, 2], np.float32))], opset=19)
    write(out, "refused_opset18_resize_antialias_downsample",
          [node("Resize", ["x", "", "scales"], ["y"], mode="linear", antialias=1)],
          [("x", x)], [("y", f32(x64[:, :, :1, :2]))],
          [("scales", np.array([1, 1, 0.5, 0.5], np.float32))])
    write(out, "refused_opset18_resize_keep_aspect_ratio",
          [node("Resize", ["x", "", "", "sizes"], ["y"], keep_aspect_ratio_policy="not_larger")],
          [("x", x)], [("y", x)], [("sizes", ints(1, 2, 3, 4))])
    write(out, "refused_opset19_resize_half_pixel_symmetric",
          [node("Resize", ["x", "", "scales"], ["y"], mode="linear",
                coordinate_transformation_mode="half_pixel_symmetric")],
          [("x", x)], [("y", f32(y))], [("scales", np.array([1, 1, 2, 2], np.float32))], opset=19)


def scatter_tests(out):
    data = rand(4, 3)
    indices = ints(1, 3, 1).reshape(3, 1)
    updates = rand(3, 3)
    for reduction, fn in (("max", np.maximum), ("min", np.minimum)):
        y = data.copy()
        for t in range(3):
            y[indices[t, 0]] = fn(y[indices[t, 0]], updates[t])
        write(out, "opset18_scatternd_%s" % reduction,
              [node("ScatterND", ["d", "i", "u"], ["y"], reduction=reduction)],
              [("d", data), ("u", updates)], [("y", y)], [("i", indices)])


def pool_tests(out):
    x = rand(1, 2, 7, 7)
    for include in (0, 1):
        y = avg_pool2d(x.astype(np.float64), (3, 3), (1, 1), (1, 1, 1, 1), (2, 2), include)
        write(out, "opset19_averagepool_dilations_pad%d" % include,
              [node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                    dilations=[2, 2], count_include_pad=include)],
              [("x", x)], [("y", f32(y))], opset=19)
    y = avg_pool2d(x.astype(np.float64), (2, 2), (2, 2), (0, 0, 0, 0), (1, 1), 0)
    write(out, "opset22_averagepool", [node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2],
                                            strides=[2, 2])],
          [("x", x)], [("y", f32(y))], opset=22)


def cast_tests(out):
    x = (rand(3, 4) * 10).astype(np.float32)
    write(out, "opset19_cast_saturate", [node("Cast", ["x"], ["y"], to=TensorProto.INT64,
                                              saturate=1)],
          [("x", x)], [("y", np.trunc(x).astype(np.int64))], opset=19)
    t = ints(3, -2, 7, 0).reshape(2, 2)
    write(out, "opset21_castlike_to_float", [node("CastLike", ["t", "like"], ["y"])],
          [("t", t)], [("y", t.astype(np.float32))], [("like", np.zeros((1,), np.float32))],
          opset=21)
    write(out, "opset19_castlike_to_int", [node("CastLike", ["x", "like"], ["y"])],
          [("x", x)], [("y", np.trunc(x).astype(np.int64))], [("like", ints(0))], opset=19)


def bump_tests(out):
    """Ops whose 19-22 versions only add dtypes kiln does not hold."""
    x = rand(2, 3, 4)
    nodes = [node("Reshape", ["x", "shape"], ["r"]), node("Transpose", ["r"], ["t"], perm=[1, 0]),
             node("Unsqueeze", ["t", "zero"], ["u"]), node("Squeeze", ["u", "zero"], ["s"]),
             node("Flatten", ["s"], ["f"], axis=1), node("Identity", ["f"], ["i"]),
             node("Shape", ["i"], ["shp"]), node("ConstantOfShape", ["shp"], ["ones"],
                                                  value=numpy_helper.from_array(
                                                      np.ones((1,), np.float32))),
             node("Constant", [], ["two"], value=numpy_helper.from_array(np.array(2, np.float32))),
             node("Mul", ["ones", "two"], ["twos"]), node("Add", ["i", "twos"], ["y"])]
    y = x.reshape(6, 4).T + 2
    for opset in (19, 21, 22):
        write(out, "opset%d_shape_ops" % opset, nodes, [("x", x)], [("y", y)],
              [("shape", ints(6, 4)), ("zero", ints(0))], opset=opset)
    # Equal-19 on run-time data (the reference runs it; the GPU refuses).
    write(out, "opset19_equal_where", [node("Equal", ["x", "c"], ["eq"]),
                                       node("Where", ["eq", "x", "c"], ["y"])],
          [("x", x)], [("y", np.where(x == x[0], x, x[0]))], [("c", x[0])], opset=19)
    for approximate in ("none", "tanh"):
        write(out, "opset20_gelu_%s" % approximate,
              [node("Gelu", ["x"], ["y"], approximate=approximate)], [("x", x)],
              [("y", f32(gelu(x, approximate == "tanh")))], opset=20)
    # A small CNN at opset 22 (Conv, MaxPool, ... versions with bfloat16).
    img = rand(1, 3, 8, 8)
    w = rand(4, 3, 3, 3) * 0.3
    b = rand(4)
    conv = np.zeros((1, 4, 8, 8))
    pad = np.pad(img.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    for i in range(8):
        for j in range(8):
            conv[0, :, i, j] = np.tensordot(w, pad[0, :, i:i + 3, j:j + 3], axes=3) + b
    relu = np.maximum(conv, 0)
    pooled = relu.reshape(1, 4, 4, 2, 4, 2).max(axis=(3, 5))
    gap = pooled.mean(axis=(2, 3))
    fc = rand(4, 5)
    write(out, "opset22_small_cnn",
          [node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
           node("Relu", ["c"], ["r"]),
           node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
           node("GlobalAveragePool", ["p"], ["g"]), node("Flatten", ["g"], ["f"]),
           node("MatMul", ["f", "fc"], ["y"])],
          [("x", img)], [("y", f32(gap @ fc))], [("w", w), ("b", b), ("fc", fc)], opset=22)


# ---- model-local functions --------------------------------------------------------

def with_attribute_default(function, name, value):
    """Appends FunctionProto.attribute_proto (field 11, IR 9; newer than onnx
    1.12's proto) as raw bytes: the default of attribute `name`."""
    attr = helper.make_attribute(name, value).SerializeToString()
    length = len(attr)
    varint = bytearray()
    while True:
        byte = length & 0x7F
        length >>= 7
        varint.append(byte | (0x80 if length else 0))
        if not length:
            break
    raw = function.SerializeToString() + bytes([11 << 3 | 2]) + bytes(varint) + attr
    result = onnx.FunctionProto()
    result.ParseFromString(raw)
    return result


def function_tests(out):
    domain = "pkg.onnxscript.torch_lib"
    opsets = [helper.make_opsetid("", 18)]
    # scaled_leaky(x; alpha, scale) = LeakyRelu(x, alpha) * scale, with its
    # `alpha` referenced from the call and a default for it.
    alpha = helper.make_attribute("alpha", 0.0)
    alpha.ref_attr_name = "alpha"
    leaky = helper.make_node("LeakyRelu", ["x"], ["l"])
    leaky.attribute.append(alpha)
    body = [leaky, node("Mul", ["l", "scale"], ["y"])]
    scaled_leaky = helper.make_function(domain, "scaled_leaky", ["x", "scale"], ["y"], body,
                                        opsets, attributes=["alpha"])
    scaled_leaky = with_attribute_default(scaled_leaky, "alpha", 0.25)
    # outer(x) = scaled_leaky(x, 2; alpha=0.1) + scaled_leaky(x, 2) (default 0.25),
    # a nested call with internal names that collide with the caller's.
    inner1 = helper.make_node("scaled_leaky", ["x", "two"], ["l"], domain=domain, alpha=0.1)
    inner2 = helper.make_node("scaled_leaky", ["x", "two"], ["y"], domain=domain)
    outer = helper.make_function(
        "com.microsoft", "outer", ["x"], ["out"],
        [node("Constant", [], ["two"], value=numpy_helper.from_array(np.array(2, np.float32))),
         inner1, inner2, node("Add", ["l", "y"], ["out"])], opsets + [helper.make_opsetid(domain, 1)])
    x = rand(3, 5)
    x64 = x.astype(np.float64)

    def leaky_ref(a):
        return np.where(x64 >= 0, x64, a * x64)

    expected = f32(2 * leaky_ref(0.1) + 2 * leaky_ref(0.25))
    write(out, "opset18_function_nested",
          [helper.make_node("outer", ["x"], ["l"], domain="com.microsoft"),
           node("Mul", ["l", "half"], ["y"])],
          [("x", x)], [("y", f32(expected * 0.5))], [("half", np.array(0.5, np.float32))],
          functions=[scaled_leaky, outer], extra_opsets=[domain, "com.microsoft"])
    # A call to a function that is not in the model.
    write(out, "refused_opset18_unknown_domain_op",
          [helper.make_node("missing", ["x"], ["y"], domain=domain)], [("x", x)], [("y", x)],
          extra_opsets=[domain])
    # Recursion: bounded, refused.
    loop = helper.make_function(domain, "forever", ["x"], ["y"],
                                [helper.make_node("forever", ["x"], ["y"], domain=domain)],
                                opsets + [helper.make_opsetid(domain, 1)])
    write(out, "refused_opset18_recursive_function",
          [helper.make_node("forever", ["x"], ["y"], domain=domain)], [("x", x)], [("y", x)],
          functions=[loop], extra_opsets=[domain])


# ---- upgraded real exports ---------------------------------------------------------

def upgrade(model, opset):
    """Rewrites an opset-17 model to `opset`: the changes kiln's exports meet."""
    graph = model.graph
    for n in graph.node:
        if n.op_type.startswith("Reduce") and n.op_type != "ReduceSum":
            axes = [a for a in n.attribute if a.name == "axes"]
            if axes:
                name = n.name + "_axes_kiln18"
                graph.initializer.append(numpy_helper.from_array(
                    np.array(list(axes[0].ints), np.int64), name))
                n.attribute.remove(axes[0])
                n.input.append(name)
        if n.op_type == "Split" and len(n.input) < 2 and not any(a.name == "split"
                                                                   for a in n.attribute):
            n.attribute.append(helper.make_attribute("num_outputs", len(n.output)))
    del model.opset_import[:]
    model.opset_import.append(helper.make_opsetid("", opset))
    model.ir_version = IR_VERSION[opset]
    return model


def upgrade_models(models_dir):
    names = ("mobilenet_v2", "transformer_encoder", "mlp_softmax", "swin_small")
    for name in names:
        source = os.path.join(models_dir, name)
        model = onnx.load(os.path.join(source, "model.onnx"))
        if any(o.domain in ("", "ai.onnx") and o.version < 13 for o in model.opset_import):
            continue  # Split/Squeeze forms before 13 would need more rewriting
        for opset in (18, 20, 21):
            target = os.path.join(models_dir, "%s_opset%d" % (name, opset))
            os.makedirs(target, exist_ok=True)
            copy = onnx.ModelProto()
            copy.CopyFrom(model)
            onnx.save(upgrade(copy, opset), os.path.join(target, "model.onnx"))
            for f in os.listdir(source):
                if f.endswith(".pb"):
                    shutil.copy(os.path.join(source, f), os.path.join(target, f))


def main():
    args = sys.argv[1:]
    stamp = None
    models_dir = None
    if "--stamp" in args:
        i = args.index("--stamp")
        stamp = args[i + 1]
        del args[i:i + 2]
    if "--upgrade" in args:
        i = args.index("--upgrade")
        models_dir = args[i + 1]
        del args[i:i + 2]
    if args:
        out = args[0]
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        for make in (reduce_tests, reduce_family_tests, group_norm_tests, center_crop_pad_tests, legacy_tests, split_tests, pad_tests, resize_tests, scatter_tests,
                     pool_tests, cast_tests, bump_tests, function_tests):
            make(out)
    if models_dir:
        upgrade_models(models_dir)
    if stamp:
        with open(stamp, "w") as f:
            f.write("ok\n")


if __name__ == "__main__":
    main()
