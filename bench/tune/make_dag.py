#!/usr/bin/python3
"""A synthetic DAG family for `weft tune`'s accuracy benchmark: `width`
independent chains of `depth` MatMul -> Relu steps on n x n matrices,
joined by a tree of Adds. Width sets the graph's parallelism; MatMul splits
over intra-op threads, Relu barely.

    make_dag.py --width W [--depth D] [--size N] OUT.json
"""
import argparse
import json


def make_dag(width, depth, size):
    nodes = []

    def random(name, seed):
        nodes.append({"name": name, "op": "RandomUniform",
                      "attrs": {"dtype": "float32", "seed": seed,
                                "shape": [size, size]}})
        return name

    ends = []
    for chain in range(width):
        x = random(f"c{chain}_x", 1000 * chain + 1)
        for step in range(depth):
            w = random(f"c{chain}_w{step}", 1000 * chain + 10 + step)
            product = f"c{chain}_matmul{step}"
            nodes.append({"name": product, "op": "MatMul", "inputs": [x, w]})
            x = f"c{chain}_relu{step}"
            nodes.append({"name": x, "op": "Relu", "inputs": [product]})
        ends.append(x)
    level = 0
    while len(ends) > 1:
        joined = []
        for i in range(0, len(ends) - 1, 2):
            name = f"join{level}_{i // 2}"
            nodes.append({"name": name, "op": "Add", "inputs": [ends[i], ends[i + 1]]})
            joined.append(name)
        if len(ends) % 2:
            joined.append(ends[-1])
        ends, level = joined, level + 1
    return {"format": "weft-graph", "version": 1, "nodes": nodes, "outputs": ends}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--width", type=int, required=True)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("out")
    args = parser.parse_args()
    if args.width < 1 or args.depth < 1 or args.size < 1:
        parser.error("--width, --depth and --size must be >= 1")
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(make_dag(args.width, args.depth, args.size), f, indent=1)


if __name__ == "__main__":
    main()
