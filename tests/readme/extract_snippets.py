#!/usr/bin/env python3
"""Writes every ```cpp block of a Markdown file as a C++ program.

    extract_snippets.py README.md OUT_DIR

Block N becomes OUT_DIR/readme_snippet_N.cc: the block's #include lines on
top, the rest as the body of main(), which returns 0 at its end (a block
may return 1 earlier on an error). tests/CMakeLists.txt runs this at
configure time and builds and runs each program, so README's examples
compile as written and cannot drift from the API.
"""
import os
import sys


def main(readme, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for old in os.listdir(out_dir):
        if old.startswith("readme_snippet_"):
            os.remove(os.path.join(out_dir, old))
    blocks, current = [], None
    with open(readme, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if current is None and line.strip() == "```cpp":
                current = []
            elif current is not None and line.strip() == "```":
                blocks.append(current)
                current = None
            elif current is not None:
                current.append(line)
    for n, block in enumerate(blocks, 1):
        includes = [l for l in block if l.startswith("#include")]
        body = [l for l in block if not l.startswith("#include")]
        path = os.path.join(out_dir, f"readme_snippet_{n}.cc")
        with open(path, "w", encoding="utf-8") as out:
            out.write(f"// Generated from {os.path.basename(readme)} "
                      f"(cpp block {n}); do not edit.\n")
            out.write("\n".join(includes) + "\n\nint main() {\n")
            out.write("\n".join("  " + l if l else "" for l in body))
            out.write("\n  return 0;\n}\n")
    print(len(blocks))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
