"""MPS201-MPS204: per-step host syncs are found; syncs that run once or every N steps are not."""

from __future__ import annotations

import pytest

from helpers import check, fresh_project, rows, settings, write_tree  # noqa: F401 (fresh_project: a fixture)
from mpslint.engine import check_text

PRELUDE = """\
import numpy as np
import torch

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)


def train(loader, optimizer, args):
    total = torch.zeros((), device=device)
    for step, (x, y) in enumerate(loader):
        x, y = x.to(device), y.to(device)
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        loss.backward()
        optimizer.step()
"""


def in_loop(*lines: str) -> str:
    """PRELUDE with ``lines`` in the training loop body; the first added line is row 16."""
    return PRELUDE + "".join(f"        {line}\n" for line in lines)


def after_loop(*lines: str) -> str:
    return PRELUDE + "".join(f"    {line}\n" for line in lines)


FIRST = 16


@pytest.mark.parametrize(
    "code,line",
    [
        ("MPS201", "total_loss = loss.item()"),
        ("MPS201", "values = out.argmax(-1).tolist()"),
        ("MPS201", "value = float(loss)"),
        ("MPS201", "n = int((out.argmax(-1) == y).sum())"),
        ("MPS201", "correct = (out.argmax(1) == y).sum().item()"),
        ("MPS202", "preds = out.argmax(-1).cpu()"),
        ("MPS301", "arr = out.detach().numpy()"),  # raises on MPS ...
        ("MPS202", "arr = out.detach().numpy()"),  # ... and the `.cpu()` it needs is a copy every step
        ("MPS202", "host = out.to('cpu')"),
        ("MPS202", "host = out.to(torch.device('cpu'))"),
        ("MPS202", "arr = np.asarray(out.detach())"),
        ("MPS203", "torch.cuda.synchronize()"),
        ("MPS203", "torch.mps.synchronize()"),
        ("MPS203", "torch.accelerator.synchronize()"),
        ("MPS203", "torch.cuda.current_stream().synchronize()"),
        ("MPS204", "if torch.isnan(loss): break"),
        ("MPS204", "assert torch.isfinite(loss)"),
        ("MPS204", "best = loss if loss < best else best"),
        ("MPS204", "print(loss)"),
        ("MPS204", "print(f'loss={loss:.3f}')"),
        ("MPS204", "msg = 'loss %.3f' % loss"),
        ("MPS204", "msg = 'loss {}'.format(loss)"),
        ("MPS204", "idx = out.nonzero()"),
        ("MPS204", "idx = torch.nonzero(y)"),
        ("MPS204", "picked = out[out > 0]"),
        ("MPS204", "vals = torch.unique(y)"),
    ],
)
def test_per_step_syncs_are_reported(code, line):
    assert rows(in_loop(line), code) == [FIRST]


@pytest.mark.parametrize("code", ["MPS201", "MPS202", "MPS203", "MPS204"])
@pytest.mark.parametrize(
    "line",
    [
        "total_loss = loss.item()",
        "preds = out.argmax(-1).cpu().numpy()",
        "torch.cuda.synchronize()",
        "print(f'loss={loss:.3f}')",
    ],
)
def test_after_the_loop_is_silent(code, line):
    assert rows(after_loop(line), code) == []


@pytest.mark.parametrize("code", ["MPS201", "MPS202", "MPS203", "MPS204"])
@pytest.mark.parametrize(
    "line",
    [
        "x0 = loss.item()",
        "x0 = out.cpu()",
        "torch.mps.synchronize()",
        "print(loss)",
    ],
)
def test_interval_guarded_is_silent_unless_asked(code, line):
    for guard in ("step % args.log_interval == 0", "(step + 1) % 10 == 0", "step % 10 == 0 or step == 0"):
        source = in_loop(f"if {guard}:", f"    {line}")
        assert rows(source, code) == []
    reported = rows(in_loop("if step % 10 == 0:", f"    {line}"), code, report_interval_guarded=True)
    expected = {"MPS201": "item", "MPS202": "cpu", "MPS203": "synchronize", "MPS204": "print"}[code]
    assert reported == ([FIRST + 1] if expected in line else [])


