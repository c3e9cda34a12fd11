"""The bench's I/O handler in Python (make bench, the handlers rows): an
async def that waits, as a call to another service does, so one program
holds many tasks at once. Type `io` waits the payload's milliseconds
(`wharf run ... io 50`); type `noop`, the bench's own tasks through
wharfd, waits IO_MS milliseconds (its payload is a tag)."""

import asyncio
import os

from wharf.handler import handler

IO_SECONDS = int(os.environ.get("IO_MS", "50")) / 1000.0


@handler("io")
async def io(task, ctx):
    await asyncio.sleep(int(task.payload) / 1000.0)


@handler("noop")
async def noop(task, ctx):
    await asyncio.sleep(IO_SECONDS)
