"""MPS404: Datasets and collate functions that put tensors on the accelerator inside DataLoader workers."""

from __future__ import annotations

import textwrap

import pytest

from helpers import check, codes, rows

DATASET = """\
import functools
import sys

import torch
from torch.utils.data import ConcatDataset, DataLoader, Dataset, IterableDataset, Subset, random_split


class Pairs(Dataset):
    def __init__(self, x, y, device):
        self.x, self.y, self.device = x, y, device

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i].to(self.device), self.y[i]
"""
PLACEMENT = 16  # the `.to(self.device)` row of DATASET


def script(body: str) -> str:
    """DATASET, then ``body`` under a ``__main__`` guard (a script: nothing is exported)."""
    return DATASET + "\n\nif __name__ == '__main__':\n" + textwrap.indent(textwrap.dedent(body), "    ")


@pytest.mark.parametrize("body", [
    "loader = DataLoader(Pairs(x, y, 'mps'), batch_size=8, num_workers=4)\n",
    "loader = DataLoader(dataset=Pairs(x, y, 'mps'), num_workers=args.workers)\n",
    "ds = Pairs(x, y, 'mps')\nloader = DataLoader(ds, 8, True, None, None, 2)\n",  # num_workers given by position
    "train, val = random_split(Pairs(x, y, 'mps'), [80, 20])\nloader = DataLoader(train, num_workers=2)\n",
    "ds = Subset(Pairs(x, y, 'mps'), range(10))\nloader = DataLoader(ds, num_workers=2)\n",
    "ds = ConcatDataset([Pairs(x, y, 'mps'), Pairs(x, y, 'mps')])\nloader = DataLoader(ds, num_workers=2)\n",
    "sets = [Pairs(x, y, 'mps')]\nloader = DataLoader(sets[0], num_workers=2)\n",
])
def test_a_dataset_given_to_a_loader_with_workers(body):
    assert rows(script(body), "MPS404") == [PLACEMENT]


@pytest.mark.parametrize("body", [
    "loader = DataLoader(Pairs(x, y, 'mps'), batch_size=8)\n",  # the default is no workers
    "loader = DataLoader(Pairs(x, y, 'mps'), num_workers=0)\n",
    "loader = DataLoader(Pairs(x, y, 'mps'), num_workers=0 if sys.platform == 'darwin' else 4)\n",
    "item = Pairs(x, y, 'mps')[0]\n",  # indexed in the main process
    "loader = DataLoader(OtherData(), num_workers=4)\n",
])
def test_no_workers_no_finding(body):
    assert rows(script(body), "MPS404") == []


def test_the_finding_names_the_loader_and_the_method():
    [finding] = check(script("loader = DataLoader(Pairs(x, y, 'mps'), num_workers=4)\n"), ["MPS404"])
    assert "`Pairs.__getitem__`" in finding.message
    assert f"the DataLoader at line {DATASET.count(chr(10)) + 4}" in finding.message
    assert "return CPU tensors" in finding.message


def test_cpu_tensors_returned_and_moved_in_the_loop_are_the_advice():
    source = """\
        import torch
        from torch.utils.data import DataLoader, Dataset


        class Pairs(Dataset):
            def __init__(self, x, y):
                self.x, self.y = x, y

            def __len__(self):
                return len(self.y)

            def __getitem__(self, i):
                return torch.as_tensor(self.x[i]), torch.tensor(self.y[i], device="cpu")


        def main(device):
            for x, y in DataLoader(Pairs(xs, ys), num_workers=4):
                x, y = x.to(device), y.to(device)


        if __name__ == "__main__":
            main(torch.device("mps"))
        """
    assert codes(source, ["MPS404"]) == []


@pytest.mark.parametrize("collate,loader", [
    ("def collate(batch):\n    return torch.stack(batch).to('mps')\n", "collate_fn=collate"),
    ("def collate(batch, device):\n    return torch.stack(batch).to(device)\n",
     "collate_fn=functools.partial(collate, device=dev)"),
    ("def stack(batch, device):\n    return torch.stack(batch).to(device)\n",
     "collate_fn=lambda b: stack(b, dev)"),
    ("class Collator:\n    def __call__(self, batch):\n        return torch.stack(batch).cuda()\n",
     "collate_fn=Collator()"),
    ("def collate(batch):\n    return torch.zeros(len(batch), device='cuda')\n", "collate_fn=collate"),
])
def test_collate_functions(collate, loader):
    source = f"import functools\nimport torch\nfrom torch.utils.data import DataLoader\n\n{collate}\n\n" \
             f"if __name__ == '__main__':\n    loader = DataLoader(ds, num_workers=4, {loader})\n"
    found = check(source, ["MPS404"])
    assert [d.code for d in found] == ["MPS404"]
    assert found[0].location.row in (6, 7, 8)


