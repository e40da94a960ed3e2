"""GPLVF on MovieLens 100K (paper Section 4.2, Table 2, Figure 4), with peers on the same split.

Protocols (``--protocol a,b,c``):

(a) the paper's: 843 training users and 100 held-out users, the last 100 user ids (``--test-users
    last``, the default) or 100 drawn with ``--seed`` (``--test-users random``). GPLVF is trained on
    the 843 users (Q = 10). For each held-out user a fraction
    ``--condition-fraction`` (default 0.5) of their ratings, chosen at random, is observed; q(x*)
    is inferred from those alone (model fixed) and the remaining ratings are predicted.
    Gaussian q(X) vs Planar_K for K in ``--flows`` (default 0,20,30,50); RMSE beside Table 2.
    ``--validation``: the same protocol inside the training users only, for choosing settings:
    ``--num-validation-users`` (default 100) of the 843 training users are held out as validation
    users (conditioned and predicted exactly like test users), GPLVF trains on the other 743, and
    the 100 test users are not used at all (the test split itself is unchanged by the flag).
(b) the standard u1..u5 splits: train on uK.base (all 943 users), predict uK.test at q(x_n).
    ``--validation-fraction F``: the same inside each uK.base only, for choosing settings: a fraction F of
    each user's uK.base ratings (drawn with ``--seed``) is held out and scored, GPLVF trains on the rest, and
    uK.test is not used.
    ``--rows users,items``: GPLVF trained both ways round, users as rows (the paper's) and items as rows (on the
    transpose: a latent point per item, an output per user; items with no training rating are predicted at the
    base N(0, I) of q(x)), each scored, and their equally weighted predictive mixture scored under ``mixture_*``
    (``gpflow_ext.recipes.scored_ratings``). ``--rows items``: the transposed model alone.
    ``--save-predictions DIR`` keeps each model's predictive distributions, which ``experiments.gplvf_mixture``
    mixes across runs (e.g. across likelihoods).
(c) Figure 4: test log-likelihood (eq. 33) vs flow length on the Sci-Fi/Romance slice (items
    tagged Sci-Fi or Romance; users with at least 2 ratings there; same 90/10 user protocol as (a)).

Peers on the same split: a user/item-bias baseline (regularised least squares, mu + b_u + b_i)
and GPy's ``BayesianGPLVM(missing_data=True)`` run by ``$GPFLOW_EXT_PEERS_PYTHON`` in a
subprocess (GPy cannot infer new rows cheaply, so in (a) it is trained on the 843 users plus the
observed part of the 100 held-out users and predicts their remaining ratings at their latent
means: it sees the same ratings, transductively).

Centring (``--center bias``, the default): GPLVF models the residual of a user/item-bias fit,
r_nd = y_nd - (mu + b_n + b_d). Its outputs are the items, so its constant mean is per item (b_d),
but nothing in the model is per user: a user's overall rating level has to be carried by x_n and
learnt separately by every item's q(u_d) from that item's few ratings. Without centring the
model settles at the bias baseline (0.953 in (a)); with it the GP models only the user-item
interactions. mu and b_d are fitted (regularised alternating least squares, as the bias baseline)
on the training rows only; b_n of a held-out user in (a)/(c) comes from their observed ratings
alone (item biases fixed), so nothing about the predicted ratings is used. Predictions add the
offsets back; the test log-likelihood of y equals that of r at the shifted value (a known shift).
``--center none`` trains on the raw ratings (the per-item constant mean only).

Likelihood (``--likelihood``): ``gaussian`` (the paper's) or ``ordinal`` (ordered probit,
``gpflow_ext.likelihoods.Ordinal``): rating r is the class r - 1 (``--center classes``, implied), its bin edges
learnt from 0.5, 1.5, 2.5, 3.5 with each item's constant mean at its mean class. Every model also reports
``test_logprob_discrete``, the eq. 33 log-probability of the discrete test ratings: the ordinal model's own class
probabilities, and for a Gaussian model its predictive density integrated over each rating's unit bin (end bins
open), so the two are compared on one scale (``test_loglik`` stays each model's own: a density for the Gaussian);
and ``coverage_50`` / ``coverage_90``, the fraction of test ratings inside central 50 % / 90 % intervals of those
discrete predictive distributions (``width_*``: their mean number of rating values).

Predictions are clipped to the rating range [1, 5] for every model (RMSE before clipping is
reported too).

``--kl-x base-gaussian-ablation`` (protocol (a) only; never the default) replaces the Monte Carlo
KL of the *flowed* q(x_n) by the closed-form KL of its *base* Gaussian N(mu_n, diag s_n), the
estimator of one public GPLVF implementation. That objective ignores the flow's log-det, so it is
not a bound on log p(Y) for any flow other than the identity: it is here only to measure whether
the paper's flow gains can come from it. ``--kl-x correct`` (the default) is ``GPLVF``'s own.

Defaults (since 2026-11-25) are the settings chosen on the validation users and used for the
tables in docs/gplvf/results.md: M = 20, one Monte Carlo draw, batch 64, 150 epochs of Adam 0.01 cosine-decayed to 0, the flow's
shared parameters at Adam 1e-3 (``--flow-learning-rate``), identity-at-zero planar layers, and q(x*) fitted
with 1 000 cosine-decayed steps of 8 draws. Every results JSON records its full configuration; runs before
that date used M = 50, two draws, batch 128, 300 epochs, constant rates, 300 q(x*) steps and random test
users unless their command said otherwise.

The protocols, the bias baseline and the training are ``gpflow_ext.recipes.movielens`` and
``gpflow_ext.recipes.gplvf``; this script maps the command line to their configs. Every model trains through
``gpflow_ext.training.fit`` (``train_with_fit``): minibatches shuffled by the
stateless key (seed, epoch), the short last batch kept (ceil(N / B) steps per epoch), natural gradients for
q(u) through ``NaturalGradientUpdate``. The tables in docs/gplvf/results.md were produced by an earlier loop of this script
(numpy-permuted minibatches, short last batch dropped): the same model and bound, other minibatches
(``docs/gplvf/results/movielens_a_defaults_seed0_fit.json`` is the default (a) run through ``fit``).

``--smoke`` runs every protocol on a slice (the 60 most active users x the 80 most rated items, 3 epochs)
for the tests.
"""
import argparse
from pathlib import Path

