"""wharf.handler: task handlers in Python, run by wharf's coprocess plugin.

    # myapp/handlers.py
    from wharf.handler import handler
    import wharf

    @handler("resize")
    async def resize(task, ctx):
        if not task.payload:
            raise wharf.Fail("empty payload")       # dead at once
        ctx.log("resizing %d bytes" % len(task.payload))
        return task.payload[::-1]                    # the result (bytes/str)

    python3 -m wharf.handler myapp.handlers

The host starts that program (``command`` in the manifest's
``[plugin.NAME]`` section), writes task frames to its stdin and reads the
answers from its stdout, in the wire format of docs/handlers.md. The host
keeps every guarantee (locks, retries, the dead set, timeouts): a handler
only returns (ok, with the result), raises ``wharf.Retry`` (try again
after the type's backoff, or after ``delay`` seconds), raises
``wharf.Fail`` (dead at once), or raises anything else (a retry whose
reason is the exception's text). Sync handlers run on a thread pool,
``async def`` ones on the event loop, up to the ``inflight`` the host
says, answered as each ends. Standard library only; ``print`` goes to
stderr, which the host logs."""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import inspect
import os
import struct
import sys
import threading
import time
import traceback
from typing import Any, Awaitable, Callable, Dict, Optional, Union

__all__ = ["handler", "Retry", "Fail", "Task", "Context", "run", "main",
           "PROTOCOL_VERSION"]

PROTOCOL_VERSION = 1
# The longest frame either side may send (docs/handlers.md).
FRAME_MAX = (64 << 20) + 65536

LEVELS = {"debug": 0, "info": 1, "warn": 2, "warning": 2, "error": 3}

_HEAD = struct.Struct(">IcI")
_TASK = struct.Struct(">IIQqq")
_U32 = struct.Struct(">I")
_RETRY = struct.Struct(">q")

Result = Union[bytes, bytearray, memoryview, str, None]
Handler = Callable[["Task", "Context"], Union[Result, Awaitable[Result]]]

_handlers: Dict[str, Handler] = {}


class Retry(Exception):
    """Raise to try the task again: after the type's backoff, or after
    ``delay`` seconds (capped by the type's ``max_retry_delay``)."""

    def __init__(self, reason: str = "retry", delay: Optional[float] = None):
        super().__init__(reason)
        self.reason = reason
        self.delay = delay


class Fail(Exception):
    """Raise to fail the task for good: it goes to the dead set at once."""

    def __init__(self, reason: str = "failed"):
        super().__init__(reason)
        self.reason = reason


def handler(type_name: str) -> Callable[[Handler], Handler]:
    """Registers the decorated function as the handler of ``type_name``."""

    def register(fn: Handler) -> Handler:
        if type_name in _handlers:
            raise ValueError("two handlers for type %r" % type_name)
        _handlers[type_name] = fn
        return fn

    return register


class Task:
    """One task, as the host handed it over."""

    __slots__ = ("id", "type", "attempt", "max_attempts", "fence", "trace",
                 "enqueued_at", "payload")

    def __init__(self, id: str, type: str, attempt: int, max_attempts: int,
                 fence: int, trace: str, enqueued_at: float, payload: bytes):
        self.id = id
        self.type = type
        self.attempt = attempt
        self.max_attempts = max_attempts
        self.fence = fence
        self.trace = trace
        self.enqueued_at = enqueued_at  # seconds since the epoch
        self.payload = payload

    def __repr__(self) -> str:
        return "Task(%r, %r, attempt=%d)" % (self.type, self.id, self.attempt)


