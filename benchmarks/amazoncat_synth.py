"""AmazonCat-13K-shaped synthetic data in the Extreme Classification Repository text format.

    python -m benchmarks.amazoncat_synth --out data/amazoncat_synth --num-train 1186239 --num-test 306782

Writes ``train.txt`` and ``test.txt`` (header ``N D K``, rows ``l1,l2 f:v ...``) block by block, in
constant memory, with the published statistics of AmazonCat-13K as defaults: D = 203,882 features,
K = 13,330 labels, ~71 non-zero features and ~5.04 labels per row.

* features: power-law (Zipf) frequencies, ``p_j ∝ (j + 1)^-feature_exponent`` over a random
  permutation of the ids; the count per row is 1 + Poisson(nnz - 1); values are tf-idf-like
  (``log(1 + tf) · idf``) and each row has unit L2 norm, as in the repository's files;
* labels: a planted low-rank map. Each feature has an embedding ``E_j`` [r], each label ``F_k`` [r]
  (labels in clusters of nearby embeddings); row i scores label k by ``x_i E F_kᵀ + b_k`` plus Gumbel
  noise, with a popularity bias ``b_k`` that follows a power law, and takes its top
  ``1 + Poisson(labels - 1)`` labels among the members of its best-scoring clusters. The labels thus depend on the features
  through a rank-r linear map (what s-LINEAR MLGPF can represent), so P@k has signal.
"""
import json
import time
from pathlib import Path

import benchmarks.common  # noqa: F401  (first: TensorFlow's log lines off before it is imported)
from benchmarks.common import base_parser

import numpy as np
import scipy.sparse as sp

from gpflow_ext.data import XMCTextWriter
from gpflow_ext.results import write_results

#: AmazonCat-13K as published (Extreme Classification Repository).
AMAZONCAT = dict(num_train=1_186_239, num_test=306_782, num_features=203_882, num_labels=13_330,
                 nnz_per_row=71.0, labels_per_row=5.04)


