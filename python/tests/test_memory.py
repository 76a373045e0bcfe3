"""Reference counts and memory: 10,000 runs leave RSS flat and every array
with the references it had."""
import os
import sys

import numpy as np

import weft


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _threads():
    return len(os.listdir("/proc/self/task"))


def test_ten_thousand_runs_keep_rss_flat_and_refcounts_unchanged():
    g = weft.Graph()
    x = g.placeholder("x", np.float32, [256])
    y = g.op("Relu", [g.op("Mul", [x, x])], name="y")
    z = g.py_function(lambda a: a[:8] + 1, [y], np.float32, name="z")
    session = weft.Session(g, weft.ConfigProto(inter_op_parallelism_threads=2))
    inference = weft.InferenceSession(g)
    feed = np.linspace(-1, 1, 256, dtype=np.float32)
    feed_refs = sys.getrefcount(feed)

    def runs(n):
        for _ in range(n):
            y_value, z_value = session.run([y, z], {x: feed})
            (zi,) = inference.run(["z"], {"x": feed})
        return y_value, z_value, zi

    runs(1000)  # Warm-up: pools, caches, recycled run states.
    before = _rss_bytes()
    y_value, z_value, zi = runs(10_000)
    growth = _rss_bytes() - before
    np.testing.assert_array_equal(z_value, zi)
    assert sys.getrefcount(feed) == feed_refs
    assert sys.getrefcount(y_value) == 2  # This name and getrefcount's own.
    # A leak of one 1 KiB buffer per run would be 10 MB.
    assert growth < 2 * 1024 * 1024, f"RSS grew by {growth} bytes"
    # The py_function nodes reuse the blocking pool's idle threads (a
    # leaked wake-up count once started a thread per run, up to 1024).
    assert _threads() < 32