import experiments.quiet  # noqa: F401  (first: TensorFlow's log lines off before it is imported)

import numpy as np
import scipy.sparse as sp

from benchmarks.gpy_bgplvm_missing import gpy_peer
from experiments.common import (
    add_dataclass_arguments,
    add_planar_constraint_argument,
    arguments_record,
    base_parser,
    config_from_args,
    planar_identity_at_zero,
    print_table,
    write_results,
)
from experiments.paper_values import GPLVF as PAPER
from gpflow_ext.data import load_movielens
from gpflow_ext.data.movielens import ratings_matrix
from gpflow_ext.latents import BASE_COVARIANCE_NAMES
from gpflow_ext.recipes.gplvf import KERNEL_NAMES, KL_X_CHOICES, GPLVFTraining
from gpflow_ext.recipes.movielens import (
    ROWS,
    ProtocolA,
    ProtocolB,
    ProtocolC,
    flow_name,
    run_protocol_a,
    run_protocol_b,
    run_protocol_c,
)
from gpflow_ext.recipes.movielens_data import SMALL_ITEMS, SMALL_USERS, small_slice
from gpflow_ext.training import LEARNING_RATE_DECAYS


# ------------------------------------------------------------------------------------ command line -> configs
def parse_lengths(text: str):
    """"0,20,50" -> [0, 20, 50] (flow lengths; 0 = Gaussian q(X))."""
    try:
        lengths = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"flow lengths must be comma-separated integers, got {text!r}") from None
    if not lengths or min(lengths) < 0:
        raise argparse.ArgumentTypeError(f"flow lengths must be non-negative integers (0 = Gaussian), got {text!r}")
    return lengths


def parse_rows(text: str):
    """"users,items" -> ["users", "items"] (protocol (b)'s ways round, keys of ROWS)."""
    rows = [v.strip() for v in text.split(",") if v.strip()]
    if not rows or any(r not in ROWS for r in rows) or len(set(rows)) != len(rows):
        raise argparse.ArgumentTypeError(f"rows must be distinct comma-separated values of {tuple(ROWS)}, got {text!r}")
    return rows


def training_config(args) -> GPLVFTraining:
    """The training settings shared by protocols (a)-(c); ``seed`` is --train-seed, or --seed when not given."""
    return GPLVFTraining(**config_from_args(
        GPLVFTraining, args, TRAINING_FLAGS, epochs=args.epochs,
        seed=args.seed if args.train_seed is None else args.train_seed,
        identity_at_zero=planar_identity_at_zero(args), encoder=args.encoder,
    ))


def new_rows_settings(args) -> dict:
    return dict(
        training=training_config(args), center=args.center, predict_samples=args.predict_samples, seed=args.seed,
        condition_fraction=args.condition_fraction, infer_steps=args.infer_steps, infer_decay=args.infer_decay,
        infer_samples=args.infer_samples, logdir=args.logdir,
    )


