"""The bench's no-op handler in Python (make bench, the handlers rows): it
does nothing and succeeds, as bench/noop.c does, so the row measures the
coprocess plugin and the wharf.handler library."""

from wharf.handler import handler


@handler("noop")
def noop(task, ctx):
    return None
