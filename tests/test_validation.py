"""gpflow_ext.validation: bad input gets a plain Python error naming the argument, before any tf.function.

Every bad-input case asserts the error type, that the message names the argument (and the
expectation), and that no frame of the traceback lies inside TensorFlow's package: the error is
raised by Python checks at the API boundary, not by a traced graph. Good data must pass
``check_training_data`` with the same numbers and the same training loss.
"""
import os
import traceback

import gpflow
import numpy as np
import pytest
import scipy.sparse as sp
import tensorflow as tf
from gpflow.keras import tf_keras

from gpflow_ext import metrics
from gpflow_ext.bijectors.planar import Planar, planar_flow
from gpflow_ext.data import _io, downscale, load_mnist, load_movielens, read_idx
from gpflow_ext.inducing_variables import GridInducingPoints, SubspaceInducingPoints
from gpflow_ext.inducing_variables.subspace import subspace_basis
from gpflow_ext.likelihoods.mixed_softmax import MixedSoftmax
from gpflow_ext.likelihoods.multilabel import MultiLabelBernoulli
from gpflow_ext.models import GPLVF, MLGPF, SVDKL, PreconditionedSVGP, SoftmaxNetwork
from gpflow_ext.recipes.gplvf import infer_latent, make_kernel
from gpflow_ext.training import fit
from gpflow_ext.validation import (
    check_choice,
    check_class_labels,
    check_multilabel_labels,
    check_positive_int,
    check_positive_values,
    check_row_index,
    check_training_data,
)
from gpflow_ext.variational import FreeInducingPoints, KISSGPGrid
from gpflow_ext.variational.kronecker import KroneckerGaussian
from gpflow_ext.variational.preconditioned import PreconditionedGaussian

F64 = tf.float64
TF_DIR = os.path.dirname(tf.__file__)
N, D, K, C = 20, 6, 5, 3


def raises_plain(error, match, function, *args, **kwargs):
    """``function(*args, **kwargs)`` raises ``error`` matching ``match`` from plain Python code: no frame of
    the traceback lies inside TensorFlow's package (nothing was traced or run as a TF op)."""
    with pytest.raises(error, match=match) as info:
        function(*args, **kwargs)
    frames = traceback.extract_tb(info.value.__traceback__)
    inside = [f"{f.filename}:{f.lineno}" for f in frames if os.path.abspath(f.filename).startswith(TF_DIR)]
    assert not inside, f"the error came through TensorFlow: {inside}"
    return info.value


# ------------------------------------------------------------------------------------------ fixtures
def _net(d_in=D, q=C, seed=0):
    tf_keras.utils.set_random_seed(seed)
    return tf_keras.Sequential(
        [tf_keras.Input((d_in,), dtype=F64), tf_keras.layers.Dense(4, activation="tanh", dtype=F64),
         tf_keras.layers.Dense(q, dtype=F64)]
    )


