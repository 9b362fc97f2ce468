"""Runs the README's quickstart with whatever toolsift is importable (an installed wheel, for the
packaging test and the release workflow), and prints where that toolsift lives.

    python tests/quickstart.py README.md
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def quickstart(readme: Path) -> str:
    """The python block under the README's Quickstart heading."""
    section = readme.read_text(encoding="utf-8").split("## Quickstart", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    if code is None:
        raise SystemExit(f"{readme} has no python block under '## Quickstart'")
    return code.group(1)


if __name__ == "__main__":
    readme = Path(sys.argv[1])
    exec(compile(quickstart(readme), str(readme), "exec"), {})
    import toolsift

    print(f"quickstart ok with {toolsift.__file__}")
