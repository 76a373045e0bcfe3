#!/usr/bin/python3
"""PyTorch's latency on one exported model at one thread setting.
    torch_bench.py NAME INTER INTRA REPEAT
prints the median milliseconds of REPEAT timed runs after 3 warm-up runs.
A process per setting: torch sets its inter-op pool once per process."""
import statistics
import sys
import time

import torch

from export_models import build
from torch_threads import set_torch_threads

name, inter, intra, repeat = sys.argv[1], *map(int, sys.argv[2:5])
torch.set_num_interop_threads(inter)
set_torch_threads(intra)
model, feeds, _ = build(name)
times = []
with torch.no_grad():
    for i in range(3 + repeat):
        start = time.perf_counter()
        model(*feeds.values())
        if i >= 3:
            times.append((time.perf_counter() - start) * 1e3)
print(f"{statistics.median(times):.3f}")
