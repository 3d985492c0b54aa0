"""MPS103 for a CUDA availability flag stored on the parsed arguments and read as the device choice in a module
the script imports (``checks/option_flags.py``, ``analysis/project/namespace_flags.py``)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from helpers import fresh_project, settings, write_tree  # noqa: F401 (a fixture)
from mpslint.analysis.project.summary import summarize
from mpslint.engine import check_text


@pytest.fixture(autouse=True)
def _fresh(fresh_project):
    yield


def findings(path: Path, code: str = "MPS103"):
    result = check_text(path.read_text(), str(path), settings([code]))
    return [(d.location.row, d.code) for d in result.diagnostics], result


# The layout of a forecasting project: the script parses its options and passes them to an experiment class,
# whose base class (in another module, imported through the first) chooses the device.
SCRIPT = """
    import argparse
    import torch
    from exp.exp_main import Exp_Main

    parser = argparse.ArgumentParser()
    parser.add_argument("--use_gpu", type=bool, default=True)
    parser.add_argument("--gpu", type=int, default=0)
    args = parser.parse_args()

    args.use_gpu = True if torch.cuda.is_available() and args.use_gpu else False

    exp = Exp_Main(args)
    exp.train()
"""
EXP_MAIN = """
    import torch
    from exp.exp_basic import Exp_Basic

    class Exp_Main(Exp_Basic):
        def train(self):
            return self.model(torch.ones(1, 4).to(self.device))
"""
EXP_BASIC = """
    import torch

    class Exp_Basic(object):
        def __init__(self, args):
            self.args = args
            self.device = self._acquire_device()
            self.model = torch.nn.Linear(4, 2).to(self.device)

        def _acquire_device(self):
            if self.args.use_gpu:
                device = torch.device("cuda:{}".format(self.args.gpu))
            else:
                device = torch.device("cpu")
            return device
"""


def project(tmp_path, **files):
    tree = {"main.py": SCRIPT, "exp/exp_main.py": EXP_MAIN, "exp/exp_basic.py": EXP_BASIC}
    tree.update({name.replace("__", "/") + ".py": text for name, text in files.items()})
    write_tree(tmp_path, tree)
    return tmp_path / "main.py"


def test_what_a_summary_says_an_option_chooses():
    def options(source):
        return summarize(ast.parse(textwrap.dedent(source))).device_options

    assert options(EXP_BASIC) == ["use_gpu"]
    assert options("""
        def place(model, opt):
            if opt.cuda and not opt.cpu:
                model.cuda()
            if args.verbose:
                print("placed")
            if config.half:
                model.half()
    """) == ["cuda"]
    assert options("""
        import torch

        def choose(self):
            if self.args.use_gpu and self.args.gpu_type == "cuda":
                return torch.device("cuda:0")
            elif self.args.use_gpu and self.args.gpu_type == "mps":
                return torch.device("mps")
            return torch.device("cpu")
    """) == []  # the chain already picks MPS
    assert options("""
        import torch
        if model.use_gpu:  # not a parsed-arguments object
            device = torch.device("cuda")
    """) == []


def test_the_flag_is_reported_where_the_script_sets_it(tmp_path):
    found, result = findings(project(tmp_path))
    assert found == [(11, "MPS103")]
    message = result.diagnostics[0].message
    assert "`args.use_gpu` is CUDA availability" in message and "`exp/exp_basic.py` chooses the device" in message
    assert result.diagnostics[0].fix is None  # made true on a Mac, the flag would pick "cuda:0" there: no fix
    assert str(tmp_path / "exp/exp_basic.py") in result.depends
    # The choice itself is reported in its own module, as before.
    assert findings(tmp_path / "exp/exp_basic.py")[0] == [(11, "MPS103")]


def test_a_choice_that_already_knows_mps_is_not_a_reason(tmp_path):
    path = project(tmp_path, exp__exp_basic="""
        import torch

        class Exp_Basic(object):
            def __init__(self, args):
                self.args = args

            def _acquire_device(self):
                if self.args.use_gpu:
                    return torch.device("cuda:0")
                elif torch.backends.mps.is_available():
                    return torch.device("mps")
                return torch.device("cpu")
    """)
    assert findings(path)[0] == []


@pytest.mark.parametrize("basic", [
    # the option gates logging only
    """
    class Exp_Basic(object):
        def __init__(self, args):
            self.args = args
            if self.args.use_gpu:
                print("GPU requested")
    """,
    # another option chooses the device
    """
    import torch

    class Exp_Basic(object):
        def __init__(self, args):
            self.args = args
            if self.args.cuda:
                self.device = torch.device("cuda")
    """,
])
def test_an_option_no_imported_module_reads_as_a_device_choice(tmp_path, basic):
    assert findings(project(tmp_path, exp__exp_basic=basic))[0] == []


def test_a_reader_the_script_does_not_import(tmp_path):
    # exp/exp_basic.py reads .use_gpu, but the script imports neither it nor a module that imports it
    path = project(tmp_path, main=SCRIPT.replace("from exp.exp_main import Exp_Main", "from exp import tools")
                   .replace("exp = Exp_Main(args)\n    exp.train()", "tools.report(args)"),
                   exp__tools="def report(args):\n    print(args)\n")
    assert findings(path)[0] == []


def test_an_object_that_is_not_parsed_arguments(tmp_path):
    path = project(tmp_path, main=SCRIPT.replace("args = parser.parse_args()", "args = load_config()"))
    assert findings(path)[0] == []


def test_parse_known_args_counts(tmp_path):
    path = project(tmp_path, main=SCRIPT.replace("args = parser.parse_args()", "args, _ = parser.parse_known_args()"))
    assert findings(path)[0] == [(11, "MPS103")]


def test_a_flag_that_also_places_work_here_is_reported_once_with_its_fix(tmp_path):
    path = project(tmp_path, main=SCRIPT.replace("exp = Exp_Main(args)", "model = torch.nn.Linear(4, 2)\n"
                                                 "    if args.use_gpu:\n        model.cuda()\n    exp = Exp_Main(args)"))
    found, result = findings(path)
    assert found == [(11, "MPS103")]
    assert "`exp/exp_basic.py`" not in result.diagnostics[0].message  # the in-file guard's finding


def test_a_reader_in_the_script_itself(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent("""
        import argparse
        import torch

        class Trainer:
            def __init__(self, args):
                self.args = args
                if self.args.cuda:
                    self.device = torch.device("cuda")
                else:
                    self.device = torch.device("cpu")

        parser = argparse.ArgumentParser()
        parser.add_argument("--no-cuda", action="store_true")
        args = parser.parse_args()
        args.cuda = not args.no_cuda and torch.cuda.is_available()
        Trainer(args)
    """))
    found, result = findings(path)
    assert (16, "MPS103") in found
    message = next(d.message for d in result.diagnostics if d.location.row == 16)
    assert "this file chooses the device from `.cuda`" in message
