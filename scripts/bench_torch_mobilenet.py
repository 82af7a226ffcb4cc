#!/usr/bin/python3
"""Median per-call latency of MobileNetV2 (torchvision, random weights, eval,
no_grad, float32, batch 1, 224x224) on PyTorch CPU. Prints one line:
"torch_median_ms <value> threads <n>". Used by bench_mobilenet.sh.

Usage: bench_torch_mobilenet.py CALLS [THREADS]  (default: PyTorch's own choice)
"""
import statistics
import sys
import time

import torch
import torchvision


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    if len(sys.argv) > 2:
        torch.set_num_threads(int(sys.argv[2]))
    torch.manual_seed(1)
    model = torchvision.models.mobilenet_v2(weights=None).eval()
    x = torch.rand(1, 3, 224, 224)
    times = []
    with torch.no_grad():
        for _ in range(3):  # warm-up
            model(x)
        for _ in range(calls):
            start = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - start) * 1e3)
    print("torch_median_ms %.3f threads %d" % (statistics.median(times),
                                              torch.get_num_threads()))


if __name__ == "__main__":
    main()
