"""Shared fixtures: the test models of tests/cli/data, and process-wide
threading settings restored after each test."""
import os

import pytest

import weft

DATA = os.environ.get(
    "WEFT_TEST_DATA",
    os.path.join(os.path.dirname(__file__), "..", "..", "tests", "cli", "data"))
EXAMPLES = os.environ.get(
    "WEFT_EXAMPLES", os.path.join(os.path.dirname(__file__), "..", "..", "examples"))


@pytest.fixture
def mlp_path():
    """y = relu(x W + b): x float32 [batch, 4], y float32 [batch, 3]."""
    return os.path.join(DATA, "mlp.onnx")


@pytest.fixture(autouse=True)
def restore_threading():
    yield
    weft.set_num_threads(0)
    weft.set_num_interop_threads(0)
