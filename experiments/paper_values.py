"""Numbers reported in the three papers, kept in one place to print beside ours.

Each block belongs to one paper; cite the table number in the key comment.
Values are copied from the paper texts in shared/papers/.
"""

# ---------------------------------------------------------------------------------------
# Fully scalable GPs using subspace inducing inputs (MLGPF): Tables 2, 4, 5.
# ---------------------------------------------------------------------------------------
MLGPF = {}


# ---------------------------------------------------------------------------------------
# Stochastic variational deep kernel learning (SV-DKL): Tables 2, 3, 5, 6.
# ---------------------------------------------------------------------------------------
SVDKL = {}


# ---------------------------------------------------------------------------------------
# GP latent variable flows (GPLVF): Table 2, Figure 4.
# ---------------------------------------------------------------------------------------
GPLVF = {}
