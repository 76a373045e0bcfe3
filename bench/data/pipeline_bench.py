"""Input pipeline + ResNet-18, images/s end to end and CPU seconds per image
(#46 item 9): a folder of JPEGs -> decode, random-resized-crop 224, flip,
normalise -> ResNet-18 in batches of 16.

Side by side, each in a fresh process, in turns (round 1 of every setting,
then round 2, ...), the median of the rounds reported:
  torch      PyTorch's DataLoader (num_workers 0/1/2, torchvision
             transforms) feeding PyTorch's ResNet-18 (torch threads 1/2)
  dl+weft    the same DataLoader feeding weft's InferenceSession on the
             exported model (weft intra 1/2)
  weft       `weft predict MODEL --input 'DIR/*.jpg' --preprocess
             imagenet-train --batch 16` with its default settings
  weft i/j +/-prefetch   weft's pipeline at each (inter, intra) in {1,2}^2,
             with and without a prefetch (the seed's experiment)

    python3 pipeline_bench.py --images DIR --model resnet18.onnx \
        --weft build/bin/weft [--count N] [--rounds R]
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def cpu_seconds_of_children():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def dataloader(paths, workers):
    import torch
    import torchvision.transforms as T
    from PIL import Image

    transform = T.Compose([
        T.RandomResizedCrop(224, antialias=True), T.RandomHorizontalFlip(),
        T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])

    class Files(torch.utils.data.Dataset):
        def __len__(self):
            return len(paths)

        def __getitem__(self, i):
            return transform(Image.open(paths[i]).convert("RGB"))

    # PyTorch 1.13 refuses prefetch_factor without workers; with them its
    # default (2 batches per worker) applies.
    return torch.utils.data.DataLoader(Files(), batch_size=16,
                                       num_workers=workers)


def run_one(config, paths, model):
    """In this process: one configuration, timed from its first batch asked
    to its last result. Prints JSON."""
    import torch
    kind = config["kind"]
    torch.manual_seed(0)
    if kind == "torch":
        import torchvision
        sys.path.insert(0, os.path.join(HERE, "..", "models"))
        from torch_threads import set_torch_threads
        set_torch_threads(config["threads"])
        net = torchvision.models.resnet18().eval()
        run = lambda batch: net(batch)  # noqa: E731
    else:
        sys.path.insert(0, config["weft_python"])
        import weft
        options = weft.SessionOptions()
        options.inter_op_num_threads = 1
        options.intra_op_num_threads = config["threads"]
        session = weft.InferenceSession(model, options)
        run = lambda batch: session.run(None, {"input": batch.numpy()})  # noqa
    loader = dataloader(paths, config["workers"])
    start = time.perf_counter()
    cpu_start = time.process_time()
    images = 0
    with torch.no_grad():
        for batch in loader:
            run(batch)
            images += batch.shape[0]
    seconds = time.perf_counter() - start
    own_cpu = time.process_time() - cpu_start
    print(json.dumps({"images": images, "seconds": seconds,
                      "own_cpu": own_cpu}))


def measure(config, args, paths):
    """Runs one configuration in a fresh process; images/s and CPU s/image
    (the process and its DataLoader workers)."""
    before = cpu_seconds_of_children()
    if config["kind"] == "weft-predict":
        output = os.path.join(args.scratch, "preds.npy")
        for leftover in (output, output + ".paths.txt"):
            if os.path.exists(leftover):
                os.remove(leftover)
        command = [args.weft, "predict", args.model, "--input",
                   os.path.join(args.images, "*.jpg"), "--preprocess",
                   "imagenet-train", "--batch", "16", "-o", output, "-q"]
        command += config.get("extra", [])
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            sys.exit(f"weft predict failed: {done.stderr}")
        images = len(paths)
    else:
        command = [sys.executable, __file__, "--one", json.dumps(config),
                   "--images", args.images, "--model", args.model,
                   "--count", str(args.count)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"{config}: {done.stderr}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        seconds, images = result["seconds"], result["images"]
    cpu = cpu_seconds_of_children() - before
    return images / seconds, cpu / images


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--images", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--weft", default="build/bin/weft")
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scratch", default="/tmp/weft-pipeline-bench")
    parser.add_argument("--one")
    parser.add_argument("--skip-grid", action="store_true")
    args = parser.parse_args()
    paths = sorted(os.path.join(args.images, f)
                   for f in os.listdir(args.images) if f.endswith(".jpg"))
    paths = paths[:args.count]
    if args.one:
        run_one(json.loads(args.one), paths, args.model)
        return
    if len(paths) < args.count:
        sys.exit(f"{args.images} has {len(paths)} JPEGs, --count is {args.count}")
    if len(os.listdir(args.images)) != args.count:
        # weft predict reads the whole glob: keep the folder to --count.
        sys.exit(f"{args.images} must hold exactly --count JPEGs")
    os.makedirs(args.scratch, exist_ok=True)
    weft_python = os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(args.weft))), "python")
    configs = {}
    for workers in (0, 1, 2):
        for threads in (1, 2):
            configs[f"torch w{workers} t{threads}"] = {
                "kind": "torch", "workers": workers, "threads": threads}
            configs[f"dl+weft w{workers} intra{threads}"] = {
                "kind": "dl+weft", "workers": workers, "threads": threads,
                "weft_python": weft_python}
    configs["weft predict (defaults)"] = {"kind": "weft-predict"}
    if not args.skip_grid:
        for inter in (1, 2):
            for intra in (1, 2):
                for prefetch in ("on", "off"):
                    extra = ["--inter", str(inter), "--intra", str(intra)]
                    if prefetch == "off":
                        extra.append("--no-prefetch")
                    configs[f"weft inter{inter} intra{intra} prefetch {prefetch}"] = {
                        "kind": "weft-predict", "extra": extra}
    results = {name: [] for name in configs}
    for round_ in range(args.rounds):
        for name, config in configs.items():
            results[name].append(measure(config, args, paths))
            print(f"round {round_ + 1} {name}: {results[name][-1][0]:.1f} images/s",
                  file=sys.stderr)
    print(f"{args.count} images, median of {args.rounds} rounds in turns")
    print(f"{'setting':42s} {'images/s':>9s} {'CPU s/image':>12s}")
    medians = {}
    for name, runs in results.items():
        rate = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        medians[name] = rate
        print(f"{name:42s} {rate:9.1f} {cpu:12.3f}")
    best_torch = max(v for k, v in medians.items() if k.startswith("torch"))
    best_dl = max(v for k, v in medians.items() if k.startswith("dl+weft"))
    ours = medians["weft predict (defaults)"]
    print(f"weft predict vs best PyTorch (a): {ours / best_torch:.2f}x (target 1.30x)")
    print(f"weft predict vs best DataLoader+weft (b): {ours / best_dl:.2f}x (target 1.15x)")


if __name__ == "__main__":
    main()
