"""The generated table of dtype limits inside MPS kernels (mpslint/knowledge/build_restrictions.py): it cites its
source, agrees with the installed torch's common_mps.py, and the emulated device raises where it says."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from mpslint.knowledge import build_restrictions  # noqa: E402
from mpslint.verify import messages, restrictions  # noqa: E402
from mpslint.verify.simulate import simulated_device  # noqa: E402

VERSION = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
TABLE = Path(build_restrictions.DATA) / f"mps_restrictions_{VERSION[0]}_{VERSION[1]}.json"
needs_table = pytest.mark.skipif(not TABLE.exists(), reason="no table generated for this torch")


@needs_table
def test_the_table_cites_its_source_and_agrees_with_the_installed_common_mps():
    data = json.loads(TABLE.read_text(encoding="utf-8"))
    assert data["torch_version"] == torch.__version__.split("+")[0]
    assert data["git_version"] == torch.version.git_version and "common_mps.py" in data["source"]
    import torch.testing._internal as internal

    lists = build_restrictions.common_mps_lists(os.path.join(os.path.dirname(internal.__file__), "common_mps.py"),
                                                torch)
    assert data["ops"], "an empty table restricts nothing"
    for op, entry in data["ops"].items():
        for because in entry["because"]:
            source, _, dtype = because.rpartition(" ")
            assert dtype in entry["dtypes"]
            if source.startswith("SUPPORTED_COMPLEX_OPS"):
                key = source.split("[", 1)[1][1:-2]
                assert dtype == "complex64" and key not in lists["SUPPORTED_COMPLEX_OPS"]
            else:
                name, key = source.split("[", 1)
                listed = lists[name][key[1:-2]]
                assert listed is not None and getattr(torch, dtype) in listed, because
    assert restrictions.load_table() == data["ops"]


@needs_table
def test_the_emulated_device_raises_where_the_table_says_and_runs_elsewhere():
    ops = restrictions.load_table()
    name, entry = next((n, e) for n, e in sorted(ops.items()) if n == "bincount") if "bincount" in ops \
        else sorted(ops.items())[0]
    if name != "bincount":
        pytest.skip("bincount is not restricted in this torch's table")
    dtype = getattr(torch, entry["dtypes"][0])
    with simulated_device(fallback=False):
        with pytest.raises(RuntimeError) as caught:
            torch.bincount(torch.tensor([1, 2, 2], dtype=dtype).to("mps"))
        torch.bincount(torch.tensor([1, 2, 2], dtype=dtype))  # on the CPU: no limit
    assert str(caught.value).startswith(f"MPS: aten::bincount does not support {entry['dtypes'][0]} inputs")
    assert messages.error_kind("RuntimeError", str(caught.value)) == "dtype"


def test_without_a_table_nothing_is_restricted(tmp_path, monkeypatch):
    monkeypatch.setattr(restrictions, "_DATA", tmp_path)
    assert restrictions.load_table() == {}
    (tmp_path / "mps_restrictions_2_1.json").write_text(json.dumps({"ops": {"x": {"dtypes": ["uint8"], "because": []}}}))
    assert restrictions.load_table((2, 13)) == {"x": {"dtypes": ["uint8"], "because": []}}  # the newest not newer
    assert restrictions.load_table((2, 0)) == {}


def test_a_restriction_is_carried_by_the_ops_no_passing_opinfo_shares():
    carriers = build_restrictions.carriers
    # its own name first, even when another unshared op is dispatched too
    assert carriers("nn.functional.avg_pool2d", {"avg_pool2d", "pad", "copy_"}, set()) == ["avg_pool2d"]
    # no op of its own name: the one op no passing OpInfo dispatches in that dtype
    assert carriers("linalg.inv", {"linalg_inv_ex", "mm", "copy_"}, {"mm"}) == ["linalg_inv_ex"]
    # two candidates: which one fails is not known, so neither is restricted
    assert carriers("pca_lowrank", {"linalg_qr", "linalg_svd", "mm"}, {"mm"}) == []
    # an op a passing OpInfo shares is never restricted, its own name or not
    assert carriers("std", {"std", "var"}, {"std", "var"}) == []


@needs_table
def test_complex_linear_algebra_is_restricted_and_float32_runs():
    if "linalg_inv_ex" not in restrictions.load_table():
        pytest.skip("linalg_inv_ex is not restricted in this torch's table")
    with simulated_device(fallback=False):
        torch.linalg.inv(torch.eye(2).to("mps"))
        with pytest.raises(RuntimeError) as caught:
            torch.linalg.inv(torch.eye(2, dtype=torch.complex64).to("mps"))
    assert messages.error_kind("RuntimeError", str(caught.value)) == "dtype"


@needs_table
def test_the_kernels_own_text_comes_before_the_tables():
    """Integer convolution is in both: PyTorch's 'Convolution is supported only for Floating types' is raised."""
    with simulated_device(fallback=False):
        with pytest.raises(RuntimeError, match="^" + messages.CONV_NON_FLOAT):
            torch.nn.functional.conv1d(torch.ones(1, 1, 4, dtype=torch.int64).to("mps"),
                                       torch.ones(1, 1, 2, dtype=torch.int64).to("mps"))


