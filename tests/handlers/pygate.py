"""An async handler that holds every task until GATE_CALLS of them are in
flight at once, then answers them in the reverse of the order they came
in: one program with many tasks in flight, answered out of order. With
GATE_FILE set it writes "in ID" as each arrives and "out ID" as each is
answered, so a test can check both orders and that each came once."""

import asyncio
import os

from wharf.handler import handler

CALLS = int(os.environ.get("GATE_CALLS", "200"))
LOG = os.environ.get("GATE_FILE")

arrived = []
turns = {}
full = None


def note(line):
    if LOG:
        with open(LOG, "a") as f:
            f.write(line + "\n")


@handler("pygate")
async def gate(task, ctx):
    global full
    if full is None:
        full = asyncio.Event()
    index = len(arrived)
    arrived.append(task.id)
    turns[index] = asyncio.Event()
    note("in %s" % task.id)
    if len(arrived) == CALLS:
        full.set()
        turns[CALLS - 1].set()
    await full.wait()
    await turns[index].wait()
    note("out %s" % task.id)
    if index > 0:
        turns[index - 1].set()
    return "gate %d" % index
