"""The bench's I/O handler in Python (make bench, the handlers rows): an
async def that waits the payload's milliseconds, as a call to another
service does, so one program holds many tasks at once."""

import asyncio

from wharf.handler import handler


@handler("io")
async def io(task, ctx):
    await asyncio.sleep(int(task.payload) / 1000.0)
