from typing import Any, Awaitable, Callable, Generator, Iterable, Mapping, Optional, Tuple, TypeVar, Union, overload

from . import errors as errors
from ._futoin import AsyncStepsBase as AsyncStepsBase, CStep as CStep, Handle as Handle, Tool as Tool
from .errors import FutoInError as FutoInError

__all__ = [
    "AsyncSteps", "AsyncTool", "CStep", "FutoInError", "Handle", "ISync", "Limiter", "Mutex", "State",
    "StepHandle", "Throttle", "Tool", "errors", "get_tool", "is_native", "run", "wrap",
    "ABI_VERSION", "CORE_VERSION", "StepFunc", "ErrorFunc", "CancelFunc", "sync_address",
]

ABI_VERSION: int
CORE_VERSION: str

_S = TypeVar("_S", bound=AsyncStepsBase)
StepFunc = Callable[..., Any]           # func(as_, *received_values)
ErrorFunc = Callable[["AsyncSteps", str], Any]  # onerror(as_, code)
CancelFunc = Callable[["AsyncSteps"], Any]

class State(dict[str, Any]):
    error_info: str
    last_exception: Optional[BaseException]
    async_stack: list[Any]
    def __call__(self) -> "State": ...  # the spec's state(): this same object
    def __getattr__(self, name: str) -> Any: ...
    def __setattr__(self, name: str, value: Any) -> None: ...

class AsyncSteps(AsyncStepsBase):
    def __new__(cls, tool: Optional[Tool] = ...) -> "AsyncSteps": ...
    def __init__(self, tool: Optional[Tool] = ...) -> None: ...
    def __call__(self, *args: Any) -> None: ...  # success()
    def execute(self, unhandled_error: Optional[ErrorFunc] = ...) -> None: ...
    def success_step(self: _S, *args: Any) -> _S: ...
    def for_each(self: _S, items: Union[Iterable[Any], Mapping[Any, Any]],
                 func: Callable[["AsyncSteps", Any, Any], Any], label: Optional[str] = ...) -> _S: ...
    loop_for_each = for_each
    def make_loop(self: _S, func: Callable[["AsyncSteps"], Any], label: Optional[str] = ...) -> _S: ...
    def repeat_loop(self: _S, count: int, func: Callable[["AsyncSteps", int], Any], label: Optional[str] = ...) -> _S: ...
    def await_(self: _S, awaitable: Awaitable[Any], onerror: Optional[ErrorFunc] = ...) -> _S: ...
    def copy_from(self: _S, other: "AsyncSteps") -> _S: ...
    def promise(self) -> "Awaitable[Any]": ...
    def __await__(self) -> Generator[Any, None, Any]: ...
    def run(self) -> Any: ...
    # the spec's names (FTN12 2.2; 1.10 for the ones a keyword clashes with)
    setTimeout = AsyncStepsBase.set_timeout
    setCancel = AsyncStepsBase.set_cancel
    waitExternal = AsyncStepsBase.wait_external
    successStep = success_step
    copyFrom = copy_from
    newInstance = AsyncStepsBase.new_instance
    forEach = for_each
    loopForEach = for_each
    makeLoop = make_loop
    repeatLoop = repeat_loop
    breakLoop = AsyncStepsBase.break_loop
    continueLoop = AsyncStepsBase.continue_loop

AsyncTool = Tool

def get_tool() -> Tool: ...
def run(tool: Optional[Tool] = ...) -> None: ...
def wrap(pointer: Any, tool: Optional[Tool] = ...) -> AsyncSteps: ...
def is_native(address: int, /) -> bool: ...
def sync_address(obj: "ISync", /) -> int: ...  # its FutoInSync* for addSync() of C code

class StepHandle:
    execute_callback: int
    data: int
    def __init__(self, func: StepFunc, tool: Optional[Tool] = ...) -> None: ...
    def close(self) -> None: ...
    def __del__(self) -> None: ...

class ISync:
    def lock(self, as_: AsyncSteps) -> None: ...
    def unlock(self, as_: AsyncSteps) -> None: ...
    def sync(self, as_: AsyncSteps, func: StepFunc, onerror: Optional[ErrorFunc] = ...) -> AsyncSteps: ...

class Mutex(ISync):
    def __init__(self, max: int = ..., max_queue: Optional[int] = ..., tool: Optional[Tool] = ...) -> None: ...

class Throttle(ISync):
    def __init__(self, max: int, period_ms: int = ..., max_queue: Optional[int] = ..., tool: Optional[Tool] = ...) -> None: ...

class Limiter(ISync):
    @overload
    def __init__(self, concurrent: int = ..., max_queue: int = ..., rate: int = ..., period_ms: int = ...,
                 burst: int = ..., tool: Optional[Tool] = ...) -> None: ...
    @overload
    def __init__(self, concurrent: Mapping[str, int], *, tool: Optional[Tool] = ...) -> None: ...  # the spec's options
