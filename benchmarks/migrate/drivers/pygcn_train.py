"""tkipf/pygcn: the repository's own entry point (pygcn/train.py, `args.cuda` flag), tiny config.

The driver writes a small random graph in Cora's file format (1,500 nodes: the script's fixed train/val/test
index ranges reach 1,500) where the script's `load_data()` reads it, so the repository's loading code runs too.
"""
import os
import runpy
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)


def write_cora(folder, nodes=1500, features=16, classes=4, edges=3000, seed=0):
    rng = np.random.RandomState(seed)
    os.makedirs(folder, exist_ok=True)
    ids = rng.choice(10 ** 6, nodes, replace=False)
    with open(os.path.join(folder, "cora.content"), "w") as out:
        for node in ids:
            bits = " ".join(str(b) for b in rng.randint(0, 2, features))
            out.write(f"{node} {bits} class{rng.randint(classes)}\n")
    with open(os.path.join(folder, "cora.cites"), "w") as out:
        for _ in range(edges):
            a, b = rng.choice(ids, 2, replace=False)
            out.write(f"{a} {b}\n")


write_cora(os.path.join(here, "data", "cora"))
os.chdir(os.path.join(here, "pygcn"))  # load_data() reads ../data/cora/
sys.argv = ["train.py", "--epochs", "3", "--hidden", "8"]
runpy.run_path("train.py", run_name="__main__")
