"""rtqichen/torchdiffeq: the repository's own entry point (examples/ode_demo.py, `device = torch.device('cuda:' +
str(args.gpu) if torch.cuda.is_available() else 'cpu')`) with the library it ships, tiny config, seeded (the script
draws its batches with np.random and does not seed)."""
import os
import runpy
import sys

import numpy as np
import torch

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
np.random.seed(0)
torch.manual_seed(0)
sys.argv = ["ode_demo.py", "--niters", "4", "--data_size", "100", "--batch_time", "5", "--batch_size", "4",
            "--test_freq", "2"]
runpy.run_path(os.path.join(here, "examples", "ode_demo.py"), run_name="__main__")
