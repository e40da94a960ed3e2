"""A likelihood's observations checked before training: each GPflow scalar likelihood's support, per column with a
SwitchedLikelihood, in the constructor, in the data given to ``fit`` and in ``Y_test``; unobserved entries unread."""

import re

import gpflow
import numpy as np
import pytest

from gpflow_ext.likelihoods import Ordinal
from gpflow_ext.likelihoods.support import ValueSupport, check_values_in_support, value_support
from gpflow_ext.models import GPLVF
from gpflow_ext.training import fit

# (likelihood factory, valid values, one value outside its support, words of the message)
CASES = {
    "bernoulli": (gpflow.likelihoods.Bernoulli, [0.0, 1.0], 2.0, "0 or 1"),
    "bernoulli-minus-one": (gpflow.likelihoods.Bernoulli, [0.0, 1.0], -1.0, "0 or 1"),
    "ordinal-above": (lambda: Ordinal([0.5, 1.5, 2.5]), [0.0, 1.0, 2.0, 3.0], 4.0, "0, ..., 3"),
    "ordinal-fraction": (lambda: Ordinal([0.5, 1.5, 2.5]), [0.0, 3.0], 1.5, "0, ..., 3"),
    "ordinal-gpflow": (lambda: gpflow.likelihoods.Ordinal(np.array([0.5])), [0.0, 1.0], 2.0, "0, ..., 1"),
    "poisson-negative": (gpflow.likelihoods.Poisson, [0.0, 3.0, 17.0], -1.0, "non-negative integers"),
    "poisson-fraction": (gpflow.likelihoods.Poisson, [0.0, 3.0], 2.5, "non-negative integers"),
    "beta": (gpflow.likelihoods.Beta, [0.0, 0.3, 1.0], 1.5, "from 0 to 1"),
    "exponential": (gpflow.likelihoods.Exponential, [0.0, 2.5], -0.1, "non-negative"),
    "gamma": (gpflow.likelihoods.Gamma, [0.1, 2.5], 0.0, "positive"),
}


def _values(valid, shape=(12, 5), seed=0) -> np.ndarray:
    return np.random.default_rng(seed).choice(np.asarray(valid, dtype=float), size=shape)


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_likelihood_names_its_support_and_the_first_entry_outside_it(case):
    make, valid, invalid, words = CASES[case]
    values = _values(valid)
    observed = np.ones_like(values)
    assert check_values_in_support(make(), None, values, observed, name="data")[0] is values
    values[3, 2] = values[7, 4] = invalid
    message = f"data: {type(make()).__name__} models"
    with pytest.raises(ValueError, match=re.escape(message)) as error:
        check_values_in_support(make(), None, values, observed, name="data")
    text = str(error.value)
    assert words in text and "2 observed entries" in text and "row 3, column 2" in text and repr(invalid) in text


@pytest.mark.parametrize("case", sorted(CASES))
def test_unobserved_entries_are_not_read(case):
    make, valid, invalid, _ = CASES[case]
    values = _values(valid)
    observed = np.ones_like(values)
    values[3, 2], observed[3, 2] = invalid, 0.0
    check_values_in_support(make(), None, values, observed, name="data")


def test_a_likelihood_not_registered_takes_finite_numbers():
    values = np.array([[-3.0, 0.5], [np.inf, 2.0]])
    likelihood = gpflow.likelihoods.StudentT()
    check_values_in_support(likelihood, None, values, np.array([[1.0, 1.0], [0.0, 1.0]]), name="data")
    with pytest.raises(ValueError, match=r"StudentT models finite numbers.*row 1, column 0"):
        check_values_in_support(likelihood, None, values, np.ones_like(values), name="data")


