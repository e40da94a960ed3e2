from . import grid
from .grid import BoundedScaling, GridInducingPoints
