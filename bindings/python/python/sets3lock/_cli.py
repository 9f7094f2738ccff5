"""The ``sets3lock`` command, installed with the package: the Rust command itself.

Every flag, message and exit code is the Rust binary's: this calls its entry point.
"""

from __future__ import annotations

import signal
import sys

from ._native import run_command


def main() -> None:
    """Runs ``sets3lock`` with this process's arguments and exits with its status."""
    # The command handles SIGINT and SIGTERM itself (it forwards them to its program and
    # releases the lock): Python's own handler would turn them into KeyboardInterrupt.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    code = run_command(["sets3lock", *sys.argv[1:]])
    sys.stdout.flush()
    sys.exit(code)
