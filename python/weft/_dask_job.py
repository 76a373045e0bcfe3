"""`weft predict --scheduler ADDRESS` / `--local-workers N`: the files job of
weft/predict.h on a Dask cluster, with the same outputs and resuming.

The command (tools/weft/predict_cluster.cc) expands --input as it always
does and runs ``python3 -m weft._dask_job`` with the list in a file. Each
partition (whole batches) runs on a worker as one task
(weft.dask.predict_partition); the client writes each finished partition
to OUTPUT.cluster-partial/ and joins them at the end, so a job stopped by
Ctrl-C, a lost client or a failed partition resumes where it was, and a
killed worker costs only its partitions' time (Dask runs them again).
"""

import argparse
import os
import sys
import time
import uuid

import numpy as np

from . import dask as weft_dask


class JobError(RuntimeError):
    """The job stopped: the message says where (worker, partition, item)."""


def _write_atomically(path, data):
    temporary = path + ".tmp"
    with open(temporary, "wb") as f:
        f.write(data)
    os.replace(temporary, path)


def _save_npy(path, array):
    temporary = path + ".tmp.npy"
    np.save(temporary, array)
    os.replace(temporary, path)


def _one_line(text):
    return text.replace("\n", " ").replace("\t", " ")


class _NpyOutput:
    """OUTPUT.npy, OUTPUT.npy.paths.txt and .skipped.txt, as `weft predict`
    writes them, from partitions kept in OUTPUT.cluster-partial/."""

    def __init__(self, output, paths, batch_size, partitions):
        self.output = output
        self.paths = paths
        self.partitions = partitions
        self.partial = output + ".cluster-partial"
        self.listing = ("\n".join(paths) + "\n" + f"batch {batch_size}\n" +
                        f"partitions {len(partitions)}\n")

    def pending(self):
        if os.path.isdir(self.partial):
            with open(os.path.join(self.partial, "inputs.txt")) as f:
                if f.read() != self.listing:
                    raise JobError(
                        f"{self.partial} holds an interrupted job over other "
                        "inputs, batch size or partitions; remove it to start "
                        "over, or give the same inputs")
        else:
            os.makedirs(self.partial)
            _write_atomically(os.path.join(self.partial, "inputs.txt"),
                              self.listing.encode())
        return [p for p in range(len(self.partitions))
                if not os.path.exists(self._list(p))]

    def _list(self, p):
        return os.path.join(self.partial, f"part-{p}.txt")

    def _rows(self, p):
        return os.path.join(self.partial, f"part-{p}.npy")

    def write(self, result):
        p = result["partition"]
        first = self.partitions[p][0]
        if result["rows"] is not None:
            _save_npy(self._rows(p), result["rows"])
        lines = [f"ok\t{self.paths[first + i]}\n" for i in result["predicted"]]
        lines += [f"skip\t{self.paths[first + i]}\t{_one_line(why)}\n"
                  for i, why in result["skipped"]]
        # The list is written last: it marks the partition done.
        _write_atomically(self._list(p), "".join(lines).encode())

    def finish(self):
        parts, predicted, skipped = [], [], []
        for p in range(len(self.partitions)):
            with open(self._list(p)) as f:
                for line in f.read().splitlines():
                    kind, rest = line.split("\t", 1)
                    if kind == "ok":
                        predicted.append(rest)
                    else:
                        path, _, why = rest.partition("\t")
                        skipped.append((path, why))
            if os.path.exists(self._rows(p)):
                parts.append(np.load(self._rows(p)))
        if not parts:
            raise JobError(f"no input could be predicted (all "
                           f"{len(self.paths)} skipped)")
        _save_npy(self.output, np.concatenate(parts))
        _write_atomically(self.output + ".paths.txt",
                          "".join(p + "\n" for p in predicted).encode())
        skipped_path = self.output + ".skipped.txt"
        if skipped:
            _write_atomically(skipped_path, "".join(
                f"{p}\t{w}\n" for p, w in skipped).encode())
        elif os.path.exists(skipped_path):
            os.remove(skipped_path)
        for name in os.listdir(self.partial):
            os.remove(os.path.join(self.partial, name))
        os.rmdir(self.partial)
        return skipped


