"""The type stubs (``py.typed``, ``*.pyi``) as a type checker sees them:
typed user code passes ``mypy --strict``, and misuse is reported where it is."""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

HERE = pathlib.Path(__file__).parent / "typing"
EXAMPLES = pathlib.Path(__file__).parent.parent / "examples"


def mypy(*args: str, cache: pathlib.Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "--cache-dir", str(cache),
                           "--warn-unreachable", *args], capture_output=True, text=True, check=False)


def test_typed_user_code_passes_mypy_strict(tmp_path):
    r = mypy("--strict", str(HERE / "good.py"), cache=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_examples_pass_mypy(tmp_path):
    r = mypy(*map(str, sorted(EXAMPLES.glob("*.py"))), cache=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_misuse_is_reported_on_its_line(tmp_path):
    bad = HERE / "bad.py"
    expected = {(n, m.group(1)) for n, line in enumerate(bad.read_text().splitlines(), 1)
                if (m := re.search(r"# E: ([\w-]+)", line))}
    r = mypy(str(bad), cache=tmp_path)
    got = {(int(m.group(1)), m.group(2)) for m in re.finditer(r"bad\.py:(\d+): error: .*\[([\w-]+)\]", r.stdout)}
    assert got == expected, r.stdout
