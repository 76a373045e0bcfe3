"""Ending runs early: Ctrl-C (KeyboardInterrupt) and ONNX Runtime's
RunOptions.terminate; the session stays usable afterwards."""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import weft

# A 6-second Run of 300 chained 20 ms Spin nodes, or one 60 s Sleep,
# interrupted by SIGINT 0.3 s in; prints how long after the signal
# KeyboardInterrupt arrived, then runs the session again.
_INTERRUPTED_RUN = r"""
import os, signal, sys, threading, time
import weft
inter, kind = int(sys.argv[1]), sys.argv[2]
g = weft.Graph()
if kind == "spin":
    last = []
    for i in range(300):
        last = [g.op("Spin", last, name=f"spin{i}", micros=20000)]
    target = last[0]
else:
    target = g.op("Sleep", [], name="sleep", micros=60_000_000)
g.op("Spin", [], name="quick", micros=10)
session = weft.Session(g, weft.ConfigProto(inter_op_parallelism_threads=inter,
                                           use_per_session_threads=True))
sent = []
def interrupt():
    time.sleep(0.3)
    sent.append(time.perf_counter())
    os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=interrupt).start()
try:
    session.run(target)
    print("completed")
except KeyboardInterrupt:
    print(f"interrupted {1000 * (time.perf_counter() - sent[0]):.1f} ms")
print("usable", session.run("quick"))
"""


@pytest.mark.parametrize("inter,kind", [(1, "spin"), (2, "spin"), (-1, "spin"),
                                        (1, "sleep")])
def test_ctrl_c_cancels_a_long_run_and_the_session_stays_usable(inter, kind):
    result = subprocess.run([sys.executable, "-c", _INTERRUPTED_RUN, str(inter), kind],
                            capture_output=True, text=True, timeout=120,
                            env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[0].startswith("interrupted"), result.stdout
    latency_ms = float(lines[0].split()[1])
    # Well inside the Run's length (6 s, 60 s); the figure for the 100 ms
    # target is measured in docs/python.md, not asserted here.
    assert latency_ms < 1000, result.stdout
    assert lines[1] == "usable 10.0"


def test_run_options_terminate_cancels_and_refuses_until_cleared():
    g = weft.Graph()
    g.op("Sleep", [], name="sleep", micros=60_000_000)
    g.op("Spin", [], name="quick", micros=10)
    session = weft.InferenceSession(g)
    options = weft.RunOptions()

    def terminate_soon():
        time.sleep(0.2)
        options.terminate = True

    stopper = threading.Thread(target=terminate_soon)
    stopper.start()
    with pytest.raises(RuntimeError, match="cancelled"):
        session.run(["sleep"], {}, options)
    stopper.join()
    with pytest.raises(RuntimeError, match="before it started"):
        session.run(["quick"], {}, options)
    options.terminate = False
    (quick,) = session.run(["quick"], {}, options)
    assert quick == np.float32(10)