class _DirectoryOutput:
    """One NAME.npy per input in a directory; a partition is pending while
    one of its inputs has no file."""

    def __init__(self, output, paths, partitions):
        self.output = output
        self.paths = paths
        self.partitions = partitions
        self.names = []
        owners = {}
        for path in paths:
            name = os.path.splitext(os.path.basename(path))[0] + ".npy"
            if name in owners:
                raise JobError(f"--output {output}: {owners[name]} and {path} "
                               f"would both write {name}; give a .npy file "
                               "as the output instead")
            owners[name] = path
            self.names.append(name)
        self.skipped = []

    def pending(self):
        os.makedirs(self.output, exist_ok=True)
        return [p for p, (a, b) in enumerate(self.partitions)
                if not all(os.path.exists(os.path.join(self.output, n))
                           for n in self.names[a:b])]

    def write(self, result):
        first = self.partitions[result["partition"]][0]
        for row, i in enumerate(result["predicted"]):
            _save_npy(os.path.join(self.output, self.names[first + i]),
                      result["rows"][row])
        self.skipped += [(self.paths[first + i], why)
                         for i, why in result["skipped"]]

    def finish(self):
        return self.skipped


class _Progress:
    """Items/s across the cluster and what failed where, on stderr: one line
    redrawn on a terminal, else a line per tenth of the job."""

    def __init__(self, total, resumed, quiet):
        self.total, self.done, self.resumed = total, resumed, resumed
        self.quiet = quiet
        self.terminal = sys.stderr.isatty()
        self.start = time.monotonic()
        self.failures = {}  # worker -> what failed there
        self.last_tenth = -1

    def fail(self, worker, what):
        self.failures.setdefault(worker or "?", []).append(what)

    def show(self, workers):
        if self.quiet or self.total == 0:
            return
        seconds = time.monotonic() - self.start
        rate = (self.done - self.resumed) / seconds if seconds > 0 else 0.0
        failed = "; ".join(f"{w}: {len(f)} failed" for w, f in
                           sorted(self.failures.items())) or "no failures"
        line = (f"{self.done}/{self.total} inputs, {rate:.1f} items/s across "
                f"{workers} worker(s), {failed}")
        if self.terminal:
            end = "\n" if self.done == self.total else ""
            sys.stderr.write(f"\r{line}\x1b[K{end}")
            sys.stderr.flush()
            return
        tenth = int(10 * self.done / self.total)
        if tenth != self.last_tenth or self.done == self.total:
            self.last_tenth = tenth
            sys.stderr.write(f"progress: {line}\n")


def run_job(client, model, paths, output, preprocess="imagenet",
            batch_size=16, skip_bad_inputs=False, partition_size=None,
            quiet=True, prefetch=True, task_hook=None):
    """The files job on ``client``'s cluster; returns a summary dict.
    ``task_hook(partition)``, when given, runs on the worker before each
    partition (the fault tests kill a worker with it)."""
    from distributed import as_completed

    partitions = weft_dask.file_partitions(len(paths), batch_size,
                                           partition_size)
    if output.endswith(".npy"):
        sink = _NpyOutput(output, paths, batch_size, partitions)
    else:
        sink = _DirectoryOutput(output, paths, partitions)
    pending = sink.pending()
    done_before = sum(b - a for p, (a, b) in enumerate(partitions)
                      if p not in set(pending))
    progress = _Progress(len(paths), done_before, quiet)
    start = time.monotonic()
    payload = weft_dask.model_payload(model)
    # Keys of this run alone: a run stopped earlier may still be cancelling
    # its own.
    job = uuid.uuid4().hex[:16]
    # The model goes to the scheduler once, as a task's argument: its
    # result is fetched by the workers from each other, loaded once per
    # process (weft.dask's cache), and can be made again if every worker
    # holding it dies (scattered data could not).
    model_future = client.submit(_keep, payload, pure=False)
    futures = {}
    for p in pending:
        a, b = partitions[p]
        futures[client.submit(
            _partition_task, model_future, paths[a:b], a, p, preprocess,
            batch_size, skip_bad_inputs, prefetch, task_hook,
            key=f"weft-predict-{job}-{p}", pure=False)] = p
    progress.show(len(client.scheduler_info()["workers"]))
    predicted = 0
    try:
        # Results are fetched as each task finishes (with_results): a
        # result held only by a worker that dies before the client asks is
        # otherwise made again while the client waits for it.
        for future, result in as_completed(futures, with_results=True,
                                           raise_errors=False):
            p = futures[future]
            a, b = partitions[p]
            if future.status == "error":
                error = future.exception()
                progress.fail(getattr(error, "last_worker", None),
                              f"partition {p}")
                raise JobError(_describe_failure(error, p, a, b))
            for i, why in result["skipped"]:
                progress.fail(result["worker"], f"input {a + i}")
            sink.write(result)
            predicted += len(result["predicted"])
            progress.done += b - a
            progress.show(len(client.scheduler_info()["workers"]))
    finally:
        for future in futures:
            future.cancel()
    skipped = sink.finish()
    return {"inputs": len(paths), "predicted": predicted,
            "resumed": done_before, "skipped": skipped,
            "seconds": time.monotonic() - start,
            "failures": progress.failures}


