"""From the Python surface users call to the aten ops it reaches on ``mps``.

The op table (``mps_kernels``) speaks aten: ``_pdist_forward``,
``upsample_bicubic2d.out``. Users write ``torch.pdist``, ``F.interpolate(...,
mode="bicubic")``, ``nn.CTCLoss()``. This module is the curated bridge, keyed by
qualified name (``torch.linalg.eig``, ``torch.nn.CTCLoss``) or ``Tensor.<method>``.

Each entry lists the aten ops (yaml overload names, as PyTorch's error messages
print them) that the call dispatches to on MPS *after* composite
decompositions, so a lookup in the op table answers "does this run on mps?".
An entry applies under a condition on the call's arguments (``Reach.when``):

- ``None``: always;
- ``("kwarg", name, position)`` / ``("kwarg-true", ...)``: the argument is
  passed, not literally ``None``/``False``, and not forwarded from a same-named
  variable or attribute (``F.embedding(x, w, max_norm=self.max_norm)`` in a
  module that re-implements ``Embedding.forward`` is usually ``None``);
- ``("not-kwarg", name, position)``: the opposite;
- ``("not-output-size-1", name, position)``: the output size argument is not the
  literal ``1`` (or a tuple of 1s): ``AdaptiveAvgPool3d(1)`` decomposes to ``mean``;
- ``("mode", value)``: the ``mode=`` argument is the literal ``value``
  (``F.interpolate``, ``nn.Upsample``);
- ``("mode-antialias", value)``: ``mode=value`` and ``antialias=True``.

Tensor methods are only matched when the name is distinctive enough
(``Reach.method_safe``): ``x.take(...)`` is usually numpy, ``x.put_(...)`` is torch.

Entries were traced on the CPU build with a ``TorchDispatchMode`` or taken
from the yaml of each released wheel (``data/first_mps_version.json``) and
https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/mps/MPSFallback.mm; tests/test_knowledge.py re-traces a
representative set and checks every op name against the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, Optional, Tuple

Condition = Optional[Tuple]


@dataclass(frozen=True)
class Reach:
    ops: Tuple[str, ...]
    when: Condition = None
    method_safe: bool = False  # for Tensor.X: the method name does not collide with numpy/pandas/PIL


SURFACE: Dict[str, Tuple[Reach, ...]] = {}


def _add(names: Iterable[str], *ops: str, when: Condition = None, method_safe: bool = False) -> None:
    reach = Reach(tuple(ops), when, method_safe)
    for name in names:
        SURFACE[name] = SURFACE.get(name, ()) + (reach,)


F = "torch.nn.functional."
NN = "torch.nn."
LA = "torch.linalg."

# --- no MPS kernel in any release up to 2.13 (no MPS key in any wheel's yaml)
_add(["torch.pdist", F + "pdist"], "_pdist_forward")
_add([LA + "eig", LA + "eigvals"], "linalg_eig")
_add([LA + "eigh", LA + "eigvalsh"], "_linalg_eigh.eigenvalues")
_add([LA + "svdvals", LA + "cond", LA + "matrix_rank", "torch.svd_lowrank"], "_linalg_svd.U")
_add([LA + "lstsq"], "linalg_lstsq.out")
_add([LA + "matrix_exp", "torch.matrix_exp"], "linalg_matrix_exp")
_add(["Tensor.matrix_exp"], "linalg_matrix_exp", method_safe=True)
_add([LA + "ldl_factor", LA + "ldl_factor_ex"], "linalg_ldl_factor_ex.out")
_add([LA + "ldl_solve"], "linalg_ldl_solve.out")
_add(["torch.geqrf", "Tensor.geqrf"], "geqrf", method_safe=True)
_add(["torch.ormqr", "Tensor.ormqr"], "ormqr", method_safe=True)
_add(["torch.mode"], "mode")
_add(["torch.take"], "take")
_add(["Tensor.put_"], "put_", method_safe=True)
_add(["torch.put"], "put_")  # not ``x.put(...)``: that is almost always a queue
_add(["torch.frexp", "Tensor.frexp"], "frexp.Tensor_out", method_safe=True)
_add(["torch.heaviside", "Tensor.heaviside"], "heaviside.out", method_safe=True)
_add(["torch.logspace"], "logspace.out")
_add(["torch.poisson"], "poisson")
_add(["torch.binomial"], "binomial")
_add(["Tensor.logit_"], "logit_", method_safe=True)
_add(["torch.special.ndtri"], "special_ndtri.out")
_add(["torch.special.log_ndtr"], "special_log_ndtr.out")
_add(["torch.special.airy_ai"], "special_airy_ai.out")
_add(["torch.special.laguerre_polynomial_l"], "special_laguerre_polynomial_l.out")
_add(["torch.special.legendre_polynomial_p"], "special_legendre_polynomial_p.out")
_add(["torch.segment_reduce"], "segment_reduce")
_add(["torch.hash_tensor"], "hash_tensor.out")
_add([F + "ctc_loss", NN + "CTCLoss"], "_ctc_loss", "_ctc_loss.Tensor")  # int or tensor lengths
_add([F + "multi_margin_loss", NN + "MultiMarginLoss"], "multi_margin_loss")
_add([F + "multilabel_margin_loss", NN + "MultiLabelMarginLoss"], "multilabel_margin_loss_forward")
_add([F + "adaptive_avg_pool3d"], "_adaptive_avg_pool3d", when=("not-output-size-1", "output_size", 1))
_add([NN + "AdaptiveAvgPool3d"], "_adaptive_avg_pool3d", when=("not-output-size-1", "output_size", 0))
_add([F + "adaptive_max_pool3d", NN + "AdaptiveMaxPool3d"], "adaptive_max_pool3d.out")
_add([F + "fractional_max_pool2d", NN + "FractionalMaxPool2d"], "fractional_max_pool2d.output")
_add([F + "fractional_max_pool3d", NN + "FractionalMaxPool3d"], "fractional_max_pool3d.output")
_add([F + "rrelu", NN + "RReLU", "torch.rrelu"], "rrelu_with_noise")
_add([F + "channel_shuffle", NN + "ChannelShuffle", "torch.channel_shuffle"], "channel_shuffle")

# --- always on the CPU with a warning (the explicit list in MPSFallback.mm)
_add([LA + "svd", "torch.svd", "torch.pinverse", "torch.pca_lowrank"], "linalg_svd")
_add(["Tensor.svd", "Tensor.pinverse"], "linalg_svd", method_safe=True)
_add([LA + "pinv"], "linalg_svd", when=("not-kwarg", "hermitian", 2))
_add([LA + "pinv"], "_linalg_eigh.eigenvalues", when=("kwarg", "hermitian", 2))
_add([NN + "Embedding", NN + "Embedding.from_pretrained"], "embedding_renorm_", when=("kwarg", "max_norm", 3))
_add([F + "embedding"], "embedding_renorm_", when=("kwarg", "max_norm", 3))

# --- kernels that arrived in a known release (data/first_mps_version.json): findings only below that floor
_add([F + "interpolate", NN + "Upsample", NN + "functional.upsample"], "upsample_bicubic2d.out",
     when=("mode", "bicubic"))
_add([F + "interpolate"], "_upsample_bilinear2d_aa.out", when=("mode-antialias", "bilinear"))
_add([F + "interpolate"], "_upsample_bicubic2d_aa.out", when=("mode-antialias", "bicubic"))
_add([F + "interpolate", NN + "Upsample"], "upsample_trilinear3d.out", when=("mode", "trilinear"))
_add([F + "interpolate", NN + "Upsample"], "upsample_linear1d.out", when=("mode", "linear"))
_add(["torch.isin"], "isin.Tensor_Tensor_out")
_add(["torch.bucketize"], "bucketize.Tensor")
_add(["torch.searchsorted"], "searchsorted.Tensor")
_add(["torch.histc", "Tensor.histc"], "histc", method_safe=True)
_add(["torch.roll"], "roll")
_add(["torch.lgamma", "torch.special.gammaln"], "lgamma.out")
_add(["torch.digamma", "torch.special.digamma", "torch.special.psi"], "digamma.out")
_add(["torch.polygamma", "torch.special.polygamma"], "polygamma.out")
_add(["torch.nextafter"], "nextafter.out")
_add(["torch.sgn", "Tensor.sgn"], "sgn.out", method_safe=True)
_add(["torch.cumprod"], "cumprod.out")
_add(["torch.polar"], "polar.out")
_add(["torch.aminmax", "Tensor.aminmax"], "aminmax.out", method_safe=True)
_add(["torch.logit", "torch.special.logit"], "logit")
_add(["torch.hypot"], "hypot.out")
_add(["torch.erfinv", "torch.special.erfinv", "Tensor.erfinv", "Tensor.erfinv_"], "erfinv.out", method_safe=True)
_add(["torch.xlogy", "torch.special.xlogy"], "xlogy.OutTensor")
_add(["Tensor.masked_scatter_", "Tensor.masked_scatter", "torch.masked_scatter"], "masked_scatter_",
     method_safe=True)
_add([LA + "vector_norm"], "linalg_vector_norm.out")
_add(["torch.nn.utils.weight_norm", "torch.nn.utils.parametrizations.weight_norm"], "_weight_norm_interface")
_add(["torch.fft." + n for n in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn")], "_fft_c2c")
_add(["torch.fft." + n for n in ("rfft", "rfft2", "rfftn")] + ["torch.stft"], "_fft_r2c")
_add(["torch.i0", "torch.special.i0", "Tensor.i0"], "i0.out", method_safe=True)
_add(["torch.scatter_reduce", "Tensor.scatter_reduce", "Tensor.scatter_reduce_"], "scatter_reduce.two_out",
     method_safe=True)
_add([F + "unfold", NN + "Unfold"], "im2col")
_add([F + "fold", NN + "Fold"], "col2im")
_add([LA + "solve", LA + "solve_ex"], "_linalg_solve_ex.result")
_add([LA + "cholesky", LA + "cholesky_ex"], "linalg_cholesky_ex.L")
_add([LA + "lu_factor", LA + "lu_factor_ex"], "linalg_lu_factor_ex.out")
_add([LA + "det", "torch.det"], "_linalg_det.result")
_add(["torch.angle", "Tensor.angle"], "angle")
_add(["torch.index_copy", "Tensor.index_copy", "Tensor.index_copy_"], "index_copy.out", method_safe=True)
_add(["torch.nanmedian"], "nanmedian.dim_values", when=("kwarg", "dim", 1))
_add(["torch.special.i0e"], "special_i0e.out")
_add([F + "max_pool3d", NN + "MaxPool3d"], "max_pool3d_with_indices")
_add([F + "avg_pool3d", NN + "AvgPool3d"], "avg_pool3d.out")
_add([F + "max_unpool2d", NN + "MaxUnpool2d"], "max_unpool2d")
_add([F + "max_unpool3d", NN + "MaxUnpool3d"], "max_unpool3d")
_add(["torch.kthvalue", "Tensor.kthvalue"], "kthvalue.values", method_safe=True)
_add(["torch.logcumsumexp", "Tensor.logcumsumexp"], "_logcumsumexp", method_safe=True)
_add(["torch.igamma", "torch.special.gammainc"], "igamma.out")
_add([LA + "householder_product", "torch.orgqr"], "linalg_householder_product")
_add([LA + "lu_solve"], "linalg_lu_solve.out")
_add([F + "embedding_bag", NN + "EmbeddingBag"], "_embedding_bag")
_add(["torch.unique"], "unique_dim", when=("kwarg", "dim", 4))
_add([LA + "qr", "torch.qr"], "linalg_qr.out")
_add(["Tensor.index_reduce", "Tensor.index_reduce_", "torch.index_reduce"], "index_reduce.out", method_safe=True)
_add(["torch.optim." + n for n in ("Adam", "AdamW", "SGD")], "_fused_adam_", when=("kwarg-true", "fused", None))
_add(["torch.cdist"], "_cdist_forward")
_add([F + "grid_sample"], "grid_sampler_2d")

# Optimizers share one entry above; the kernel names differ per class.
SURFACE["torch.optim.AdamW"] = (Reach(("_fused_adamw_",), ("kwarg-true", "fused", None)),)
SURFACE["torch.optim.SGD"] = (Reach(("_fused_sgd_",), ("kwarg-true", "fused", None)),)


def lookup(qualified: str) -> Tuple[Reach, ...]:
    return SURFACE.get(qualified, ())


def method(name: str) -> Tuple[Reach, ...]:
    """Entries for ``<tensor>.name(...)`` that are safe to match on the method name alone."""
    return tuple(r for r in SURFACE.get("Tensor." + name, ()) if r.method_safe)


def all_ops() -> Tuple[str, ...]:
    return tuple(sorted({op for reaches in SURFACE.values() for r in reaches for op in r.ops}))