@pytest.mark.parametrize(
    "line,expected",
    [
        ("n = x.size(0) + int(args.batch_size)", []),  # metadata and Python numbers
        ("if out.shape[0] > 1: pass", []),
        ("if out is None: pass", []),
        ("print(out.shape, step)", []),
        ("print(f'step {step} of {len(loader)}')", []),
        ("a = np.zeros(3).tolist()", []),  # numpy, not a tensor
        ("a = torch.zeros(3).tolist()", []),  # made on the host
        ("a = torch.from_numpy(np.ones(2)).numpy()", []),
        ("b = y.cpu()\nprint(b.numpy())", ["MPS202"]),  # only the .cpu() is a sync
        ("x_cpu = x.cpu().item()", ["MPS202"]),
        ("total += loss.detach()", []),  # accumulating on the device is the advice
        ("if args.debug: pass", []),
        ("assert isinstance(out, torch.Tensor)", []),
    ],
)
def test_host_values_are_silent(line, expected):
    found = [d.code for d in check(in_loop(*line.split("\n"))) if d.code.startswith("MPS2")]
    assert found == expected


def test_unplaced_values_from_the_loader_are_not_reported():
    source = """\
import torch

def stats(loader):
    mean = torch.zeros(3)
    for images, labels in loader:
        mean += images.mean(dim=(0, 2, 3))
        print(labels.sum().item(), labels.tolist())
    return mean
"""
    assert [d.code for d in check(source) if d.code.startswith("MPS2")] == []


def test_helper_called_every_step_is_reported_where_it_syncs():
    source = """\
import torch

def accuracy(logits, labels):
    return (logits.argmax(-1) == labels).float().mean().item()

def train(model, loader, optimizer, device):
    for inputs, labels in loader:
        inputs, labels = inputs.to(device), labels.to(device)
        logits = model(inputs)
        loss = torch.nn.functional.cross_entropy(logits, labels)
        loss.backward()
        optimizer.step()
        acc = accuracy(logits, labels)
"""
    assert rows(source, "MPS201") == [4]


def test_accelerate_style_loop():
    source = """\
def train(accelerator, model, optimizer, train_dataloader):
    model, optimizer, train_dataloader = accelerator.prepare(model, optimizer, train_dataloader)
    for step, batch in enumerate(train_dataloader):
        outputs = model(**batch)
        loss = outputs.loss
        accelerator.backward(loss)
        optimizer.step()
        logs = {"loss": loss.item()}
        if accelerator.is_main_process:
            print(logs)
"""
    assert rows(source, "MPS201") == [8]
    assert rows(source, "MPS204") == []


def test_message_says_what_stalls_and_what_to_do():
    (diagnostic,) = check(in_loop("total_loss += loss.item()"), ["MPS201"])
    assert diagnostic.message == (
        "`loss.item()` in the training loop waits for the device every step; "
        "accumulate on the device and read it every N steps"
    )


OFFLOADED_PIPELINE = """
import torch
from diffusers import FluxPipeline

def train(args, accelerator, loader, transformer, optimizer):
    text_pipe = FluxPipeline.from_pretrained(args.model, transformer=None)
    for batch in loader:
        text_pipe = text_pipe.to(accelerator.device)
        with torch.no_grad():
            embeds = text_pipe.encode_prompt(batch["captions"])
        if args.offload:
            text_pipe = text_pipe.to("cpu")
        loss = transformer(batch["x"], embeds).mean()
        accelerator.backward(loss)
        optimizer.step()
"""


@pytest.mark.parametrize("select", [["MPS202"], None])
def test_a_pipeline_moved_back_and_forth_in_the_loop_is_a_module(select):
    # `pipe = pipe.to("cpu")` offloads a module: no tensor is read on the host. The name's own
    # rebindings in the loop say nothing about what it is; `from_pretrained` does. Whatever other
    # rules ask first (select), the answer is the same.
    found = [d for d in check(OFFLOADED_PIPELINE, select) if d.code == "MPS202"]
    assert found == []