def _keep(payload):
    return payload


def _partition_task(payload, paths, first, partition, preprocess, batch_size,
                    skip_bad_inputs, prefetch, task_hook):
    if task_hook is not None:
        task_hook(partition)
    return weft_dask.predict_partition(payload, paths, first, partition,
                                       preprocess, batch_size,
                                       skip_bad_inputs, prefetch)


def _describe_failure(error, partition, first, stop):
    text = str(error)
    if isinstance(error, weft_dask.WorkerTaskError):
        return text
    name = type(error).__name__
    if name == "KilledWorker":
        return (f"partition {partition} (inputs {first} to {stop - 1}): the "
                f"workers that ran it died each time (out of memory, or "
                f"killed): {text}")
    return f"partition {partition} (inputs {first} to {stop - 1}): {name}: {text}"


def _security(args):
    if not (args.tls_ca_file or args.tls_cert or args.tls_key):
        return None
    if not (args.tls_ca_file and args.tls_cert and args.tls_key):
        raise JobError("TLS needs --tls-ca-file, --tls-cert and --tls-key")
    from distributed.security import Security
    return Security(tls_ca_file=args.tls_ca_file,
                    tls_client_cert=args.tls_cert,
                    tls_client_key=args.tls_key, require_encryption=True)


def _client(args):
    from distributed import Client, LocalCluster
    security = _security(args)
    if args.scheduler:
        if args.scheduler.startswith("tls://") and security is None:
            raise JobError(f"--scheduler {args.scheduler}: a tls:// address "
                           "needs --tls-ca-file, --tls-cert and --tls-key")
        return Client(args.scheduler, security=security, timeout=30), None
    # Only on this machine's loopback: nothing leaves it.
    cluster = LocalCluster(n_workers=args.local_workers,
                           threads_per_worker=args.threads_per_worker,
                           processes=True, host="127.0.0.1",
                           dashboard_address=None, security=security)
    # The client reaches these workers (loopback): results come from them
    # directly, not forwarded by the scheduler (Dask's default, for
    # clients that cannot reach their workers).
    return (Client(cluster, security=security, direct_to_workers=True),
            cluster)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="weft predict")
    parser.add_argument("model")
    parser.add_argument("--input-list", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--preprocess", default="imagenet")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--skip-bad-inputs", action="store_true")
    parser.add_argument("--no-prefetch", action="store_true")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--scheduler")
    parser.add_argument("--local-workers", type=int)
    parser.add_argument("--threads-per-worker", type=int, default=1)
    parser.add_argument("--partition-size", type=int)
    parser.add_argument("--tls-ca-file")
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    args = parser.parse_args(argv)
    with open(args.input_list, "rb") as f:
        paths = [p.decode() for p in f.read().split(b"\0") if p]
    client = cluster = None
    try:
        client, cluster = _client(args)
        summary = run_job(client, args.model, paths, args.output,
                          args.preprocess, args.batch, args.skip_bad_inputs,
                          args.partition_size, args.quiet,
                          not args.no_prefetch)
    except KeyboardInterrupt:
        sys.stderr.write("\nweft predict: stopped; run the same command "
                         "again to resume\n")
        return 130
    except (JobError, OSError, ValueError) as error:
        sys.stderr.write(f"\nweft predict: {error}\n")
        return 2 if isinstance(error, (OSError, ValueError)) else 1
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
    workers = ("--local-workers " + str(args.local_workers) if cluster
               else args.scheduler)
    seconds = summary["seconds"]
    rate = summary["predicted"] / seconds if seconds > 0 else 0.0
    line = (f"predicted {summary['predicted']} of {summary['inputs']} inputs "
            f"in {seconds:.1f} s ({rate:.1f} items/s; {workers})")
    if summary["resumed"]:
        line += f"; {summary['resumed']} done by an earlier run"
    print(line)
    if summary["skipped"]:
        print(f"skipped {len(summary['skipped'])} bad inputs:")
        for path, why in summary["skipped"]:
            print(f"  {path}: {why}")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
