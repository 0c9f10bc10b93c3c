from typing import Optional, Tuple

ConnectError: str
CommError: str
UnknownInterface: str
NotSupportedVersion: str
NotImplemented: str
Unauthorized: str
InternalError: str
InvokerError: str
InvalidRequest: str
DefenseRejected: str
PleaseReauth: str
SecurityError: str
Timeout: str
LoopBreak: str
LoopCont: str
PromiseReject: str
ALL_CODES: Tuple[str, ...]

class FutoInError(Exception):
    code: str
    info: str
    last_exception: Optional[BaseException]
    def __init__(self, code: str, info: Optional[str] = ..., last_exception: Optional[BaseException] = ...) -> None: ...
