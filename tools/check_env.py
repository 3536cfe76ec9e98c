"""`make check-env`: what a student or maintainer needs to know about this machine."""

import platform
import re
import subprocess
import sys

ANSI = re.compile(r"\x1b\[[0-9;]*m")
# The oldest torch the lessons and exercises run on: Colab's (2.11 in Aug 2026).
# No lesson uses an API newer than this; README states it too.
TORCH_FLOOR = (2, 11)


def torch_floor_warning(version: str) -> str | None:
    """A warning when `version` (torch.__version__) is older than the course's floor."""
    match = re.match(r"(\d+)\.(\d+)", version)
    if match is None:
        return f"WARNING: cannot read the torch version {version!r}; the course needs torch >= {TORCH_FLOOR[0]}.{TORCH_FLOOR[1]}"
    if tuple(int(part) for part in match.groups()) < TORCH_FLOOR:
        return (
            f"WARNING: torch {version} is older than {TORCH_FLOOR[0]}.{TORCH_FLOOR[1]}, the oldest version "
            "the course is written for; some cells (torch.accelerator, weights_only defaults) will fail. "
            "Upgrade torch."
        )
    return None


def jupyter(*args: str) -> str:
    """Output of a jupyter subcommand (it reports on stderr and stdout alike), without colours."""
    done = subprocess.run([sys.executable, "-m", "jupyter", *args], capture_output=True, text=True)
    return ANSI.sub("", done.stdout + done.stderr)


def nbgrader_extensions() -> list[str]:
    lab = [line.strip() for line in jupyter("labextension", "list").splitlines() if "nbgrader" in line]
    status: dict[str, list[str]] = {}
    for line in jupyter("server", "extension", "list").splitlines():
        words = line.split()
        if words and words[0].startswith("nbgrader.server_extensions."):
            status.setdefault(words[0].rsplit(".", 1)[1], []).extend(words[1:])
    lines = ["lab extension " + (lab[0] if lab else "@jupyter/nbgrader NOT FOUND")]
    for name in ("formgrader", "assignment_list", "validate_assignment", "course_list"):
        words = status.get(name, ["NOT", "FOUND"])
        lines.append(f"{name:<20} {' '.join(dict.fromkeys(words))}")
    return lines


def main() -> int:
    import torch

    print(f"Python      {platform.python_version()} ({sys.executable})")
    print(f"torch       {torch.__version__}")
    warning = torch_floor_warning(torch.__version__)
    if warning:
        print(warning)
    cuda = torch.cuda.is_available()
    print(f"CUDA        {f'{torch.cuda.device_count()} device(s)' if cuda else 'not available'}")
    for i in range(torch.cuda.device_count() if cuda else 0):
        print(f"  cuda:{i}    {torch.cuda.get_device_name(i)}")
    mps = getattr(torch.backends, "mps", None)
    print(f"MPS         {'available' if mps is not None and mps.is_available() else 'not available'}")
    import nbgrader

    print(f"nbgrader    {nbgrader.__version__}")
    for line in nbgrader_extensions():
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
