#!/usr/bin/env python3
"""Issue 43's side-by-side figures on a lent many-core host (the `device`
tool's machine), where each minute counts: the jobs a 2-vCPU machine runs
one after another run here at once, each pinned to two CPUs of its own on
distinct physical cores, so that every figure is still a two-core figure.

    lent_host.py BUNDLE OUT [--deadline-s S] [--pairs N] [--only JOB,...]
                 [--jobs-file FILE]

BUNDLE holds bin/ (weft and its test and benchmark binaries, built for a
generic AVX-512 CPU), lib/ (the shared libraries they need, from the
building machine) and models/ (thin_models.py's thinned models and their
feeds). The ONNX Runtime peer is the host's own onnxruntime for Python
(ort_bench.py, rounds.sh with ORT_PEER=python). Writes into OUT:
cpu.txt (lscpu, the CPU pairs used, `weft info`), summary.txt (each job's
result lines) and logs.tar.gz (every job's log and JSON).

Jobs: per model, the int8 form and the float form against ONNX Runtime in
rounds (as int8.sh and run.sh time them); the bf16 mode against fp32
(bf16.sh); MatMul against OpenBLAS (bench/compare); `weft tune`'s choice
and predictions (tune_accuracy.py); and the unit, scenario and serving test
suites (issue 43 item 1: CI on this CPU)."""
import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def physical_core_firsts():
    """One logical CPU per physical core (the lowest), in core order."""
    seen = {}
    base = "/sys/devices/system/cpu"
    for name in sorted(os.listdir(base)):
        if not (name.startswith("cpu") and name[3:].isdigit()):
            continue
        cpu = int(name[3:])
        if cpu not in os.sched_getaffinity(0):
            continue
        try:
            with open(f"{base}/{name}/topology/core_id") as f:
                core = int(f.read())
            with open(f"{base}/{name}/topology/physical_package_id") as f:
                package = int(f.read())
        except OSError:
            core, package = cpu, 0
        seen.setdefault((package, core), cpu)
    return sorted(seen.values())


def shell(command, env, log, timeout):
    with open(log, "w") as out:
        out.write(f"$ {command}\n")
        out.flush()
        started = time.time()
        try:
            done = subprocess.run(["bash", "-c", command], env=env, stdout=out,
                                  stderr=subprocess.STDOUT, timeout=timeout,
                                  check=False)
            status = done.returncode
        except subprocess.TimeoutExpired:
            status = "timeout"
        out.write(f"\n[exit {status} after {time.time() - started:.0f} s]\n")
    return status


def side_by_side(model, repeat, rounds):
    """int8 form and float form in rounds, then both outputs of the int8
    form and int8_compare.py's row; or the float form alone."""
    steps = [f"here={HERE}; work=$WORK; weft=$WEFT; repeat={repeat}; "
             f"rounds={rounds}; source {HERE}/rounds.sh"]
    forms = [f"{model}_int8", model] if model != "two_towers" else [model]
    for form in forms:
        steps.append(f"time_in_rounds {form}")
    if model != "two_towers":
        m = f"{model}_int8"
        steps += [
            f"mapfile -t feeds < <(feeds_of {m}); feed_flags=(); "
            "for f in \"${feeds[@]}\"; do feed_flags+=(--feed \"$f\"); done",
            f"rm -rf $WORK/{m}.weft; $WEFT run $WORK/{m}.onnx \"${{feed_flags[@]}}\" "
            f"--save $WORK/{m}.weft > /dev/null",
            f"python3 {HERE}/ort_bench.py $WORK/{m}.onnx 0 \"${{feeds[@]}}\" "
            f"--save $WORK/{m}_ort_output.npy",
            f"python3 {HERE}/int8_compare.py $WORK {model}"]
    steps.append(f"python3 {HERE}/lent_summary.py $WORK {' '.join(forms)}")
    return " && ".join(steps)


