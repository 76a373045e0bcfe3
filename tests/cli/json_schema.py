#!/usr/bin/env python3
"""Checks that a weft command's --json output keeps its schema.

    json_schema.py GOLDEN [--exit N] [--update] -- COMMAND ARGS...

Runs COMMAND, parses its standard output as one JSON value and compares
the value's schema (keys, and the type under each: "string", "integer",
"number", "boolean", "null", or a union "string|null"; an array by its
elements) with GOLDEN, a JSON file holding that schema. A key added,
removed or retyped fails the check and prints the difference; values are
free (times and CPU models vary). "number" in GOLDEN accepts integers; an
empty array matches any array schema. --update writes GOLDEN from the run.
"""
import json
import subprocess
import sys


def schema(value):
    if isinstance(value, dict):
        return {key: schema(v) for key, v in sorted(value.items())}
    if isinstance(value, list):
        if not value:
            return []
        elements = [schema(v) for v in value]
        # Elements of one array share a schema; merge scalar unions.
        first = elements[0]
        for other in elements[1:]:
            first = merge(first, other)
        return [first]
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "null"


def merge(a, b):
    if a == b:
        return a
    if isinstance(a, str) and isinstance(b, str):
        kinds = set(a.split("|")) | set(b.split("|"))
        if kinds <= {"integer", "number"}:
            return "number"
        return "|".join(sorted(kinds))
    return a  # Structural differences show up against the golden file.


def compare(golden, actual, path, problems):
    if isinstance(golden, dict):
        if not isinstance(actual, dict):
            problems.append(f"{path}: expected an object, got {actual!r}")
            return
        for key in golden:
            if key not in actual:
                problems.append(f"{path}.{key}: missing")
        for key in actual:
            if key not in golden:
                problems.append(f"{path}.{key}: not in the schema "
                                f"({json.dumps(actual[key])})")
            else:
                compare(golden[key], actual[key], f"{path}.{key}", problems)
    elif isinstance(golden, list):
        if not isinstance(actual, list):
            problems.append(f"{path}: expected an array, got {actual!r}")
        elif golden and actual:
            compare(golden[0], actual[0], f"{path}[]", problems)
    else:
        allowed = set(golden.split("|"))
        if "number" in allowed:
            allowed.add("integer")
        kinds = actual.split("|") if isinstance(actual, str) else [None]
        if not all(k in allowed for k in kinds):
            problems.append(f"{path}: expected {golden}, got "
                            f"{json.dumps(actual)}")


def main(argv):
    split = argv.index("--")
    options, command = argv[1:split], argv[split + 1:]
    golden_path = options[0]
    expected_exit = 0
    if "--exit" in options:
        expected_exit = int(options[options.index("--exit") + 1])
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != expected_exit:
        print(f"exit code {run.returncode}, expected {expected_exit}\n"
              f"{run.stdout}{run.stderr}")
        return 1
    try:
        actual = schema(json.loads(run.stdout))
    except json.JSONDecodeError as e:
        print(f"standard output is not one JSON value ({e}):\n{run.stdout}")
        return 1
    if "--update" in options:
        with open(golden_path, "w") as f:
            json.dump(actual, f, indent=1, sort_keys=True)
            f.write("\n")
        return 0
    with open(golden_path) as f:
        golden = json.load(f)
    problems = []
    compare(golden, actual, "$", problems)
    if problems:
        print(f"{golden_path}: the output's schema changed "
              "(docs/cli-json.md; rerun with --update if intended):")
        print("\n".join("  " + p for p in problems))
        return 1
    print(f"{golden_path}: schema matches")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
