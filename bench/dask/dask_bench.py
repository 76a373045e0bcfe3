"""weft.dask against what Dask users run today (#47 item 7): items/s and
CPU seconds per item on a LocalCluster of W worker processes x T task
threads, each system in turn on the same cluster and the same data.

  weft         weft.dask.predict (the model shipped once, loaded once per
               worker, threads from the worker's budget)
  torch        PyTorch in a Dask task, the model built once per worker
               process, torch's default threads (what Dask's nanny leaves:
               OMP_NUM_THREADS=1)
  torch-match  the same with torch.set_num_threads(host cores / (W x T)),
               OpenBLAS's own pool (which Debian's torch calls for Linear)
               set to the same count
  one-process  weft in one process without Dask: `weft predict` for the
               images, an InferenceSession over the same batches for the
               MLP, its outputs gathered into one array as `weft predict`
               gathers its rows (--one-process-drops-results: dropped, the
               measure before 2026-12-03). It runs in turns with weft's
               job (--turns pairs per setting and round, the order
               alternating, each weft job on a fresh cluster so that none
               runs beside the one process); the one-process/weft column
               is the median of the pairs' ratios, with their range.
               With --jobs N, each cluster runs N timed jobs one after
               the other and each one-process run N passes (the MLP's in
               one process, the images' N `weft predict` runs): job k is
               paired with pass k, and the ratios are reported for the
               first jobs (a fresh cluster, as a one-off batch job) and
               for the later ones (a cluster that ran a job before, as a
               long-lived cluster runs its jobs); the items/s and CPU
               columns are medians over every timed job

Workloads: the two-tower MLP (--rows inputs of 512 floats, batches of 256,
blocks of 2,500 rows, on the workers before the clock starts unless
--mlp-input client) and ResNet-18 over JPEG files (--images DIR, the
first --count files; decode, resize 256, centre crop 224, normalise;
batches of 16, 128 files a task). The PyTorch models are the exported
ones' modules with the same seed (bench/models/export_models.py).

    python3 bench/dask/dask_bench.py --models /tmp/models \
        --images /tmp/bench400 --weft build/bin/weft \
        --weft-python build/python [--rows 20000] [--count 2000] [--rounds 2]
        [--turns 3] [--jobs 3]
        [--gather scheduler,direct]

Results reach the client as a Client's default has them (through the
scheduler) unless --gather says direct (Client(direct_to_workers=True), as
`weft predict --local-workers` connects); rows of a direct cluster are
labelled "W x T d".
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time

import cloudpickle

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS_DIR = os.path.join(HERE, "..", "models")
sys.path.insert(0, MODELS_DIR)
import export_models  # noqa: E402
import torch_threads  # noqa: E402

# The workers get the models' modules with the functions that use them.
cloudpickle.register_pickle_by_value(export_models)
cloudpickle.register_pickle_by_value(torch_threads)
_torch_models = {}


def torch_model(name, threads):
    """A PyTorch model built once per worker process (as Dask users cache
    theirs); threads: None leaves torch's default."""
    if threads is not None:
        torch_threads.set_torch_threads(threads)
    if name not in _torch_models:
        model, _, _ = export_models.build(name)
        _torch_models[name] = model.eval()
    return _torch_models[name]


def torch_rows(block, threads):
    import numpy as np
    import torch
    model = torch_model("two_towers", threads)
    out = []
    with torch.no_grad():
        for first in range(0, len(block), 256):
            out.append(model(torch.from_numpy(
                np.ascontiguousarray(block[first:first + 256]))).numpy())
    return np.concatenate(out)