def test_a_rank_test_is_not_an_interval_guard():
    source = in_loop(
        "if args.rank == 0:",
        "    writer.add_scalar('loss', loss.item(), step)",  # every step on rank 0
        "if args.rank == 0 and step % 50 == 0:",
        "    print(loss.item())",  # every 50 steps on rank 0
    )
    assert rows(source, "MPS201") == [FIRST + 1]


def test_an_evaluation_loop_found_by_the_data_it_moves():
    source = """\
import torch

def test(g_model, psnr_model, prefetcher, meter, device):
    with torch.no_grad():
        batch = prefetcher.next()
        while batch is not None:
            gt = batch["gt"].to(device)
            sr = g_model(batch["lr"].to(device))
            psnr = psnr_model(sr, gt)
            meter.update(psnr.item(), sr.size(0))
            if batch["name"] == "":
                raise ValueError("unnamed image")
            batch = prefetcher.next()
"""
    assert rows(source, "MPS201") == [10]
    assert rows(source, "MPS204") == []  # comparing a field with a string reads no tensor


UNSEEN_HELPERS = """\
import numpy as np
import torch
from timm.utils import accuracy
from mylib import to_numpy, summarize

def validate(model, loader, meter, metrics, device):
    with torch.no_grad():
        for images, target in loader:
            images, target = images.to(device), target.to(device)
            output = model(images)
            acc1, acc5 = accuracy(output, target, topk=(1, 5))
            meter.update(acc1.item(), n=images.size(0))
            prec1 = accuracy(output.data, target)[0]
            meter.update(prec1.item())
            for name, fn in metrics.items():
                meter.update(fn(output, target).detach().cpu())
            a = to_numpy(output).item()
            b = summarize(images.shape).item()
            c = np.mean(output.cpu().numpy()).item()
            d = accuracy(output, target).cpu()
"""


def test_an_unseen_helpers_result_read_on_the_host_is_a_device_tensor():
    # `.item()` and `.detach()` say the helper returned a tensor; computed from device tensors, it is on the device
    assert rows(UNSEEN_HELPERS, "MPS201") == [12, 14]
    # traps: a helper named for host values (17), one given no device tensor (18), numpy (19); a bare
    # `.cpu()` (20) is also a module's method: only `.detach().cpu()` proves a tensor
    assert rows(UNSEEN_HELPERS, "MPS202") == [16, 19]


GENERATOR = """\
import torch

model = Net().to(torch.device("cuda"))

def predictions(samples):
    for sample in samples:
        yield model(sample.to("cuda"))

def scores(samples):
    for out in predictions(samples):
        print(out.max().item())

def first(samples):
    for out in predictions(samples):
        return out.max().item()

def rows(table):
    for row in table:
        yield row

def plain(table):
    for row in rows(table):
        x = row.item()
"""


def test_a_loop_over_a_generator_that_runs_the_model_runs_a_step_each_pass():
    # traps: a loop that returns on its first pass (15), a generator that runs no model (23)
    assert rows(GENERATOR, "MPS201") == [11]


REDUCED_LOSSES = """\
import math
import torch
import utils

def train_one_epoch(model, criterion, data_loader, optimizer, device, logger, summarize):
    for samples, targets in data_loader:
        outputs = model(samples.to(device))
        loss_dict = criterion(outputs, targets)
        weights = criterion.weight_dict
        losses = sum(loss_dict[k] * weights[k] for k in loss_dict if k in weights)
        reduced = utils.reduce_dict(loss_dict)
        loss_value = sum(reduced[k] * weights[k] for k in reduced if k in weights).item()
        optimizer.zero_grad()
        losses.backward()
        optimizer.step()
        logger.update(loss=loss_value, **{k: v.item() for k, v in reduced.items()})
        stats = summarize(targets)
        logger.update(**{k: v.item() for k, v in stats.items()})
        for k, v in targets.items():
            logger.update(v.item())
"""


