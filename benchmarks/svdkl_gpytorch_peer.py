"""GPyTorch's SV-DKL (GridInterpolationVariationalStrategy) step times; run by benchmarks/svdkl_speed.py.

Runs in the peers venv (torch CPU + gpytorch). Mirrors the gpytorch SV-DKL example: a feature
extractor, one GP per feature on a 1-D grid (IndependentMultitaskVariationalStrategy over J
GridInterpolationVariationalStrategy GPs), SoftmaxLikelihood with mixing weights, the
VariationalELBO, Adam. Prints one JSON line: {"network": s, "svdkl": {m: s}} (median seconds per step).
"""
import argparse
import json
import time

import numpy as np


def main(argv=None):
    # plain argparse: this runs under the peers interpreter; torch and gpytorch are imported only to run
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("config", help="JSON object: input_dim, num_classes, batch_size, hidden, repeats, grid_sizes, "
                                       "num_data (as benchmarks/svdkl_speed.py writes it)")
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    args = parser.parse_args(argv)
    cfg = json.loads(args.config)
    import gpytorch
    import torch

    torch.set_default_dtype(torch.float64)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    d, c, B, hidden, reps = cfg["input_dim"], cfg["num_classes"], cfg["batch_size"], cfg["hidden"], cfg["repeats"]
    X = torch.randn(B, d)
    y = torch.randint(0, c, (B,))

    def network():
        layers, width = [], d
        for h in hidden:
            layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
            width = h
        layers.append(torch.nn.Linear(width, c))
        return torch.nn.Sequential(*layers)

    def timed(step):
        for _ in range(2):
            step()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        return float(np.median(times))

    net = network()
    opt = torch.optim.Adam(net.parameters(), 1e-3)

    def net_step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(X), y)
        loss.backward()
        opt.step()

    out = {"network": timed(net_step), "svdkl": {}}

    class GPLayer(gpytorch.models.ApproximateGP):
        def __init__(self, num_dim, grid_size):
            dist = gpytorch.variational.CholeskyVariationalDistribution(grid_size, batch_shape=torch.Size([num_dim]))
            strategy = gpytorch.variational.IndependentMultitaskVariationalStrategy(
                gpytorch.variational.GridInterpolationVariationalStrategy(self, grid_size, [(-1.0, 1.0)], dist),
                num_tasks=num_dim,
            )
            super().__init__(strategy)
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(
                gpytorch.kernels.RBFKernel(batch_shape=torch.Size([num_dim])), batch_shape=torch.Size([num_dim])
            )

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    class DKL(gpytorch.Module):
        def __init__(self, grid_size):
            super().__init__()
            self.net = network()
            self.gp = GPLayer(c, grid_size)
            self.scale = gpytorch.utils.grid.ScaleToBounds(-1.0, 1.0)

        def forward(self, x):
            f = self.scale(self.net(x))  # [B, J]
            f = f.transpose(-1, -2).unsqueeze(-1)  # [J, B, 1]: one GP per feature
            return self.gp(f)

    for m in cfg["grid_sizes"]:
        model = DKL(m)
        lik = gpytorch.likelihoods.SoftmaxLikelihood(num_features=c, num_classes=c)
        mll = gpytorch.mlls.VariationalELBO(lik, model.gp, num_data=cfg["num_data"])
        opt = torch.optim.Adam(list(model.parameters()) + list(lik.parameters()), 1e-3)

        def step():
            opt.zero_grad()
            with gpytorch.settings.num_likelihood_samples(1):
                loss = -mll(model(X), y)
            loss.backward()
            opt.step()

        model.train()
        lik.train()
        out["svdkl"][str(m)] = timed(step)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
