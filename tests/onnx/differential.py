"""What the differential testers (pass_equivalence/, ops_against_ort/)
share: running models in ONNX Runtime through ort_expected.js, the bitwise
comparison, and the line that names the first element that differs."""
import os
import subprocess
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def run_in_onnx_runtime(models, node_modules):
    """models: key -> (model bytes, feeds). Runs each in ONNX Runtime 1.30
    (npm onnxruntime-node under node_modules, graph optimizations off).
    Returns key -> (outputs, None), or (None, ONNX Runtime's error)."""
    results = {}
    with tempfile.TemporaryDirectory() as root:
        folders = {}
        for number, (key, (model_bytes, feeds)) in enumerate(models.items()):
            folders[key] = os.path.join(root, f"case{number:07d}")
            data = os.path.join(folders[key], "test_data_set_0")
            os.makedirs(data)
            with open(os.path.join(folders[key], "model.onnx"), "wb") as f:
                f.write(model_bytes)
            for name, value in feeds.items():
                np.save(os.path.join(data, f"in_{name}.npy"), value)
        subprocess.run(["node", os.path.join(HERE, "ort_expected.js"), root],
                       check=True, stderr=subprocess.DEVNULL,
                       env=dict(os.environ, NODE_PATH=node_modules))
        for key, folder in folders.items():
            data = os.path.join(folder, "test_data_set_0")
            error_file = os.path.join(data, "error.txt")
            if os.path.exists(error_file):
                with open(error_file) as f:
                    results[key] = (None, f.read().strip())
                continue
            count = len([f for f in os.listdir(data) if f.startswith("out_")])
            results[key] = ([np.load(os.path.join(data, f"out_{k}.npy"))
                             for k in range(count)], None)
    return results


def not_bitwise(reference, candidate):
    """None when every output has the same bits, else which does not."""
    for index, (ref, got) in enumerate(zip(reference, candidate)):
        if ref.shape != got.shape or ref.tobytes() != got.tobytes():
            return f"output {index} differs in its bits"
    return None


def first_difference(index, bad, reference, got, note=""):
    """The line for output `index` where `bad` marks the elements that
    differ: how many, and the first of them."""
    at = np.unravel_index(np.argmax(bad), reference.shape)
    return (f"output {index}: {int(bad.sum())} of {reference.size} values "
            f"differ, e.g. at {tuple(int(i) for i in at)}: "
            f"{got[at]!r} against {reference[at]!r}{note}")
