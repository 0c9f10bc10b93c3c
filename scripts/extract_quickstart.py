#!/usr/bin/env python3
"""Print the first ```c block of README.md (the C quickstart), so tests
compile exactly what the README shows."""
import pathlib
import re
import sys

readme = pathlib.Path(__file__).resolve().parent.parent / "README.md"
blocks = re.findall(r"```c\n(.*?)```", readme.read_text(), re.S)
if not blocks:
    sys.exit("no ```c block in README.md")
sys.stdout.write(blocks[0])
