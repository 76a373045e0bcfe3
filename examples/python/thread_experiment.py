#!/usr/bin/env python3
"""The py_function thread experiment, done right.

A graph of N independent py_function nodes is timed over the (inter, intra)
grid, twice: with pure-Python CPU-bound bodies, and with bodies that release
the GIL (NumPy matrix products, then a time.sleep standing for I/O).
For each setting the process-wide counts are set first (weft's setters, as
torch.set_num_interop_threads or tf.config.threading would be), then a fresh
session is made and warmed up once; the timed runs go round the settings in
turn, and the table shows medians. The conclusion printed at the end is computed from the two tables.

What to expect: pure-Python bodies hold the GIL, so more inter-op threads
cannot overlap them (inter = 2 keeps as many CPUs busy as inter = 1, and
takes about as long); bodies that release it overlap (inter = 2 keeps about
twice as many busy, and takes about half). intra-op threads do not
matter here: a py_function does not split.

    python3 examples/python/thread_experiment.py [--nodes N] [--ms MS] [--runs R]
"""

import argparse
import os
import statistics
import time

# NumPy's BLAS would start its own threads for every product and compete with
# weft's; one thread each keeps the comparison about weft's inter-op pool.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402 (after the BLAS setting)

import weft  # noqa: E402


def _pure_python_body(ms):
    """A CPU-bound body that holds the GIL for about `ms` milliseconds."""
    # Calibrated once: how many loop steps take `ms`.
    steps = _calibrate_steps(ms)

    def body(x):
        total = 0
        for i in range(steps):
            total += i * i
        return x + (total % 7)

    return body


def _calibrate_steps(ms):
    steps = 100_000
    start = time.perf_counter()
    total = 0
    for i in range(steps):
        total += i * i
    elapsed = time.perf_counter() - start
    return max(1000, int(steps * (ms / 1000) / elapsed))


def _releasing_body(ms):
    """A body that releases the GIL: NumPy products for about a third of
    `ms` (compute, which two cores can overlap two of), then a sleep for the
    rest (waiting, as I/O does, which overlaps whatever the cores)."""
    size = 256
    a = np.random.default_rng(0).random((size, size), dtype=np.float32)
    start = time.perf_counter()
    repeats = 0
    while time.perf_counter() - start < ms / 3000:
        a @ a
        repeats += 1
    sleep_s = 2 * ms / 3000

    def body(x):
        for _ in range(repeats):
            a @ a
        time.sleep(sleep_s)
        return x + 1

    return body


KINDS = {
    "pure Python (holds the GIL)": _pure_python_body,
    "NumPy product + sleep (releases the GIL)": _releasing_body,
}


def build_graph(body, nodes):
    """N independent py_function nodes reading one input; returns the graph
    and the names to fetch."""
    g = weft.Graph()
    x = g.placeholder("x", np.float32, [4])
    fetches = [g.py_function(body, [x], np.float32, name=f"f{i}") for i in range(nodes)]
    return g, fetches


def make_session(graph, inter, intra):
    """A fresh session made after setting the process-wide counts, as
    torch.set_num_interop_threads or tf.config.threading would be used: the
    session takes the process-wide pools of that size (ConfigProto()'s
    defaults), and keeps them when the counts change later."""
    weft.set_num_interop_threads(inter)
    weft.set_num_threads(intra)
    return weft.Session(graph)


