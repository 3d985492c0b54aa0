"""locuslab/TCN, the copy memory task: the repository's own entry point (TCN/copy_memory/copymem_test.py), tiny config."""
import os
import runpy
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import TCN.copy_memory.utils as utils  # noqa: E402

full = utils.data_generator
utils.data_generator = lambda blank, seq_len, n: full(blank, seq_len, min(n, 64))
os.chdir(os.path.join(here, "TCN", "copy_memory"))
sys.argv = ["copymem_test.py", "--epochs", "1", "--iters", "64", "--blank_len", "20", "--seq_len", "5",
            "--levels", "2", "--nhid", "8", "--ksize", "3", "--batch_size", "32", "--log-interval", "1"]
runpy.run_path("copymem_test.py", run_name="__main__")