# tests/CMakeLists.txt's kernel-choice runs: the suites of every
# CPU-dependent choice under each override the CPU can run.
CHOICE_SUITES = (
    "DynamicProduct*:Attention*:Bf16*:Int8Gemm*:Int8DirectConv*:"
    "MatMulIntegerFusion*:QuantizeLinear*:QdqFusion*:QuantizedAdd*:"
    "QuantizedPool*:QuantizedMatMul*:BatchInvariance*:Conv*:MaxPool*:"
    "GlobalAveragePool*:Depthwise*:Im2Col*:GatherPhasePanels*:PhasePlanes*:"
    "MatMul*:PackedWeight*:Gemm*:PackedGemm*:PackedOperand*:Blis*:Nhwc*:"
    "Determinism*:Quantiz*:CompiledGraph*:Elementwise*")


def kernel_choices(flags):
    avx512 = " avx512f" in flags and " avx512bw" in flags
    choices = [(e, CHOICE_SUITES) for e in (
        "WEFT_GEMM_KERNEL=eigen", "WEFT_GEMM_KERNEL=blis",
        "WEFT_GEMM_KERNEL=dnnl", "WEFT_NHWC_CONV=0", "WEFT_CONV_WINOGRAD=0",
        "WEFT_DNNL_MATMUL=0", "WEFT_DNNL_DYNAMIC_MATMUL=0",
        "WEFT_INT8_KERNEL=generic", "WEFT_MATH_ROWS=portable",
        "WEFT_NHWC_CONV=1")]
    if avx512:
        choices += [(e, CHOICE_SUITES) for e in (
            "WEFT_CONV_WINOGRAD=1", "WEFT_DNNL_MATMUL=1",
            "WEFT_DNNL_DYNAMIC_MATMUL=1", "WEFT_MATH_ROWS=avx512",
            "WEFT_MATH_ROWS=avx2")]
        choices.append(("WEFT_GEMM_KERNEL=blis BLIS_ARCH_TYPE=6",
                        "Conv*:Winograd*:PackedWeight*:PackedGemm*:"
                        "PackedOperand*:*GemmTile*:MatMul*:Blis*:"
                        "Determinism*:BatchInvariance*"))
    if " avx512_vnni" in flags and avx512:
        choices += [(e, CHOICE_SUITES) for e in (
            "WEFT_INT8_KERNEL=vnni", "WEFT_INT8_KERNEL=avx2")]
    if " avx_vnni" in flags and " avx512_vnni" in flags:
        choices.append(("WEFT_INT8_KERNEL=avxvnni",
                        "Int8Gemm*:Int8DirectConv*:MatMulIntegerFusion*:"
                        "QdqFusion*:Quantiz*:NhwcQLinearConv*:"
                        "BatchInvariance*:Determinism*"))
    if " avx512_bf16" in flags:
        choices.append(("WEFT_BF16_UNITS=none", CHOICE_SUITES))
        choices.append(("WEFT_DNNL_BF16_MATMUL=1", CHOICE_SUITES))
    if " amx_bf16" in flags:
        choices.append(("WEFT_DNNL_BF16_MATMUL=0", CHOICE_SUITES))
    int8_suites = ("DnnlInt8*:MatMulIntegerFusion*:QdqFusion*:Quantiz*:"
                   "NhwcQLinear*:BatchInvariance*:Determinism*")
    if " amx_int8" in flags:
        choices.append(("WEFT_DNNL_INT8=0", int8_suites))
    elif " avx512_vnni" in flags and avx512:
        choices.append(("WEFT_DNNL_INT8=1", int8_suites))
    choices.append(("WEFT_NCHW_WINOGRAD=0",
                    "Winograd*:Conv*:BatchInvariance*:Determinism*"))
    return choices


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bundle")
    parser.add_argument("out")
    parser.add_argument("--deadline-s", type=float, default=420)
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--only", help="comma-separated job names")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of the side-by-side jobs")
    parser.add_argument("--jobs-file",
                        help="more jobs, one a line: NAME, a tab, a bash "
                        "command (run like the others: pinned, with $WEFT, "
                        "$WORK and $BUNDLE_BIN set)")
    args = parser.parse_args()
    started = time.time()
    bundle = os.path.abspath(args.bundle)
    out = os.path.abspath(args.out)
    logs = os.path.join(out, "logs")
    work = "/tmp/lent-models"
    os.makedirs(logs, exist_ok=True)

    env = dict(os.environ)
    # Only weft's binaries see the bundled libraries (the host's Python and
    # its onnxruntime keep their own): each runs through a wrapper.
    library_path = os.path.join(bundle, "lib")
    wrappers = os.path.join(bundle, "run")
    os.makedirs(wrappers, exist_ok=True)
    for name in os.listdir(os.path.join(bundle, "bin")):
        wrapper = os.path.join(wrappers, name)
        with open(wrapper, "w") as f:
            f.write(f"#!/bin/sh\nLD_LIBRARY_PATH={library_path} exec "
                    f"{bundle}/bin/{name} \"$@\"\n")
        os.chmod(wrapper, 0o755)
    env["WEFT"] = os.path.join(wrappers, "weft")
    env["WORK"] = work
    env["ORT_PEER"] = "python"
    env["PYTHONUNBUFFERED"] = "1"
    intel = "GenuineIntel" in open("/proc/cpuinfo").read()
    flags = open("/proc/cpuinfo").read()
    if " avx512f" in flags:  # OpenBLAS 0.3.21 may not know this CPU.
        env["OPENBLAS_CORETYPE"] = "SkylakeX"

    cores = physical_core_firsts()
    pairs = [cores[i:i + 2] for i in range(0, len(cores) - 1, 2)][:args.pairs]
    with open(os.path.join(out, "cpu.txt"), "w") as f:
        for command in ("lscpu", "lscpu -e", "nproc", "uname -r",
                        "$WEFT info", "python3 -c 'import onnxruntime as o; "
                        "print(\"onnxruntime\", o.__version__)'"):
            f.write(f"$ {command}\n")
            f.flush()
            subprocess.run(["bash", "-c", command], env=env, stdout=f,
                           stderr=subprocess.STDOUT, check=False)
        f.write(f"pairs (one CPU per physical core): {pairs}\n"
                f"intel: {intel}\n")
    if not pairs:
        sys.exit("fewer than two physical cores")

    subprocess.run([sys.executable, os.path.join(HERE, "thin_models.py"),
                    "fill", os.path.join(bundle, "models"), work], check=True)
    # The serving tests read tests/cli/data by the path they were built with.
    if not os.path.exists("/work/main"):
        os.makedirs("/work", exist_ok=True)
        os.symlink(ROOT, "/work/main")

    bin_dir = wrappers
    jobs = [  # Longest first, so that the pool ends together.
        ("int8_resnet18_b8", side_by_side("resnet18_b8", 10, args.rounds)),
        # Each suite runs whatever the one before gave; the job fails if any
        # did.
        ("tests", "status=0; " + "; ".join(
            f"{bin_dir}/{suite} --gtest_brief=1 --gtest_filter=-*TimingTest.* "
            "|| status=1"
            for suite in ("weft_unit_tests", "weft_scenario_tests",
                          "weft_serve_tests"))
         + f"; {bin_dir}/weft_unit_tests --gtest_brief=1 "
         "--gtest_filter='*TimingTest.*'; "
         f"{bin_dir}/weft_unit_tests --gtest_brief=1 --gtest_repeat=10 "
         "--gtest_filter='CoreBudgetTest.*' | grep -E 'FAILED|Failure|PASSED' "
         "| sort | uniq -c; exit $status"),
        ("kernel_choices", "status=0; " + "; ".join(
            f"echo '== {setting}'; env {setting} $BUNDLE_BIN/weft_unit_tests "
            f"--gtest_brief=1 '--gtest_filter={suites}-*TimingTest.*' "
            "|| status=1" for setting, suites in kernel_choices(flags))
         + "; exit $status"),
        ("bf16", f"{HERE}/bf16.sh $WORK 20" if " avx512_bf16" in flags
         else "echo no AVX-512 BF16 on this CPU"),
        ("int8_resnet18", side_by_side("resnet18", 20, args.rounds)),
        ("int8_bert_encoder", side_by_side("bert_encoder", 20, args.rounds)),
        ("int8_mobilenet_v2", side_by_side("mobilenet_v2", 20, args.rounds)),
        ("matmul", f"LD_LIBRARY_PATH={library_path} python3 {ROOT}/bench/compare "
         f"--build-dir {bundle} "
         "--filter 'BM_MatMul_.*/(256|1024|2048)/' --interleave --repetitions 3"),
        ("float_two_towers", side_by_side("two_towers", 20, args.rounds)),
        ("tune", f"python3 {ROOT}/bench/tune/tune_accuracy.py --settings "
         f"--trials 3 $WEFT {ROOT}/examples/mlp.json::--random-feeds "
         "$WORK/bert_encoder.onnx::--feed,input_ids=$WORK/bert_encoder.input_ids"
         ".npy,--feed,attention_mask=$WORK/bert_encoder.attention_mask.npy"),
    ]
    if args.jobs_file:
        with open(args.jobs_file) as f:
            jobs += [tuple(line.rstrip("\n").split("\t", 1)) for line in f
                     if "\t" in line]
    if args.only:
        jobs = [job for job in jobs if job[0] in args.only.split(",")]
    env["BUNDLE_BIN"] = bin_dir
    env["PYTHON"] = "python3"  # bf16.sh's, where /usr/bin/python3 may lack numpy
    free = list(pairs)
    running = {}
    queue = list(jobs)
    lock = threading.Lock()
    finished = threading.Condition(lock)
    results = {}

    def run_job(name, command, pair):
        remaining = args.deadline_s - (time.time() - started)
        cpus = ",".join(map(str, pair))
        status = shell(f"taskset -c {cpus} bash -c {sh_quote(command)}", env,
                       os.path.join(logs, name + ".log"), max(remaining, 1))
        with finished:
            results[name] = (status, cpus)
            free.append(pair)
            del running[name]
            finished.notify()

    with finished:
        while queue or running:
            while queue and free and time.time() - started < args.deadline_s:
                name, command = queue.pop(0)
                pair = free.pop(0)
                running[name] = pair
                threading.Thread(target=run_job, args=(name, command, pair),
                                 daemon=True).start()
            if not running:
                break
            finished.wait(timeout=5)

    with open(os.path.join(out, "summary.txt"), "w") as summary:
        summary.write(f"{time.time() - started:.0f} s; jobs not started: "
                      f"{[name for name, _ in queue]}\n")
        for name, _ in jobs:
            if name not in results:
                continue
            status, cpus = results[name]
            summary.write(f"\n=== {name} (CPUs {cpus}) exit {status}\n")
            lines = open(os.path.join(logs, name + ".log")).read().splitlines()
            keep = [line for line in lines if not line.startswith("[ RUN")]
            summary.write("\n".join(keep[-40:]) + "\n")
    for path in os.listdir(work):
        if path.endswith(".json") or path.endswith(".txt"):
            shutil.copy(os.path.join(work, path), logs)
    with tarfile.open(os.path.join(out, "logs.tar.gz"), "w:gz") as tar:
        tar.add(logs, arcname="logs")
    shutil.rmtree(logs)


def sh_quote(text):
    return "'" + text.replace("'", "'\"'\"'") + "'"


if __name__ == "__main__":
    main()