def torch_files(paths, threads):
    import numpy as np
    import torch
    import torchvision.transforms as T
    from PIL import Image
    model = torch_model("resnet18", threads)
    transform = T.Compose([
        T.Resize(256, antialias=True), T.CenterCrop(224), T.ToTensor(),
        T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    rows = []
    with torch.no_grad():
        for first in range(0, len(paths), 16):
            batch = torch.stack([transform(Image.open(p).convert("RGB"))
                                 for p in paths[first:first + 16]])
            rows.append(model(batch).numpy())
    return list(np.concatenate(rows))


def worker_cpu_seconds(client):
    import psutil
    total = 0.0
    for pid in client.run(os.getpid).values():
        times = psutil.Process(pid).cpu_times()
        total += times.user + times.system
    return total


def timed(client, items, compute):
    cpu = worker_cpu_seconds(client)
    start = time.perf_counter()
    compute()
    seconds = time.perf_counter() - start
    cpu = worker_cpu_seconds(client) - cpu
    return {"items_per_s": items / seconds, "cpu_s_per_item": cpu / items}


# The environment this bench started with. A LocalCluster sets
# OMP_NUM_THREADS=1 in the process that starts it (Dask's nanny's
# pre-spawn-environ, distributed 2022.12), which weft in one process would
# obey: the one-process runs get the environment from before.
CLEAN_ENV = dict(os.environ)

_ONE_PROCESS_MLP = """
import json, sys, time
import numpy as np
import weft
model, rows, keep = sys.argv[1], np.load(sys.argv[2]), sys.argv[3] == "keep"
passes = int(sys.argv[4])
session = weft.InferenceSession(model)
session.run(None, {"input": rows[:256]})  # Warm, as the workers are.
for _ in range(passes):
    start, cpu = time.perf_counter(), time.process_time()
    kept = []
    for first in range(0, len(rows), 256):
        out = session.run(None, {"input": rows[first:first + 256]})
        if keep:
            kept.append(out[0])
    result = np.concatenate(kept) if keep else None
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    del kept, result  # As a job's result is let go before the next.
    print(json.dumps({"items_per_s": len(rows) / seconds,
                      "cpu_s_per_item": cpu / len(rows)}))
"""


def one_process_mlp(model, rows_file, keep, passes):
    """`passes` passes of an InferenceSession over the rows in batches of
    256, in a process of its own with the bench's starting environment;
    with `keep`, the rows' outputs gathered into one array, as `weft
    predict` gathers and writes its results (the target's measure: issue
    47 item 7 compares with `weft predict`'s throughput), else each
    batch's output dropped. One figure a pass."""
    out = subprocess.run([sys.executable, "-c", _ONE_PROCESS_MLP, model,
                          rows_file, "keep" if keep else "drop",
                          str(passes)],
                         check=True, capture_output=True, text=True,
                         env=CLEAN_ENV)
    return [json.loads(line) for line in out.stdout.splitlines()]


def one_process_images(weft_cli, model, paths, scratch):
    out = os.path.join(scratch, "one.npy")
    for suffix in ("", ".paths.txt"):
        if os.path.exists(out + suffix):
            os.remove(out + suffix)
    listing = [flag for p in paths for flag in ("-i", p)]
    before = os.times()
    start = time.perf_counter()
    subprocess.run([weft_cli, "predict", model, *listing, "-o", out, "-q",
                    "--preprocess", "imagenet", "--batch", "16"],
                   check=True, stdout=subprocess.DEVNULL, env=CLEAN_ENV)
    seconds = time.perf_counter() - start
    after = os.times()
    cpu = ((after.children_user - before.children_user) +
           (after.children_system - before.children_system))
    return {"items_per_s": len(paths) / seconds,
            "cpu_s_per_item": cpu / len(paths)}


def runs(args):
    """(W x T, gather) of each cluster, in the order they run."""
    return [(setting, gather) for setting in args.settings.split(",")
            for gather in args.gather.split(",")]


def label(setting, gather):
    """A table row's name: "1x2", or "1x2 d" where results come direct."""
    return setting if gather == "scheduler" else f"{setting} d"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", required=True)
    parser.add_argument("--images", required=True)
    parser.add_argument("--weft", required=True)
    parser.add_argument("--weft-python", required=True)
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--turns", type=int, default=3,
        help="per setting and round: weft jobs (each on a fresh cluster) "
             "and one-process runs in alternation, one ratio per pair")
    parser.add_argument(
        "--jobs", type=int, default=1,
        help="timed jobs per cluster, one after the other, and passes per "
             "one-process run; job k is paired with pass k, the first "
             "jobs' ratios reported apart from the later ones'")
    parser.add_argument("--settings", default="1x1,1x2,2x1,2x2")
    parser.add_argument("--workloads", default="mlp,images")
    parser.add_argument(
        "--mlp-input", choices=("cluster", "client"), default="cluster",
        help="where the MLP's rows are when the job starts: on the workers "
             "(persisted, as after loading them from storage there), or in "
             "the client's memory (shipped in the graph)")
    parser.add_argument(
        "--gather", default="scheduler",
        help="how the client gets results, comma-separated to run each: "
             "'scheduler' (a Client's default: the scheduler fetches them "
             "from the workers and forwards them) or 'direct' "
             "(Client(direct_to_workers=True): from the workers)")
    parser.add_argument(
        "--one-process-drops-results", action="store_true",
        help="the one-process MLP drops each batch's output instead of "
             "gathering the rows' outputs into one array as weft predict "
             "does (the measure of the sessions before 2026-12-03)")
    parser.add_argument(
        "--peers", action=argparse.BooleanOptionalAction, default=True,
        help="run the PyTorch peers after each setting's weft turns "
             "(--no-peers: weft and one process only, for the one-process "
             "ratio; the peers take minutes a setting)")
    parser.add_argument("--json")
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.weft_python))
    # Workers (and the one-process runs) import weft from here.
    os.environ["PYTHONPATH"] = os.path.abspath(args.weft_python)
    CLEAN_ENV["PYTHONPATH"] = os.environ["PYTHONPATH"]
    import dask.array as da
    import dask.bag as db
    import numpy as np
    from distributed import Client, LocalCluster, wait

    import weft
    import weft.dask

    mlp = os.path.join(args.models, "two_towers.onnx")
    resnet = os.path.join(args.models, "resnet18.onnx")
    x = np.random.default_rng(0).standard_normal(
        (args.rows, 512)).astype(np.float32)
    paths = sorted(glob.glob(os.path.join(args.images, "*.jpg")))[:args.count]
    host = weft._weft._cpu_budget()["threads"]
    scratch = os.path.join("/tmp", f"dask_bench_{os.getpid()}")
    os.makedirs(scratch, exist_ok=True)
    rows_file = os.path.join(scratch, "rows.npy")
    np.save(rows_file, x)
    results = {}

    def record(key, value):
        results.setdefault(key, []).append(value)

    def cluster(workers, threads, gather):
        return LocalCluster(n_workers=workers, threads_per_worker=threads,
                            processes=True, host="127.0.0.1",
                            dashboard_address=None), gather == "direct"

    def jobs(name, rows, files):
        """The two jobs of one system on these inputs (rows on the workers
        unless --mlp-input client)."""
        blocks = da.from_array(rows, chunks=2500)
        if args.mlp_input == "cluster":
            blocks = blocks.persist()
            wait(blocks)
        bag = db.from_sequence(files, partition_size=128)
        if name == "weft":
            return {"mlp": lambda: weft.dask.predict(
                        mlp, blocks, batch_size=256).compute(),
                    "images": lambda: weft.dask.predict(
                        resnet, files, batch_size=16).compute()}
        threads = matched if name == "torch-match" else None
        return {"mlp": lambda: blocks.map_blocks(
                    torch_rows, threads, dtype=np.float32).compute(),
                "images": lambda: bag.map_partitions(
                    torch_files, threads).compute()}

    def timed_jobs(client, setting, names, workers):
        for name in names:
            # Warm: the models built or loaded on every worker, and for the
            # MLP two blocks a worker, so that the result is concatenated
            # from blocks as in the timed job: the first such job on a
            # cluster (1 x 1, Zen 3) spent 150-210 ms more deserializing
            # dask's finalize task on the worker and 90-130 ms more
            # receiving the result than the next, which a one-block warm-up
            # left to the timed job.
            warm = jobs(name, x[:2 * 2500 * workers], paths[:16 * workers])
            for workload in workloads:
                warm[workload]()
            run = jobs(name, x, paths)
            for workload in workloads:
                items = len(x) if workload == "mlp" else len(paths)
                for job in range(args.jobs):
                    record((setting, name, workload),
                           dict(timed(client, items, run[workload]),
                                job=job))
                    print(setting, name, workload,
                          results[(setting, name, workload)][-1],
                          file=sys.stderr)

    def one_process(setting):
        for workload in workloads:
            passes = (one_process_mlp(mlp, rows_file,
                                      not args.one_process_drops_results,
                                      args.jobs)
                      if workload == "mlp" else
                      [one_process_images(args.weft, resnet, paths, scratch)
                       for _ in range(args.jobs)])
            for job, figures in enumerate(passes):
                record((setting, "one-process", workload),
                       dict(figures, job=job))
                print(setting, "one-process", workload,
                      results[(setting, "one-process", workload)][-1],
                      file=sys.stderr)

    workloads = args.workloads.split(",")
    for _ in range(args.rounds):
        for setting, gather in runs(args):
            workers, threads = map(int, setting.split("x"))
            matched = max(1, host // (workers * threads))
            setting = label(setting, gather)
            # weft and one process in turns, each turn's weft job on a
            # cluster of its own with the one-process run beside it (in
            # alternating order), the machine's noise being what it is: the
            # ratio is per pair, and no cluster runs beside one process.
            for turn in range(args.turns):
                steps = ["one", "weft"] if turn % 2 == 0 else ["weft", "one"]
                for step in steps:
                    if step == "one":
                        one_process(setting)
                        continue
                    made, direct = cluster(workers, threads, gather)
                    with made, Client(made, direct_to_workers=direct) as c:
                        timed_jobs(c, setting, ["weft"], workers)
            if not args.peers:
                continue
            made, direct = cluster(workers, threads, gather)
            with made, Client(made, direct_to_workers=direct) as client:
                timed_jobs(client, setting, ["torch", "torch-match"], workers)

    def median(key, field):
        return statistics.median(r[field] for r in results[key])

    def one_process_over_weft(setting, workload, later):
        """One process's rate over weft's, pass k against job k of the
        same turn, for the first jobs (later False) or the later ones:
        (median, lowest, highest) over the pairs of all rounds, or None
        with one job a cluster and `later`."""
        ratios = [s["items_per_s"] / w["items_per_s"] for s, w in zip(
            results[(setting, "one-process", workload)],
            results[(setting, "weft", workload)])
            if (s["job"] > 0) == later]
        if not ratios:
            return None
        return statistics.median(ratios), min(ratios), max(ratios)

    rows = []
    for workload in args.workloads.split(","):
        singles = [r for k, v in results.items() for r in v
                   if k[-2:] == ("one-process", workload)]
        single = statistics.median(r["items_per_s"] for r in singles)
        single_cpu = statistics.median(r["cpu_s_per_item"] for r in singles)
        rows.append(f"\n{workload}: one process (weft, no Dask) "
                    f"{single:.1f} items/s, {single_cpu * 1e3:.2f} CPU "
                    "ms/item (median of its runs)")
        rows.append(f"{'W x T':6} {'system':12} {'items/s':>9} "
                    f"{'CPU ms/item':>11} {'weft/best peer':>14} "
                    f"{'one-process/weft':>16} {'(pairs)':>11}"
                    + (f" {'later jobs':>10} {'(pairs)':>11}"
                       if args.jobs > 1 else ""))
        for setting in (label(s, g) for s, g in runs(args)):
            weft_rate = median((setting, "weft", workload), "items_per_s")
            names = ("weft", "torch", "torch-match") if args.peers else (
                "weft",)
            peer = max(median((setting, p, workload), "items_per_s")
                       for p in names[1:]) if args.peers else float("nan")
            for name in names:
                rate = median((setting, name, workload), "items_per_s")
                cpu = median((setting, name, workload), "cpu_s_per_item")
                extra = ""
                if name == "weft":
                    ratio, low, high = one_process_over_weft(
                        setting, workload, later=False)
                    extra = (f"{weft_rate / peer:14.2f} {ratio:16.2f} "
                             f"{low:5.2f}-{high:4.2f}")
                    later = one_process_over_weft(setting, workload,
                                                  later=True)
                    if later is not None:
                        extra += (f" {later[0]:10.2f} "
                                  f"{later[1]:5.2f}-{later[2]:4.2f}")
                rows.append(f"{setting:6} {name:12} {rate:9.1f} "
                            f"{cpu * 1e3:11.2f} {extra}")
    print("\n".join(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({" ".join(k): v for k, v in results.items()}, f,
                      indent=1)


if __name__ == "__main__":
    main()