def make_peer(args):
    """The GPy peer as ``peer(train, target)``, or None (``--no-gpy``)."""
    if not args.gpy:
        return None
    return lambda train, target: gpy_peer(train, target, latent_dim=args.latent_dim, num_inducing=args.num_inducing,
                                          max_iters=args.gpy_iters, seed=args.seed, timeout=args.gpy_timeout)


#: help texts and choices of the :class:`GPLVFTraining` fields given as flags ``--field-name`` (defaults: the
#: dataclass's)
TRAINING_HELP = {
    "flow_learning_rate": "Adam learning rate of the flow's shared parameters (pass the --learning-rate value to "
                          "share one rate, as before 2026-11-25)",
    "local_learning_rate": "Adam learning rate of every row's q(x_n) parameters (default: --learning-rate)",
    "lr_decay": "training: Adam at --learning-rate throughout, or cosine-decayed to 0 over all steps",
    "natgrad_gamma": "natural-gradient step length for q(u) (0: Adam for q(u) as for everything else)",
    "kernel": "GP kernel on the latent space: SE-ARD (the paper's), ARD linear, or their sum",
    "kl_x": "(a) KL(q(x)||p(x)) term: 'correct' (GPLVF's: base KL in closed form + Monte Carlo flow correction), "
            "'plain-monte-carlo' (every term by Monte Carlo, as before 2026-11-25) or the biased base-Gaussian ablation",
    "base_covariance": "q(x_n)'s base Gaussian: N(mu_n, diag s_n) or the paper's N(mu_n, s_n I) (eq. 2, 4)",
    "shared_linear_mean": "add one linear function of x_n shared by every item to the per-item mean (a user's level, "
                          "learnt once instead of by each item's q(u_d))",
    "likelihood": "p(rating | f): Gaussian on the (centred) ratings, or ordinal (ordered probit, learnt bin edges) on "
                  "the rating classes (implies --center classes)",
}
TRAINING_CHOICES = {"lr_decay": LEARNING_RATE_DECAYS, "kernel": KERNEL_NAMES, "kl_x": sorted(KL_X_CHOICES),
                    "base_covariance": tuple(BASE_COVARIANCE_NAMES), "likelihood": ("gaussian", "ordinal")}
TRAINING_FLAGS = {name: "--" + name.replace("_", "-") for name in (
    "latent_dim", "num_inducing", "batch_size", "learning_rate", "num_samples", "flow_learning_rate",
    "local_learning_rate", "lr_decay", "natgrad_gamma", "kernel", "kl_x", "base_covariance", "likelihood",
    "shared_linear_mean")}


def add_training_arguments(parser, names) -> None:
    add_dataclass_arguments(parser, GPLVFTraining, {name: TRAINING_FLAGS[name] for name in names},
                            help=TRAINING_HELP, choices=TRAINING_CHOICES)