def test_a_user_registers_the_support_of_their_own_likelihood():
    class Counts(gpflow.likelihoods.Poisson):
        pass

    class Odd(gpflow.likelihoods.Gaussian):
        pass

    value_support.register(Odd, lambda likelihood: ValueSupport(lambda y: y % 2 == 1, "odd numbers"))
    values = np.array([[1.0, 3.0], [5.0, 4.0]])
    with pytest.raises(ValueError, match=r"Odd models odd numbers.*row 1, column 1: 4.0"):
        check_values_in_support(Odd(), None, values, np.ones_like(values), name="data")
    assert value_support(Counts()).description == "non-negative integers (counts)"  # a subclass takes its parent's


def test_a_switched_likelihood_checks_each_column_by_its_own_likelihood():
    likelihood = gpflow.likelihoods.SwitchedLikelihood([gpflow.likelihoods.Bernoulli(), gpflow.likelihoods.Poisson()])
    columns = np.array([0, 1, 1, 0])
    values = np.array([[0.0, 4.0, 0.0, 1.0], [1.0, 7.0, 2.0, 0.0]])
    observed = np.ones_like(values)
    check_values_in_support(likelihood, columns, values, observed, name="data")
    values[1, 2] = 2.5
    with pytest.raises(ValueError, match=r"Poisson \(likelihood.likelihoods\[1\], by likelihood_columns\).*column 2"):
        check_values_in_support(likelihood, columns, values, observed, name="data")
    values[1, 2] = 2.0
    values[0, 3] = 4.0  # a count in a Bernoulli column
    with pytest.raises(ValueError, match=r"Bernoulli \(likelihood.likelihoods\[0\].*row 0, column 3"):
        check_values_in_support(likelihood, columns, values, observed, name="data")


def _ratings(seed=0) -> np.ndarray:
    """[30, 6] ratings 1..5 with a third missing (NaN)."""
    rng = np.random.default_rng(seed)
    values = rng.integers(1, 6, size=(30, 6)).astype(float)
    values[rng.random(values.shape) < 0.3] = np.nan
    return values


def test_gplvf_refuses_classes_outside_its_ordinal_bins_before_any_step():
    ratings = _ratings()
    with pytest.raises(ValueError, match=r"data: Ordinal models the class indices 0, \.\.\., 4.*: 5\.0"):
        GPLVF(ratings, 2, 4, likelihood=Ordinal(np.arange(4) + 0.5))
    model = GPLVF(ratings - 1.0, 2, 4, likelihood=Ordinal(np.arange(4) + 0.5))  # classes 0..4: trains
    values, mask, rows = model.training_data()
    before = [v.numpy().copy() for v in model.trainable_variables]
    bad = values.copy()
    bad[np.argwhere(mask > 0)[0][0], np.argwhere(mask > 0)[0][1]] = 7.0
    with pytest.raises(ValueError, match=r"data: Ordinal models the class indices 0, \.\.\., 4"):
        fit(model, (bad, mask, rows), epochs=1, batch_size=10, progress=False)
    for old, variable in zip(before, model.trainable_variables):
        np.testing.assert_array_equal(old, variable.numpy())  # nothing trained
    fit(model, (values, mask, rows), epochs=1, batch_size=10, progress=False)
    x_mean, x_var = model.training_latents()
    test = ratings - 1.0
    test[0, :] = np.nan
    test[0, 0] = 5.0
    with pytest.raises(ValueError, match=r"Y_test: Ordinal models the class indices 0, \.\.\., 4.*row 0, column 0"):
        model.test_log_likelihood(test, x_mean, x_var, num_samples=2)
    test[0, 0] = 4.0
    assert np.isfinite(model.test_log_likelihood(test, x_mean, x_var, num_samples=2))


def test_gplvf_refuses_binary_data_coded_minus_one_plus_one():
    values = np.where(_ratings() > 3, 1.0, -1.0)
    with pytest.raises(ValueError, match=r"data: Bernoulli models 0 or 1.*-1\.0"):
        GPLVF(values, 2, 4, likelihood=gpflow.likelihoods.Bernoulli())
    GPLVF((values + 1.0) / 2.0, 2, 4, likelihood=gpflow.likelihoods.Bernoulli())
