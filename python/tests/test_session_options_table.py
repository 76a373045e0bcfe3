"""The core SessionOptions binding has a property per field of the C++
table (weft/option_fields.h), with the table's defaults."""
import json
import os
import subprocess

import pytest

from weft import _weft


def _table():
    cli = os.environ.get("WEFT_CLI")
    if not cli:
        pytest.skip("WEFT_CLI is not set")
    out = subprocess.run([cli, "info", "--options", "--json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["session_options"]


def test_every_field_of_the_table_is_a_property_with_its_default():
    options = _weft._SessionOptions()
    for field in _table():
        value = getattr(options, field["name"])
        if isinstance(value, bool):
            assert str(value).lower() == field["default"], field["name"]
        elif isinstance(value, (int, float)):
            assert value == float(field["default"]), field["name"]
        elif isinstance(value, str):  # A choice: its default is its text.
            assert value == field["default"], field["name"]
        else:
            assert len(value) == 0, field["name"]


def test_fields_the_old_binding_lacked_are_settable():
    options = _weft._SessionOptions()
    options.inline_node_cost_ns = 0.0
    options.intra_op_pin_cpus = [0]
    options.session_inter_op_thread_pools = [(2, "shared")]
    assert options.inline_node_cost_ns == 0.0
    assert options.intra_op_pin_cpus == [0]
    assert options.session_inter_op_thread_pools == [(2, "shared")]
    options.add_inter_op_pool(1, "")
    assert options.session_inter_op_thread_pools[-1] == (1, "")