def test_values_an_unseen_helper_computed_from_a_device_dict_are_read_on_the_device():
    # 12: the sum of a reduced dict's tensors; 16: each of them; traps: a helper given only host
    # values from the loader (18), the loader's own unplaced targets (20)
    assert rows(REDUCED_LOSSES, "MPS201") == [12, 16]


GAN_TRAINER = """\
import torch


class Trainer:
    def __init__(self, D, G):
        self.D, self.G = D, G

    def check_cuda(self, cuda_flag=False):
        if cuda_flag:
            self.D.cuda(0)

    def train(self, batches, d_optimizer):
        for images in batches:
            d_loss = self.D(images).mean()
            d_loss.backward(torch.ones(()))
            d_optimizer.step()
            print(f"critic loss {d_loss}")
            fake = self.G(images).mean()
            print(f"generator output {fake}")
"""


def test_a_module_the_class_places_in_another_method_gives_device_outputs():
    # `self.D` is placed in check_cuda (under a flag): its forward in train() gives device tensors.
    # Trap: `self.G` is never placed, so what it returns is not known to be on the device.
    assert rows(GAN_TRAINER, "MPS204") == [17]


SELF_CALLS = """\
import numpy as np
import torch
from torch import nn


class Detector(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        for probe in [torch.zeros(1, 3)]:
            self(probe.cuda()).sum().item()

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
            print(x.sum().item())
        return x

    def predict(self, images):
        for img in images:
            out = self(img.cuda())
            print(out.max().item())

    def predict_scaled(self, images, std):
        for img in images:
            out = self.forward(img)
            mean = torch.tensor(std).cuda()
            boxes = (out * mean).cpu().numpy()

    def predict_host(self, images):
        for img in images:
            out = self(img)
            print(out.max().item())

    def children_sum(self, x):
        for child in self.children():
            total = child(x.cuda()).sum().item()


class Head(Detector):
    def score(self, batches):
        for batch in batches:
            logits = self(batch.to("cuda"))
            best = logits.argmax().item()


class Recorder:
    def replay(self, frames):
        for frame in frames:
            out = self(frame.cuda())
            print(out.max().item())

    def __call__(self, frame):
        return frame
"""


def test_self_in_a_models_own_method_runs_the_model_on_device_inputs():
    # 22: `self(img.cuda())` in predict; 44: a subclass of a module class of this file; 28 (MPS202): the output
    # of `self.forward(img)` combined with a tensor the loop moves to the device each pass.
    # Traps: a loop in __init__ (11), the forward pass's own loop over layers (16), `self(img)` with no
    # device evidence (33), a loop over children that never calls `self` (37), a class that is no module (51).
    assert rows(SELF_CALLS, "MPS201") == [22, 44]
    assert rows(SELF_CALLS, "MPS202") == [28]


def test_self_in_a_subclass_of_another_modules_model_class(tmp_path, fresh_project):
    # `class Detector(BaseModel)`, BaseModel an nn.Module of models/base.py: its predict loop runs the model.
    # Trap: `Recorder(Plain)`, Plain no module in the same file: `self(...)` there is no model call.
    write_tree(tmp_path, {
        "models/__init__.py": "",
        "models/base.py": """\
            from torch import nn


            class BaseModel(nn.Module):
                pass


            class Plain:
                pass
            """,
        "models/detector.py": """\
            from models.base import BaseModel, Plain


            class Detector(BaseModel):
                def predict(self, images):
                    for img in images:
                        out = self(img.cuda())
                        print(out.max().item())


            class Recorder(Plain):
                def replay(self, frames):
                    for frame in frames:
                        out = self(frame.cuda())
                        print(out.max().item())
            """,
    })
    path = tmp_path / "models" / "detector.py"
    found = check_text(path.read_text(encoding="utf-8"), str(path), settings(["MPS201"])).diagnostics
    assert [d.location.row for d in found] == [8]
