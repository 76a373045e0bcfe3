#!/usr/bin/env python3
"""Checks that the SessionOptions table (weft/option_fields.h) is whole and
that docs/configuration.md carries it as `weft info --options --markdown`
prints it.

- Every member of `struct SessionOptions` in include/weft/options.h is a
  row of the table, in declaration order, and the table has no other row:
  a field added to the struct and not to the table fails here.
- The Markdown between the markers in docs/configuration.md is the
  command's output, byte for byte; regenerate it with
  `check_option_table.py --write WEFT REPO_ROOT`.
- Every field has a row in the document's comparison table with the peers.

Usage: check_option_table.py [--write] WEFT REPO_ROOT
"""
import json
import pathlib
import re
import subprocess
import sys

BEGIN = "<!-- session-option-fields: begin (weft info --options --markdown) -->"
END = "<!-- session-option-fields: end -->"


def struct_members(options_h):
    """The member names of struct SessionOptions, in order."""
    body = re.search(r"struct SessionOptions \{(.*?)\n\};", options_h, re.S)
    members = []
    for line in body.group(1).splitlines():
        code = line.split("//")[0].strip()
        m = re.match(r"[\w:<>, ]+?\s+(\w+)(\s*=.*)?;$", code)
        if m:
            members.append(m.group(1))
    return members


def main(argv):
    write = argv[:1] == ["--write"]
    if write:
        argv = argv[1:]
    weft, root = argv[0], pathlib.Path(argv[1])
    faults = []
    table = json.loads(subprocess.run(
        [weft, "info", "--options", "--json"], check=True,
        capture_output=True, text=True).stdout)["session_options"]
    names = [f["name"] for f in table]
    members = struct_members((root / "include/weft/options.h").read_text())
    if names != members:
        faults.append(f"the table's fields {names} are not SessionOptions' "
                      f"members {members} (src/session/option_fields.cc)")
    markdown = subprocess.run([weft, "info", "--options", "--markdown"],
                              check=True, capture_output=True,
                              text=True).stdout
    doc_path = root / "docs/configuration.md"
    doc = doc_path.read_text()
    if BEGIN not in doc or END not in doc:
        faults.append(f"{doc_path} lacks the markers {BEGIN!r} ... {END!r}")
    else:
        head, rest = doc.split(BEGIN, 1)
        current, tail = rest.split(END, 1)
        wanted = "\n" + markdown
        if write:
            doc_path.write_text(head + BEGIN + wanted + END + tail)
        elif current != wanted:
            faults.append(f"{doc_path}'s field table is not what `weft info "
                          "--options --markdown` prints: regenerate it with "
                          "check_option_table.py --write")
    for name in names:
        # A row whose first cell names the field (alone or with others).
        if not re.search(r"^\| [^|]*`" + name + r"`", doc, re.M):
            faults.append(f"{doc_path}: no row for the field '{name}'")
    for fault in faults:
        print(fault)
    print(f"option table: {len(names)} fields, {len(faults)} faults")
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
