"""locuslab/TCN, the adding problem: the repository's own entry point (TCN/adding_problem/add_test.py), tiny config.

Random data is what the script makes itself; the driver only caps how much (64 sequences) and passes small sizes.
"""
import os
import runpy
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import TCN.adding_problem.utils as utils  # noqa: E402

full = utils.data_generator
utils.data_generator = lambda n, seq_length: full(min(n, 64), seq_length)
os.chdir(os.path.join(here, "TCN", "adding_problem"))
sys.argv = ["add_test.py", "--epochs", "1", "--seq_len", "16", "--levels", "2", "--nhid", "8", "--ksize", "3",
            "--log-interval", "1"]
runpy.run_path("add_test.py", run_name="__main__")
