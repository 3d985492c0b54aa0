"""MPS501-MPS504: op coverage, CPU fallbacks, dtypes and version gates at several floors."""

from __future__ import annotations

import pytest

from tests.helpers import check, codes

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def found(line: str, version=None, select=("MPS5",)):
    return codes(HEADER + line + "\n", list(select), torch_version=version)


@pytest.mark.parametrize("line", [
    "d = torch.pdist(x)",
    "d = F.pdist(x)",
    "w, v = torch.linalg.eig(a)",
    "w = torch.linalg.eigvalsh(a)",
    "s = torch.linalg.svdvals(a)",
    "sol = torch.linalg.lstsq(a, b)",
    "loss_fn = nn.CTCLoss()",
    "loss = F.ctc_loss(lp, t, il, tl)",
    "pool = nn.AdaptiveAvgPool3d((2, 4, 4))",
    "pool = nn.AdaptiveAvgPool3d(output_size=7)",
    "y = F.adaptive_max_pool3d(x, 2)",
    "m = torch.mode(x)",
    "x.put_(idx, v)",
    "e = x.matrix_exp()",
    "y = F.channel_shuffle(x, 2)",
])
def test_missing_kernel_at_every_floor(line):
    for version in (None, "2.1", "2.5", "2.8", "2.13"):
        assert found(line, version) == ["MPS501"], (line, version)


@pytest.mark.parametrize("line", [
    "d = torch.cdist(x, y)",
    "pool = nn.AdaptiveAvgPool3d(1)",
    "pool = nn.AdaptiveAvgPool3d((1, 1, 1))",
    "y = F.adaptive_avg_pool3d(x, 1)",
    "y = F.interpolate(x, scale_factor=2)",
    "y = F.interpolate(x, scale_factor=2, mode='bilinear')",
    "emb = nn.Embedding(10, 4)",
    "emb = nn.Embedding(10, 4, max_norm=None)",
    "y = np.take(a, idx)",
    "y = x.take(idx)",
    "m = df.mode()",
    "d = torch.pdist(x.cpu())",
    "u, s, v = torch.linalg.svd(a.to('cpu'))",
    "self.put_(1)",
    "queue.put(item)",
    "y = F.embedding(x, self.weight, self.padding_idx, self.max_norm)",
    "y = F.embedding(x, weight, max_norm=max_norm)",
    "o = torch.optim.AdamW(params, fused=fused)",
    "z = torch.zeros(3, dtype=torch.complex64, device='mps')",
    "z = torch.zeros(3, dtype=torch.complex128)",
    "z = torch.zeros(3, dtype=torch.complex128, device='cpu')",
    "c = a.float() @ b.float()",
    "c = a @ b",
])
def test_traps(line):
    assert found(line) == [], line


def test_fallbacks_are_mps502_not_mps501():
    for line in ["u, s, v = torch.linalg.svd(a)", "u, s, v = torch.svd(a)", "p = torch.pinverse(a)",
                 "p = torch.linalg.pinv(a)", "p = torch.linalg.pinv(a, hermitian=False)", "emb = nn.Embedding(10, 4, max_norm=1.0)",
                 "emb = nn.Embedding(10, 4, 0, 2.0)", "y = F.embedding(i, w, max_norm=1.0)",
                 "e = nn.Embedding.from_pretrained(w, max_norm=1.0)"]:
        assert found(line) == ["MPS502"], line
    assert found("p = torch.linalg.pinv(a, hermitian=True)") == ["MPS501"]


# Ops whose MPS kernel arrived in a known release: reported exactly below it.
GATED = [
    ("y = F.interpolate(x, scale_factor=2, mode='bicubic')", (2, 6)),
    ("m = torch.isin(a, b)", (2, 4)),
    ("s = torch.linalg.solve(a, b)", (2, 7)),
    ("y = F.max_pool3d(x, 2)", (2, 9)),
    ("k = torch.kthvalue(x, 2)", (2, 9)),
    ("q, r = torch.linalg.qr(a)", (2, 12)),
    ("x = torch.linalg.lu_solve(lu, piv, b)", (2, 10)),
    ("o = torch.optim.AdamW(params, fused=True)", (2, 5)),
    ("r = torch.roll(x, 1)", (2, 1)),
]


