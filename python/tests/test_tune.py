"""weft.tune() and its picture: the result's fields, the grid, the
measured share of it, and a figure that holds what it should."""
import os
import subprocess

import numpy as np
import pytest

import weft
from conftest import EXAMPLES


def _branches():
    """Two independent 8 ms branches joined: parallelism about 2."""
    g = weft.Graph()
    left = g.op("Spin", [], name="left", micros=8000)
    right = g.op("Spin", [], name="right", micros=8000)
    g.op("Add", [left, right], name="join")
    g.outputs = ["join"]
    return g


def test_tune_returns_the_best_setting_the_grid_and_the_reason():
    result = weft.tune(_branches())
    cores = os.cpu_count()
    assert 1.8 < result.parallelism < 2.2
    assert result.critical_path[-1] == "join"
    settings = {(row["inter"], row["intra"]) for row in result.table}
    assert (-1, 1) in settings and (1, 1) in settings
    assert len(result.table) == len(settings)  # One row per setting.
    measured = [row for row in result.table if row["measured_ms"] is not None]
    assert 1 <= len(measured) <= len(result.table) // 2
    best = result.best
    # The winner is the fastest measured, or one within the tie fraction
    # (3%, docs/tune.md) that starts fewer threads.
    assert best["measured_ms"] <= 1.03 * min(row["measured_ms"] for row in measured)
    if cores >= 2:
        # Two branches: the winner runs them at once.
        assert best["inter_op_parallelism_threads"] in (0, 2) or best["inter"] >= 2
    # The explanation leads with the parallelism it measured (about 2).
    assert result.explain().startswith(f"parallelism {result.parallelism:.1f}")


def test_a_prediction_for_another_machine_measures_nothing():
    result = weft.tune(_branches(), cores=8)
    assert all(row["measured_ms"] is None for row in result.table)
    assert max(row["inter"] for row in result.table) == 8
    assert result.data["measured"] is False


def test_bad_input_raises():
    with pytest.raises(ValueError, match="--cores 0 is out of range"):
        weft.tune(_branches(), cores=0)
    g = weft.Graph()
    x = g.placeholder("x", np.float32, [3])
    g.op("Relu", [x], name="y")
    g.outputs = ["y"]
    with pytest.raises(ValueError, match="x"):
        weft.tune(g)  # No feed for x.


def test_the_plot_holds_both_heat_maps_the_winner_and_the_timeline(tmp_path):
    pytest.importorskip("matplotlib")
    result = weft.tune(_branches())
    path = tmp_path / "tune.svg"
    figure = result.plot(path)
    predicted, measured, timeline = figure.axes[:3]
    inters = sorted({row["inter"] for row in result.table})
    intras = sorted({row["intra"] for row in result.table})
    for heat_map in (predicted, measured):
        assert heat_map.get_xlabel() == "intra_op_parallelism_threads"
        assert heat_map.get_ylabel() == "inter_op_parallelism_threads"
        (image,) = heat_map.get_images()
        assert image.get_array().shape == (len(inters), len(intras))  # A cell per setting.
        assert "best" in [t.get_text() for t in heat_map.texts]
    assert [t.get_text() for t in predicted.texts].count("-") == 0
    assert "critical path in red" in timeline.get_title()
    assert len(timeline.patches) == len(result.data["timeline"])
    svg = path.read_text()
    assert "intra_op_parallelism_threads" in svg or "<svg" in svg


def test_the_command_draws_a_png():
    pytest.importorskip("matplotlib")
    cli = os.environ.get("WEFT_CLI")
    if not cli:
        pytest.skip("WEFT_CLI is set by ctest")
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), "weft_tune_test.png")
    if os.path.exists(out):
        os.remove(out)
    done = subprocess.run([cli, "tune", os.path.join(EXAMPLES, "two_spin_branches.json"),
                           "--plot", out], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    with open(out, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
