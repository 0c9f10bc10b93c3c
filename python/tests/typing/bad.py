"""Misuse a type checker must catch (each line marked with the error code
mypy reports for it)."""

from __future__ import annotations

from futoin_polyglot import AsyncSteps, Mutex, Tool

AsyncSteps().add(5)  # E: arg-type
AsyncSteps().add(lambda a: None, 5)  # E: arg-type
AsyncSteps().repeat("3", lambda a, i: None)  # E: arg-type
AsyncSteps().sync(5, lambda a: None)  # E: arg-type
Mutex(max="1")  # E: arg-type
Tool(virtual_time=True).advance("5")  # E: arg-type
AsyncSteps().nosuch()  # E: attr-defined


def after_error(as_: AsyncSteps) -> None:
    as_.error("X")
    print("unreachable")  # E: unreachable
