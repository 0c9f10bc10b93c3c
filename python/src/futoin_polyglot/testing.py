"""pytest helpers: a virtual-time tool so timeouts are tested without sleeping.

    def test_timeout(virtual_tool):
        as_ = AsyncSteps(virtual_tool)
        ...
        as_.execute(); virtual_tool.run()   # timers fire at once, in order
"""

from __future__ import annotations

try:
    import pytest
except ImportError:  # pragma: no cover - pytest is optional
    pytest = None

from ._futoin import Tool


def make_virtual_tool() -> Tool:
    return Tool(virtual_time=True)


if pytest is not None:

    @pytest.fixture
    def virtual_tool():
        """A Tool in virtual time: run() jumps to each deadline."""
        yield make_virtual_tool()
