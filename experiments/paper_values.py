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
GPLVF = {
    # Table 2: MovieLens 100K test RMSE, Q = 10 latent dimensions, 843 training / 100 test users.
    "table2_rmse": {
        "gaussian": 0.9648,  # prod_n N(x_n; mu_n, s_n I_Q)
        "planar_20": 0.9281,
        "planar_30": 0.9105,
        "planar_50": 0.9039,
    },
    # Figure 4 (test log-likelihood vs flow length, Sci-Fi/Romance slice) is a plot only: no numbers in the text.
}
