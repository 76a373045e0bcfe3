#!/usr/bin/env python3
"""Checks that each floor of src/ includes only the floors below it.

A floor is a folder of src/ (src/io/onnx belongs to io). FLOORS lists, for
each floor, the floors its non-test files may include ("weft/..." public
headers are open to every floor); the table itself must have no cycle, so
no folder-level cycle can be built. tools/ and python/ are the library's
users: they may include only include/weft/.

PENDING lists the includes that break the rule today, each an item of the
re-floor (issue 44) still to do. The check fails on any include that is
neither allowed nor pending, and on a pending entry that is gone, so the
list can only shrink.

Usage: check_floors.py REPO_ROOT   (exit 0 clean, 1 with each fault named)
       check_floors.py --self-test
"""
import pathlib
import re
import sys

# floor -> the floors it may include (bottom of the house first).
FLOORS = {
    "threading": set(),
    "framework": {"threading"},
    "kernels": set(),
    "ops": {"framework", "kernels", "threading"},
    "runtime": {"framework", "threading"},
    # threading for the mutex of constant folding's cache, shared by a
    # session's concurrent compiles (optimize/fold_cache.h).
    "optimize": {"framework", "runtime", "threading"},
    # The session, its options and pools: the top of the library, over
    # the compiled graph, the passes and the kernels it checks.
    "session": {"framework", "threading", "kernels", "ops", "runtime",
                "optimize", "io"},
    "io": {"framework"},
    # Input pipelines (weft/data.h, weft/predict.h): stages on the
    # session's pools (session/pools.h) and the blocking pool.
    "data": {"framework", "threading", "runtime", "session"},
    # tune drives sessions (weft/session.h) like any user of the library.
    "tune": {"framework", "io", "runtime", "threading", "session"},
    # The model server: a user of the library (public headers only, the
    # session's among them), as the command and Python are.
    "serve": {"session"},
    # Test helpers serve every floor's tests and are never linked into the
    # library.
    "test_support": {"framework", "threading", "runtime", "ops", "kernels",
                     "session"},
}

# Ports: single headers of a floor that named floors below it may include,
# each the one narrow door for what those floors need of it. Their edges
# count in the cycle check like any floor's.
PORTS = {
    # Subgraphs, session resources and the core budget for control-flow
    # and queue kernels, and subgraph output dtypes for the ONNX importer.
    "runtime/kernel_services.h": {"ops", "io"},
    # The image codecs, for the decode and encode ops.
    "io/image_codec.h": {"ops"},
}

# Public headers whose code lives in a floor: including one is including
# that floor (a pass that made a Session would be a loop no "src/" include
# shows: the session runs the passes).
PUBLIC_HEADER_FLOOR = {
    "weft/session.h": "session",
    "weft/weft.h": "session",
    "weft/tune.h": "tune",
    "weft/machine.h": "session",
    "weft/config_file.h": "session",
    "weft/serve.h": "serve",
    "weft/data.h": "data",
    "weft/predict.h": "data",
}

# Users of the library: public headers only.
USERS = ("tools", "python")

