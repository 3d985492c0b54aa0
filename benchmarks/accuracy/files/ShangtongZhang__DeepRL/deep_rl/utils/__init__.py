from .config import *
from .normalizer import *
from .misc import *
from .logger import *
from .plot import Plotter
from .schedule import *
from .torch_utils import *
from .sum_tree import *
