"""FTN12 error codes and the FutoInError exception."""

from __future__ import annotations

from typing import Optional

ConnectError = "ConnectError"
CommError = "CommError"
UnknownInterface = "UnknownInterface"
NotSupportedVersion = "NotSupportedVersion"
NotImplemented = "NotImplemented"  # noqa: A001 - the FTN12 name
Unauthorized = "Unauthorized"
InternalError = "InternalError"
InvokerError = "InvokerError"
InvalidRequest = "InvalidRequest"
DefenseRejected = "DefenseRejected"
PleaseReauth = "PleaseReauth"
SecurityError = "SecurityError"
Timeout = "Timeout"
LoopBreak = "LoopBreak"
LoopCont = "LoopCont"
PromiseReject = "PromiseReject"

ALL_CODES = (
    ConnectError, CommError, UnknownInterface, NotSupportedVersion, NotImplemented,
    Unauthorized, InternalError, InvokerError, InvalidRequest, DefenseRejected,
    PleaseReauth, SecurityError, Timeout, LoopBreak, LoopCont, PromiseReject,
)


class FutoInError(Exception):
    """An FTN12 error: ``code`` plus the optional ``info`` (``error_info``).

    ``last_exception`` is the original exception when the error came from
    one (a Python exception raised in a step, or a rejected awaitable).
    """

    def __init__(self, code: str, info: Optional[str] = None, last_exception: Optional[BaseException] = None):
        super().__init__(code, info)
        self.code = code
        self.info = info if info is not None else ""
        self.last_exception = last_exception
        if isinstance(last_exception, BaseException) and last_exception is not self:
            self.__cause__ = last_exception  # the traceback shows where the flow failed

    def __str__(self) -> str:
        return f"{self.code}: {self.info}" if self.info else self.code

    def __repr__(self) -> str:
        return f"FutoInError({self.code!r}, {self.info!r})"
