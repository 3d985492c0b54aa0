"""Placement under a CUDA availability guard is a device choice (issue 24, MPS103).

``if torch.cuda.is_available(): x = x.cuda()`` and a flag such as
``args.cuda = not args.no_cuda and torch.cuda.is_available()`` that later decides ``if args.cuda: model.cuda()``
choose between CUDA and the CPU as surely as ``"cuda" if ... else "cpu"``. MPS103 reports the availability test
(in the flag's definition for a flag), once, with the guard's rewrite that MPS101's findings under it carry too.
"""

from __future__ import annotations

import textwrap

import pytest

from helpers import check, fix

GUARDED_STEP = textwrap.dedent('''\
    import torch


    def evaluate(net, images, targets):
        if torch.cuda.is_available():
            images = images.cuda()
            targets = targets.cuda(non_blocking=True)
        return net(images), targets
    ''')

FLAG_SCRIPT = textwrap.dedent('''\
    import argparse

    import torch

    parser = argparse.ArgumentParser()
    parser.add_argument("--cpu-only", action="store_true")
    opts = parser.parse_args()
    opts.gpu = not opts.cpu_only and torch.cuda.is_available()

    net = torch.nn.Linear(5, 1)
    data = torch.zeros(3, 5)
    if opts.gpu:
        net.cuda()
        data = data.cuda()
    print(net(data))
    ''')


def _rows(source: str, code: str = "MPS103", **kw):
    return [d.location.row for d in check(source, [code], **kw) if d.code == code]


def test_a_guard_placing_on_cuda_is_reported_at_its_test():
    [finding] = check(GUARDED_STEP, ["MPS103"])
    assert (finding.location.row, finding.location.column) == (5, 8)
    assert "never MPS" in finding.message and finding.fix is not None


def test_a_flag_is_reported_where_availability_defines_it_once():
    assert _rows(FLAG_SCRIPT) == [8]


def test_the_fix_is_the_guard_rewrite_that_the_placements_share():
    outcome = fix(FLAG_SCRIPT, ["MPS101", "MPS103"], torch_version="2.6")
    assert outcome.error is None and outcome.diagnostics == []
    assert "opts.gpu = not opts.cpu_only and torch.accelerator.is_available()" in outcome.text
    assert "net.to(DEVICE)" in outcome.text and "data = data.to(DEVICE)" in outcome.text
    assert fix(outcome.text, ["MPS101", "MPS103"], torch_version="2.6").text == outcome.text


def test_fixing_the_guard_alone_fixes_what_it_places():
    outcome = fix(GUARDED_STEP, ["MPS103"], torch_version="2.0")
    assert outcome.error is None
    assert outcome.text.endswith(textwrap.dedent('''\
        def evaluate(net, images, targets):
            device = pick_device()
            if device.type != "cpu":
                images = images.to(device)
                targets = targets.to(device, non_blocking=device.type == "cuda")
            return net(images), targets
        '''))


def test_a_guard_over_cuda_only_work_is_reported_without_a_fix():
    source = GUARDED_STEP.replace("    return net", "        torch.cuda.synchronize()\n    return net")
    [finding] = check(source, ["MPS103"], torch_version="2.4")
    assert finding.fix is None and "not fixed: under it, `torch.cuda.synchronize()`" in finding.message


@pytest.mark.parametrize("trap", [
    # tuning under the guard places nothing
    "if torch.cuda.is_available():\n    torch.cuda.manual_seed_all(3)\n",
    # the user's own switch: MPS101 fixes the placement, the switch keeps its meaning
    "import argparse\np = argparse.ArgumentParser()\np.add_argument('--cuda', action='store_true')\nargs = p.parse_args()\n"
    "if args.cuda:\n    x = x.cuda()\n",
    # a chain that already knows MPS
    "if torch.cuda.is_available():\n    x = x.cuda()\nelif torch.backends.mps.is_available():\n    x = x.to('mps')\n",
    # a test on where a tensor already is
    "if x.device.type == 'cuda':\n    y = y.cuda()\n",
    # a flag whose name says CUDA but nothing derives it from availability
    "has_gpu = len(sys.argv) > 1\nif has_gpu:\n    x = x.cuda()\n",
    # a guard that only chooses the device is one finding (the choice), not two
])
def test_traps(trap):
    assert _rows("import sys\nimport torch\n" + trap) == []


def test_a_guard_that_chooses_the_device_is_one_finding():
    source = ("import torch\nif torch.cuda.is_available():\n    device = 'cuda'\n    net = net.cuda()\nelse:\n"
              "    device = 'cpu'\n")
    assert _rows(source) == [2]


def test_one_flag_guarding_many_placements_is_one_finding():
    source = textwrap.dedent('''\
        import torch

        on_gpu = torch.cuda.is_available()


        def load(x):
            return x.cuda() if on_gpu else x


        def place(net):
            if on_gpu:
                net = net.cuda()
            return net
        ''')
    assert _rows(source) == [3]


# ------------------------------------------------------------ a flag defined in another module (issue 24 item 3)

@pytest.fixture()
def project(tmp_path):
    from mpslint.analysis.project import layout, model

    model.use_cache_dir(None)
    layout.clear()
    yield tmp_path
    model.use_cache_dir(None)
    layout.clear()


def _write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def _check_file(path, select=("MPS103",)):
    from mpslint.engine import check_text
    from helpers import settings

    return check_text(path.read_text(encoding="utf-8"), str(path), settings(list(select)))


SETTINGS_MODULE = '''\
    import os

    import torch

    FORCE_CPU = bool(os.environ.get("FORCE_CPU"))
    ON_GPU = not FORCE_CPU and torch.cuda.is_available()
    NOT_ON_GPU = not torch.cuda.is_available()
    '''


def test_a_flag_imported_from_another_module_is_reported_at_the_guard(project):
    _write(project, {"app/__init__.py": "", "app/settings.py": SETTINGS_MODULE, "app/run.py": '''\
        import torch

        from app import settings
        from app.settings import ON_GPU

        net = torch.nn.Linear(3, 1)
        batch = torch.ones(2, 3)
        if ON_GPU:
            net = net.cuda()
        if settings.ON_GPU and batch.numel():
            batch = batch.cuda()
        print(net(batch))
        '''})
    result = _check_file(project / "app/run.py")
    assert [(d.location.row, d.location.column) for d in result.diagnostics] == [(8, 4), (10, 4)]
    assert all(d.fix is None and "not fixed" in d.message for d in result.diagnostics)
    assert result.depends[str(project / "app/settings.py")] != "absent"


@pytest.mark.parametrize("guard", [
    "if NOT_ON_GPU:",  # negated where it is defined
    "if FORCE_CPU:",  # not availability
])
def test_imported_traps(project, guard):
    _write(project, {"app/__init__.py": "", "app/settings.py": SETTINGS_MODULE, "app/run.py":
                     f"import torch\nfrom app.settings import NOT_ON_GPU, FORCE_CPU, ON_GPU\n"
                     f"net = torch.nn.Linear(3, 1)\n{guard}\n    net = net.cuda()\n"})
    assert _check_file(project / "app/run.py").diagnostics == []


def test_a_name_this_file_binds_is_not_the_imported_flag(project):
    _write(project, {"app/__init__.py": "", "app/settings.py": SETTINGS_MODULE, "app/run.py": '''\
        import torch
        from app.settings import ON_GPU

        ON_GPU = len(torch.ones(1)) > 0
        net = torch.nn.Linear(3, 1)
        if ON_GPU:
            net = net.cuda()
        '''})
    assert _check_file(project / "app/run.py").diagnostics == []
