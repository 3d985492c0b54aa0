"""mpslint: make PyTorch code ready for Apple silicon's ``mps`` device."""

__version__ = "0.1.0"
