#!/usr/bin/python3
"""Writes kiln's own ONNX node tests, in libonnx-testdata's layout
(<out>/test_*/model.onnx, test_data_set_0/input_N.pb, output_N.pb), for
float32 forms the Debian test data lacks (its Einsum tests are float64) and
for what real exported models contain: Einsum as attention writes it, Mod,
ScatterND, 1-D Conv/pools/ConvTranspose, training-mode Dropout with ratio 0,
MatMul followed by a batched constant Add. Expected outputs come from numpy
(float64, rounded to float32), independently of kiln.

Usage: export_node_tests.py OUTDIR [--stamp FILE]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(7)
DTYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
          np.dtype(np.int32): TensorProto.INT32,
          np.dtype(np.bool_): TensorProto.BOOL}


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def write(out_dir, name, nodes, inputs, outputs, initializers=(), opset=14):
    """inputs/outputs: lists of (name, array)."""
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, DTYPES[a.dtype], a.shape) for n, a in inputs],
        [helper.make_tensor_value_info(n, DTYPES[a.dtype], a.shape) for n, a in outputs],
        [numpy_helper.from_array(a, n) for n, a in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    directory = os.path.join(out_dir, "test_kiln_" + name)
    data = os.path.join(directory, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(model, os.path.join(directory, "model.onnx"))
    for kind, tensors in (("input", inputs), ("output", outputs)):
        for i, (n, a) in enumerate(tensors):
            with open(os.path.join(data, "%s_%d.pb" % (kind, i)), "wb") as f:
                f.write(numpy_helper.from_array(np.array(a, order="C"), n).SerializeToString())


def einsum(out_dir, name, equation, *arrays):
    names = ["x%d" % i for i in range(len(arrays))]
    y = np.einsum(equation.replace(" ", ""), *[a.astype(np.float64) for a in arrays])
    y = np.asarray(y, dtype=np.float32)
    write(out_dir, name, [helper.make_node("Einsum", names, ["y"], equation=equation)],
          list(zip(names, arrays)), [("y", y)], opset=12)


def conv1d(x, w, b, stride, pad, dilation, group):
    n, c, length = x.shape
    m, cg, k = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad[0], pad[1])))
    out = (xp.shape[2] - dilation * (k - 1) - 1) // stride + 1
    y = np.zeros((n, m, out))
    for o in range(m):
        g = o // (m // group)
        for t in range(out):
            window = xp[:, g * cg:(g + 1) * cg, t * stride:t * stride + dilation * (k - 1) + 1:dilation]
            y[:, o, t] = (window * w[o]).sum(axis=(1, 2)) + b[o]
    return y.astype(np.float32)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


ACTIVATIONS = {"Sigmoid": sigmoid, "Tanh": np.tanh, "Relu": lambda v: np.maximum(v, 0.0)}


def recurrent(kind, x, w, r, b, h0, c0, direction, layout, lbr, lens=None, clip=0.0,
              input_forget=0, acts=None, peep=None):
    """numpy LSTM (iofc) / GRU (zrh) / RNN following the ONNX operator spec.
    Past a row's length Y is zero and the state stays; a backwards row starts
    at its last valid step."""
    def cl(v):
        return np.clip(v, -clip, clip) if clip > 0 else v
    default = ["Tanh"] if kind == "RNN" else ["Sigmoid", "Tanh", "Tanh"]
    fa, ga, ha = [ACTIVATIONS[n] for n in (acts or default)] + [np.tanh] * (3 - len(acts or default))
    if layout == 1:
        x = x.transpose(1, 0, 2)
        h0 = None if h0 is None else h0.transpose(1, 0, 2)
    x, w, r = x.astype(np.float64), w.astype(np.float64), r.astype(np.float64)
    seq, batch, _ = x.shape
    dirs, gh, hidden = r.shape
    b = np.zeros((dirs, 2 * gh)) if b is None else b.astype(np.float64)
    y = np.zeros((seq, dirs, batch, hidden))
    yh, yc = np.zeros((dirs, batch, hidden)), np.zeros((dirs, batch, hidden))
    for d in range(dirs):
        h = np.zeros((batch, hidden)) if h0 is None else h0[d].astype(np.float64)
        c = np.zeros((batch, hidden)) if c0 is None else c0[d].astype(np.float64)
        wb, rb = b[d, :gh], b[d, gh:]
        backwards = d == 1 or direction == "reverse"
        length = np.full(batch, seq) if lens is None else np.asarray(lens)
        for step in range(seq):
            # Each batch row at its own time index (rows past their length keep h, c).
            live = step < length
            t = np.where(live, np.where(backwards, length - 1 - step, step), step)
            xt = x[t, np.arange(batch)]
            gx = xt @ w[d].T + wb
            if kind == "LSTM":
                g = gx + h @ r[d].T + rb
                gi, go, gf, gc = np.split(g, 4, axis=1)
                # Peepholes P[iof]: i and f see c_{t-1}, o sees c_t.
                pi, po, pf = (np.zeros(hidden),) * 3 if peep is None else \
                    np.split(peep[d].astype(np.float64), 3)
                i = fa(cl(gi + pi * c))
                fg = 1 - i if input_forget else fa(cl(gf + pf * c))
                c_new = fg * c + i * ga(cl(gc))
                h_new = fa(cl(go + po * c_new)) * ha(c_new)
            elif kind == "GRU":
                H = hidden
                z = fa(cl(gx[:, :H] + h @ r[d, :H].T + rb[:H]))
                rr = fa(cl(gx[:, H:2 * H] + h @ r[d, H:2 * H].T + rb[H:2 * H]))
                if lbr:
                    n = ga(cl(gx[:, 2 * H:] + rr * (h @ r[d, 2 * H:].T + rb[2 * H:])))
                else:
                    n = ga(cl(gx[:, 2 * H:] + (rr * h) @ r[d, 2 * H:].T + rb[2 * H:]))
                h_new = (1 - z) * n + z * h
                c_new = c
            else:
                h_new = fa(cl(gx + h @ r[d].T + rb))
                c_new = c
            keep = live[:, None]
            h = np.where(keep, h_new, h)
            c = np.where(keep, c_new, c)
            y[t, d, np.arange(batch)] = np.where(keep, h_new, 0.0)
        yh[d], yc[d] = h, c
    if layout == 1:
        y, yh, yc = y.transpose(2, 0, 1, 3), yh.transpose(1, 0, 2), yc.transpose(1, 0, 2)
    return [a.astype(np.float32) for a in (y, yh, yc)]


def recurrent_test(out, name, kind, direction="forward", layout=0, lbr=0, runtime_h0=False,
                   seq=5, batch=2, size=3, hidden=4, lens=None, clip=0.0, input_forget=0,
                   c0=False, scale=0.5, acts=None, peep=False, runtime_peep=False,
                   lens_dtype=None):
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    dirs = 2 if direction == "bidirectional" else 1
    x = rand(batch, seq, size) if layout else rand(seq, batch, size)
    w = rand(dirs, gates * hidden, size) * scale
    r = rand(dirs, gates * hidden, hidden) * scale
    b = rand(dirs, 2 * gates * hidden) * 0.3
    h0 = rand(batch, dirs, hidden) if layout else rand(dirs, batch, hidden)
    c0v = (rand(batch, dirs, hidden) if layout else rand(dirs, batch, hidden)) if c0 else None
    p = rand(dirs, 3 * hidden) * 0.5 if peep else None
    y, yh, yc = recurrent(kind, x, w, r, b, h0, c0v, direction, layout, lbr, lens, clip,
                          input_forget, acts, p)
    attrs = {"hidden_size": hidden, "direction": direction, "layout": layout}
    if kind == "GRU":
        attrs["linear_before_reset"] = lbr
    if clip:
        attrs["clip"] = clip
    if input_forget:
        attrs["input_forget"] = input_forget
    if acts:
        attrs["activations"] = acts * dirs
    outputs = [("y", y), ("yh", yh)] + ([("yc", yc)] if kind == "LSTM" else [])
    inits = [("w", w), ("r", r), ("b", b)]
    inputs = [("x", x)]
    (inputs if runtime_h0 else inits).append(("h0", h0))
    names = ["x", "w", "r", "b", "", "h0"]
    if lens is not None:
        # lens_dtype: a run-time graph input of that dtype (else a constant).
        (inputs if lens_dtype else inits).append(("lens", np.asarray(lens, lens_dtype or np.int32)))
        names[4] = "lens"
    if c0 or peep:
        if c0:
            inits.append(("c0", c0v))
        names.append("c0" if c0 else "")
    if peep:
        (inputs if runtime_peep else inits).append(("p", p))
        names.append("p")
    node = helper.make_node(kind, names, [n for n, _ in outputs], **attrs)
    write(out, name, [node], inputs, outputs, inits)


def pool_nd(x, kernel, strides, pads, dilations, ceil, mode, include_pad=0):
    """ONNX MaxPool/AveragePool over the spatial axes of NC... (float64)."""
    import itertools
    sp = x.ndim - 2
    pb, pe = pads[:sp], pads[sp:]
    outs = []
    for a in range(sp):
        span = (kernel[a] - 1) * dilations[a] + 1
        num = x.shape[2 + a] + pb[a] + pe[a] - span
        o = (-(-num // strides[a]) if ceil else num // strides[a]) + 1
        if ceil and (o - 1) * strides[a] >= x.shape[2 + a] + pb[a]:
            o -= 1
        outs.append(o)
    y = np.zeros(x.shape[:2] + tuple(outs))
    for pos in itertools.product(*[range(o) for o in outs]):
        vals, counted = [], 0
        for off in itertools.product(*[range(k) for k in kernel]):
            idx = [pos[a] * strides[a] - pb[a] + off[a] * dilations[a] for a in range(sp)]
            inside = all(0 <= idx[a] < x.shape[2 + a] for a in range(sp))
            padded = all(-pb[a] <= idx[a] < x.shape[2 + a] + pe[a] for a in range(sp))
            counted += padded if include_pad else inside
            if inside:
                vals.append(x[(slice(None), slice(None)) + tuple(idx)])
        v = np.stack(vals)
        y[(slice(None), slice(None)) + pos] = v.max(0) if mode == "max" else v.sum(0) / counted
    return y.astype(np.float32)


def conv3d(x, w, b, strides, pads, dilations, group):
    """ONNX Conv over NCDHW in float64 (explicit pads: begin then end)."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    xp = np.pad(x, ((0, 0), (0, 0)) + tuple((pads[a], pads[a + 3]) for a in range(3)))
    span = [(w.shape[2 + a] - 1) * dilations[a] + 1 for a in range(3)]
    outs = [(xp.shape[2 + a] - span[a]) // strides[a] + 1 for a in range(3)]
    y = np.zeros((n, m) + tuple(outs))
    for o in range(m):
        g = o // (m // group)
        for od in range(outs[0]):
            for oh in range(outs[1]):
                for ow in range(outs[2]):
                    d0, h0, w0 = od * strides[0], oh * strides[1], ow * strides[2]
                    win = xp[:, g * cg:(g + 1) * cg,
                             d0:d0 + span[0]:dilations[0], h0:h0 + span[1]:dilations[1],
                             w0:w0 + span[2]:dilations[2]]
                    y[:, o, od, oh, ow] = (win * w[o]).sum(axis=(1, 2, 3, 4)) + b[o]
    return y.astype(np.float32)


def f32(x):
    return np.asarray(x, dtype=np.float64).astype(np.float32)


def refused_forms(out):
    """Forms issue 13 listed as refused on the GPU, with run-time operands
    the Debian node tests freeze to constants (numpy float64 references)."""
    def matmul(name, a, b):
        write(out, name, [helper.make_node("MatMul", ["a", "b"], ["y"])],
              [("a", a), ("b", b)], [("y", f32(a.astype(np.float64) @ b))])
    matmul("matmul_vector_matrix", rand(4), rand(2, 4, 3))
    matmul("matmul_matrix_vector", rand(2, 3, 4), rand(4))
    matmul("matmul_vector_vector", rand(5), rand(5))
    matmul("matmul_batch_broadcast", rand(2, 1, 3, 4), rand(3, 4, 5))
    matmul("matmul_batch_broadcast_both", rand(1, 3, 2, 4), rand(2, 1, 4, 5))
    a, w, c = rand(3, 4), rand(4), rand(3)
    write(out, "matmul_vector_fused_bias",
          [helper.make_node("MatMul", ["a", "w"], ["m"]), helper.make_node("Add", ["m", "c"], ["y"])],
          [("a", a)], [("y", f32(a.astype(np.float64) @ w + c))], [("w", w), ("c", c)])
    a, b, c = rand(3, 5), rand(4, 5), rand(3, 4)
    write(out, "gemm_runtime_c_beta",
          [helper.make_node("Gemm", ["a", "b", "c"], ["y"], alpha=0.5, beta=2.5, transB=1)],
          [("a", a), ("c", c)], [("y", f32(0.5 * a.astype(np.float64) @ b.T + 2.5 * c))],
          [("b", b)])
    c1 = rand(4)
    write(out, "gemm_runtime_row_c_beta",
          [helper.make_node("Gemm", ["a", "b", "c"], ["y"], beta=-1.5, transB=1)],
          [("a", a), ("c", c1)], [("y", f32(a.astype(np.float64) @ b.T - 1.5 * c1))],
          [("b", b)])
    x = rand(3, 4) * 3
    x[1, 2] = np.nan
    lo, hi = np.array(-1.25, np.float32), np.array(0.75, np.float32)
    write(out, "clip_runtime_bounds", [helper.make_node("Clip", ["x", "lo", "hi"], ["y"])],
          [("x", x), ("lo", lo), ("hi", hi)], [("y", np.minimum(np.maximum(x, lo), hi))])
    write(out, "clip_runtime_min_only", [helper.make_node("Clip", ["x", "lo"], ["y"])],
          [("x", x), ("lo", lo)], [("y", np.maximum(x, lo))])
    x = rand(2, 3, 4, 5)
    scale, bias, mean = rand(3), rand(3), rand(3)
    var = np.abs(rand(3)) + 0.5
    ref = (x - mean.reshape(3, 1, 1)) / np.sqrt(var.reshape(3, 1, 1) + 1e-3)
    ref = ref * scale.reshape(3, 1, 1) + bias.reshape(3, 1, 1)
    write(out, "batchnorm_runtime_statistics",
          [helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)],
          [("x", x), ("s", scale), ("b", bias), ("m", mean), ("v", var)], [("y", f32(ref))])
    x = rand(3, 4, 5, 2)
    for op, fn in (("ReduceMean", np.mean), ("ReduceSum", np.sum), ("ReduceMax", np.max),
                   ("ReduceMin", np.min)):
        for axes, keep in (((0, 2), 1), ((1, 3), 0), ((0, 1, 3), 1)):
            name = "%s_axes_%s_keep%d" % (op.lower(), "_".join(map(str, axes)), keep)
            write(out, name,
                  [helper.make_node(op, ["x"], ["y"], axes=list(axes), keepdims=keep)],
                  [("x", x)], [("y", f32(fn(x.astype(np.float64), axis=axes, keepdims=bool(keep))))],
                  opset=12)
    x = rand(3, 5)
    write(out, "pad_negative_constant",
          [helper.make_node("Pad", ["x", "p", "v"], ["y"], mode="constant")],
          [("x", x)], [("y", np.pad(x[1:, :3], ((0, 1), (0, 0)), constant_values=0.5))],
          [("p", np.array([-1, 0, 1, -2], np.int64)), ("v", np.array(0.5, np.float32))])
    write(out, "pad_negative_edge",
          [helper.make_node("Pad", ["x", "p"], ["y"], mode="edge")],
          [("x", x)], [("y", np.pad(x[:, 2:], ((1, 0), (0, 2)), mode="edge"))],
          [("p", np.array([1, -2, 0, 2], np.int64))])
    x = rand(2, 3)
    write(out, "output_listed_twice", [helper.make_node("Relu", ["x"], ["y"])],
          [("x", x)], [("y", np.maximum(x, 0)), ("y", np.maximum(x, 0))])
    x = rand(1, 2, 3, 4)
    # Upsample-9 linear: asymmetric source coordinates o / scale, clamped.
    def linear_axis(n_in, n_out, scale):
        src = np.minimum(np.arange(n_out) / scale, n_in - 1)
        lo = np.floor(src).astype(int)
        hi = np.minimum(lo + 1, n_in - 1)
        m = np.zeros((n_out, n_in))
        m[np.arange(n_out), lo] += 1 - (src - lo)
        m[np.arange(n_out), hi] += src - lo
        return m
    up = np.einsum("ah,nchw,bw->ncab", linear_axis(3, 6, 2.0), x.astype(np.float64),
                   linear_axis(4, 12, 3.0))
    write(out, "upsample_linear", [helper.make_node("Upsample", ["x", "s"], ["y"], mode="linear")],
          [("x", x)], [("y", f32(up))], [("s", np.array([1, 1, 2, 3], np.float32))], opset=9)
    # Resize scales that floor: align_corners and pytorch_half_pixel use the
    # unfloored length in * scale (ONNX's reference formulas).
    def resize_axis(n_in, scale, coord):
        length = n_in * scale
        n_out = int(np.floor(length))
        o = np.arange(n_out, dtype=np.float64)
        if coord == "align_corners":
            src = o * (n_in - 1) / (length - 1) if length != 1 else 0 * o
        else:  # pytorch_half_pixel
            src = (o + 0.5) / scale - 0.5 if length > 1 else 0 * o
        src = np.clip(src, 0, n_in - 1)
        lo = np.floor(src).astype(int)
        hi = np.minimum(lo + 1, n_in - 1)
        m = np.zeros((n_out, n_in))
        m[np.arange(n_out), lo] += 1 - (src - lo)
        m[np.arange(n_out), hi] += src - lo
        return m
    x = rand(1, 2, 4, 7)
    for coord, sh, sw in (("align_corners", 0.6, 0.7), ("pytorch_half_pixel", 0.3, 0.45)):
        ref = np.einsum("ah,nchw,bw->ncab", resize_axis(4, sh, coord), x.astype(np.float64),
                        resize_axis(7, sw, coord))
        write(out, "resize_linear_%s_floored" % coord,
              [helper.make_node("Resize", ["x", "", "s"], ["y"], mode="linear",
                                coordinate_transformation_mode=coord)],
              [("x", x)], [("y", f32(ref))],
              [("s", np.array([1, 1, sh, sw], np.float32))], opset=13)
    x = rand(3, 4)
    write(out, "dropout7_inference", [helper.make_node("Dropout", ["x"], ["y"], ratio=0.3)],
          [("x", x)], [("y", x)], opset=7)
    x = rand(2, 3, 2)
    write(out, "tile_rank3", [helper.make_node("Tile", ["x", "r"], ["y"])],
          [("x", x)], [("y", np.tile(x, (2, 1, 3)))], [("r", np.array([2, 1, 3], np.int64))])


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    out = sys.argv[1]
    stamp = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--stamp" else None

    einsum(out, "einsum_attention_scores", "bhid,bhjd->bhij", rand(2, 3, 4, 5), rand(2, 3, 6, 5))
    einsum(out, "einsum_attention_values", "bhij,bhjd->bhid", rand(2, 3, 4, 6), rand(2, 3, 6, 5))
    einsum(out, "einsum_maxvit_spaced", "B G H I D, B G H J D -> B G H I J",
           rand(1, 2, 2, 3, 4), rand(1, 2, 2, 5, 4))
    einsum(out, "einsum_matmul", "ij,jk->ik", rand(3, 4), rand(4, 5))
    einsum(out, "einsum_implicit_output", "ij,jk", rand(3, 4), rand(4, 5))
    einsum(out, "einsum_transposed_b", "ij,kj->ik", rand(3, 4), rand(5, 4))
    einsum(out, "einsum_output_swapped", "bij,bkj->bki", rand(2, 3, 4), rand(2, 5, 4))
    einsum(out, "einsum_grouped_labels", "abk,kcd->abcd", rand(2, 3, 4), rand(4, 2, 5))
    einsum(out, "einsum_outer", "i,j->ij", rand(3), rand(4))
    einsum(out, "einsum_row_sum", "ij->i", rand(3, 4))        # GPU: refused
    einsum(out, "einsum_diagonal", "bii->bi", rand(2, 3, 3))  # GPU: refused
    einsum(out, "einsum_ellipsis", "...ij,...jk->...ik", rand(2, 3, 4), rand(2, 4, 5))  # refused

    a = np.array([-7, -3, 0, 4, 9, 13], np.int64)
    b = np.array([3, -4, 5, 3, -2, 5], np.int64)
    write(out, "mod_int64", [helper.make_node("Mod", ["a", "b"], ["y"])],
          [("a", a), ("b", b)], [("y", np.mod(a, b))])
    write(out, "mod_int64_fmod", [helper.make_node("Mod", ["a", "b"], ["y"], fmod=1)],
          [("a", a), ("b", b)], [("y", np.fmod(a, b))])
    fa, fb = rand(2, 3) * 5, rand(3) + 2.5
    write(out, "mod_float_fmod", [helper.make_node("Mod", ["a", "b"], ["y"], fmod=1)],
          [("a", fa), ("b", fb)], [("y", np.fmod(fa, fb).astype(np.float32))])

    data, updates = rand(4, 3, 2), rand(2, 3, 2)
    indices = np.array([[2], [0]], np.int64)
    expected = data.copy()
    expected[2], expected[0] = updates[0], updates[1]
    write(out, "scatternd_rows", [helper.make_node("ScatterND", ["d", "i", "u"], ["y"])],
          [("d", data), ("u", updates)], [("y", expected)], [("i", indices)])
    mask = np.zeros((4, 4), np.float32)
    idx = np.array([[0, 1], [2, 3], [3, 0]], np.int64)
    val = np.array([1.0, -2.0, 3.0], np.float32)
    shaped = mask.copy()
    shaped[0, 1], shaped[2, 3], shaped[3, 0] = val
    x = rand(4, 4)
    # ScatterND on constants (as Swin builds its attention mask) folds away,
    # so the GPU sees only the Add.
    write(out, "scatternd_constant_mask",
          [helper.make_node("ScatterND", ["m", "i", "v"], ["mask"]),
           helper.make_node("Add", ["x", "mask"], ["y"])],
          [("x", x)], [("y", x + shaped)], [("m", mask), ("i", idx), ("v", val)])

    # GatherElements (torch.gather) with constant indices lowers to the
    # gather kernel; on constants (Hugging Face BERT's token-type ids) it
    # folds. Negative indices, repeats, smaller non-axis dims.
    data = rand(3, 5)
    idx = np.array([[0, -1, 2], [4, 4, -5], [1, 3, 0]], np.int64)
    write(out, "gather_elements_axis1_constant_indices",
          [helper.make_node("GatherElements", ["d", "i"], ["y"], axis=1)],
          [("d", data)], [("y", np.take_along_axis(data, np.where(idx < 0, idx + 5, idx), 1))],
          [("i", idx)], opset=13)
    data3 = rand(4, 3, 5)
    idx3 = RNG.integers(-4, 4, size=(6, 2, 5)).astype(np.int64)
    write(out, "gather_elements_axis0_rank3",
          [helper.make_node("GatherElements", ["d", "i"], ["y"], axis=0)],
          [("d", data3)],
          [("y", np.take_along_axis(data3[:, :2, :], np.where(idx3 < 0, idx3 + 4, idx3), 0))],
          [("i", idx3)], opset=13)
    table, x = rand(2, 6), rand(1, 4, 6)
    ids = np.zeros((1, 8), np.int64)
    pos = np.array([[0, 1, 2, 3]], np.int64)
    token_type = np.take_along_axis(ids, pos, 1)  # zeros, as BERT's buffer
    write(out, "gather_elements_constant_folded",
          [helper.make_node("GatherElements", ["ids", "pos"], ["tt"], axis=1),
           helper.make_node("Gather", ["table", "tt"], ["emb"]),
           helper.make_node("Add", ["x", "emb"], ["y"])],
          [("x", x)], [("y", x + table[token_type])],
          [("ids", ids), ("pos", pos), ("table", table)], opset=13)

    # Integer math and CumSum on constants fold (session 21): T5's relative
    # position buckets (|j - i| of int64 positions, Min against a cap),
    # OPT's and BLOOM's positions from an all-ones mask (CumSum - 1), and
    # EdgeNeXt's positional embedding (a float CumSum, exclusive/reverse
    # forms here); the GPU sees the folded tensors.
    ctx = np.arange(6, dtype=np.int64).reshape(6, 1)
    mem = np.arange(6, dtype=np.int64).reshape(1, 6)
    cap = np.array(3, np.int64)
    x = rand(6, 6)
    bucket = np.minimum(np.abs(mem - ctx), cap) + np.maximum(-(mem - ctx), 0) + (mem - ctx) * 0
    write(out, "int_abs_neg_min_max_sum_folded",
          [helper.make_node("Sub", ["mem", "ctx"], ["rel"]),
           helper.make_node("Abs", ["rel"], ["dist"]),
           helper.make_node("Min", ["dist", "cap"], ["capped"]),
           helper.make_node("Neg", ["rel"], ["neg"]),
           helper.make_node("Max", ["neg", "zero"], ["back"]),
           helper.make_node("Mul", ["rel", "zero"], ["none"]),
           helper.make_node("Sum", ["capped", "back", "none"], ["b"]),
           helper.make_node("Cast", ["b"], ["bf"], to=TensorProto.FLOAT),
           helper.make_node("Add", ["x", "bf"], ["y"])],
          [("x", x)], [("y", f32(x + bucket))],
          [("mem", mem), ("ctx", ctx), ("cap", cap), ("zero", np.array(0, np.int64))],
          opset=13)
    ones = np.ones((1, 7), np.int64)
    x = rand(1, 7)
    write(out, "cumsum_positions_folded",
          [helper.make_node("CumSum", ["m", "axis"], ["c"]),
           helper.make_node("Sub", ["c", "one"], ["pos"]),
           helper.make_node("Cast", ["pos"], ["pf"], to=TensorProto.FLOAT),
           helper.make_node("Add", ["x", "pf"], ["y"])],
          [("x", x)], [("y", f32(x + (np.cumsum(ones, 1) - 1)))],
          [("m", ones), ("axis", np.array(1, np.int64)), ("one", np.array(1, np.int64))],
          opset=14)
    table, x = rand(3, 5), rand(3, 5)
    rev_excl = np.flip(np.cumsum(np.flip(table.astype(np.float64), 1), 1), 1) - table
    write(out, "cumsum_float_exclusive_reverse_folded",
          [helper.make_node("CumSum", ["t", "axis"], ["c"], exclusive=1, reverse=1),
           helper.make_node("Add", ["x", "c"], ["y"])],
          [("x", x)], [("y", f32(x + rev_excl))],
          [("t", table), ("axis", np.array(-1, np.int64))], opset=14)

    # Training-mode BatchNormalization on a constant (timm's weight-
    # standardized convs, NFNet and BiT): batch statistics, folded; its
    # running-statistics outputs unused.
    weight, gain = rand(1, 4, 6), rand(4)
    x = rand(1, 4, 6)
    w64 = weight.astype(np.float64)
    mean, var = w64.mean(axis=(0, 2), keepdims=True), w64.var(axis=(0, 2), keepdims=True)
    standard = (w64 - mean) / np.sqrt(var + 1e-4) * gain.reshape(1, 4, 1)
    write(out, "batchnorm_training_mode_constant_folded",
          [helper.make_node("BatchNormalization", ["w", "g", "b", "m", "v"],
                            ["ws", "rm", "rv"], epsilon=1e-4, momentum=0.0, training_mode=1),
           helper.make_node("Add", ["x", "ws"], ["y"])],
          [("x", x)], [("y", f32(x + standard))],
          [("w", weight), ("g", gain), ("b", np.zeros(4, np.float32)),
           ("m", np.zeros(4, np.float32)), ("v", np.ones(4, np.float32))], opset=15)

    x = rand(2, 4, 11)
    w, bias = rand(6, 2, 3), rand(6)
    write(out, "conv1d_strided_dilated_grouped",
          [helper.make_node("Conv", ["x", "w", "b"], ["y"], strides=[2], pads=[2, 1],
                            dilations=[2], group=2)],
          [("x", x)], [("y", conv1d(x, w, bias, 2, (2, 1), 2, 2))], [("w", w), ("b", bias)])
    wd = rand(4, 1, 5)
    write(out, "conv1d_depthwise",
          [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[2, 2], group=4)],
          [("x", x)], [("y", conv1d(x, wd, bias[:4], 1, (2, 2), 1, 4))],
          [("w", wd), ("b", bias[:4])])
    x12 = rand(2, 4, 12)
    xp = np.pad(x12, ((0, 0), (0, 0), (1, 1)), constant_values=-np.inf)
    # ceil_mode: a 7th window starts at 12 of the 14 padded positions.
    pooled = np.stack([xp[:, :, t * 2:t * 2 + 3].max(axis=2) for t in range(7)], axis=2)
    write(out, "maxpool1d_ceil",
          [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3], strides=[2],
                            pads=[1, 1], ceil_mode=1)],
          [("x", x12)], [("y", pooled)])
    xz = np.pad(x, ((0, 0), (0, 0), (1, 1)))
    averaged = np.stack([xz[:, :, t * 2:t * 2 + 3].mean(axis=2) for t in range(6)], axis=2)
    write(out, "averagepool1d_include_pad",
          [helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3], strides=[2],
                            pads=[1, 1], count_include_pad=1)],
          [("x", x)], [("y", averaged.astype(np.float32))])
    wt = rand(4, 3, 3)
    xt = rand(1, 4, 5)
    yt = np.zeros((1, 3, 11))
    for i in range(4):
        for t in range(5):
            for k in range(3):
                yt[0, :, t * 2 + k] += xt[0, i, t] * wt[i, :, k]
    write(out, "conv_transpose1d",
          [helper.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2])],
          [("x", xt)], [("y", yt.astype(np.float32))], [("w", wt)])

    x = rand(3, 4)
    write(out, "dropout_training_zero_ratio",
          [helper.make_node("Dropout", ["x", "r", "t"], ["y"])],
          [("x", x)], [("y", x)],
          [("r", np.array(0.0, np.float32)), ("t", np.array(True))])

    a, w, bias = rand(2, 4, 5), rand(5, 4), rand(2, 4, 4)
    write(out, "matmul_batched_constant_add",
          [helper.make_node("MatMul", ["a", "w"], ["m"]),
           helper.make_node("Add", ["m", "b"], ["y"])],
          [("a", a)], [("y", (a.astype(np.float64) @ w + bias).astype(np.float32))],
          [("w", w), ("b", bias)])
    x, w = rand(3, 4), rand(4, 4)
    write(out, "matmul_relu_then_residual",
          [helper.make_node("MatMul", ["x", "w"], ["m"]),
           helper.make_node("Relu", ["m"], ["r"]),
           helper.make_node("Add", ["r", "x"], ["y"])],
          [("x", x)], [("y", (np.maximum(x.astype(np.float64) @ w, 0) + x).astype(np.float32))],
          [("w", w)])
    # masked_fill with a constant mask (Where lowered as mul + add).
    scores = rand(2, 2, 4, 4)
    causal = np.triu(np.ones((1, 1, 4, 4), np.bool_), 1)
    filled = np.where(causal, -np.inf, scores.astype(np.float64))
    soft = np.exp(filled - filled.max(axis=-1, keepdims=True))
    soft = (soft / soft.sum(axis=-1, keepdims=True)).astype(np.float32)
    write(out, "where_causal_mask_softmax",
          [helper.make_node("Where", ["m", "inf", "s"], ["f"]),
           helper.make_node("Softmax", ["f"], ["y"], axis=-1)],
          [("s", scores)], [("y", soft)],
          [("m", causal), ("inf", np.array(-np.inf, np.float32))], opset=13)
    x = rand(3, 4)
    keep = np.array([True, False, True, False])
    fill = np.array([0.5, -1.5, 2.0, 3.0], np.float32)
    write(out, "where_runtime_true_branch", [helper.make_node("Where", ["k", "x", "f"], ["y"])],
          [("x", x)], [("y", np.where(keep, x, fill))], [("k", keep), ("f", fill)])
    # Both branches at run time: Where runs on the host (docs/partitioning.md).
    write(out, "where_two_runtime_branches", [helper.make_node("Where", ["k", "x", "z"], ["y"])],
          [("x", x), ("z", fill.reshape(1, 4) + x)], [("y", np.where(keep, x, fill + x))],
          [("k", keep)])

    refused_forms(out)

    # 3-D convolutions (pad along D, taps as channels, a 2-D conv, a
    # transpose): stride, dilation, groups, asymmetric padding, fused Relu.
    x5c = rand(2, 4, 5, 6, 5)
    w5 = rand(6, 2, 3, 2, 3) * 0.5
    b5 = rand(6)
    attrs = dict(strides=[2, 1, 2], pads=[1, 0, 1, 2, 1, 0], dilations=[1, 2, 1], group=2)
    write(out, "conv3d_strided_dilated_grouped_padded",
          [helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)], [("x", x5c)],
          [("y", conv3d(x5c, w5, b5, attrs["strides"], attrs["pads"], attrs["dilations"], 2))],
          [("w", w5), ("b", b5)])
    w5d = rand(4, 1, 2, 3, 3) * 0.5
    conv = conv3d(x5c, w5d, np.zeros(4), [1, 1, 1], [0, 1, 1, 1, 1, 1], [1, 1, 1], 4)
    write(out, "conv3d_depthwise_relu",
          [helper.make_node("Conv", ["x", "w"], ["c"], pads=[0, 1, 1, 1, 1, 1], group=4),
           helper.make_node("Relu", ["c"], ["y"])], [("x", x5c)],
          [("y", np.maximum(conv, 0))], [("w", w5d)])

    # 3-D pools (two pool2d passes on the GPU): strides, pads, ceil_mode,
    # dilations, both count modes.
    x5 = rand(1, 2, 5, 6, 7).astype(np.float64)
    for name, op, attrs, mode in (
            ("maxpool3d_strided_padded_ceil_dilated", "MaxPool",
             dict(kernel_shape=[2, 3, 2], strides=[2, 1, 2], pads=[1, 0, 1, 0, 1, 1],
                  dilations=[1, 2, 1], ceil_mode=1), "max"),
            ("averagepool3d_padded_exclude_pad", "AveragePool",
             dict(kernel_shape=[3, 2, 3], strides=[1, 2, 2], pads=[1, 1, 1, 1, 0, 1]), "avg"),
            ("averagepool3d_include_pad_ceil", "AveragePool",
             dict(kernel_shape=[2, 2, 3], strides=[2, 2, 2], pads=[0, 1, 1, 1, 0, 1],
                  count_include_pad=1, ceil_mode=1), "avg")):
        dil = attrs.get("dilations", [1, 1, 1])
        y = pool_nd(x5, attrs["kernel_shape"], attrs["strides"], attrs["pads"], dil,
                    attrs.get("ceil_mode", 0), mode, attrs.get("count_include_pad", 0))
        write(out, name, [helper.make_node(op, ["x"], ["y"], **attrs)],
              [("x", x5.astype(np.float32))], [("y", y)])

    # Constant weights: the GPU path unrolls these (pass_unroll_rnn.c).
    recurrent_test(out, "lstm_constant_weights", "LSTM")
    recurrent_test(out, "lstm_bidirectional_batch_first", "LSTM", "bidirectional", layout=1,
                   runtime_h0=True)
    recurrent_test(out, "gru_linear_before_reset", "GRU", lbr=1)
    recurrent_test(out, "gru_reverse_reset_first", "GRU", "reverse", lbr=0, runtime_h0=True)
    recurrent_test(out, "rnn_bidirectional", "RNN", "bidirectional")
    # The time-loop kernel (onnx-emit/lower_rnn.c): lengths, clip,
    # input_forget, initial c, and sequences long enough that the loop is
    # split over several dispatches on llvmpipe (tests/onnx-gpu/rnn_gpu_test.c
    # asserts the dispatch counts).
    recurrent_test(out, "lstm_sequence_lens_bidirectional", "LSTM", "bidirectional",
                   lens=[5, 3, 0], batch=3, c0=True)
    recurrent_test(out, "gru_sequence_lens_reverse_batch_first", "GRU", "reverse", layout=1,
                   lens=[2, 5], lbr=0)
    recurrent_test(out, "rnn_sequence_lens_clip", "RNN", "forward", lens=[4, 1], clip=0.4)
    recurrent_test(out, "lstm_clip_input_forget", "LSTM", clip=0.7, input_forget=1, c0=True)
    recurrent_test(out, "gru_clip_linear_before_reset", "GRU", "bidirectional", lbr=1, clip=0.5)
    recurrent_test(out, "rnn_relu_bidirectional", "RNN", "bidirectional", acts=["Relu"])
    recurrent_test(out, "lstm_activations", "LSTM", acts=["Sigmoid", "Relu", "Tanh"], c0=True)
    recurrent_test(out, "gru_activations_reset_first", "GRU", lbr=0, acts=["Sigmoid", "Relu"])
    # Peepholes (P): constant, at run time, with lengths, clip and a split loop.
    recurrent_test(out, "lstm_peepholes", "LSTM", c0=True, peep=True)
    recurrent_test(out, "lstm_peepholes_runtime_bidirectional", "LSTM", "bidirectional",
                   peep=True, runtime_peep=True, c0=True)
    recurrent_test(out, "lstm_peepholes_lens_clip_input_forget", "LSTM", "reverse", layout=1,
                   lens=[5, 2, 4], batch=3, clip=0.6, input_forget=1, peep=True)
    recurrent_test(out, "lstm_peepholes_long_chunked", "LSTM", seq=300, batch=1, size=8,
                   hidden=96, scale=0.12, peep=True)
    # Run-time sequence_lens (int32 and int64 graph inputs).
    recurrent_test(out, "lstm_runtime_lens_bidirectional", "LSTM", "bidirectional",
                   lens=[5, 3, 0], batch=3, c0=True, lens_dtype=np.int32)
    recurrent_test(out, "gru_runtime_lens_int64_reverse", "GRU", "reverse", layout=1,
                   lens=[2, 5], lbr=1, lens_dtype=np.int64)
    recurrent_test(out, "rnn_runtime_lens_long", "RNN", "forward", seq=900, batch=2, size=4,
                   hidden=32, scale=0.1, lens=[900, 417], lens_dtype=np.int32)
    recurrent_test(out, "lstm_long_chunked", "LSTM", "bidirectional", seq=500, batch=1, size=8,
                   hidden=128, scale=0.12)
    recurrent_test(out, "gru_long_chunked_reset_first", "GRU", "reverse", seq=600, batch=1,
                   size=8, hidden=128, lbr=0, scale=0.15)
    recurrent_test(out, "rnn_long_chunked", "RNN", "forward", seq=2000, batch=2, size=4,
                   hidden=64, scale=0.08, lens=[2000, 1500])
    if stamp:
        with open(stamp, "w") as f:
            f.write("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