@pytest.mark.parametrize("call,kernel", [
    (lambda x, i, s: x.scatter_reduce(0, i, s, "prod"), "scatter_prod_dense_long_long"),
    (lambda x, i, s: x.scatter(0, i, s, reduce="multiply"), "scatter_prod_dense_long_long"),
    (lambda x, i, s: x.t().scatter_reduce(1, i.t(), s.t(), "prod"), "scatter_prod_strided_long_long"),
])
def test_a_scatter_reduction_without_a_metal_kernel_raises_pytorchs_text(call, kernel):
    """ScatterGather.mm asks the Metal library for scatter_{op}_{layout}_{type}_{index type}; none multiplies int64."""
    with simulated_device(fallback=False):
        x = torch.ones(3, 4, dtype=torch.int64, device="mps")
        index = torch.tensor([[0, 1, 2, 0]], device="mps")
        src = torch.full((1, 4), 2, dtype=torch.int64, device="mps")
        with pytest.raises(RuntimeError) as caught:
            call(x, index, src)
    assert str(caught.value) == messages.METAL_FUNCTION_MISSING.format(name=kernel)
    assert messages.error_kind("RuntimeError", str(caught.value)) == "dtype"


def test_trap_scatter_reductions_with_a_metal_kernel_run():
    with simulated_device(fallback=False):
        index = torch.tensor([[0, 1, 2, 0]], device="mps")
        for dtype in (torch.int32, torch.float32):  # prod is instantiated for these
            x = torch.ones(3, 4, dtype=dtype, device="mps")
            x.scatter_reduce(0, index, torch.full((1, 4), 2, dtype=dtype, device="mps"), "prod")
        x = torch.ones(3, 4, dtype=torch.int64, device="mps")  # int64 sums and maxima have kernels
        src = torch.full((1, 4), 2, dtype=torch.int64, device="mps")
        x.scatter_reduce(0, index, src, "sum")
        x.scatter_reduce(0, index, src, "amax")
        x.scatter(0, index, src)
        torch.ones(3, 4, dtype=torch.int64).scatter_reduce(0, index.cpu(), src.cpu(), "prod")  # the CPU has one


def test_linalg_qr_takes_float32_only_with_pytorchs_text():
    with simulated_device(fallback=False):
        with pytest.raises(RuntimeError) as caught:
            torch.linalg.qr(torch.randn(3, 3, dtype=torch.complex64, device="mps"))
        torch.linalg.qr(torch.randn(3, 3, device="mps"))  # float32 runs
    assert str(caught.value) == messages.LINALG_QR_FLOAT32


def test_complex_addmm_with_a_complex_scalar_raises_pytorchs_conversion_error():
    """addmm_out_mps_impl's MPSGraph path converts alpha and beta with Scalar::toDouble(), which refuses an
    imaginary part: in place, out= and functional alike."""
    with simulated_device(fallback=False):
        bias, mat1, mat2 = (torch.randn(*shape, dtype=torch.complex64, device="mps") for shape in ((2, 3), (2, 2), (2, 3)))
        calls = (lambda: torch.addmm(bias, mat1, mat2, alpha=2 + 3j),
                 lambda: torch.addmm(bias, mat1, mat2, beta=1j),
                 lambda: bias.clone().addmm_(mat1, mat2, beta=1j),
                 lambda: torch.addmm(bias, mat1, mat2, beta=1j, out=torch.empty_like(bias)))
        for call in calls:
            with pytest.raises(RuntimeError) as caught:
                call()
            assert str(caught.value) == messages.SCALAR_TO_DOUBLE


def test_trap_addmm_with_real_scalars_or_an_empty_output_runs():
    with simulated_device(fallback=False):
        bias, mat1, mat2 = (torch.randn(*shape, dtype=torch.complex64, device="mps") for shape in ((2, 3), (2, 2), (2, 3)))
        torch.addmm(bias, mat1, mat2)
        torch.addmm(bias, mat1, mat2, alpha=2.0, beta=0.5)
        torch.addmm(bias, mat1, mat2, alpha=2 + 0j)  # no imaginary part: the conversion succeeds
        torch.nn.functional.linear(mat1, mat1, bias[0, :2])  # linear's addmm: alpha = beta = 1
        empty = torch.empty(0, 2, dtype=torch.complex64, device="mps")
        torch.addmm(torch.empty(0, 3, dtype=torch.complex64, device="mps"), empty, mat2, beta=1j)  # returns early
        torch.addmm(bias.real, mat1.real, mat2.real, alpha=2, beta=3)
        torch.addmm(bias.cpu(), mat1.cpu(), mat2.cpu(), beta=1j)  # the CPU takes complex scalars
