"""``python -m kstore``: the command line, as the ``kstore`` script runs it."""

from kstore.cli import main

main()