@pytest.fixture(scope="module")
def problem():
    """Small models of every kind with matching good data."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, D))
    Y = rng.normal(size=(N, 1))
    labels = rng.integers(0, C, size=N)
    Ymulti = (rng.uniform(size=(N, K)) < 0.3).astype(np.float64)
    Ymulti[:, 0] = 1.0
    Yobs = rng.normal(size=(N, D))
    Yobs[rng.uniform(size=(N, D)) < 0.3] = np.nan
    Yobs[:, 0] = rng.normal(size=N)  # every row observes something
    Z = X[:4].copy()
    subspace = SubspaceInducingPoints.from_data(X, 4, 3)
    out = dict(
        rng=rng, X=X, Y=Y, labels=labels, Ymulti=Ymulti, Yobs=Yobs, subspace=subspace,
        svgp=gpflow.models.SVGP(gpflow.kernels.SquaredExponential(), gpflow.likelihoods.Gaussian(), Z, num_data=N),
        svgp_subspace=gpflow.models.SVGP(gpflow.kernels.Linear(), gpflow.likelihoods.Gaussian(), subspace, num_data=N),
        svgp_softmax=gpflow.models.SVGP(
            gpflow.kernels.SquaredExponential(), gpflow.likelihoods.Softmax(C), Z, num_latent_gps=C, num_data=N
        ),
        psvgp=PreconditionedSVGP(gpflow.kernels.SquaredExponential(), gpflow.likelihoods.Gaussian(), Z, num_data=N),
        psvgp_subspace=PreconditionedSVGP(gpflow.kernels.Linear(), gpflow.likelihoods.Gaussian(), subspace, num_data=N),
        mlgpf=MLGPF(gpflow.kernels.Linear(), subspace, num_labels=K, num_latent_gps=2, num_data=N),
        svdkl=SVDKL(_net(), C, num_data=N, inducing=KISSGPGrid(6)),
        network=SoftmaxNetwork(_net(q=2), tf_keras.layers.Dense(C, dtype=F64)),
        gplvf=GPLVF(Yobs, latent_dim=2, num_inducing=5),
    )
    out["network"].head.build((None, 2))
    return out


# ------------------------------------------------------------------------------------------ constructors
def _gaussian_svgp(**kwargs):
    return PreconditionedSVGP(gpflow.kernels.SquaredExponential(), gpflow.likelihoods.Gaussian(), np.zeros((3, 2)), **kwargs)


def _mlgpf(p, **kwargs):
    arguments = dict(num_labels=K, num_latent_gps=2, num_data=N)
    arguments.update(kwargs)
    return MLGPF(gpflow.kernels.Linear(), p["subspace"], **arguments)


def _gplvf(p, **kwargs):
    arguments = dict(latent_dim=2, num_inducing=5)
    arguments.update(kwargs)
    return GPLVF(p["Yobs"], **arguments)


CONSTRUCTOR_CASES = [
    # (id, error, match, build(problem))
    ("psvgp-num_data-str", TypeError, r"num_data must be an integer >= 1, got 'abc'", lambda p: _gaussian_svgp(num_data="abc")),
    ("psvgp-num_data-float", TypeError, r"num_data must be an integer >= 1, got 2\.7", lambda p: _gaussian_svgp(num_data=2.7)),
    ("psvgp-num_data-zero", ValueError, r"num_data must be >= 1", lambda p: _gaussian_svgp(num_data=0)),
    ("psvgp-num_latent_gps", ValueError, r"num_latent_gps must be >= 1", lambda p: _gaussian_svgp(num_latent_gps=0)),
    ("psvgp-sigma_floor", ValueError, r"sigma_floor must be a positive finite float", lambda p: _gaussian_svgp(sigma_floor=-1.0)),
    ("mlgpf-num_data-float", TypeError, r"num_data must be an integer", lambda p: _mlgpf(p, num_data=2.7)),
    ("mlgpf-num_data-str", TypeError, r"num_data must be an integer", lambda p: _mlgpf(p, num_data="abc")),
    ("mlgpf-negatives-float", TypeError, r"num_negative_samples must be an integer", lambda p: _mlgpf(p, num_negative_samples=1.5)),
    ("mlgpf-num_labels", ValueError, r"num_labels must be >= 1", lambda p: _mlgpf(p, num_labels=0)),
    ("mlgpf-num_latent_gps", TypeError, r"num_latent_gps must be an integer", lambda p: _mlgpf(p, num_latent_gps=2.5)),
    ("svdkl-num_data-float", TypeError, r"num_data must be an integer", lambda p: SVDKL(_net(), C, num_data=2.7)),
    ("svdkl-num_data-str", TypeError, r"num_data must be an integer", lambda p: SVDKL(_net(), C, num_data="abc")),
    ("svdkl-num_classes-float", TypeError, r"num_classes must be an integer >= 2", lambda p: SVDKL(_net(), 2.5, num_data=N)),
    ("svdkl-num_samples", ValueError, r"num_samples must be >= 1", lambda p: SVDKL(_net(), C, num_data=N, num_samples=0)),
    ("svdkl-lengthscale", ValueError, r"lengthscale must be finite and > 0, got -0\.5",
     lambda p: SVDKL(_net(), C, num_data=N, lengthscale=-0.5)),
    ("svdkl-grid_size", TypeError, r"grid_size must be an integer",
     lambda p: SVDKL(_net(), C, num_data=N, inducing=KISSGPGrid(8.5))),
    ("svdkl-inducing", TypeError, r"inducing must be a gpflow_ext.variational.KISSGPGrid or FreeInducingPoints",
     lambda p: SVDKL(_net(), C, num_data=N, inducing="grid")),
    ("svdkl-jitter", ValueError, r"jitter must be a positive finite number", lambda p: SVDKL(_net(), C, num_data=N, jitter=-1e-6)),
    ("svdkl-num_inducing", TypeError, r"num_inducing must be an integer",
     lambda p: SVDKL(_net(), C, num_data=N, inducing=FreeInducingPoints(num_inducing=4.5))),
    ("grid-float", TypeError, r"num_grid_points must be an integer >= 4, got 8\.5", lambda p: GridInducingPoints(8.5)),
    ("grid-entry-float", TypeError, r"num_grid_points\[1\] must be an integer", lambda p: GridInducingPoints([8, 8.5], input_dim=2)),
    ("grid-input_dim", TypeError, r"input_dim must be an integer", lambda p: GridInducingPoints(8, input_dim=1.5)),
    ("grid-lower", ValueError, r"lower must be a finite number", lambda p: GridInducingPoints(8, lower=np.nan)),
    ("grid-out_of_range", ValueError, r"out_of_range must be one of", lambda p: GridInducingPoints(8, out_of_range="wrap")),
    ("gplvf-latent_dim", TypeError, r"latent_dim must be an integer", lambda p: _gplvf(p, latent_dim=1.5)),
    ("gplvf-num_inducing", ValueError, r"num_inducing must be >= 1", lambda p: _gplvf(p, num_inducing=0)),
    ("gplvf-noise_variance", ValueError, r"noise_variance must be finite and > 0", lambda p: _gplvf(p, noise_variance=-0.1)),
    ("gplvf-num_samples", TypeError, r"num_samples must be an integer", lambda p: _gplvf(p, num_samples="2")),
    ("make_kernel-latent_dim", ValueError, r"latent_dim must be >= 1", lambda p: make_kernel("se", 0)),
    ("preconditioned-q-latent", TypeError, r"num_latent_gps must be an integer", lambda p: PreconditionedGaussian(7, 2.5)),
    ("preconditioned-q-floor", ValueError, r"sigma_floor must be", lambda p: PreconditionedGaussian(7, sigma_floor=-1.0)),
    ("kronecker-num_gps", ValueError, r"num_gps must be >= 1", lambda p: KroneckerGaussian(0, [4])),
    ("kronecker-grid_sizes", TypeError, r"grid_sizes\[0\] must be an integer", lambda p: KroneckerGaussian(1, [4.5])),
    ("multilabel-latent", TypeError, r"num_latent_gps must be an integer", lambda p: MultiLabelBernoulli(4, 2.5)),
    ("multilabel-gauss-hermite", ValueError, r"num_gauss_hermite_points must be >= 1",
     lambda p: MultiLabelBernoulli(4, 2, num_gauss_hermite_points=0)),
    ("mixed-softmax-classes", ValueError, r"num_classes must be >= 2", lambda p: MixedSoftmax(1)),
    ("mixed-softmax-latent", ValueError, r"num_latent_gps must be >= 1", lambda p: MixedSoftmax(3, num_latent_gps=0)),
    ("planar-latent_dim", TypeError, r"latent_dim must be an integer", lambda p: Planar(1.5)),
    ("planar-flow-layers", TypeError, r"num_layers must be an integer >= 0", lambda p: planar_flow(2.5, 2)),
    ("subspace-num_inducing", TypeError, r"num_inducing must be an integer", lambda p: SubspaceInducingPoints.from_data(p["X"], 2.5, 2)),
    ("subspace-rank", TypeError, r"rank must be an integer", lambda p: subspace_basis(p["X"], "3")),
    ("network-extractor", TypeError, r"feature_extractor must be a tf_keras", lambda p: SoftmaxNetwork(lambda x: x)),
]


@pytest.mark.parametrize("error, match, build", [c[1:] for c in CONSTRUCTOR_CASES], ids=[c[0] for c in CONSTRUCTOR_CASES])
def test_constructor_rejects_bad_arguments(problem, error, match, build):
    raises_plain(error, match, build, problem)


# ------------------------------------------------------------------------------------------ training data
def _sparse_labels_with(value):
    Y = sp.random(N, K, density=0.3, format="csr", random_state=1)
    Y.data[:] = 1.0
    Y.data[0] = value
    return Y


def _with(array, index, value):
    array = np.array(array, dtype=np.float64)
    array[index] = value
    return array


DATA_CASES = [
    # (id, model key, error, match, data(problem))
    ("svgp-int-X", "svgp", TypeError, r"data\[0\] \(X\) has non-float dtype int64.*cast it to float",
     lambda p: (p["X"].astype(np.int64), p["Y"])),
    ("svgp-3d-X", "svgp", ValueError, r"data\[0\] \(X\) must be a 2-D array \[N, D\], got shape \(20, 6, 1\)",
     lambda p: (p["X"][:, :, None], p["Y"])),
    ("svgp-wrong-D", "svgp", ValueError, r"data\[0\] \(X\) has 5 features but the model's inducing inputs have D=6",
     lambda p: (p["X"][:, :5], p["Y"])),
    ("svgp-two-columns", "svgp", ValueError, r"data\[1\] \(Y\) has 2 columns but SVGP has num_latent_gps=1",
     lambda p: (p["X"], np.hstack([p["Y"], p["Y"]]))),
    ("svgp-1d-Y", "svgp", ValueError, r"data\[1\] \(Y\) must be a 2-D array.*y\[:, None\]", lambda p: (p["X"], p["Y"][:, 0])),
    ("svgp-nan-Y", "svgp", ValueError, r"data\[1\] \(Y\) contains NaN at index \(3, 0\)",
     lambda p: (p["X"], _with(p["Y"], (3, 0), np.nan))),
    ("svgp-inf-X", "svgp", ValueError, r"data\[0\] \(X\) contains inf", lambda p: (_with(p["X"], (2, 1), np.inf), p["Y"])),
    ("svgp-rows", "svgp", ValueError, r"data\[1\] \(Y\) has 19 rows but data\[0\] \(X\) has 20", lambda p: (p["X"], p["Y"][:-1])),
    ("svgp-single-array", "svgp", TypeError, r"data must be a tuple \(X, Y\) for SVGP, got a single ndarray", lambda p: p["X"]),
    ("svgp-three-arrays", "svgp", ValueError, r"data must be a tuple \(X, Y\) for SVGP, got 3 array", lambda p: (p["X"], p["Y"], p["Y"])),
    ("svgp-none", "svgp", TypeError, r"data\[1\] \(Y\) is None", lambda p: (p["X"], None)),
    ("svgp-sparse-X-free-Z", "svgp", TypeError, r"data\[0\] \(X\) is a scipy.sparse matrix",
     lambda p: (sp.csr_matrix(p["X"]), p["Y"])),
    ("svgp-string-Y", "svgp", TypeError, r"data\[1\] \(Y\) must hold numbers", lambda p: (p["X"], np.full((N, 1), "a"))),
    ("svgp-subspace-wrong-D", "svgp_subspace", ValueError, r"data\[0\] \(X\) has 7 features but the model's inducing inputs have D=6",
     lambda p: (sp.random(N, 7, density=0.5, format="csr", random_state=0), p["Y"])),
    ("svgp-softmax-fraction", "svgp_softmax", ValueError, r"data\[1\] \(Y\) must hold integer class indices in \[0, 3\), got 1\.5 at row 2",
     lambda p: (p["X"], _with(p["labels"][:, None], (2, 0), 1.5))),
    ("svgp-softmax-range", "svgp_softmax", ValueError, r"data\[1\] \(Y\): labels must be in \[0, 3\), got 3 at row 4",
     lambda p: (p["X"], _with(p["labels"], 4, 3).astype(np.int64)[:, None])),
    ("psvgp-int-X", "psvgp", TypeError, r"data\[0\] \(X\) has non-float dtype int32.*cast", lambda p: (p["X"].astype(np.int32), p["Y"])),
    ("psvgp-two-columns", "psvgp", ValueError, r"data\[1\] \(Y\) has 2 columns but PreconditionedSVGP has num_latent_gps=1",
     lambda p: (p["X"], np.hstack([p["Y"], p["Y"]]))),
    ("psvgp-wrong-D", "psvgp", ValueError, r"data\[0\] \(X\) has 8 features", lambda p: (np.ones((N, 8)), p["Y"])),
    ("psvgp-3d-X", "psvgp", ValueError, r"data\[0\] \(X\) must be a 2-D array", lambda p: (p["X"][None], p["Y"])),
    ("psvgp-subspace-sparse-D", "psvgp_subspace", ValueError, r"data\[0\] \(X\) has 5 features.*D=6",
     lambda p: (sp.csr_matrix(p["X"][:, :5]), p["Y"])),
    ("mlgpf-half-label", "mlgpf", ValueError, r"data\[1\] \(Y\) must hold 0/1 label indicators.*0\.5 at row 3, column 2",
     lambda p: (p["X"], _with(p["Ymulti"], (3, 2), 0.5))),
    ("mlgpf-sparse-two", "mlgpf", ValueError, r"data\[1\] \(Y\) must hold 0/1 label indicators.*2\.0",
     lambda p: (p["X"], _sparse_labels_with(2.0))),
    ("mlgpf-columns", "mlgpf", ValueError, r"data\[1\] \(Y\) has 4 label columns, expected num_labels=5",
     lambda p: (p["X"], p["Ymulti"][:, :4])),
    ("mlgpf-wrong-D", "mlgpf", ValueError, r"data\[0\] \(X\) has 5 features but the model's inducing inputs have D=6",
     lambda p: (p["X"][:, :5], p["Ymulti"])),
    ("mlgpf-label-id", "mlgpf", ValueError, r"data\[1\] \(Y\): label index 5 out of range \[0, num_labels=5\)",
     lambda p: (p["X"], [[0, 5]] + [[1]] * (N - 1))),
    ("mlgpf-rows", "mlgpf", ValueError, r"data\[1\] \(Y\) has 19 rows", lambda p: (p["X"], p["Ymulti"][:-1])),
    ("mlgpf-nan-X", "mlgpf", ValueError, r"data\[0\] \(X\) contains NaN", lambda p: (_with(p["X"], (0, 0), np.nan), p["Ymulti"])),
    ("mlgpf-tensor-X", "mlgpf", TypeError, r"data\[0\] \(X\) must be a numpy array or scipy.sparse matrix",
     lambda p: (tf.constant(p["X"]), p["Ymulti"])),
    ("svdkl-fraction", "svdkl", ValueError, r"data\[1\] \(Y\) must hold integer class indices in \[0, 3\), got 1\.5 at row 2",
     lambda p: (p["X"], _with(p["labels"], 2, 1.5))),
    ("svdkl-negative", "svdkl", ValueError, r"data\[1\] \(Y\): labels must be in \[0, 3\), got -1 at row 5",
     lambda p: (p["X"], _with(p["labels"], 5, -1).astype(np.int64))),
    ("svdkl-too-large", "svdkl", ValueError, r"data\[1\] \(Y\): labels must be in \[0, 3\), got 3 at row 0",
     lambda p: (p["X"], _with(p["labels"], 0, 3).astype(np.int64)[:, None])),
    ("svdkl-wrong-D", "svdkl", ValueError, r"data\[0\] \(X\) rows have shape \(5,\), the feature extractor expects \(6,\)",
     lambda p: (p["X"][:, :5], p["labels"])),
    ("svdkl-two-label-columns", "svdkl", ValueError, r"data\[1\] \(Y\) must be class indices of shape \[N\] or \[N, 1\]",
     lambda p: (p["X"], np.stack([p["labels"], p["labels"]], axis=1))),
    ("svdkl-nan-X", "svdkl", ValueError, r"data\[0\] \(X\) contains NaN", lambda p: (_with(p["X"], (1, 1), np.nan), p["labels"])),
    ("svdkl-nan-Y", "svdkl", ValueError, r"data\[1\] \(Y\) must hold class indices in \[0, 3\), got nan at row 7",
     lambda p: (p["X"], _with(p["labels"], 7, np.nan))),
    ("svdkl-bool-Y", "svdkl", TypeError, r"data\[1\] \(Y\) must hold integer class indices, got dtype bool",
     lambda p: (p["X"], p["labels"] > 0)),
    ("network-too-large", "network", ValueError, r"data\[1\] \(Y\): labels must be in \[0, 3\), got 3",
     lambda p: (p["X"], _with(p["labels"], 1, 3).astype(np.int64))),
    ("network-fraction", "network", ValueError, r"data\[1\] \(Y\) must hold integer class indices.*0\.5 at row 0",
     lambda p: (p["X"], _with(p["labels"], 0, 0.5))),
    ("network-wrong-D", "network", ValueError, r"data\[0\] \(X\) rows have shape \(7,\)", lambda p: (np.ones((N, 7)), p["labels"])),
    ("gplvf-four-of-six", "gplvf", ValueError, r"data\[0\] \(values\) must have width D=6 \(the model's outputs\), got 4",
     lambda p: (p["Yobs"][:, :4],)),
    ("gplvf-mask-shape", "gplvf", ValueError, r"data\[1\] \(mask\) must have the shape of data\[0\] \(values\)",
     lambda p: (p["gplvf"].training_data()[0], np.ones((N, 5)), np.arange(N))),
    ("gplvf-mask-values", "gplvf", ValueError, r"data\[1\] \(mask\) must be boolean or 0/1",
     lambda p: (p["gplvf"].training_data()[0], 2 * p["gplvf"].training_data()[1], np.arange(N))),
    ("gplvf-rows-range", "gplvf", ValueError, r"data\[2\] \(row_index\) must hold row indices in \[0, num_data=20\).*got 20 at position 3",
     lambda p: p["gplvf"].training_data()[:2] + (_with(np.arange(N), 3, 20).astype(np.int64),)),
    ("gplvf-rows-float", "gplvf", TypeError, r"data\[2\] \(row_index\) must hold integer row indices",
     lambda p: p["gplvf"].training_data()[:2] + (np.arange(N, dtype=np.float64),)),
    ("gplvf-rows-length", "gplvf", ValueError, r"data\[2\] \(row_index\) has 19 entries but the data have 20 rows",
     lambda p: p["gplvf"].training_data()[:2] + (np.arange(N - 1),)),
    ("gplvf-rows-without-index", "gplvf", ValueError, r"data\[0\] \(values\) has 10 rows but the model has num_data=20",
     lambda p: (p["Yobs"][:10],)),
    ("gplvf-nan-observed", "gplvf", ValueError, r"data\[0\] \(values\) has NaN at observed entry \(0, 0\)",
     lambda p: (_with(p["gplvf"].training_data()[0], (0, 0), np.nan),) + p["gplvf"].training_data()[1:]),
    ("gplvf-inf", "gplvf", ValueError, r"data\[0\] \(values\) has an infinite value at observed entry \(2, 0\)",
     lambda p: (_with(p["Yobs"], (2, 0), np.inf),)),
    ("gplvf-empty-row", "gplvf", ValueError, r"data\[0\] \(values\): 1 row\(s\) have no observed entry",
     lambda p: (_with(p["Yobs"], (4, slice(None)), np.nan),)),
    ("gplvf-four-arrays", "gplvf", ValueError, r"data must be a tuple \(values, mask, row_index\) for GPLVF, got 4",
     lambda p: p["gplvf"].training_data() + (np.arange(N),)),
]


@pytest.mark.parametrize("key, error, match, data", [c[1:] for c in DATA_CASES], ids=[c[0] for c in DATA_CASES])
def test_check_training_data_rejects(problem, key, error, match, data):
    raises_plain(error, match, check_training_data, problem[key], data(problem))


# ------------------------------------------------------------------------------------------ predict, metrics, readers
OTHER_CASES = [
    ("svdkl-predict-D", ValueError, r"X rows have shape \(5,\), the feature extractor expects \(6,\)",
     lambda p: p["svdkl"].predict_proba(p["X"][:, :5])),
    ("svdkl-predict-batch", ValueError, r"batch_size must be >= 1", lambda p: p["svdkl"].predict_proba(p["X"], batch_size=0)),
    ("svdkl-predict-nan", ValueError, r"X contains NaN", lambda p: p["svdkl"].predict_proba(_with(p["X"], (0, 0), np.nan))),
    ("network-predict-D", ValueError, r"X rows have shape \(4,\)", lambda p: p["network"].predict_proba(np.ones((3, 4)))),
    ("network-predict-batch", TypeError, r"batch_size must be an integer", lambda p: p["network"].predict_proba(p["X"], batch_size=1.5)),
    ("network-predict-1d", ValueError, r"X must be at least 2-D", lambda p: p["network"].predict_proba(np.ones(6))),
    ("mlgpf-top-k", ValueError, r"k must be an integer in \[1, num_labels=5\]", lambda p: p["mlgpf"].predict_top_k(p["X"], k=0)),
    ("mlgpf-top-k-D", ValueError, r"Xnew has 5 features but the model's inducing inputs have D=6",
     lambda p: p["mlgpf"].predict_top_k(p["X"][:, :5], k=1)),
    ("mlgpf-top-k-batch", TypeError, r"batch_size must be an integer", lambda p: p["mlgpf"].predict_top_k(p["X"], k=1, batch_size=2.5)),
    ("psvgp-predict-3d", ValueError, r"`Xnew` must be a 2-D matrix", lambda p: p["psvgp"].predict_f(p["X"][None])),
    ("psvgp-predict-D", ValueError, r"`Xnew` has 5 columns but the inducing inputs have D = 6",
     lambda p: p["psvgp"].predict_f(p["X"][:, :5])),
    ("gplvf-predict-latents", ValueError, r"x_mean must have shape \[N, 2\]",
     lambda p: p["gplvf"].predict_y_marginal(np.zeros((3, 3)), np.ones((3, 3)))),
    ("gplvf-predict-variance", ValueError, r"x_var must be strictly positive",
     lambda p: p["gplvf"].predict_y_marginal(np.zeros((3, 2)), -np.ones((3, 2)))),
    ("gplvf-predict-points", ValueError, r"Xnew must have 2 columns", lambda p: p["gplvf"].predict_y(np.zeros((3, 3)))),
    ("gplvf-log-density-width", ValueError, r"Y_test must have width D=6",
     lambda p: p["gplvf"].predict_log_density_marginal(np.zeros((3, 4)), np.zeros((3, 2)), np.ones((3, 2)))),
    ("gplvf-infer-steps", ValueError, r"num_steps must be >= 0", lambda p: infer_latent(p["gplvf"], p["Yobs"][:2], num_steps=-1)),
    ("gplvf-infer-width", ValueError, r"Y_new must have width D=6", lambda p: infer_latent(p["gplvf"], p["Yobs"][:2, :5])),
    ("metrics-k-float", TypeError, r"k must be an integer >= 1, got 1\.5",
     lambda p: metrics.precision_at_k(p["Ymulti"], p["rng"].normal(size=(N, K)), 1.5)),
    ("metrics-k-large", ValueError, r"k=6 exceeds the number of labels K=5",
     lambda p: metrics.ndcg_at_k(p["Ymulti"], p["rng"].normal(size=(N, K)), 6)),
    ("metrics-accuracy-rows", ValueError, r"y_true has 4 entries but the predictions have 5 rows",
     lambda p: metrics.accuracy(np.zeros(4, dtype=int), np.full((5, 3), 1 / 3))),
    ("metrics-rmse-nan", ValueError, r"y_pred contains NaN", lambda p: metrics.rmse(np.zeros(3), np.array([0.0, np.nan, 1.0]))),
    ("metrics-top_k-1d", ValueError, r"scores must be a 2-D array", lambda p: metrics.top_k(np.zeros(5), 1)),
    ("reader-movielens-split", ValueError, r"split must be one of", lambda p: load_movielens(split="u9", download=False)),
    ("reader-mnist-subset", ValueError, r"subset must be one of", lambda p: load_mnist(subset="dev", download=False)),
    ("reader-mnist-size-float", TypeError, r"size must be an integer", lambda p: load_mnist(size=8.5, download=False)),
    ("reader-mnist-size", ValueError, r"size must divide the image side 28", lambda p: load_mnist(size=5, download=False)),
    ("reader-idx-missing", FileNotFoundError, r"path: no such file", lambda p: read_idx("/nonexistent/file.idx")),
    ("reader-path-type", TypeError, r"path must be a path \(str or os.PathLike\)", lambda p: _io.as_existing_file(3)),
    ("reader-downscale", ValueError, r"size must be a positive divisor of the image side 28",
     lambda p: downscale(np.zeros((2, 28, 28)), size=5)),
]


@pytest.mark.parametrize("error, match, call", [c[1:] for c in OTHER_CASES], ids=[c[0] for c in OTHER_CASES])
def test_predict_metrics_and_readers_reject(problem, error, match, call):
    raises_plain(error, match, call, problem)


# ------------------------------------------------------------------------------------------ the checks themselves
CHECK_CASES = [
    ("int-bool", TypeError, r"epochs must be an integer >= 1, got True", lambda: check_positive_int(True, "epochs")),
    ("int-numpy-float", TypeError, r"num_data must be an integer", lambda: check_positive_int(np.float64(3.0), "num_data")),
    ("values-array", ValueError, r"lengthscales must be finite and > 0, got -1\.0",
     lambda: check_positive_values([1.0, -1.0], "lengthscales")),
    ("values-string", TypeError, r"variance must be a positive number", lambda: check_positive_values("big", "variance")),
    ("choice", ValueError, r"mode must be one of \('a', 'b'\), got 'c'", lambda: check_choice("c", "mode", ("a", "b"))),
    ("labels-2d", ValueError, r"labels must be class indices of shape", lambda: check_class_labels(np.zeros((3, 2)), 2, "labels")),
    ("multilabel-ids-without-K", ValueError, r"num_labels is required", lambda: check_multilabel_labels([[0], [1]])),
    ("rows-2d", ValueError, r"rows must be a 1-D array", lambda: check_row_index(np.zeros((3, 2), dtype=int), 5, "rows")),
]


@pytest.mark.parametrize("error, match, call", [c[1:] for c in CHECK_CASES], ids=[c[0] for c in CHECK_CASES])
def test_checks_reject(error, match, call):
    raises_plain(error, match, call)


def test_case_count():
    """At least 60 bad-input cases over constructors, data, predict methods, metrics and readers."""
    assert len(CONSTRUCTOR_CASES) + len(DATA_CASES) + len(OTHER_CASES) + len(CHECK_CASES) >= 60


def test_default_hook_is_the_generic_check():
    class Plain(tf.Module):
        pass

    X = np.ones((4, 2))
    out = check_training_data(Plain(), (X, np.arange(4)))
    assert out[0] is not None and np.array_equal(out[0], X)
    raises_plain(ValueError, r"data\[0\] has shape \(4,\) \(1-D\)", check_training_data, Plain(), (np.ones(4),))


# ------------------------------------------------------------------------------------------ good data
def _same(a, b):
    if sp.issparse(a) or sp.issparse(b):
        a = a.toarray() if sp.issparse(a) else np.asarray(a)
        b = b.toarray() if sp.issparse(b) else np.asarray(b)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("key", ["svgp", "psvgp"])
def test_regression_data_pass_unchanged(problem, key):
    model = problem[key]
    data = (problem["X"], problem["Y"])
    checked = check_training_data(model, data)
    assert isinstance(checked, tuple) and len(checked) == 2
    for a, b in zip(checked, data):
        assert a.dtype == b.dtype
        _same(a, b)
    assert float(model.training_loss(checked)) == float(model.training_loss(data))


def test_regression_integer_targets_become_float(problem):
    Y = np.round(problem["Y"]).astype(np.int64)
    _, checked = check_training_data(problem["svgp"], (problem["X"], Y))
    assert checked.dtype == np.float64
    _same(checked, Y)


def test_subspace_svgp_takes_sparse_inputs(problem):
    X = sp.random(N, D, density=0.5, format="csr", random_state=0)
    for key in ("svgp_subspace", "psvgp_subspace"):
        checked = check_training_data(problem[key], (X, problem["Y"]))
        assert sp.isspmatrix_csr(checked[0])
        _same(checked[0], X)


def test_softmax_svgp_labels(problem):
    X, labels = problem["X"], problem["labels"]
    _, Y = check_training_data(problem["svgp_softmax"], (X, labels.astype(np.float64)[:, None]))
    assert Y.dtype == np.int64 and Y.shape == (N, 1)
    _same(Y[:, 0], labels)


def test_mlgpf_data_pass_unchanged(problem):
    model = problem["mlgpf"]
    X, Y = problem["X"], problem["Ymulti"]
    for labels in (Y, sp.csr_matrix(Y), [list(np.flatnonzero(row)) for row in Y]):
        checked = check_training_data(model, (X, labels))
        assert checked[0].dtype == np.float64 and sp.isspmatrix_csr(checked[1])
        _same(checked[0], X)
        _same(checked[1], Y)
    prepared = model.prepare_data(X, Y)
    assert float(model.training_loss(checked)) == float(model.training_loss(prepared))


@pytest.mark.parametrize("key", ["svdkl", "network"])
def test_classifier_data_pass_unchanged(problem, key):
    X, labels = problem["X"], problem["labels"]
    for Y in (labels, labels[:, None], labels.astype(np.float64)):
        checked_X, checked_Y = check_training_data(problem[key], (X, Y))
        assert checked_X is X or np.array_equal(checked_X, X)
        assert checked_Y.dtype == np.int64 and checked_Y.shape == (N, 1)
        _same(checked_Y[:, 0], labels)


def test_gplvf_data_pass_unchanged(problem):
    model = problem["gplvf"]
    data = model.training_data()
    checked = check_training_data(model, data)
    for a, b in zip(checked, data):
        assert a.dtype == b.dtype
        _same(a, b)
    for short in ((problem["Yobs"],), (problem["Yobs"], ~np.isnan(problem["Yobs"]))):
        for a, b in zip(check_training_data(model, short), data):
            _same(a, b)


@pytest.mark.parametrize("key", ["mlgpf", "svdkl", "gplvf"])
def test_fit_trains_on_checked_data(problem, key):
    """The normalised tuples (CSR labels, int64 [N, 1] classes, GPLVF's triple) go through fit's minibatches."""
    model = gpflow.utilities.deepcopy(problem[key])
    data = {
        "mlgpf": (problem["X"], problem["Ymulti"]),
        "svdkl": (problem["X"], problem["labels"].astype(np.float64)),
        "gplvf": (problem["Yobs"],),
    }[key]
    history = fit(model, check_training_data(model, data), epochs=1, batch_size=8, progress=False)
    assert np.isfinite(history.objective[-1])


def test_helper_detects_errors_from_tensorflow():
    """The before-tracing check itself: an error raised by a TensorFlow op is caught by ``raises_plain``."""
    with pytest.raises(AssertionError, match="came through TensorFlow"):
        raises_plain(tf.errors.InvalidArgumentError, "reshape", lambda: tf.reshape(tf.zeros(3), [2]))
