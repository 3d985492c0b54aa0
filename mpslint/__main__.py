"""Run mpslint as ``python -m mpslint``."""

from mpslint.isolation import drop_working_directory

# Before anything else is imported: `python -m` put the checked tree's folder first on sys.path.
drop_working_directory()

from mpslint.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