# (file, included header) pairs that break the rule today, each with the
# step that will remove it. Empty since the re-floor (issue 44) ended: an
# exception added here must say why the include cannot go through a floor
# below or a port.
PENDING = set()

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/([^"]+)"', re.M)


def cycle_in(floors):
    """A list of floors forming a cycle in the table, or None."""
    state = {}

    def visit(floor, path):
        state[floor] = "open"
        for below in sorted(floors[floor]):
            if state.get(below) == "open":
                return path + [floor, below]
            if below not in state:
                found = visit(below, path + [floor])
                if found:
                    return found
        state[floor] = "done"
        return None

    for floor in sorted(floors):
        if floor not in state:
            found = visit(floor, [])
            if found:
                return found
    return None


def sources(root, folder):
    for path in sorted((root / folder).rglob("*")):
        if path.suffix in (".cc", ".h") and path.is_file():
            yield path


def with_port_edges(floors, ports):
    """The floor table with an edge from each floor a port admits to the
    port's floor."""
    edges = {floor: set(below) for floor, below in floors.items()}
    for header, users in ports.items():
        for user in users:
            edges.setdefault(user, set()).add(header.split("/")[0])
    return edges


def check(root, floors, pending, ports=None):
    """The faults of the tree at `root`, one line each."""
    ports = ports or {}
    faults = []
    cycle = cycle_in(with_port_edges(floors, ports))
    if cycle:
        faults.append("the floor table has a cycle: " + " -> ".join(cycle))
    seen_pending = set()
    for path in sources(root, "src"):
        rel = path.relative_to(root).as_posix()
        floor = path.relative_to(root / "src").parts[0]
        if floor not in floors:
            faults.append(f"{rel}: floor '{floor}' is not in the table "
                          "(tests/layering/check_floors.py)")
            continue
        is_test = path.stem.endswith("_test")
        for included_floor, rest in INCLUDE.findall(path.read_text()):
            header = f"{included_floor}/{rest}"
            # A public header stands for the floor its code lives in.
            included_floor = PUBLIC_HEADER_FLOOR.get(header, included_floor)
            # A floor's own tests may reach any floor they exercise.
            if included_floor in ("weft", floor) or is_test:
                continue
            if included_floor in floors[floor]:
                continue
            if floor in ports.get(header, ()):
                continue
            if (rel, header) in pending:
                seen_pending.add((rel, header))
                continue
            faults.append(f"{rel} includes {header}: floor '{floor}' may "
                          f"include only {sorted(floors[floor]) or 'weft/'}")
    for user in USERS:
        for path in sources(root, user):
            rel = path.relative_to(root).as_posix()
            for included_floor, rest in INCLUDE.findall(path.read_text()):
                header = f"{included_floor}/{rest}"
                if included_floor == "weft" or included_floor not in floors:
                    continue
                if (rel, header) in pending:
                    seen_pending.add((rel, header))
                else:
                    faults.append(f"{rel} includes {header}: {user}/ "
                                  "may include only include/weft/")
    for rel, header in sorted(pending - seen_pending):
        faults.append(f"PENDING lists {rel} -> {header}, which is gone: "
                      "remove it from the list")
    return faults


def self_test():
    """The check finds an upward include, a user reaching into src/, a
    stale pending entry and a cycle, and passes a clean tree."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        files = {
            "src/kernels/tile.cc": '#include "kernels/tile.h"\n',
            "src/ops/conv.cc": '#include "kernels/tile.h"\n',
            "tools/weft/main.cc": '#include "weft/weft.h"\n',
        }
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        floors = {"kernels": set(), "ops": {"kernels"}}
        assert check(root, floors, set()) == [], "a clean tree has faults"
        (root / "src/kernels/tile.cc").write_text('#include "ops/conv.h"\n')
        (root / "tools/weft/main.cc").write_text('#include "ops/conv.h"\n')
        faults = check(root, floors, {("src/ops/conv.cc", "ops/gone.h")})
        assert any("src/kernels/tile.cc includes ops/conv.h" in f
                   for f in faults), faults
        assert any("tools/weft/main.cc includes ops/conv.h" in f
                   for f in faults), faults
        assert any("which is gone" in f for f in faults), faults
        cyclic = {"kernels": {"ops"}, "ops": {"kernels"}}
        assert any("cycle" in f for f in check(root, cyclic, set()))
        # A port admits its one header to the floors it names, and its
        # edge counts in the cycle check.
        (root / "src/kernels/tile.cc").write_text('#include "ops/port.h"\n')
        (root / "tools/weft/main.cc").write_text('#include "weft/weft.h"\n')
        (root / "src/ops/conv.cc").write_text("")
        ports = {"ops/port.h": {"kernels"}}
        assert check(root, {"kernels": set(), "ops": set()}, set(),
                     ports) == [], "a port's header is refused"
        (root / "src/kernels/tile.cc").write_text('#include "ops/other.h"\n')
        assert check(root, {"kernels": set(), "ops": set()}, set(), ports)
        # A public header counts as the floor its code lives in.
        (root / "src/kernels/tile.cc").write_text(
            '#include "weft/session.h"\n')
        assert any("tile.cc includes weft/session.h" in f for f in check(
            root, {"kernels": set(), "ops": set()}, set(), ports))
        assert any("cycle" in f for f in check(
            root, {"kernels": set(), "ops": {"kernels"}}, set(), ports))
    print("check_floors self-test passed")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    root = pathlib.Path(sys.argv[1]).resolve()
    faults = check(root, FLOORS, PENDING, PORTS)
    for fault in faults:
        print(fault)
    checked = sum(1 for _ in sources(root, "src"))
    print(f"floors: {checked} files checked, {len(PENDING)} pending, "
          f"{len(faults)} faults")
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
