"""The errors of the wharf client: one class per exit code of the wharf
CLI, so a program and a shell script written against wharf agree on what
went wrong. Every error carries ``exit_code``."""

from __future__ import annotations

from typing import Optional


class WharfError(Exception):
    """Anything else: a bug, or a Redis answer nobody expected (exit 70)."""

    exit_code = 70


class NotFound(WharfError):
    """No such thing (yet): no result, no task to cancel (exit 1)."""

    exit_code = 1


class WaitTimeout(NotFound):
    """A wait ran out before the result came (exit 1, as the CLI's
    ``--wait``)."""


class TaskDead(WharfError):
    """The task failed for good: no result will come (exit 2)."""

    exit_code = 2

    def __init__(self, message: str, error: str = "", attempts: int = 0):
        super().__init__(message)
        self.error = error
        self.attempts = attempts


class TaskCancelled(WharfError):
    """The task was cancelled: no result will come (exit 3)."""

    exit_code = 3


class BadInput(WharfError):
    """A type, id, trace, delay or payload the protocol refuses (exit 65).
    Nothing was sent."""

    exit_code = 65


class TooLarge(BadInput):
    """The payload is over the type's ``max_payload`` (exit 65)."""

    def __init__(self, message: str, limit: int = 0):
        super().__init__(message)
        self.limit = limit


class UnservedType(BadInput):
    """A strict client refused a type no host has ever served (exit 65)."""


class Unavailable(WharfError):
    """Redis cannot be reached, or is loading or busy (exit 69)."""

    exit_code = 69


class Backpressure(WharfError):
    """The type is at its ``max_backlog``: nothing was added; try later
    (exit 75)."""

    exit_code = 75

    def __init__(self, message: str, limit: int = 0):
        super().__init__(message)
        self.limit = limit


class RedisFull(Backpressure):
    """Redis is at ``maxmemory``: nothing was written; try later
    (exit 75)."""


class ProtocolMismatch(WharfError):
    """The hosts speak a wharf protocol this client does not: nothing was
    done; upgrade the client (exit 76)."""

    exit_code = 76

    def __init__(self, message: str, host_protocol: Optional[str] = None):
        super().__init__(message)
        self.host_protocol = host_protocol


class ConfigError(WharfError):
    """A bad URL, or Redis refusing our credentials (exit 78)."""

    exit_code = 78


class UnservedTypeWarning(UserWarning):
    """Enqueued to a type no host has ever served: the tasks wait for
    nobody unless a host for it starts."""
