"""Item 8's experiment: GIL-releasing py_function bodies overlap at
inter = 2, pure-Python ones do not; the example prints both tables.

The example runs in a fresh interpreter: it sets NumPy's BLAS to one thread
before importing NumPy, which this test process has imported already."""
import os
import re
import subprocess
import sys

from conftest import EXAMPLES

SCRIPT = os.path.join(EXAMPLES, "python", "thread_experiment.py")


def _run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ))


def test_gil_releasing_bodies_overlap_and_pure_python_ones_do_not():
    result = _run("--nodes", "6", "--ms", "15", "--runs", "5")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    # Both tables, then one conclusion per kind of body.
    assert out.count("inter \\ intra") == 2
    assert "pure Python (holds the GIL): 6 independent py_function nodes" in out
    assert "NumPy product + sleep (releases the GIL): 6 independent" in out
    ratios = dict(re.findall(r"^  (.*?): inter = 2 takes ([0-9.]+)x", out, re.M))
    assert len(ratios) == 2, out
    # Perfect overlap on 2 cores is 0.5, none is 1.0; the example calls up
    # to 0.7 an overlap, and so does this test (0.61 on a noisy minute of
    # the 2-vCPU CI machine failed a bound of 0.6).
    assert float(ratios["NumPy product + sleep (releases the GIL)"]) <= 0.7, out
    # Whether pure-Python bodies overlap is read from the CPUs they keep
    # busy, not from the time: on this project's VMs one vCPU ran Python
    # 1.7x slower than the other (13.5 against 7.7 ms, pinned), so inter = 2
    # took 0.68-0.73x the inter = 1 time with one body running at a time.
    cpus = dict(re.findall(r"^  (.*?): inter = 2 .* keeps ([0-9.]+)x as many CPUs", out,
                           re.M))
    assert float(cpus["pure Python (holds the GIL)"]) <= 1.25, out
    assert float(cpus["NumPy product + sleep (releases the GIL)"]) >= 1.4, out
    # Each conclusion follows its own figure: GIL-releasing bodies overlap;
    # pure-Python ones do not, or (on a noisy machine) in part.
    assert "releases the GIL): inter = 2 takes" in out
    assert re.search(r"releases the GIL\): .*; they overlap:", out), out
    assert re.search(r"holds the GIL\): .*; they (do not overlap|overlap in part)",
                     out), out


def test_bad_arguments_are_refused():
    bad = _run("--nodes", "0")
    assert bad.returncode == 2 and "--nodes" in bad.stderr