@pytest.mark.parametrize("floor", ["2.1", "2.5", "2.8", "2.13"])
@pytest.mark.parametrize("line,since", GATED)
def test_version_gated_ops(line, since, floor):
    major, minor = map(int, floor.split("."))
    expected = ["MPS501"] if (major, minor) < since else []
    assert found(line, floor) == expected


@pytest.mark.parametrize("floor, expected", [("2.1", ["MPS502"]), ("2.5", ["MPS502"]), ("2.8", []), ("2.13", [])])
def test_fold_runs_on_the_cpu_by_design_until_its_kernel(floor, expected):
    """col2im (F.fold) has an MPS kernel from 2.8; before, MPSFallback.mm registers it to run on the CPU
    (pytorch/pytorch's aten/src/ATen/mps/MPSFallback.mm): a CPU fallback (MPS502), not an error (MPS501)."""
    assert found("u = F.fold(x, (4, 4), 2)", floor) == expected


def test_message_names_the_fixing_version():
    [diag] = check(HEADER + "y = F.interpolate(x, scale_factor=2, mode='bicubic')\n", ["MPS501"],
                   torch_version="2.5")
    assert "torch 2.5" in diag.message and "torch 2.6 adds the MPS kernel" in diag.message
    assert "aten::upsample_bicubic2d.out" in diag.message
    [diag] = check(HEADER + "d = torch.pdist(x)\n", ["MPS501"])
    assert "no torch release up to 2.13 has one" in diag.message


def test_no_floor_uses_latest_table():
    assert found("y = F.interpolate(x, scale_factor=2, mode='bicubic')") == []
    assert found("m = torch.isin(a, b)") == []


# --------------------------------------------------------------------- MPS503


@pytest.mark.parametrize("line", [
    "z = torch.zeros(3, dtype=torch.complex128, device='mps')",
    "z = torch.randn(3, dtype=torch.cdouble, device=device)",
    "z = x.to(device, torch.complex128)",
    "c = a.long() @ b.long()",
    "c = torch.matmul(a.int(), b)",
    "c = torch.mm(a.to(torch.int64), b)",
])
def test_dtype_findings(line):
    assert found(line) == ["MPS503"]


MPS_PICKER = "device = torch.device('mps' if torch.backends.mps.is_available() else 'cpu')\n"


@pytest.mark.parametrize("line", [
    "ctx = torch.autocast('mps', dtype=torch.float32)",
    "ctx = torch.amp.autocast(device_type='mps', dtype=torch.float64)",
    MPS_PICKER + "ctx = torch.autocast(device_type=device.type, dtype=torch.float32)",
])
def test_autocast_dtype_mps_cannot_use(line):
    assert found(line, select=["MPS503"]) == ["MPS503"]


@pytest.mark.parametrize("line", [
    "ctx = torch.autocast('mps', dtype=torch.float16)",
    "ctx = torch.autocast('mps', dtype=torch.bfloat16)",
    "ctx = torch.autocast('mps')",
    "ctx = torch.autocast('cpu', dtype=torch.float32)",
    "ctx = torch.autocast('mps', dtype=amp_dtype)",  # chosen elsewhere
    "ctx = torch.autocast('mps', dtype=torch.float32, enabled=use_amp)",  # disabled on purpose
    "ctx = torch.autocast(device_type=device.type, dtype=torch.float32)",  # a device never shown to be mps
])
def test_autocast_dtype_traps(line):
    assert found(line, select=["MPS503"]) == []


# --------------------------------------------------------------------- MPS504

FEATURES = [
    ("scaler = torch.amp.GradScaler('mps')", (2, 8)),
    ("scaler = torch.amp.GradScaler(device='mps')", (2, 8)),
    ("ctx = torch.autocast('mps')", (2, 5)),
    ("ctx = torch.autocast(device_type='mps', dtype=torch.float16)", (2, 5)),
    ("ctx = torch.autocast('mps', dtype=torch.bfloat16)", (2, 6)),
    ("model = torch.compile(model)\ndev = torch.device('mps')", (2, 8)),
]


@pytest.mark.parametrize("floor", ["2.1", "2.5", "2.8", "2.13"])
@pytest.mark.parametrize("line,since", FEATURES)
def test_feature_gates_at_floors(line, since, floor):
    major, minor = map(int, floor.split("."))
    expected = ["MPS504"] if (major, minor) < since else []
    assert found(line, floor, select=["MPS504"]) == expected


