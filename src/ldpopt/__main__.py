"""``python -m ldpopt``: the command-line interface."""

from ldpopt.cli import main

if __name__ == "__main__":
    main()
