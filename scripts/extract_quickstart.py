#!/usr/bin/env python3
"""Print the first ```c (default), ```python or ```js block of README.md,
so tests run exactly what the README shows: extract_quickstart.py [c|python|js]"""
import pathlib
import re
import sys

readme = pathlib.Path(__file__).resolve().parent.parent / "README.md"
lang = sys.argv[1] if len(sys.argv) > 1 else "c"
blocks = re.findall(r"```" + lang + r"\n(.*?)```", readme.read_text(), re.S)
if not blocks:
    sys.exit(f"no ```{lang} block in README.md")
sys.stdout.write(blocks[0])
