"""The chaos plugin (plugins/chaos.c) as Python handlers, word for word
and message for message, so the same task set through chaos.so, this
module and tests/handlers/nodechaos.js ends the same way:

    ok          succeed with "ok attempt=N"
    fail:N      retry while attempt <= N, then succeed
    fatal       fail at once (dead)
    later:MS    on attempt 1, retry after MS ms; then succeed
    sleep:MS    sleep MS ms, then succeed
    polite:MS   sleep in 10 ms steps until MS ms or ctx.cancelled
    crash       SIGSEGV (ctypes reads address 0)
    exit:N      os._exit(N)
    big:BYTES   succeed with BYTES bytes of 'x'
    (a payload of 512 bytes or more, or with a NUL: dead, as chaos)

and, beyond chaos: echo:... (succeed with the payload, binary-safe),
raise (an uncaught ValueError: a retry with its text), log (one ctx.log
line), parents (what the task's parents ended with, as
tests/plugins/parents.c answers), print (a line to stdout, which the library moves to stderr). Types: pychaos (sync, on the pool) and pychaos_async (async)."""

import asyncio
import ctypes
import os
import re
import time

import wharf
from wharf.handler import handler

NUMBER = re.compile(r"^(fail|later|sleep|polite|exit|big):([0-9]+)$")


def ok(task):
    return "ok attempt=%d" % task.attempt


def decide(task, ctx):
    """The outcome of every word but the sleeps: a result, or raises;
    ("sleep"/"polite", ms) for those."""
    payload = task.payload
    if payload.startswith(b"echo:"):
        return payload
    if len(payload) >= 512 or b"\0" in payload:
        raise wharf.Fail("payload is not a chaos command")
    text = payload.decode("latin-1")
    if text == "ok":
        return ok(task)
    if text == "fatal":
        raise wharf.Fail("fatal: asked to fail for good")
    if text == "crash":
        ctypes.string_at(0)
    if text == "raise":
        raise ValueError("raised on purpose")
    if text == "print":
        print("printed to stdout")
        return ok(task)
    if text == "log":
        ctx.log("a line from the handler", "info")
        return ok(task)
    if text == "parents":
        # As tests/plugins/parents.c: what each parent ended with.
        return "".join(
            "%s=ok:%s;" % (p.name, p.result.decode("latin-1")) if p.ok
            else "%s=dead;" % p.name for p in task.parents) or "none"
    m = NUMBER.match(text)
    if m is None:
        raise wharf.Fail("unknown chaos command '%s'" % text)
    word, n = m.group(1), int(m.group(2))
    if word == "fail":
        if task.attempt <= n:
            raise wharf.Retry("fail:%d: attempt %d fails" % (n, task.attempt))
        return ok(task)
    if word == "later":
        if task.attempt > 1:
            return ok(task)
        raise wharf.Retry("later:%d: asked to come back in %d ms" % (n, n),
                          delay=n / 1000.0)
    if word == "exit":
        os._exit(n)
    if word == "big":
        return b"x" * n
    return (word, n)


@handler("pychaos")
def chaos_sync(task, ctx):
    outcome = decide(task, ctx)
    if not isinstance(outcome, tuple):
        return outcome
    word, n = outcome
    end = time.monotonic() + n / 1000.0
    while time.monotonic() < end and not (word == "polite" and ctx.cancelled):
        time.sleep(0.01)
    return ok(task)


@handler("pychaos_async")
async def chaos_async(task, ctx):
    outcome = decide(task, ctx)
    if not isinstance(outcome, tuple):
        return outcome
    await asyncio.sleep(outcome[1] / 1000.0)
    return ok(task)
