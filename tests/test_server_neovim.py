"""The documented Neovim set-up for 0.7 to 0.10, run by a real Neovim: the server attaches and its findings arrive.

Neovim runs headless with the Lua block from docs/editors.md (its ``cmd`` pointed at this
checkout's ``python -m mpslint server``), opens a file, waits for diagnostics
with ``vim.wait`` and writes what ``vim.diagnostic.get()`` holds to a file.
Skipped where ``nvim`` is not installed (Debian: ``apt-get install neovim``,
0.7.2 on Debian 12, the oldest version the set-up supports).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from mpslint.config import ConfigResolver  # noqa: E402
from mpslint.engine import check_text  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
NVIM = shutil.which("nvim")

PROBE = textwrap.dedent(
    """\
    vim.cmd("filetype on")
    dofile(os.getenv("MPSLINT_SETUP"))
    vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("MPSLINT_FILE")))
    -- Generous: only a server that never answers fails here; no duration is asserted.
    local arrived = vim.wait(120000, function() return #vim.diagnostic.get(0) > 0 end, 50)
    local found = {}
    for _, d in ipairs(vim.diagnostic.get(0)) do
      table.insert(found, { code = d.code, lnum = d.lnum, source = d.source })
    end
    local clients = {}
    local attached = vim.lsp.get_clients and vim.lsp.get_clients({ bufnr = 0 }) or vim.lsp.buf_get_clients(0)
    for _, client in pairs(attached) do
      table.insert(clients, client.name)
    end
    vim.fn.writefile({ vim.fn.json_encode({ arrived = arrived, clients = clients, diagnostics = found }) },
      os.getenv("MPSLINT_OUT"))
    vim.cmd("qa!")
    """
)

CUDA = "import torch\n\nmodel = torch.nn.Linear(4, 2)\nmodel.cuda()\nbatch = torch.zeros(8, 4).cuda()\n"


def readme_setup(python: str) -> str:
    """The Lua block of the documented set-up for Neovim 0.7 to 0.10, starting this checkout's server."""
    text = (REPO / "docs" / "editors.md").read_text(encoding="utf-8")
    start = text.index("Neovim 0.7 to 0.10")
    block = re.search(r"```lua\n(.*?)```", text[start:], re.S).group(1)
    command = '{ "mpslint", "server" }'
    assert command in block
    return block.replace(command, "{ %s, \"-m\", \"mpslint\", \"server\" }" % json.dumps(python))


@pytest.mark.skipif(NVIM is None, reason="nvim is not installed")
def test_the_readme_setup_attaches_neovim_and_diagnostics_arrive(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(CUDA, encoding="utf-8")
    (tmp_path / "setup.lua").write_text(readme_setup(sys.executable), encoding="utf-8")
    (tmp_path / "probe.lua").write_text(PROBE, encoding="utf-8")
    out = tmp_path / "out.json"
    env = dict(
        os.environ,
        MPSLINT_SETUP=str(tmp_path / "setup.lua"),
        MPSLINT_FILE=str(path),
        MPSLINT_OUT=str(out),
        PYTHONPATH=os.pathsep.join(p for p in [str(REPO), os.environ.get("PYTHONPATH", "")] if p),
    )
    done = subprocess.run(
        [NVIM, "--headless", "--clean", "-c", f"luafile {tmp_path / 'probe.lua'}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )
    assert out.exists(), f"Neovim wrote nothing (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["clients"] == ["mpslint"]
    assert result["arrived"], result
    settings = ConfigResolver(cwd=tmp_path).for_path(path).settings_for(path)
    expected = check_text(CUDA, str(path), settings).diagnostics
    assert sorted((d["code"], d["lnum"]) for d in result["diagnostics"]) == sorted(
        (str(d.code), d.location.row - 1) for d in expected
    )
    assert {d["source"] for d in result["diagnostics"]} == {"mpslint"}
