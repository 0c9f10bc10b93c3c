from typing import Generator

from ._futoin import Tool

def make_virtual_tool() -> Tool: ...

def virtual_tool() -> Generator[Tool, None, None]: ...  # pytest fixture
