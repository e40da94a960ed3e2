"""Each paper's settings as a dataclass config plus build / run functions.

A recipe builds models from ``gpflow_ext.models`` and trains them with ``gpflow_ext.training.fit``;
the experiment scripts are thin command lines over these functions.
"""

from . import gplvf, gplvf_images, mlgpf, movielens, svdkl, xmc_baselines

__all__ = ["mlgpf", "xmc_baselines", "svdkl", "gplvf", "gplvf_images", "movielens"]