def test_a_method_collate_and_a_dataset_held_by_a_data_module():
    source = """\
        import torch
        from torch.utils.data import DataLoader, Dataset


        class Tokens(Dataset):
            def __init__(self, rows):
                self.rows = rows

            def __len__(self):
                return len(self.rows)

            def __getitem__(self, i):
                return self._encode(self.rows[i])

            def _encode(self, row):
                return torch.tensor(row).cuda()


        class Module:
            def __init__(self, tokenizer, workers):
                self.tokenizer, self.workers = tokenizer, workers

            def setup(self):
                self.train_set = Tokens(read())

            def collate(self, batch):
                return self.tokenizer(batch, return_tensors="pt").to(self.device)

            def train_dataloader(self):
                return DataLoader(self.train_set, num_workers=self.workers, collate_fn=self.collate)


        if __name__ == "__main__":
            Module(tok, 4).train_dataloader()
        """
    found = check(source, ["MPS404"])
    assert [d.location.row for d in found] == [16, 27]
    assert "`Tokens._encode` (called by `Tokens.__getitem__`)" in found[0].message


def test_an_iterable_dataset():
    source = """\
        import torch
        from torch.utils.data import DataLoader, IterableDataset


        class Stream(IterableDataset):
            def __iter__(self):
                for row in read_rows():
                    yield torch.tensor(row, device="mps")


        if __name__ == "__main__":
            for batch in DataLoader(Stream(), num_workers=2):
                pass
        """
    assert rows(source, "MPS404") == [8]


def test_exported_datasets_and_collate_functions_of_a_library():
    library = textwrap.dedent("""\
        import torch
        from torch.utils.data import Dataset

        DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")


        class Pairs(Dataset):
            def __init__(self, x, device):
                self.x, self.device = x, device

            def __len__(self):
                return len(self.x)

            def __getitem__(self, i):
                return self.x[i].to(self.device)


        def collate_fn(batch):
            return torch.stack(batch).to(DEVICE)
        """)
    found = check(library, ["MPS404"], path="mylib/data.py")
    assert [d.location.row for d in found] == [15, 19]
    assert all("it is exported" in d.message for d in found)
    # In a test module, a script, or left out of __all__, it is not exported.
    assert rows(library, "MPS404", path="tests/test_data.py") == []
    assert rows(library + "\nif __name__ == '__main__':\n    main()\n", "MPS404", path="mylib/data.py") == []
    assert rows(library + "\n__all__ = ['collate_fn']\n", "MPS404", path="mylib/data.py") == [19]


@pytest.mark.parametrize("source", [
    # not a Dataset: a wrapper that moves a loader's batches runs in the main process
    "import torch\n\nclass DeviceLoader:\n    def __init__(self, dl, device):\n        self.dl, self.device = dl, device\n"
    "    def __iter__(self):\n        for b in self.dl:\n            yield b.to(self.device)\n",
    # placements to the CPU
    "import torch\nDEVICE = 'cpu'\n\ndef collate_batch(batch):\n    return torch.stack(batch).to(DEVICE)\n",
    "import torch\n\ndef collate(batch):\n    return torch.zeros(3, device='cpu'), torch.stack(batch).to(torch.device('cpu'))\n",
    # private classes are not exported
    "import torch\nfrom torch.utils.data import Dataset\n\nclass _Rows(Dataset):\n    def __getitem__(self, i):\n"
    "        return torch.ones(2).cuda()\n",
    # a dataset that places in __init__, not in the worker methods
    "import torch\nfrom torch.utils.data import Dataset\n\nclass Rows(Dataset):\n    def __init__(self, x):\n"
    "        self.x = x.cuda()\n    def __getitem__(self, i):\n        return i\n",
])
def test_traps(source):
    assert codes(source, ["MPS404"], path="mylib/data.py") == []


def test_an_inherited_worker_method():
    source = script("""\
        class MorePairs(Pairs):
            pass

        loader = DataLoader(MorePairs(x, y, 'mps'), num_workers=2)
        """)
    assert rows(source, "MPS404") == [PLACEMENT]


def test_cuda_in_a_worker_is_both_cuda_only_and_placed_in_a_worker():
    # MPS101's fix (`.to(device)`) still places the tensor in a worker: both findings stand.
    source = script("""\
        class Cuda(Dataset):
            def __getitem__(self, i):
                return torch.ones(2).cuda()

        loader = DataLoader(Cuda(), num_workers=2)
        """)
    found = {d.code for d in check(source, ["MPS101", "MPS404"]) if d.location.row == PLACEMENT + 6}
    assert found == {"MPS101", "MPS404"}
