"""An async handler that holds tasks, for the tests of one program shared
by a worker's threads. Payload `hold`: wait until the program is killed
or the task cancelled; `wait`: wait until the file HOLD_FILE.go exists;
anything else: answer at once. Each held task writes "in ID PID" to
HOLD_FILE as it arrives; every answer is "ok PID", so a test can tell
the programs apart."""

import asyncio
import os

from wharf.handler import handler

LOG = os.environ["HOLD_FILE"]


def note(line):
    with open(LOG, "a") as f:
        f.write(line + "\n")


async def hold(task, ctx):
    what = task.payload.decode("latin1")
    if what in ("hold", "wait"):
        note("in %s %d" % (task.id, os.getpid()))
    if what == "hold":
        await asyncio.Event().wait()
    if what == "wait":
        while not os.path.exists(LOG + ".go"):
            await asyncio.sleep(0.01)
    return "ok %d" % os.getpid()


handler("pyhold")(hold)
handler("pyhold_short")(hold)
handler("pynarrow")(hold)