@pytest.mark.parametrize("line", [
    "scaler = torch.amp.GradScaler('cuda')",
    "ctx = torch.autocast('cpu', dtype=torch.bfloat16)",
    "model = torch.compile(model)",  # the file never targets mps
    "model = torch.compile(model, backend='aot_eager')\ndev = torch.device('mps')",
    # code that asks the running torch first (accelerate's get_grad_scaler)
    "if not is_torch_version('>=', '2.8.0'):\n    raise ValueError('needs 2.8')\nscaler = torch.amp.GradScaler('mps')",
    "if version.parse(torch.__version__) >= version.parse('2.5'):\n    ctx = torch.autocast('mps')",
    "ctx = torch.autocast('mps') if TORCH_GREATER_EQUAL_2_5 else nullcontext()",
])
def test_feature_gate_traps(line):
    assert found(line, "2.1", select=["MPS504"]) == []


def test_feature_gates_assume_torch_2_0_without_floor():
    """No torch-version and no requirement: the gates assume the floor the fixes assume (torch 2.0), and say so."""
    diagnostics = check(HEADER + "scaler = torch.amp.GradScaler('mps')\n", ["MPS504"])
    assert [d.code for d in diagnostics] == ["MPS504"]
    assert "no torch-version is set, so mpslint assumes torch 2.0" in diagnostics[0].message
    assert "require torch>=2.8" in diagnostics[0].message
    # A floor that has the feature silences it.
    assert found("scaler = torch.amp.GradScaler('mps')", "2.8", select=["MPS504"]) == []


# bfloat16, Conv3d, ConvTranspose3d and sparse tensors on mps (issue 26).
PICKER = "device = torch.device('mps' if torch.backends.mps.is_available() else 'cpu')\n"
DATA_GATES = [
    # pytorch/torchchat#616, transformers/diffusers loading code
    (PICKER + "model = AutoModel.from_pretrained('m', torch_dtype=torch.bfloat16).to(device)", (2, 3)),
    (PICKER + "model = AutoModel.from_pretrained('m', dtype=torch.bfloat16)\nmodel.to(device)", (2, 3)),
    ("pipe = Pipe.from_pretrained('m', torch_dtype='bfloat16', device_map='mps')", (2, 3)),
    ("x = torch.zeros(3, dtype=torch.bfloat16, device='mps')", (2, 3)),
    ("x = batch.to('mps', torch.bfloat16)", (2, 3)),
    ("x = batch.to(device=torch.device('mps'), dtype=torch.bfloat16)", (2, 3)),
    ("model = net.to('mps').bfloat16()", (2, 3)),
    (PICKER + "model = Net().bfloat16().to(device)", (2, 3)),
    # MIC-DKFZ/nnUNet#2435
    (PICKER + "conv = nn.Conv3d(1, 8, 3)", (2, 2)),
    (PICKER + "y = F.conv3d(x, w)", (2, 2)),
    (PICKER + "up = nn.ConvTranspose3d(8, 1, 2, stride=2)", (2, 8)),
    (PICKER + "y = F.conv_transpose3d(x, w)", (2, 8)),
    # openai/whisper#382, pytorch/pytorch#141711
    (PICKER + "heads = torch.eye(4).to_sparse().to(device)", (2, 9)),
    (PICKER + "mask = dense.to_sparse()\nmask = mask.to(device)", (2, 9)),
    ("s = torch.sparse_coo_tensor(i, v, (2, 4), device='mps')", (2, 9)),
    ("s = x.to('mps').to_sparse()", (2, 9)),
    # huggingface/accelerate#3718
    ("from accelerate import Accelerator\n" + PICKER + "accelerator = Accelerator(mixed_precision='fp16')", (2, 8)),
    ("from accelerate import Accelerator\n" + PICKER + "accelerator = Accelerator(mixed_precision='bf16')", (2, 6)),
]


@pytest.mark.parametrize("floor", ["2.1", "2.2", "2.3", "2.8", "2.9", "2.13"])
@pytest.mark.parametrize("line,since", DATA_GATES)
def test_data_gates_at_floors(line, since, floor):
    major, minor = map(int, floor.split("."))
    expected = ["MPS504"] if (major, minor) < since else []
    assert found(line, floor, select=["MPS504"]) == expected


def test_bfloat16_message_names_macos_14():
    message = check(HEADER + "x = torch.zeros(3, dtype=torch.bfloat16, device='mps')\n", ["MPS504"],
                    torch_version="2.2")[0].message
    assert "torch 2.3 to 2.9 also need macOS 14" in message


