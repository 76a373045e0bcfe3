"""The distance between this machine's first two CPUs, as
build/bin/weft_cpu_pair_latency measures it (bench/cpu_pair_latency.cc): a
cache line's round trip between them, in nanoseconds.

On the 2-vCPU KVM guests the host moves the two vCPUs between cores that
share an L3 cache (about 50 ns) and cores that do not (about 340 ns) from
minute to minute, and every two-thread Run, weft's and ONNX Runtime's, is
slower in the second case (docs/BENCHMARKS.md, "The two vCPUs' distance").
The bench scripts record it beside each turn, so that a ratio taken across
such a change can be told from one taken within one placement."""
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = os.path.join(ROOT, "build/bin/weft_cpu_pair_latency")


def pair_latency_ns(probe=PROBE):
    """The round trip in ns, or None where the probe is not built or the
    process may run on one CPU only."""
    try:
        out = subprocess.run([probe], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r"round trip (\d+) ns", out)
    return int(match.group(1)) if match else None
