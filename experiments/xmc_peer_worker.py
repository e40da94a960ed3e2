"""Peer worker for ``xmc_baselines.py``: trains napkinXC (PLT, OVR) and omikuji (Parabel, Bonsai) and ranks labels.

Runs under the *peers* interpreter (numpy 2, napkinxc, omikuji; see benchmarks/requirements-peers.txt),
so it imports nothing from gpflow_ext. Input: a folder with ``train.txt`` / ``test.txt`` in the
Extreme Classification Repository text format (header ``N D K``; rows ``l1,l2 f:v ...``).
Output: ``<method>.npz`` with ``top`` [N_test, top_k] int label ids (best first, -1 = none),
``fit_seconds`` and ``predict_seconds``.

    PEERS_PYTHON experiments/xmc_peer_worker.py FOLDER --methods napkinxc napkinxc-ovr omikuji omikuji-bonsai \
        --top-k 5 --threads 2

``napkinxc`` is napkinXC's probabilistic label tree (``PLT``), ``napkinxc-ovr`` its one-vs-rest model (``OVR``),
both with their default settings; ``omikuji`` is Parabel (omikuji's default hyper-parameters);
``omikuji-bonsai`` is omikuji with the Bonsai-like settings of its README (regular, unbalanced k-means with
cluster.k = 100 and max_depth = 3; every other hyper-parameter at its default).
"""
import argparse
import os
import sys
import time

import numpy as np


def read_xmc(path):
    """Features as a list of (id, value) lists and labels as a list of id lists."""
    features, labels = [], []
    with open(path) as handle:
        header = handle.readline().split()
        num_features, num_labels = int(header[1]), int(header[2])
        for line in handle:
            line = line.rstrip("\n")
            if line.startswith(" ") or ":" in line.split(" ", 1)[0]:
                label_part, feature_part = "", line.strip()
            else:
                label_part, _, feature_part = line.partition(" ")
            labels.append([int(v) for v in label_part.split(",") if v])
            pairs = []
            for token in feature_part.split():
                key, _, value = token.partition(":")
                pairs.append((int(key), float(value)))
            features.append(pairs)
    return features, labels, num_features, num_labels


def to_csr(features, num_features):
    from scipy.sparse import csr_matrix

    indptr = np.cumsum([0] + [len(row) for row in features])
    indices = np.array([k for row in features for k, _ in row], dtype=np.int32)
    data = np.array([v for row in features for _, v in row], dtype=np.float64)
    return csr_matrix((data, indices, indptr), shape=(len(features), num_features))


def pad(rankings, top_k):
    out = np.full((len(rankings), top_k), -1, dtype=np.int64)
    for i, row in enumerate(rankings):
        row = list(row)[:top_k]
        out[i, : len(row)] = row
    return out


def run_napkinxc(folder, top_k, threads, seed, model_class="PLT"):
    from napkinxc import models

    x_train, y_train, num_features, _ = read_xmc(os.path.join(folder, "train.txt"))
    x_test, _, _, _ = read_xmc(os.path.join(folder, "test.txt"))
    model = getattr(models, model_class)(os.path.join(folder, f"napkinxc-{model_class}-model"), threads=threads,
                                         seed=seed)
    start = time.perf_counter()
    model.fit(to_csr(x_train, num_features), y_train)
    fit_seconds = time.perf_counter() - start
    start = time.perf_counter()
    ranked = model.predict(to_csr(x_test, num_features), top_k=top_k)
    predict_seconds = time.perf_counter() - start
    return pad(ranked, top_k), fit_seconds, predict_seconds


def bonsai_hyper_param():
    """omikuji's defaults with the Bonsai-like settings (Khandagale et al., 2019) of omikuji's README
    (github.com/tomtung/omikuji, "Regular k-means for shallow trees": unbalanced, cluster.k=100, max_depth=3)."""
    import omikuji

    hyper_param = omikuji.Model.default_hyper_param()
    hyper_param.cluster_balanced = False  # regular k-means instead of balanced 2-means (--cluster.unbalanced)
    hyper_param.cluster_k = 100
    hyper_param.max_depth = 3
    return hyper_param


def run_omikuji(folder, top_k, threads, seed, bonsai=False):
    import omikuji

    del seed  # omikuji's trees are seeded internally
    hyper_param = bonsai_hyper_param() if bonsai else omikuji.Model.default_hyper_param()
    start = time.perf_counter()
    model = omikuji.Model.train_on_data(os.path.join(folder, "train.txt"), hyper_param, n_threads=threads)
    fit_seconds = time.perf_counter() - start
    x_test, _, _, _ = read_xmc(os.path.join(folder, "test.txt"))
    start = time.perf_counter()
    ranked = [[label for label, _ in model.predict(row, top_k=top_k)] for row in x_test]
    predict_seconds = time.perf_counter() - start
    return pad(ranked, top_k), fit_seconds, predict_seconds


def run_napkinxc_ovr(folder, top_k, threads, seed):
    return run_napkinxc(folder, top_k, threads, seed, model_class="OVR")


def run_omikuji_bonsai(folder, top_k, threads, seed):
    return run_omikuji(folder, top_k, threads, seed, bonsai=True)


RUNNERS = {"napkinxc": run_napkinxc, "napkinxc-ovr": run_napkinxc_ovr, "omikuji": run_omikuji,
           "omikuji-bonsai": run_omikuji_bonsai}


def main(argv=None):
    # plain argparse: this runs under the peers interpreter, without experiments.common's imports
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("folder", help="folder with train.txt / test.txt; <method>.npz are written there")
    parser.add_argument("--methods", nargs="+", default=list(RUNNERS), choices=list(RUNNERS), help="peers to run")
    parser.add_argument("--top-k", type=int, default=5, help="labels ranked per test row")
    parser.add_argument("--threads", type=int, default=2, help="threads of each peer")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    args = parser.parse_args(argv)
    for name in args.methods:
        top, fit_seconds, predict_seconds = RUNNERS[name](args.folder, args.top_k, args.threads, args.seed)
        np.savez(
            os.path.join(args.folder, f"{name}.npz"),
            top=top,
            fit_seconds=fit_seconds,
            predict_seconds=predict_seconds,
        )
        print(f"{name}: fit {fit_seconds:.1f}s predict {predict_seconds:.1f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
