"""What Dask itself costs the MLP job of dask_bench.py, with the model's
cost taken out (#47 item 7: within 1.10x of one process).

The floor job is the bench's weft job (--rows rows of 512 floats in
persisted blocks of --block rows, .compute() into one array) with a
"model" that costs nothing: each task returns its block's 512-float rows
from arrays its worker keeps from job to job, as weft's buffer cache keeps
a worker's result blocks. What is left is Dask's: scheduling the tasks,
the gather of the results into the client and the client's concatenation.

Against it, what one process spends on the same rows beyond its Runs:
putting the batches' outputs (79 of 256 rows, in weft's buffers) into one
array, as the bench's one-process run does. And, with --model, the
one-process MLP itself (dask_bench.py's measure), whose tenth is what
item 7's 1.10 leaves for everything a cluster adds.

Each floor job is also timed in two steps (persist the tasks' results,
then compute from them) to split the tasks from the gather.

Each run is a fresh process or a fresh cluster, with the job repeated
--jobs times: the first (a fresh cluster's, as a one-off batch job meets
it) is reported apart from the later ones.

glibc maps every freed-and-reallocated block over 32 MiB afresh (its
mmap threshold stops growing there), so the client's receive buffer and
concatenation of a 41 MB result fault in new pages each job; run the
script under MALLOC_MMAP_MAX_=0 (and a large MALLOC_TRIM_THRESHOLD_) to
see the floor with memory the client keeps (docs/dask.md).

    python3 bench/dask/dask_floor.py --weft-python build/python \
        [--model build/bench-models/two_towers.onnx] [--settings 1x1,2x1]
        [--clusters 3] [--jobs 3] [--gather direct]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import cloudpickle
import numpy as np

_kept = {}


def null_block(block, width, index):
    """Block `index`'s output rows, made once per worker and block position
    and returned again by every later job."""
    out = _kept.get(index)
    if out is None or out.shape != (len(block), width):
        out = np.full((len(block), width), float(index), np.float32)
        _kept[index] = out
    return out


_ONE_PROCESS = """
import json, sys, time
import numpy as np
import weft
rows, width, passes = map(int, sys.argv[1:4])
outs = []
for first in range(0, rows, 256):
    out = weft._weft._empty([min(256, rows - first), width], np.float32)
    out[...] = first
    outs.append(out)
for _ in range(passes):
    start = time.perf_counter()
    result = np.concatenate(outs)
    print(json.dumps((time.perf_counter() - start) * 1e3), flush=True)
    del result
