"""CUDA-only autocast reached through a local name (issue 24 item 7): ``precision_scope = autocast if ... else
nullcontext`` then ``with precision_scope("cuda"):``."""

from __future__ import annotations

import textwrap

import pytest

from helpers import check

SAMPLER = textwrap.dedent('''\
    from contextlib import nullcontext

    import torch
    from torch import autocast


    def sample(model, opt, x):
        scope = autocast if opt.precision == "autocast" else nullcontext
        with torch.no_grad(), scope("cuda"):
            return model(x)
    ''')


def test_an_autocast_chosen_into_a_local_name_is_reported_without_a_fix():
    [finding] = check(SAMPLER, ["MPS105"])
    assert finding.location.row == 9 and finding.fix is None and "`scope` is autocast" in finding.message


def test_a_module_level_name_counts_too():
    source = SAMPLER.replace('    scope = autocast if opt.precision == "autocast" else nullcontext\n', "").replace(
        "from torch import autocast\n", "from torch import autocast\n\nscope = autocast if FULL else nullcontext\n")
    assert [d.location.row for d in check(source, ["MPS105"])] == [10]


@pytest.mark.parametrize("binding", [
    # another context manager only
    "scope = nullcontext",
    # bound twice: which one runs is not known
    "scope = autocast\n    scope = nullcontext",
    # a loop variable rebinds it
    "scope = autocast\n    for scope in (nullcontext,):\n        pass",
])
def test_traps(binding):
    source = SAMPLER.replace('scope = autocast if opt.precision == "autocast" else nullcontext', binding)
    assert check(source, ["MPS105"]) == []


def test_an_mps_aware_argument_is_not_reported():
    source = SAMPLER.replace('scope("cuda")', "scope(x.device.type)")
    assert check(source, ["MPS105"]) == []
