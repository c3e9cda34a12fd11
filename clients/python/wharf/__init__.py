"""wharf: enqueue tasks into wharf queues from Python, read their results
and status, and cancel them, with every guarantee of the C client (the
same Lua scripts, loaded from the same files); and write task handlers
that wharf's coprocess plugin runs (wharf.handler). See README.md beside
this package, docs/protocol.md and docs/handlers.md."""

from .handler import Fail, Retry
from .errors import (Backpressure, BadInput, ConfigError, NotFound,
                     ProtocolMismatch, RedisFull, TaskCancelled, TaskDead,
                     TooLarge, Unavailable, UnservedType, UnservedTypeWarning,
                     WaitTimeout, WharfError)

__all__ = [
    "PROTOCOLS", "Client", "EnqueueResult", "TaskStatus", "CancelResult",
    "hash_id", "new_trace", "WharfError", "NotFound", "WaitTimeout",
    "TaskDead", "TaskCancelled", "BadInput", "TooLarge", "UnservedType",
    "Unavailable", "Backpressure", "RedisFull", "ProtocolMismatch",
    "ConfigError", "UnservedTypeWarning", "Retry", "Fail",
]

# The producer half needs redis-py; a handler program (wharf.handler)
# needs nothing beyond the standard library, so the client is imported
# only when one of its names is first used.
_CLIENT_NAMES = ("PROTOCOLS", "CancelResult", "Client", "EnqueueResult",
                 "TaskStatus", "hash_id", "new_trace")


def __getattr__(name):
    if name in _CLIENT_NAMES:
        from . import client

        return getattr(client, name)
    raise AttributeError("module 'wharf' has no attribute %r" % name)