def measure(kind, nodes, ms, runs, inters=(-1, 1, 2), intras=(1, 2)):
    """({(inter, intra): median ms}, {(inter, intra): CPUs busy}) for one
    kind of body. Each setting gets its own session and one warm-up run;
    the timed runs go round the settings in turn, so that a drift of the
    machine's speed (noisy on shared VMs) reaches every setting alike.
    CPUs busy is the process's CPU time over the wall time of a setting's
    runs: whether bodies ran at the same time, whatever each CPU's speed
    (on a shared VM one vCPU can run Python 1.7x slower than the other, and
    wall times then depend on where each thread landed)."""
    graph, fetches = build_graph(KINDS[kind](ms), nodes)
    sessions = {(inter, intra): make_session(graph, inter, intra)
                for inter in inters for intra in intras}
    weft.set_num_interop_threads(0)
    weft.set_num_threads(0)
    feed = {"x": np.zeros(4, np.float32)}
    times = {setting: [] for setting in sessions}
    cpu_ms = dict.fromkeys(sessions, 0.0)
    for session in sessions.values():
        session.run(fetches, feed)  # Warm-up.
    for _ in range(runs):
        for setting, session in sessions.items():
            cpu_start = time.process_time()
            start = time.perf_counter()
            session.run(fetches, feed)
            times[setting].append((time.perf_counter() - start) * 1000)
            cpu_ms[setting] += (time.process_time() - cpu_start) * 1000
    for session in sessions.values():
        session.close()
    medians = {setting: statistics.median(t) for setting, t in times.items()}
    busy = {setting: cpu_ms[setting] / sum(times[setting]) for setting in sessions}
    return medians, busy


def cpu_overlap(busy):
    """CPUs busy at inter = 2 over CPUs busy at inter = 1 (the busiest row
    of each): about 1 when the bodies run one at a time, up to the cores
    when they run at once. Unlike the time ratio, it does not depend on
    which CPU each thread landed on."""
    most = lambda inter: max(v for (i, _), v in busy.items() if i == inter)  # noqa: E731
    return most(2) / most(1)


def overlap_ratio(table):
    """Best inter = 2 time over the best inter = 1 time."""
    best = lambda inter: min(v for (i, _), v in table.items() if i == inter)  # noqa: E731
    return best(2) / best(1)


def conclusion(kind, table, busy):
    """One sentence the numbers support: whether the bodies overlap is read
    from the CPUs they kept busy, the time ratio is what it was worth."""
    ratio = overlap_ratio(table)
    cpus = cpu_overlap(busy)
    if cpus >= 1.4:
        verdict = ("they overlap: more inter-op threads pay, up to the number "
                   "of cores or of independent nodes")
    elif cpus <= 1.15:
        verdict = ("they do not overlap: the GIL lets one run at a time, so more "
                   "inter-op threads cannot help (make the body release the GIL, "
                   "or use processes)")
    else:
        verdict = "they overlap in part"
    return (f"{kind}: inter = 2 takes {ratio:.2f}x the inter = 1 time and keeps "
            f"{cpus:.2f}x as many CPUs busy; {verdict}.")


def print_table(kind, table, nodes, ms):
    print(f"\n{kind}: {nodes} independent py_function nodes of ~{ms} ms each")
    intras = sorted({intra for _, intra in table})
    print("  inter \\ intra " + "".join(f"{intra:>10}" for intra in intras))
    for inter in sorted({inter for inter, _ in table}):
        row = "".join(f"{table[(inter, intra)]:>8.1f}ms" for intra in intras)
        print(f"  {inter:>13} {row}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=8, help="py_function nodes (8)")
    parser.add_argument("--ms", type=float, default=20, help="each body's time (20 ms)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per setting (5)")
    args = parser.parse_args()
    if args.nodes < 1 or args.ms <= 0 or args.runs < 1:
        parser.error("--nodes and --runs must be >= 1 and --ms > 0")
    print(f"weft {os.cpu_count()} CPUs; medians of {args.runs} runs after one warm-up, "
          "a fresh session per setting")
    results = {kind: measure(kind, args.nodes, args.ms, args.runs) for kind in KINDS}
    for kind, (table, _) in results.items():
        print_table(kind, table, args.nodes, args.ms)
    print("\nConclusion:")
    for kind, (table, busy) in results.items():
        print("  " + conclusion(kind, table, busy))


if __name__ == "__main__":
    main()
