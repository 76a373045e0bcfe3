"""The picture of a `weft tune` result: the (inter, intra) grid as two heat
maps (predicted and measured, the winner marked) and one Run at the chosen
setting as a timeline with the critical path highlighted.

Used by ``weft.TuneResult.plot()`` and, as a script, by ``weft tune --plot
FILE`` (``python3 _tune_plot.py RESULT.json FILE``); needs only matplotlib
(Debian's python3-matplotlib), not the rest of weft.
"""

import json
import math
import sys


def _grid(result, key):
    """Rows: inter values; columns: intra values; cells: `key` (NaN when
    null)."""
    inters = sorted({s["inter"] for s in result["settings"]})
    intras = sorted({s["intra"] for s in result["settings"]})
    cells = [[math.nan] * len(intras) for _ in inters]
    for s in result["settings"]:
        value = s.get(key)
        cells[inters.index(s["inter"])][intras.index(s["intra"])] = (
            math.nan if value is None else value)
    return inters, intras, cells


def _heat_map(ax, result, key, title):
    inters, intras, cells = _grid(result, key)
    image = ax.imshow(cells, cmap="YlGn_r", aspect="auto")
    ax.set_xticks(range(len(intras)), [str(v) for v in intras])
    ax.set_yticks(range(len(inters)), [str(v) for v in inters])
    ax.set_xlabel("intra_op_parallelism_threads")
    ax.set_ylabel("inter_op_parallelism_threads")
    ax.set_title(title)
    for i, row in enumerate(cells):
        for j, value in enumerate(row):
            text = "-" if math.isnan(value) else f"{value:.3g} ms"
            ax.text(j, i, text, ha="center", va="center", fontsize=8,
                    color="black")
    best = result["best"]
    i, j = inters.index(best["inter"]), intras.index(best["intra"])
    ax.add_patch(_rectangle((j - 0.5, i - 0.5), 1, 1, fill=False,
                            edgecolor="red", linewidth=3))
    ax.annotate("best", (j, i - 0.32), color="red", ha="center",
                fontsize=8, fontweight="bold")
    return image


def _rectangle(*args, **kwargs):
    from matplotlib.patches import Rectangle
    return Rectangle(*args, **kwargs)


def _timeline(ax, result):
    critical = set(result["critical_path"])
    for entry in result["timeline"]:
        on_path = entry["node"] in critical
        ax.barh(entry["lane"], entry["end_ms"] - entry["start_ms"],
                left=entry["start_ms"], height=0.6,
                color="tab:red" if on_path else "tab:blue",
                edgecolor="black", linewidth=0.3)
    best = result["best"]
    kind = "measured" if result.get("timeline_measured") else "predicted"
    ax.set_title(f"one Run at ({best['inter']}, {best['intra']}), {kind}; "
                 "critical path in red")
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("thread")
    lanes = sorted({e["lane"] for e in result["timeline"]})
    ax.set_yticks(lanes, [str(lane) for lane in lanes])


def plot(result, path=None):
    """Draws `result` (the dict of ``weft tune --json``) and returns the
    matplotlib Figure; writes it to `path` (PNG or SVG by its extension)
    when given."""
    import matplotlib
    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = plt.figure(figsize=(12, 8), layout="constrained")
    grid = figure.add_gridspec(2, 2)
    predicted = figure.add_subplot(grid[0, 0])
    measured = figure.add_subplot(grid[0, 1])
    timeline = figure.add_subplot(grid[1, :])
    _heat_map(predicted, result, "predicted_ms", "predicted Run time")
    title = ("measured Run time (medians)" if result["measured"]
             else f"not measured: a prediction for {result['cores']} cores")
    _heat_map(measured, result, "measured_ms", title)
    _timeline(timeline, result)
    figure.suptitle(
        f"weft tune {result.get('graph') or ''}: parallelism "
        f"{result['parallelism']:.2f}, work {result['work_ms']:.3g} ms, "
        f"critical path {result['span_ms']:.3g} ms")
    if path is not None:
        figure.savefig(path)
    return figure


def main(argv):
    if len(argv) != 3:
        print("usage: _tune_plot.py RESULT.json FILE.png|FILE.svg", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        result = json.load(f)
    plot(result, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
