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
import importlib
import inspect
import collections
import os
import queue
import select
import struct
import sys
import threading
import time
import traceback
from typing import (Any, Awaitable, Callable, Dict, List, NamedTuple, Optional,
                    Union)

__all__ = ["handler", "Retry", "Fail", "Task", "Parent", "Context", "run",
           "main", "PROTOCOL_VERSION"]

PROTOCOL_VERSION = 2  # the highest this library speaks (2: a task's parents)
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


class Parent(NamedTuple):
    """A parent of a workflow's child: "<type>:<id>", whether it finished
    ok, and its result (b"" when it is dead)."""

    name: str
    ok: bool
    result: bytes


class Task:
    """One task, as the host handed it over."""

    __slots__ = ("id", "type", "attempt", "max_attempts", "fence", "trace",
                 "enqueued_at", "payload", "parents")

    def __init__(self, id: str, type: str, attempt: int, max_attempts: int,
                 fence: int, trace: str, enqueued_at: float, payload: bytes,
                 parents: Optional[List["Parent"]] = None):
        self.id = id
        self.type = type
        self.attempt = attempt
        self.max_attempts = max_attempts
        self.fence = fence
        self.trace = trace
        self.enqueued_at = enqueued_at  # seconds since the epoch
        self.payload = payload
        # A workflow's child: what each parent ended with, in the order
        # the child named them (empty for a task without parents).
        self.parents = parents or []

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
        if not self._cancel.is_set() and self._runner.inline:
            self._runner.poll_cancel()
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
        self.version = 1  # the protocol version agreed by the hello
        self.write_lock = threading.Lock()
        self.buf = bytearray()
        self.inflight = 1
        # The sync handlers' threads: started as needed, up to inflight,
        # fed from one queue (a thread pool without a future per task,
        # and without a wake-up of the event loop per answer).
        self.jobs: "queue.SimpleQueue" = queue.SimpleQueue()
        self.threads = 0
        self.idle = 0
        # running and the counts above, shared by the loop and the threads
        self.lock = threading.Lock()
        self.closing = False
        self.running: Dict[int, tuple] = {}
        # One task at a time, sync handlers only: no event loop, no
        # threads; the loop of serve_inline reads, runs and answers.
        self.inline = False
        self.pending: collections.deque = collections.deque()
        self.eof = False
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.done: Optional[asyncio.Future] = None

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
        self.consume()

    def consume(self) -> None:
        try:
            self.frames()
        except ProtocolError as e:
            print("wharf.handler: %s" % e, file=sys.stderr)
            os._exit(70)

    def next_frame(self) -> Optional[tuple]:
        """(kind, request, body) of the first whole frame of buf, taken
        out of it; None while there is none."""
        buf = self.buf
        if len(buf) < 4:
            return None
        (length,) = _U32.unpack_from(buf, 0)
        if length < 5 or length > FRAME_MAX:
            raise ProtocolError("a frame of length %d" % length)
        if len(buf) - 4 < length:
            return None
        kind = bytes(buf[4:5])
        (request,) = _U32.unpack_from(buf, 5)
        body = bytes(buf[9:4 + length])
        del buf[:4 + length]
        return kind, request, body

    def frames(self) -> None:
        while True:
            frame = self.next_frame()
            if frame is None:
                break
            kind, request, body = frame
            if kind == b"T":
                self.task(request, body)
            elif kind == b"C":
                with self.lock:
                    entry = self.running.get(request)
                if entry is not None:
                    entry[0]._cancel.set()
                    if entry[1] is not None:
                        entry[1].cancel()
            else:
                raise ProtocolError("unexpected frame kind %r" % kind)

    def read_hello(self) -> None:
        """Reads the hello frame (blocking) and answers it."""
        while True:
            frame = self.next_frame()
            if frame is not None:
                break
            chunk = os.read(0, 1 << 16)
            if not chunk:
                sys.exit(0)
            self.buf += chunk
        if frame[0] != b"H":
            raise ProtocolError("the first frame is %r, not a hello"
                                % frame[0])
        self.hello(frame[2])

    def hello(self, body: bytes) -> None:
        offered, inflight = struct.unpack_from(">II", body)
        if offered < 1:
            raise ProtocolError("the host offers protocol version %d"
                                % offered)
        # The hello offers the host's highest version; the answer is the
        # one both speak.
        self.version = min(offered, PROTOCOL_VERSION)
        self.inflight = max(1, inflight)
        self.write(_frame(b"R", 0, _U32.pack(self.version)))

    def parse_task(self, request: int, body: bytes) -> tuple:
        attempt, max_attempts, fence, enqueued_ms, deadline_in = \
            _TASK.unpack_from(body)
        at = _TASK.size
        fields = []
        for _ in range(4):
            (n,) = _U32.unpack_from(body, at)
            fields.append(body[at + 4:at + 4 + n])
            at += 4 + n
        parents = []
        if self.version >= 2:
            (n,) = _U32.unpack_from(body, at)
            at += 4
            for _ in range(n):
                (k,) = _U32.unpack_from(body, at)
                name = body[at + 4:at + 4 + k].decode("utf-8", "replace")
                at += 4 + k
                dead = body[at]
                (k,) = _U32.unpack_from(body, at + 1)
                parents.append(Parent(name, dead == 0,
                                      body[at + 5:at + 5 + k]))
                at += 5 + k
        if at != len(body):
            raise ProtocolError("a task frame with %d bytes left over"
                                % (len(body) - at))
        deadline = (time.monotonic() + deadline_in / 1000.0
                    if deadline_in >= 0 else None)
        task = Task(fields[0].decode("utf-8", "replace"),
                    fields[1].decode("utf-8", "replace"), attempt,
                    max_attempts, fence, fields[2].decode("ascii", "replace"),
                    enqueued_ms / 1000.0, fields[3], parents)
        return task, Context(self, request, deadline)

    def no_handler(self, request: int, task: "Task") -> None:
        self.answer(request, "fail", ("no handler for type %r in this "
                                      "program" % task.type).encode())

    def task(self, request: int, body: bytes) -> None:
        task, ctx = self.parse_task(request, body)
        fn = self.handlers.get(task.type)
        if fn is None:
            self.no_handler(request, task)
            return
        if inspect.iscoroutinefunction(fn):
            job = self.loop.create_task(self.run_async(fn, task, ctx,
                                                       request))
            with self.lock:
                self.running[request] = (ctx, job)
            return
        with self.lock:
            self.running[request] = (ctx, None)
            start = self.idle == 0 and self.threads < self.inflight
            if start:
                self.threads += 1
            else:
                self.idle -= 1
        self.jobs.put((fn, task, ctx, request))
        if start:
            threading.Thread(target=self.sync_thread, daemon=True,
                             name="wharf-handler-%d" % self.threads).start()

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
            with self.lock:
                self.running.pop(request, None)
        self.check_finished()

    def run_one(self, fn, task, ctx, request) -> None:
        try:
            value = fn(task, ctx)
        except BaseException as e:  # noqa: B902
            if not isinstance(e, (Retry, Fail)):
                ctx.log(_trace(e), "warn")
            self.outcome(request, e, None)
        else:
            self.outcome(request, None, value)

    # --- one task at a time, without an event loop -----------------------

    def fill(self) -> None:
        """Moves the whole frames of buf to pending, applying cancels."""
        while True:
            frame = self.next_frame()
            if frame is None:
                return
            if frame[0] == b"C":
                entry = self.running.get(frame[1])
                if entry is not None:
                    entry[0]._cancel.set()
            else:
                self.pending.append(frame)

    def poll_cancel(self) -> None:
        """ctx.cancelled of a sync handler run inline: reads what stdin
        has without waiting, so a cancel frame sets the flag."""
        if self.eof or not select.select([0], [], [], 0)[0]:
            return
        chunk = os.read(0, 1 << 20)
        if not chunk:
            self.eof = True
            return
        self.buf += chunk
        self.fill()

    def serve_inline(self) -> None:
        self.inline = True
        while True:
            self.fill()
            if not self.pending:
                if self.eof:
                    return
                chunk = os.read(0, 1 << 20)
                if not chunk:
                    return
                self.buf += chunk
                continue
            kind, request, body = self.pending.popleft()
            if kind != b"T":
                raise ProtocolError("unexpected frame kind %r" % kind)
            task, ctx = self.parse_task(request, body)
            fn = self.handlers.get(task.type)
            if fn is None:
                self.no_handler(request, task)
                continue
            self.running[request] = (ctx, None)
            self.run_one(fn, task, ctx, request)
            del self.running[request]

    def sync_thread(self) -> None:
        """One of the sync handlers' threads: a job, its answer, the
        next."""
        while True:
            fn, task, ctx, request = self.jobs.get()
            self.run_one(fn, task, ctx, request)
            with self.lock:
                self.running.pop(request, None)
                self.idle += 1
                last = self.closing and not self.running
            if last:
                self.loop.call_soon_threadsafe(self.check_finished)

    # --- the end ---------------------------------------------------------

    def finish(self) -> None:
        """stdin closed: the host stops this program. Tasks in hand end
        first (the host waits a little, then kills)."""
        self.loop.remove_reader(0)
        with self.lock:
            self.closing = True
        self.check_finished()

    def check_finished(self) -> None:
        with self.lock:
            finished = self.closing and not self.running
        if finished and not self.done.done():
            self.done.set_result(None)

    async def serve(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.done = self.loop.create_future()
        os.set_blocking(0, False)
        self.loop.add_reader(0, self.readable)
        # Frames that came in with the hello.
        self.loop.call_soon(self.consume)
        await self.done


_frames_fd: Optional[int] = None


def _guard_stdout() -> int:
    """From here on fd 1 and sys.stdout are stderr; the frames go to a
    copy of the old fd 1, which only this module writes. main() calls it
    before the handlers' modules load, so a print at their top cannot
    reach the host as a frame. Returns the frames' fd."""
    global _frames_fd
    if _frames_fd is None:
        sys.stdout.flush()
        _frames_fd = os.dup(1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    return _frames_fd


def run(handlers: Optional[Dict[str, Handler]] = None) -> None:
    """Serves the registered handlers (or ``handlers``) on stdin and stdout
    until stdin closes. Moves what the program prints to stderr first:
    stdout carries frames only."""
    table = dict(handlers or _handlers)
    runner = _Runner(table, _guard_stdout())
    try:
        runner.read_hello()
        if runner.inflight == 1 and not any(
                inspect.iscoroutinefunction(fn) for fn in table.values()):
            runner.serve_inline()
        else:
            asyncio.run(runner.serve())
    except ProtocolError as e:
        print("wharf.handler: %s" % e, file=sys.stderr)
        os._exit(70)


def main(argv: Optional[list] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python3 -m wharf.handler MODULE [MODULE...]\n"
              "imports each MODULE (its @handler functions register) and "
              "serves them to wharf's coprocess plugin on stdin/stdout",
              file=sys.stderr)
        return 64
    _guard_stdout()
    for name in argv:
        importlib.import_module(name)
    if not _handlers:
        print("wharf.handler: no @handler in %s" % ", ".join(argv),
              file=sys.stderr)
        return 65
    run()
    return 0