"""


def floor_array(x, width):
    """The MLP job's result array with null_block for the model: one task
    per block, the graph made as weft.dask makes its own (_block_outputs)."""
    import dask.array as da
    from dask.base import tokenize
    from dask.core import flatten
    from dask.highlevelgraph import HighLevelGraph
    name = f"floor-{tokenize(x, width)}"
    layer = {(name, i, 0): (null_block, key, width, i)
             for i, key in enumerate(flatten(x.__dask_keys__()))}
    graph = HighLevelGraph.from_collections(name, layer, dependencies=[x])
    return da.Array(graph, name, (x.chunks[0], (width,)), dtype=np.float32)


def one_process_gather(rows, width, passes, env):
    out = subprocess.run(
        [sys.executable, "-c", _ONE_PROCESS, str(rows), str(width),
         str(passes)], check=True, capture_output=True, text=True, env=env)
    return [json.loads(line) for line in out.stdout.splitlines()]


def summary(times):
    """'median (low-high)' of a list of ms, or '-'."""
    if not times:
        return "-"
    return (f"{statistics.median(times):6.1f} ({min(times):.1f}-"
            f"{max(times):.1f})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--weft-python", required=True)
    parser.add_argument("--model", help="two_towers.onnx: also time the "
                        "one-process MLP (dask_bench.py's measure)")
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--block", type=int, default=2500)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--settings", default="1x1,2x1")
    parser.add_argument("--clusters", type=int, default=3,
                        help="fresh clusters (and one-process runs) each")
    parser.add_argument("--jobs", type=int, default=3)
    parser.add_argument("--gather", choices=("direct", "scheduler"),
                        default="direct")
    args = parser.parse_args()
    # The environment from before any LocalCluster (which sets
    # OMP_NUM_THREADS=1 in the process that starts it) for the one-process
    # runs, as dask_bench.py keeps it.
    env = dict(os.environ, PYTHONPATH=os.path.abspath(args.weft_python))
    sys.path.insert(0, os.path.abspath(args.weft_python))
    one_process_mlp = None
    if args.model:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import dask_bench
        dask_bench.CLEAN_ENV.update(env)
        one_process_mlp = dask_bench.one_process_mlp
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    x = np.random.default_rng(0).standard_normal(
        (args.rows, args.width)).astype(np.float32)
    floor, steps = {}, {}
    gathers, models = [], []
    for _ in range(args.clusters):
        for setting in args.settings.split(","):
            workers, threads = map(int, setting.split("x"))
            with LocalCluster(n_workers=workers, threads_per_worker=threads,
                              processes=True, host="127.0.0.1",
                              dashboard_address=None) as cluster, \
                    Client(cluster, direct_to_workers=(
                        args.gather == "direct")):
                blocks = da.from_array(x, chunks=args.block).persist()
                wait(blocks)
                # Warm as dask_bench.py does: two blocks a worker.
                floor_array(da.from_array(x[:2 * args.block * workers],
                                          chunks=args.block),
                            args.width).compute()
                for job in range(args.jobs):
                    start = time.perf_counter()
                    result = floor_array(blocks, args.width).compute()
                    ms = (time.perf_counter() - start) * 1e3
                    assert result.shape == (args.rows, args.width)
                    del result
                    floor.setdefault((setting, job > 0), []).append(ms)
                    # The same job in two steps: the tasks (persist), then
                    # the gather and concatenation of what they left.
                    start = time.perf_counter()
                    kept = floor_array(blocks, args.width).persist()
                    wait(kept)
                    tasks = (time.perf_counter() - start) * 1e3
                    start = time.perf_counter()
                    result = kept.compute()
                    gather = (time.perf_counter() - start) * 1e3
                    del result, kept
                    steps.setdefault((setting, job > 0), []).append(
                        (tasks, gather))
                    print(setting, "floor job", job, f"{ms:.1f} ms; in "
                          f"steps {tasks:.1f} + {gather:.1f}",
                          file=sys.stderr, flush=True)
        passes = one_process_gather(args.rows, args.width, args.jobs, env)
        gathers += passes
        print("one process, gather", passes, file=sys.stderr, flush=True)
        if one_process_mlp is not None:
            rows_file = f"/tmp/dask_floor_{os.getpid()}.npy"
            np.save(rows_file, x)
            try:
                for figures in one_process_mlp(args.model, rows_file, True,
                                               args.jobs):
                    models.append(args.rows / figures["items_per_s"] * 1e3)
            finally:
                os.remove(rows_file)
            print("one process, MLP", models[-args.jobs:], file=sys.stderr,
                  flush=True)

    print(f"\n{args.rows} rows x {args.width} floats out "
          f"({args.rows * args.width * 4 / 1e6:.0f} MB), blocks of "
          f"{args.block}, {args.gather} gather; ms, median (range)")
    print(f"one process, concatenating its batches' outputs: "
          f"{summary(gathers)}")
    if models:
        print(f"one process, the MLP job:                      "
              f"{summary(models)}; a tenth of its median: "
              f"{statistics.median(models) / 10:.1f}")
    for setting in args.settings.split(","):
        for later in (False, True):
            times = floor.get((setting, later), [])
            if not times:
                continue
            extra = statistics.median(times) - statistics.median(gathers)
            print(f"{setting} floor job, {'later' if later else 'first'}"
                  f" jobs: {summary(times)}; beyond one process's "
                  f"concatenation: {extra:.1f}")
            split = steps[(setting, later)]
            print(f"    in two steps: the tasks {summary([t for t, _ in split])}"
                  f", the gather and concatenation "
                  f"{summary([g for _, g in split])}")


if __name__ == "__main__":
    main()