class AmazonCatLike:
    """The generative model; ``block(n)`` draws n rows ``(X [n, D] CSR, Y [n, K] CSR)``.

    Labels are grouped in clusters of ~``cluster_size`` with nearby embeddings (F_k = G_c(k) + noise);
    a row's labels are the top-scoring ones (x E F_kᵀ + b_k + Gumbel noise) among the members of its
    ``probe`` best clusters, which costs O(probe · cluster_size) per row instead of O(K)."""

    def __init__(self, num_features: int, num_labels: int, nnz_per_row: float = 71.0, labels_per_row: float = 5.04,
                 rank: int = 32, feature_exponent: float = 1.0, label_exponent: float = 1.0,
                 popularity: float = 1.0, code_scale: float = 1.0, cluster_size: int = 100, probe: int = 4, seed: int = 0):
        self.D, self.K = int(num_features), int(num_labels)
        self.nnz, self.labels, self.probe = float(nnz_per_row), float(labels_per_row), int(probe)
        rng = np.random.default_rng(seed)
        weights = (np.arange(self.D) + 1.0) ** -feature_exponent
        self.feature_ids = rng.permutation(self.D)  # rank -> feature id
        self.feature_cdf = np.cumsum(weights / weights.sum())
        self.idf = np.log(weights.max() / weights) + 1.0  # rare features weigh more
        self.E = code_scale * rng.standard_normal((self.D, rank))  # [D, r]
        num_clusters = max(1, -(-self.K // cluster_size))
        self.probe = min(self.probe, num_clusters)
        cluster = rng.permutation(self.K) % num_clusters  # [K] label -> cluster
        self.G = rng.standard_normal((num_clusters, rank))  # [C, r]
        self.F = self.G[cluster] + 0.5 * rng.standard_normal((self.K, rank))  # [K, r]
        self.bias = -popularity * label_exponent * np.log(rng.permutation(self.K) + 1.0)  # [K] power-law popularity
        order = np.argsort(cluster, kind="stable")
        sizes = np.bincount(cluster, minlength=num_clusters)
        self.members = np.full((num_clusters, sizes.max()), -1, dtype=np.int64)  # [C, m], -1 pads
        self.members[cluster[order], np.arange(self.K) - np.repeat(np.cumsum(sizes) - sizes, sizes)] = order
        self.cluster_bias = np.array([self.bias[order[start:start + size]].max()
                                      for start, size in zip(np.cumsum(sizes) - sizes, sizes)])  # [C]
        self.rng = np.random.default_rng(seed + 1)
        self.draw_mean = self.nnz - 1.0
        for _ in range(3):  # repeated draws of popular features merge: raise the draw count to meet nnz
            realised = self._features(2000)[0].nnz / 2000
            self.draw_mean *= (self.nnz - 1.0) / max(realised - 1.0, 1e-6)

    def _features(self, n: int):
        rng = self.rng
        counts = np.minimum(1 + rng.poisson(self.draw_mean, size=n), self.D)
        draws = np.minimum(np.searchsorted(self.feature_cdf, rng.random(int(counts.sum()))), self.D - 1)
        rows = np.repeat(np.arange(n), counts)
        values = np.log1p(1.0 + rng.poisson(0.5, size=rows.size)) * self.idf[draws]  # tf-idf-like
        X = sp.csr_matrix((values, (rows, self.feature_ids[draws])), shape=(n, self.D))
        X.sum_duplicates()
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        X = sp.csr_matrix(sp.diags(1.0 / np.maximum(norms, 1e-12)) @ X)
        X.data = np.round(X.data, 6)
        X.eliminate_zeros()
        X.sort_indices()
        return X, rows

    def block(self, n: int):
        rng = self.rng
        X, _ = self._features(n)
        code = np.asarray(X @ self.E)  # [n, r] the planted low-rank map
        best = np.argpartition(-(code @ self.G.T + self.cluster_bias), self.probe - 1, axis=1)[:, : self.probe]
        candidates = self.members[best].reshape(n, -1)  # [n, probe·m], -1 pads
        valid = candidates >= 0
        safe = np.where(valid, candidates, 0)
        scores = np.einsum("nr,ncr->nc", code, self.F[safe]) + self.bias[safe]
        scores += 0.5 * rng.gumbel(size=scores.shape)  # label noise
        scores[~valid] = -np.inf
        k = np.clip(1 + rng.poisson(self.labels - 1.0, size=n), 1, int(valid.sum(axis=1).min()))
        top = np.argsort(-scores, axis=1)[:, : int(k.max())]
        keep = np.arange(top.shape[1])[None, :] < k[:, None]
        labels = np.take_along_axis(candidates, top, axis=1)[keep]
        Y = sp.csr_matrix((np.ones(labels.size), (np.nonzero(keep)[0], labels)), shape=(n, self.K))
        Y.sort_indices()
        return X, Y


def write_split(generator: AmazonCatLike, path: Path, num_rows: int, block_rows: int = 1000) -> dict:
    """Write ``num_rows`` rows to ``path`` in blocks; returns the realised statistics."""
    nnz = labels = 0
    with XMCTextWriter(path, num_rows, generator.D, generator.K) as writer:
        for start in range(0, num_rows, block_rows):
            X, Y = generator.block(min(block_rows, num_rows - start))
            writer.write(X, Y)
            nnz += X.nnz
            labels += Y.nnz
    return {"rows": num_rows, "nnz_per_row": nnz / max(num_rows, 1), "labels_per_row": labels / max(num_rows, 1)}


def main(argv=None) -> dict:
    parser = base_parser(__doc__.splitlines()[0], data_dir=False, epochs=False, output=False, logdir=False)
    parser.add_argument("--out", type=Path, required=True, help="folder for train.txt and test.txt")
    parser.add_argument("--num-train", type=int, default=AMAZONCAT["num_train"])
    parser.add_argument("--num-test", type=int, default=AMAZONCAT["num_test"])
    parser.add_argument("--num-features", type=int, default=AMAZONCAT["num_features"])
    parser.add_argument("--num-labels", type=int, default=AMAZONCAT["num_labels"])
    parser.add_argument("--nnz-per-row", type=float, default=AMAZONCAT["nnz_per_row"])
    parser.add_argument("--labels-per-row", type=float, default=AMAZONCAT["labels_per_row"])
    parser.add_argument("--rank", type=int, default=32, help="rank of the planted feature -> label map")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    generator = AmazonCatLike(args.num_features, args.num_labels, args.nnz_per_row, args.labels_per_row,
                              rank=args.rank, seed=args.seed)
    start = time.perf_counter()
    stats = {"train": write_split(generator, args.out / "train.txt", args.num_train),
             "test": write_split(generator, args.out / "test.txt", args.num_test)}
    stats.update(seconds=time.perf_counter() - start, **{k: v for k, v in vars(args).items() if k != "out"})
    write_results(stats, args.out / "synth_stats.json", seeds=[args.seed])
    print(json.dumps(stats))
    return stats


if __name__ == "__main__":
    main()
