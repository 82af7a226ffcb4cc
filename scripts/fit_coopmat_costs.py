#!/usr/bin/env python3
"""Fits gemm_coopmat's cost model (compiler-bridge/kernels/coopmat_tuning.c) to a sweep.

Reads the table of `kiln-kernels-bench --coopmat --only=fit` (files or stdin):
rows of shapes named "... MxN kK xB" (m x n outputs, k, batch) timed under
every built f16 tiling ("f16 WMxWN x TMxTN BKn"). Per tiling it fits, by
least squares,
    us = fixed_us + step_us * ceil(k / BK) * ceil(blocks / units)
(blocks: batch * ceil(m / BM) * ceil(n / BN)), drops the points more than
three rms errors off (a timing hiccup) and fits once more. Prints one line
per tiling, the values coopmat_tuning.c's kCoopmatCandidates holds, with the
fit's rms and largest error.

Usage: fit_coopmat_costs.py [--units 132] [SWEEP.txt ...]
"""
import argparse
import fileinput
import math
import re

SHAPE = re.compile(r"(\d+)x(\d+) k(\d+) x(\d+)\s*$")
TILING = re.compile(r"f16 (\d+)x(\d+) x (\d+)x(\d+) BK(\d+)")


def read_points(files):
    points = {}  # tiling label -> [(m, n, k, batch, us)]
    for line in fileinput.input(files):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3:
            continue
        shape, tiling = SHAPE.search(cells[0]), TILING.search(cells[1])
        try:
            ms = float(cells[2])
        except ValueError:
            continue
        if not shape or not tiling:
            continue
        m, n, k, batch = map(int, shape.groups())
        points.setdefault(tiling.groups(), []).append((m, n, k, batch, ms * 1000.0))
    return points


def fit(xs, ys):
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    var = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / var if var else 0.0
    return mean_y - slope * mean_x, slope


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--units", type=int, default=132, help="compute units (H100/H200: 132)")
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    points = read_points(args.files)
    if not points:
        raise SystemExit("fit_coopmat_costs.py: no 'MxN kK xB' rows with f16 tilings in the input")
    print("| tiling (subgroups x tiles, BK) | block | fixed_us | step_us | points | rms us | max us |")
    print("|---|---|---|---|---|---|---|")
    for (wm, wn, tm, tn, bk), rows in sorted(points.items()):
        bm, bn, bk = int(wm) * int(tm) * 16, int(wn) * int(tn) * 16, int(bk)

        def work(row):
            m, n, k, batch, _ = row
            blocks = batch * math.ceil(m / bm) * math.ceil(n / bn)
            return math.ceil(k / bk) * math.ceil(blocks / args.units)

        def errors(rows_in, fixed, step):
            return [abs(fixed + step * work(r) - r[4]) for r in rows_in]

        def rms(errs):
            return math.sqrt(sum(e * e for e in errs) / len(errs))

        fixed, step = fit([work(r) for r in rows], [r[4] for r in rows])
        first = errors(rows, fixed, step)
        kept = [r for r, e in zip(rows, first) if e <= 3 * rms(first)]
        fixed, step = fit([work(r) for r in kept], [r[4] for r in kept])
        final = errors(kept, fixed, step)
        print("| %sx%s x %sx%s BK%d | %dx%d | %.1f | %.3f | %d of %d | %.2f | %.1f |"
              % (wm, wn, tm, tn, bk, bm, bn, fixed, step, len(kept), len(rows), rms(final),
                 max(final)))


if __name__ == "__main__":
    main()