class Context:
    """What a handler may ask of the host while its task runs."""

    __slots__ = ("deadline", "_cancel", "_runner", "_request")

    def __init__(self, runner: "_Runner", request: int,
                 deadline: Optional[float]):
        # time.monotonic() (= the event loop's clock) at the task's
        # deadline, None for none: asyncio.timeout_at(ctx.deadline).
        self.deadline = deadline
        self._cancel = threading.Event()
        self._runner = runner
        self._request = request

    @property
    def cancelled(self) -> bool:
        """True once the host cancelled the task (its deadline passed, or
        an operator cancelled it): stop and return."""
        return self._cancel.is_set()

    def time_left(self) -> Optional[float]:
        """Seconds to the deadline (0 once passed), None for none."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def log(self, message: str, level: str = "info") -> None:
        """A line in the host's log, with the plugin and this task named.
        Safe from any thread."""
        self._runner.send_log(self._request, LEVELS.get(level, 1),
                              str(message))


def _trace(e: BaseException) -> str:
    return "".join(traceback.format_exception(type(e), e,
                                              e.__traceback__)).rstrip()


def _frame(kind: bytes, request: int, body: bytes) -> bytes:
    return _HEAD.pack(5 + len(body), kind, request) + body


def _blob(data: bytes) -> bytes:
    return _U32.pack(len(data)) + data


def _as_bytes(value: Result) -> bytes:
    if value is None:
        return b""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError("a handler returns bytes, str or None, not %s"
                    % type(value).__name__)


class ProtocolError(Exception):
    """The host sent something this library cannot read."""


class _Runner:
    def __init__(self, handlers: Dict[str, Handler], out_fd: int):
        self.handlers = handlers
        self.out_fd = out_fd
        self.write_lock = threading.Lock()
        self.buf = bytearray()
        self.inflight = 1
        self.pool: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self.running: Dict[int, tuple] = {}
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.done: Optional[asyncio.Future] = None
        self.said_ready = False

    # --- writing ---------------------------------------------------------

    def write(self, data: bytes) -> None:
        with self.write_lock:
            view = memoryview(data)
            while view:
                n = os.write(self.out_fd, view)
                view = view[n:]

    def send_log(self, request: int, level: int, message: str) -> None:
        self.write(_frame(b"L", request, bytes((level,))
                          + _blob(message.encode("utf-8", "replace"))))

    def answer(self, request: int, outcome: str, data: bytes,
               delay: Optional[float] = None) -> None:
        if outcome == "ok":
            self.write(_frame(b"O", request, _blob(data)))
        elif outcome == "fail":
            self.write(_frame(b"F", request, _blob(data)))
        else:
            ms = -1 if delay is None else max(0, int(delay * 1000))
            self.write(_frame(b"Y", request, _RETRY.pack(ms) + _blob(data)))

    # --- reading ---------------------------------------------------------

    def readable(self) -> None:
        try:
            chunk = os.read(0, 1 << 20)
        except BlockingIOError:
            return
        if not chunk:
            self.finish()
            return
        self.buf += chunk
        try:
            self.frames()
        except ProtocolError as e:
            print("wharf.handler: %s" % e, file=sys.stderr)
            os._exit(70)

    def frames(self) -> None:
        buf = self.buf
        at = 0
        while len(buf) - at >= 4:
            (length,) = _U32.unpack_from(buf, at)
            if length < 5 or length > FRAME_MAX:
                raise ProtocolError("a frame of length %d" % length)
            if len(buf) - at - 4 < length:
                break
            kind = buf[at + 4:at + 5]
            (request,) = _U32.unpack_from(buf, at + 5)
            body = bytes(buf[at + 9:at + 4 + length])
            at += 4 + length
            if kind == b"T":
                self.task(request, body)
            elif kind == b"C":
                entry = self.running.get(request)
                if entry is not None:
                    entry[0]._cancel.set()
                    if entry[1] is not None:
                        entry[1].cancel()
            elif kind == b"H":
                self.hello(body)
            else:
                raise ProtocolError("unknown frame kind %r" % kind)
        del buf[:at]

    def hello(self, body: bytes) -> None:
        version, inflight = struct.unpack_from(">II", body)
        if version != PROTOCOL_VERSION:
            raise ProtocolError("the host speaks protocol version %d, not %d"
                                % (version, PROTOCOL_VERSION))
        self.inflight = max(1, inflight)
        self.pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=self.inflight, thread_name_prefix="wharf-handler")
        self.write(_frame(b"R", 0, _U32.pack(PROTOCOL_VERSION)))
        self.said_ready = True

    def task(self, request: int, body: bytes) -> None:
        attempt, max_attempts, fence, enqueued_ms, deadline_in = \
            _TASK.unpack_from(body)
        at = _TASK.size
        fields = []
        for _ in range(4):
            (n,) = _U32.unpack_from(body, at)
            fields.append(body[at + 4:at + 4 + n])
            at += 4 + n
        deadline = (time.monotonic() + deadline_in / 1000.0
                    if deadline_in >= 0 else None)
        task = Task(fields[0].decode("utf-8", "replace"),
                    fields[1].decode("utf-8", "replace"), attempt,
                    max_attempts, fence, fields[2].decode("ascii", "replace"),
                    enqueued_ms / 1000.0, fields[3])
        ctx = Context(self, request, deadline)
        fn = self.handlers.get(task.type)
        if fn is None:
            self.answer(request, "fail",
                        ("no handler for type %r in this program"
                         % task.type).encode())
            return
        if inspect.iscoroutinefunction(fn):
            job = self.loop.create_task(self.run_async(fn, task, ctx,
                                                       request))
            self.running[request] = (ctx, job)
        else:
            self.running[request] = (ctx, None)
            future = self.pool.submit(self.run_sync, fn, task, ctx, request)
            future.add_done_callback(self.sync_done)

    # --- running ---------------------------------------------------------

    def outcome(self, request: int, exc: Optional[BaseException],
                value: Result) -> None:
        if exc is None:
            try:
                data = _as_bytes(value)
            except TypeError as e:
                self.answer(request, "fail", str(e).encode())
                return
            self.answer(request, "ok", data)
        elif isinstance(exc, Fail):
            self.answer(request, "fail", exc.reason.encode("utf-8", "replace"))
        elif isinstance(exc, Retry):
            self.answer(request, "retry",
                        exc.reason.encode("utf-8", "replace"), exc.delay)
        elif isinstance(exc, asyncio.CancelledError):
            self.answer(request, "retry", b"cancelled")
        else:
            text = "%s: %s" % (type(exc).__name__, exc)
            self.answer(request, "retry", text.encode("utf-8", "replace"))

    async def run_async(self, fn, task, ctx, request) -> None:
        try:
            value = await fn(task, ctx)
        except BaseException as e:  # noqa: B902 - every outcome is answered
            if not isinstance(e, (Retry, Fail, asyncio.CancelledError)):
                ctx.log(_trace(e), "warn")
            self.outcome(request, e, None)
        else:
            self.outcome(request, None, value)
        finally:
            self.running.pop(request, None)
        self.check_finished()

    def run_sync(self, fn, task, ctx, request) -> None:
        try:
            value = fn(task, ctx)
        except BaseException as e:  # noqa: B902
            if not isinstance(e, (Retry, Fail)):
                ctx.log(_trace(e), "warn")
            self.outcome(request, e, None)
        else:
            self.outcome(request, None, value)
        return request

    def sync_done(self, future: concurrent.futures.Future) -> None:
        request = future.result()
        self.loop.call_soon_threadsafe(self.sync_forget, request)

    def sync_forget(self, request: int) -> None:
        self.running.pop(request, None)
        self.check_finished()

    # --- the end ---------------------------------------------------------

    def finish(self) -> None:
        """stdin closed: the host stops this program. Tasks in hand end
        first (the host waits a little, then kills)."""
        self.loop.remove_reader(0)
        self.closing = True
        self.check_finished()

    def check_finished(self) -> None:
        if getattr(self, "closing", False) and not self.running:
            if not self.done.done():
                self.done.set_result(None)

    async def serve(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.done = self.loop.create_future()
        os.set_blocking(0, False)
        self.loop.add_reader(0, self.readable)
        await self.done
        if self.pool is not None:
            self.pool.shutdown(wait=True)


def run(handlers: Optional[Dict[str, Handler]] = None) -> None:
    """Serves the registered handlers (or ``handlers``) on stdin and stdout
    until stdin closes. Moves what the program prints to stderr first:
    stdout carries frames only."""
    out_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    asyncio.run(_Runner(dict(handlers or _handlers), out_fd).serve())


def main(argv: Optional[list] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python3 -m wharf.handler MODULE [MODULE...]\n"
              "imports each MODULE (its @handler functions register) and "
              "serves them to wharf's coprocess plugin on stdin/stdout",
              file=sys.stderr)
        return 64
    for name in argv:
        importlib.import_module(name)
    if not _handlers:
        print("wharf.handler: no @handler in %s" % ", ".join(argv),
              file=sys.stderr)
        return 65
    run()
    return 0
