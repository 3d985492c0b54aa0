"""Run mpslint as ``python -m mpslint``."""

from mpslint.cli import main

if __name__ == "__main__":
    main()