@pytest.mark.parametrize("dtype", ["torch.float16", "torch.half", "torch.bfloat16"])
@pytest.mark.parametrize("floor", [None, "2.8", "2.13"])
def test_half_conv_transpose3d_at_every_floor(dtype, floor):
    line = PICKER + f"up = nn.ConvTranspose3d(8, 1, 2, dtype={dtype})"
    diagnostics = check(HEADER + line + "\n", ["MPS504"], torch_version=floor)
    assert [d.code for d in diagnostics] == ["MPS504"]
    assert "every torch release" in diagnostics[0].message


@pytest.mark.parametrize("line", [
    # bf16 with no mps in sight, or on CUDA only
    "model = AutoModel.from_pretrained('m', torch_dtype=torch.bfloat16).to('cuda')",
    "x = torch.zeros(3, dtype=torch.bfloat16, device='cpu')",
    "x = torch.zeros(3, dtype=torch.bfloat16)",
    "x = batch.to(torch.bfloat16)",
    PICKER + "x = batch.to(device, torch.float16)",
    PICKER + "if torch.cuda.is_available():\n    model = net.to(device, torch.bfloat16)",
    PICKER + "if device.type == 'cuda':\n    model = net.bfloat16().to(device)",
    # the dtype is a choice, not bfloat16
    PICKER + "dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32\nx = batch.to(device, dtype)",
    "pipe = Pipe.from_pretrained('m', torch_dtype=torch.bfloat16, device_map='auto')",
    # 3D layers and sparse tensors in a file that never targets mps
    "conv = nn.Conv3d(1, 8, 3)",
    "up = nn.ConvTranspose3d(8, 1, 2, dtype=torch.float16)",
    "heads = torch.eye(4).to_sparse().to(device)",
    # 2D layers, dense tensors
    PICKER + "conv = nn.Conv2d(1, 8, 3)\nup = nn.ConvTranspose2d(8, 1, 2)",
    PICKER + "heads = torch.eye(4).to_dense().to(device)",
    # a probe: transformers' is_torch_bf16_available_on_device tries it and catches the failure
    "try:\n    x = torch.zeros(2, 2, dtype=torch.bfloat16, device='mps')\nexcept Exception:\n    pass",
    PICKER + "s = torch.sparse_coo_tensor(i, v, (2, 4))",
    # accelerate: no precision spelled out, fp32, the CPU, or a file that never targets mps
    "from accelerate import Accelerator\n" + PICKER + "accelerator = Accelerator(mixed_precision=args.mixed_precision)",
    "from accelerate import Accelerator\n" + PICKER + "accelerator = Accelerator(mixed_precision='no')",
    "from accelerate import Accelerator\n" + PICKER + "accelerator = Accelerator(mixed_precision='fp16', cpu=True)",
    "from accelerate import Accelerator\naccelerator = Accelerator(mixed_precision='fp16')",
])
def test_data_gate_traps(line):
    assert found(line, "2.1", select=["MPS504"]) == []


def test_compile_decorator():
    src = "@torch.compile\ndef f(x):\n    return x\ndev = torch.device('mps')"
    assert found(src, "2.6", select=["MPS504"]) == ["MPS504"]


@pytest.mark.parametrize(
    "requirement, note",
    [
        (None, "Version gates (MPS504) checked against torch 2.0 (assumed: no torch-version set and no torch "
               "requirement found). Set torch-version"),
        ("torch>=2.4\n", "Version gates (MPS504) checked against torch 2.4 (torch>=2.4 in requirements.txt)."),
    ],
)
def test_the_run_says_which_torch_the_gates_assume(tmp_path, monkeypatch, requirement, note):
    from clitools import cli_runner

    from mpslint.cli import main

    (tmp_path / ".git").mkdir()
    if requirement:
        (tmp_path / "requirements.txt").write_text(requirement)
    (tmp_path / "train.py").write_text("import torch\nwith torch.autocast('mps'):\n    pass\n")
    (tmp_path / "clean.py").write_text("import torch\n")
    monkeypatch.chdir(tmp_path)
    result = cli_runner().invoke(main, ["--no-cache", "--select", "MPS504", "train.py"])
    assert result.exit_code == 1 and note in result.output, result.output
    # A run with no version-gated finding says nothing about gates.
    result = cli_runner().invoke(main, ["--no-cache", "--select", "MPS504", "clean.py"])
    assert "Version gates" not in result.output
