"""wharf: enqueue tasks into wharf queues from Python, read their results
and status, and cancel them, with every guarantee of the C client (the
same Lua scripts, loaded from the same files). See README.md beside this
package and docs/protocol.md."""

from .client import (PROTOCOLS, CancelResult, Client, EnqueueResult,
                     TaskStatus, hash_id, new_trace)
from .errors import (Backpressure, BadInput, ConfigError, NotFound,
                     ProtocolMismatch, RedisFull, TaskCancelled, TaskDead,
                     TooLarge, Unavailable, UnservedType, UnservedTypeWarning,
                     WaitTimeout, WharfError)

__all__ = [
    "PROTOCOLS", "Client", "EnqueueResult", "TaskStatus", "CancelResult",
    "hash_id", "new_trace", "WharfError", "NotFound", "WaitTimeout",
    "TaskDead", "TaskCancelled", "BadInput", "TooLarge", "UnservedType",
    "Unavailable", "Backpressure", "RedisFull", "ProtocolMismatch",
    "ConfigError", "UnservedTypeWarning",
]
