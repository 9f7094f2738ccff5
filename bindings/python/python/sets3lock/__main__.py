"""``python -m sets3lock``: the ``sets3lock`` command."""

from ._cli import main

main()
