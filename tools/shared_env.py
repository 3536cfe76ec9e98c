"""Whose environment is VENV? `make setup` asks before it changes one (run as `$(PY) -I tools/shared_env.py`).

An environment (VENV=...) may serve several checkouts, an instructor's and a TA's. It belongs to
the checkout its editable grader points at (pip install -e), while that checkout exists; every
`make` runs its own checkout's grader whatever the environment holds (the Makefile puts the
checkout first on PYTHONPATH). So `make` here never changes an environment another checkout uses:

    python tools/shared_env.py owner CHECKOUT      prints the other checkout that owns this Python's
                                                   environment; exit 1 when none does (no grader
                                                   installed, its checkout gone, or CHECKOUT's own):
                                                   make may then install into it
    python tools/shared_env.py requirements CHECKOUT
                                                   exit 0 when the environment is another checkout's
                                                   and CHECKOUT needs nothing it lacks (the same
                                                   requirements.txt, pyproject.toml and Jupyter page
                                                   settings as its owner), 1 when it is not another
                                                   checkout's, 2 with a message when CHECKOUT's
                                                   differ (make stops: it would rewrite the owner's)

Only the standard library: it runs before anything is installed, isolated (-I) so that neither
PYTHONPATH nor the working folder changes what it finds.
"""

from __future__ import annotations

import importlib.util
import os
import sys

SHARED_INPUTS = ("requirements.txt", "pyproject.toml", "tools/lab_page_config.json")


def installed_checkout() -> str | None:
    """The checkout this Python's installed grader comes from, if it still exists."""
    try:
        spec = importlib.util.find_spec("grader")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not os.path.exists(spec.origin):
        return None
    return os.path.realpath(os.path.dirname(os.path.dirname(spec.origin)))


def owner(checkout: str) -> str | None:
    """Another checkout that uses this environment, or None."""
    found = installed_checkout()
    return found if found is not None and found != os.path.realpath(checkout) else None


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def differing_inputs(checkout: str, other: str) -> list[str]:
    return [name for name in SHARED_INPUTS if _read(os.path.join(checkout, name)) != _read(os.path.join(other, name))]


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("owner", "requirements"):
        print(__doc__, file=sys.stderr)
        return 64
    command, checkout = argv
    other = owner(checkout)
    if other is None:
        return 1
    if command == "owner":
        print(other)
        return 0
    differ = differing_inputs(checkout, other)
    if differ:
        print(
            f"make: refusing to change the environment {sys.prefix}: it is {other}'s (its grader is installed "
            f"from there), and this checkout's {', '.join(differ)} differ from that checkout's, so installing "
            "them would change what that checkout runs. Use an environment of your own (make setup "
            "VENV=.venv), or update that checkout and run make setup there.",
            file=sys.stderr,
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
