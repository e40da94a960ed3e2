"""scikit-learn's bundled digits: the no-download default."""
import numpy as np
import pytest

import gpflow_ext
from gpflow_ext.data import load_digits


def test_digits_split_is_stratified_scaled_and_seeded():
    split = load_digits(test_fraction=0.25, seed=0)
    assert split.X_train.shape[1] == 64 and len(split.X_train) + len(split.X_test) == 1797
    assert split.X_train.min() >= 0 and split.X_train.max() <= 1 and split.X_train.dtype == np.float64
    assert len(split.X_test) == 450 and set(np.unique(split.y_test)) == set(range(10))
    again = load_digits(test_fraction=0.25, seed=0)
    np.testing.assert_array_equal(split.X_test, again.X_test)
    assert not np.array_equal(load_digits(seed=1).y_test, split.y_test)
    with pytest.raises(ValueError, match="test_fraction must lie in"):
        load_digits(test_fraction=1.0)
    assert gpflow_ext.data.load_digits is load_digits