def build_parser():
    parser = base_parser(__doc__.split("\n")[0], figure_dir=True,
                         smoke=f"every protocol on the {SMALL_USERS} most active users x the {SMALL_ITEMS} most rated "
                               "items, 3 epochs, small Q and M, few inference steps")
    parser.add_argument("--protocol", default="a,b,c", help="comma-separated protocols to run (a, b, c)")
    parser.add_argument("--flows", type=parse_lengths, default=[0, 20, 30, 50], help="(a) flow lengths, 0 = Gaussian")
    parser.add_argument("--flows-b", type=parse_lengths, default=[0, 20],
                        help="(b) flow lengths, 0 = Gaussian (results before 2026-11-25: planar 20 only)")
    parser.add_argument("--flows-c", type=parse_lengths, default=[0, 5, 10, 20, 30])
    parser.add_argument("--splits", default="u1,u2,u3,u4,u5")
    parser.add_argument("--rows", type=parse_rows, default=["users"],
                        help="(b) which way round GPLVF is trained: users as rows (the paper's), items as rows (the "
                             "transpose), or both ('users,items'), scored each and as their equally weighted "
                             "predictive mixture")
    add_training_arguments(parser, ["latent_dim", "num_inducing", "batch_size", "learning_rate", "num_samples",
                                    "flow_learning_rate"])
    add_planar_constraint_argument(parser)
    parser.add_argument("--warm-start-epochs", type=int, default=0,
                        help="(a) first train one Gaussian-q(X) model this many epochs; every model then starts from "
                             "it (flows near the identity) and trains --epochs more")
    add_training_arguments(parser, ["local_learning_rate", "lr_decay"])
    parser.add_argument("--predict-samples", type=int, default=50)
    parser.add_argument("--infer-steps", type=int, default=1000)
    parser.add_argument("--infer-decay", choices=LEARNING_RATE_DECAYS, default="cosine",
                        help="learning rate of the q(x*) fit: constant Adam 0.05, or cosine-decayed to 0")
    parser.add_argument("--infer-samples", type=int, default=8,
                        help="Monte Carlo draws per step when inferring q(x*) of new rows")
    parser.add_argument("--train-seed", type=int, default=None,
                        help="seed of the initialisation, minibatches and Monte Carlo draws (default: --seed); "
                             "--seed also picks the held-out users and their conditioning halves")
    parser.add_argument("--num-test-users", type=int, default=100)
    parser.add_argument("--validation", action="store_true",
                        help="(a) hold out --num-validation-users of the training users instead of the test users "
                             "(for choosing settings; the test users are not used)")
    parser.add_argument("--num-validation-users", type=int, default=100)
    parser.add_argument("--save-predictions", type=Path, default=None, metavar="DIR",
                        help="(b) also save each model's predictive distribution of the scored ratings to "
                             "DIR/{split}_{name}.npz (ScoredRatings), for experiments.gplvf_mixture")
    parser.add_argument("--validation-fraction", type=float, default=0.0,
                        help="(b) hold out this fraction of each user's uK.base ratings, train on the rest and score "
                             "the held-out part instead of uK.test (for choosing settings; uK.test is not used)")
    parser.add_argument("--test-users", choices=("random", "last"), default="last",
                        help="(a) held-out test users: drawn with --seed, or the last --num-test-users user ids")
    add_training_arguments(parser, ["natgrad_gamma", "kernel"])
    parser.add_argument("--condition-fraction", type=float, default=0.5)
    parser.add_argument("--center", choices=("bias", "none", "classes"), default=None,
                        help="train GPLVF on the residuals of a user/item-bias fit (default for a Gaussian), on the "
                             "raw ratings, or on the classes rating - 1 (the ordinal likelihood's, and its default)")
    parser.add_argument("--gpy", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--gpy-iters", type=int, default=300)
    parser.add_argument("--gpy-splits", default="u1")
    parser.add_argument("--gpy-timeout", type=float, default=3000.0, help="seconds before the GPy subprocess is stopped")
    add_training_arguments(parser, ["kl_x"])
    parser.add_argument("--encoder", action="store_true",
                        help="amortised q(x_n): GPLVF's tf_keras encoder maps each masked row to (mu_n, s_n); in (a) "
                             "the held-out users are scored at the encoder's q(x*) ('amortised') and after the q(x*) "
                             "fit started from it")
    add_training_arguments(parser, ["base_covariance", "likelihood", "shared_linear_mean"])
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.infer_samples < 1:
        parser.error(f"--infer-samples must be >= 1, got {args.infer_samples}")
    if args.epochs is None:
        args.epochs = 3 if args.smoke else 150
    if args.center is None:
        args.center = "classes" if args.likelihood == "ordinal" else "bias"
    if (args.likelihood == "ordinal") != (args.center == "classes"):
        parser.error(f"--center classes goes with --likelihood ordinal and only with it, got --center {args.center} "
                     f"and --likelihood {args.likelihood}")
    args.gpy_splits = args.gpy_splits.split(",")
    protocols = args.protocol.split(",")
    if args.kl_x != "correct" and protocols != ["a"]:
        parser.error(f"--kl-x {args.kl_x} is an ablation of protocol (a) only; pass --protocol a")
    if not 0.0 <= args.validation_fraction < 1.0:
        parser.error(f"--validation-fraction must be in [0, 1) (0: score uK.test), got {args.validation_fraction}")
    if args.warm_start_epochs < 0:
        parser.error(f"--warm-start-epochs must be >= 0, got {args.warm_start_epochs}")
    if args.encoder and args.warm_start_epochs:
        parser.error("--encoder cannot be combined with --warm-start-epochs (the warm start copies per-row q(x_n))")
    for name in ("flow_learning_rate", "local_learning_rate"):
        rate = getattr(args, name)
        if rate is not None and not (np.isfinite(rate) and rate > 0):
            parser.error(f"--{name.replace('_', '-')} must be a positive number, got {rate}")

    ml = load_movielens(args.data_dir, split=None, download=False)
    ratings = ratings_matrix(ml.ratings)
    genres = ml.items.genres.astype(bool)
    if args.smoke:
        args.num_test_users = min(args.num_test_users, 15)
        args.num_validation_users = min(args.num_validation_users, 15)
        args.infer_steps = min(args.infer_steps, 10)
        args.predict_samples = min(args.predict_samples, 5)
        args.gpy_iters = min(args.gpy_iters, 1)
        args.flows = [k for k in args.flows if k in (0, 20)][:2]
        args.num_inducing = min(args.num_inducing, 10)
        args.latent_dim = min(args.latent_dim, 3)
    results = {"config": arguments_record(args)}


    if "a" in protocols:
        data = small_slice(ratings) if args.smoke else ratings
        config = ProtocolA(**new_rows_settings(args), flows=args.flows, num_test_users=args.num_test_users,
                           test_users=args.test_users, validation=args.validation,
                           num_validation_users=args.num_validation_users, warm_start_epochs=args.warm_start_epochs)
        results["a"] = run_protocol_a(data, config, peer=make_peer(args))
        for name, row in results["a"].items():
            if name.startswith(("gaussian", "planar_")):
                row["paper_rmse"] = PAPER.get("table2_rmse", {}).get(name)
        rows = []
        for name, row in results["a"].items():
            rows.append({"q(X)": name, "RMSE": row.get("rmse"), "paper RMSE": row.get("paper_rmse"),
                         "test loglik": row.get("test_loglik"), "discrete logprob": row.get("test_logprob_discrete"),
                         "cover 50": row.get("coverage_50"), "cover 90": row.get("coverage_90"),
                         "s/epoch": row.get("seconds_per_epoch", row.get("seconds_per_iter"))})
        print_table(rows, ["q(X)", "RMSE", "paper RMSE", "test loglik", "discrete logprob", "cover 50", "cover 90",
                           "s/epoch"],
                    title=f"(a) MovieLens 100K, {args.likelihood}, "
                          f"{'validation users' if args.validation else 'test users'}, "
                          f"kernel {args.kernel}, conditioning fraction {args.condition_fraction}, KL(q(x)) {args.kl_x}")
    if "b" in protocols:
        splits = {}
        for split in args.splits.split(","):
            mls = load_movielens(args.data_dir, split=split, download=False)
            train, test = ratings_matrix(mls.train), ratings_matrix(mls.test)
            if args.smoke:
                keep = small_slice(ratings).shape  # same slice definition on the split
                items = np.sort(np.argsort(-np.diff(ratings.tocsc().indptr))[:SMALL_ITEMS])
                users = np.sort(np.argsort(-np.diff(ratings[:, items].tocsr().indptr))[:SMALL_USERS])
                train, test = train[users][:, items], test[users][:, items]
                assert train.shape == keep
            nonempty = np.diff(train.indptr) > 0
            splits[split] = (sp.csr_matrix(train[nonempty]), sp.csr_matrix(test[nonempty]))
            if args.smoke:
                break
        config = ProtocolB(**new_rows_settings(args), flows=args.flows_b, peer_splits=tuple(args.gpy_splits),
                           validation_fraction=args.validation_fraction, rows=args.rows,
                           predictions_dir=args.save_predictions)
        results["b"] = run_protocol_b(splits, config, peer=None if args.smoke else make_peer(args))  # small runs: GPy in (a) only
        names = [ROWS[r] + flow_name(k) for k in args.flows_b for r in args.rows]
        names += [f"mixture_{flow_name(k)}" for k in args.flows_b if len(args.rows) > 1]
        print_table([dict(split=s, **r) for s, r in results["b"].items()],
                    ["split"] + [f"{n}_rmse" for n in names] + [f"{n}_test_logprob_discrete" for n in names]
                    + [f"{n}_coverage_90" for n in names] + ["bias_rmse", "gpy_rmse"]
                    + [f"{n}_seconds_per_epoch" for n in names] + ["gpy_seconds_per_iter"],
                    title=("(b) MovieLens 100K uK.base, its validation part" if args.validation_fraction
                           else "(b) MovieLens 100K uK.base -> uK.test") + " RMSE")
    if "c" in protocols:
        data = ratings
        if args.smoke:  # the slice's 60 most active users, 2 flow lengths
            args.flows_c = args.flows_c[:2]
            data = ratings[np.sort(np.argsort(-np.diff(ratings.indptr))[:SMALL_USERS])]
        config = ProtocolC(**new_rows_settings(args), flows=args.flows_c, figure_dir=args.figure_dir)
        results["c"] = run_protocol_c(data, genres, list(ml.items.genre_names), config)
    train_seed = args.seed if args.train_seed is None else args.train_seed
    write_results(results, args.output, seeds=sorted({args.seed, train_seed}))
    return results


if __name__ == "__main__":
    main()
