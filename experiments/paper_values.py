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
SVDKL = {
    # Table 2: classification accuracy on UCI, mean over 5-fold CV (± one std in the paper).
    "table2_accuracy": {
        "adult": {"SVM": 0.849, "DNN": 0.852, "DNN+": 0.845, "DNN+GP": 0.853, "SV-DKL": 0.857},
        "connect4": {"SVM": 0.773, "DNN": 0.805, "DNN+": 0.804, "DNN+GP": 0.811, "SV-DKL": 0.841},
        "diabetes": {"SVM": 0.869, "DNN": 0.889, "DNN+": 0.890, "DNN+GP": 0.891, "SV-DKL": 0.896},
        "covtype": {"SVM": 0.796, "DNN": 0.824, "DNN+": 0.811, "DNN+GP": 0.827, "SV-DKL": 0.860},
    },
    # Table 5: negative log probability on UCI.
    "table5_nlp": {
        "adult": {"DNN": 0.316, "DNN+GP": 0.314, "SV-DKL": 0.312},
        "connect4": {"DNN": 0.495, "DNN+GP": 0.478, "SV-DKL": 0.449},
        "diabetes": {"DNN": 0.404, "DNN+GP": 0.396, "SV-DKL": 0.385},
        "covtype": {"DNN": 0.435, "DNN+GP": 0.429, "SV-DKL": 0.365},
    },
    # Table 3: classification accuracy on images (standard train/test split).
    "table3_accuracy": {
        "mnist": {"MC-GP": 0.9804, "SAVI-GP": 0.9749, "D-GPLVM": 0.9405, "CNN": 0.9908, "CNN+": 0.9909,
                  "CNN+GP": 0.9915, "SV-DKL": 0.9920},
        "mnist_binary": {"KLSP-GP": 0.978, "CNN": 0.9934, "CNN+": 0.8838, "CNN+GP": 0.9938, "SV-DKL": 0.9940},
    },
    # Table 6: negative log probability on images.
    "table6_nlp": {
        "mnist": {"MC-GP": 0.064, "CNN": 0.028, "CNN+GP": 0.028, "SV-DKL": 0.028},
        "mnist_binary": {"KLSP-GP": 0.069, "CNN": 0.020, "CNN+GP": 0.019, "SV-DKL": 0.018},
    },
}


# ---------------------------------------------------------------------------------------
# GP latent variable flows (GPLVF): Table 2, Figure 4.
# ---------------------------------------------------------------------------------------
GPLVF = {}
