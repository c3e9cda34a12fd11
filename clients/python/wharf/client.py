"""The wharf producer client: enqueue, results, status and cancel, with the
same scripts, keys and rules as the C client (docs/protocol.md)."""

from __future__ import annotations

import datetime
import hashlib
import inspect
import re
import urllib.parse
import os
import secrets
import socket
import ssl
import time
import warnings
from dataclasses import dataclass
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Union

import redis
import redis.cluster
import redis.connection
import redis.sentinel

from . import errors
from . import scripts as lua

#: The wharf protocol versions this client speaks (docs/protocol.md).
PROTOCOLS = ("1",)

Payload = Union[bytes, str]
Seconds = Union[float, int, datetime.timedelta]

GROUP = "wharf"
DEFAULT_URL = "redis://127.0.0.1:6379"
DEFAULT_PREFIX = "wharf"
# The policy used while no host has published one for a type.
DEFAULT_POLICY = dict(max_payload="1048576", max_backlog="0",
                      idempotency="payload", idempotency_ttl="300000")
# The reply words this client reads, by script (each checked against the
# script's header when the scripts are loaded).
_WORDS = {
    "enqueue": ("OK", "DUPLICATE", "TOO_LARGE", "BACKPRESSURE", "UNSERVED",
                "PROTOCOL"),
    "status": ("done", "dead", "cancelled", "unknown", "running",
               "PROTOCOL"),
    "cancel": ("REMOVED", "CANCELLING", "CANCELLED", "FINISHED", "UNKNOWN",
               "PROTOCOL"),
}
# As the C client: tasks and payload bytes per script call, tasks per
# pipelined round trip, so every client costs Redis the same per task.
CALL_TASKS = 100
CALL_BYTES = 1024 * 1024
ROUND_TASKS = 500
MAX_DELAY_MS = 100 * 365 * 24 * 3600 * 1000
POLL_FIRST_S, POLL_MAX_S = 0.005, 0.1

_TYPE = re.compile(rb"^[A-Za-z0-9._-]{1,100}\Z")
_ID = re.compile(rb"^[\x21-\x7e]{1,200}\Z")
_PREFIX = re.compile(rb"^[\x21-\x7a\x7c\x7e]{1,100}\Z")  # no { or }
_TRACE = re.compile(rb"^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}\Z")

TYPE_RULE = "use 1-100 of A-Z a-z 0-9 . _ -"
ID_RULE = "use 1-200 printable ASCII characters, no spaces"
TRACE_RULE = "expected 00-<32 hex>-<16 hex>-<2 hex>"


class EnqueueResult(NamedTuple):
    """What Redis answered for one task."""

    id: str
    duplicate: bool  #: already enqueued: nothing was added
    pressure: bool  #: the type's backlog is high: slow down
    unserved: bool  #: no host has ever served the type


@dataclass
class TaskStatus:
    """Where a task is (``Client.status``). Times are ms since the epoch
    (Redis time); a field that does not apply to the state is None."""

    state: str  #: queued, running, delayed, done, dead, cancelled, held,
    #: unknown
    now_ms: int
    entry: Optional[str] = None
    attempt: Optional[int] = None  #: dead: the attempts it used
    enqueued_at_ms: Optional[int] = None
    worker: Optional[str] = None  #: running: the consumer holding it
    since_ms: Optional[int] = None  #: running: when its run began
    cancel_requested: Optional[bool] = None
    due_at_ms: Optional[int] = None
    died_at_ms: Optional[int] = None
    error: Optional[str] = None  #: delayed: the last error; dead: its error
    result_bytes: Optional[int] = None
    expires_in_ms: Optional[int] = None
    waits_for: Optional[str] = None  #: held: "type:id,..." not ended yet
    #: queued, running, delayed, dead: the task's own options, if it was
    #: enqueued with them
    timeout_ms: Optional[int] = None
    max_attempts: Optional[int] = None
    expires_at_ms: Optional[int] = None


class CancelResult(NamedTuple):
    """What ``Client.cancel`` did: outcome is "removed" (it was waiting:
    detail "queued" or "delayed"), "cancelling" (a worker holds it: detail
    is that consumer; its run is asked to end and writes no result) or
    "already" (cancelled before)."""

    outcome: str
    detail: str


def _bytes(payload: Payload) -> bytes:
    if isinstance(payload, bytes):
        return payload
    if isinstance(payload, str):
        return payload.encode("utf-8")
    raise errors.BadInput(
        f"payload must be bytes or str, not {type(payload).__name__}")


def _quote(text: Union[str, bytes], n: int = 100) -> str:
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    text = "".join(c if " " <= c <= "~" else "?" for c in text)
    return text if len(text) < n else text[: n - 4] + "..."


def _checked(value: str, pattern, what: str, rule: str) -> bytes:
    """value's bytes when they match pattern, else BadInput saying why."""
    raw = value.encode("utf-8") if isinstance(value, str) else b""
    if not pattern.match(raw):
        raise errors.BadInput(
            f"{what} '{_quote(str(value))}' is not valid: {rule}")
    return raw


def _check_type(type_: str) -> bytes:
    return _checked(type_, _TYPE, "type", TYPE_RULE)


def _check_id(id_: str) -> bytes:
    return _checked(id_, _ID, "task id", ID_RULE)


def _check_trace(trace: str) -> bytes:
    raw = trace.encode("utf-8") if isinstance(trace, str) else b""
    m = _TRACE.match(raw)
    if not m or set(m.group(1)) == {ord("0")} or set(m.group(2)) == {ord("0")}:
        raise errors.BadInput(
            f"trace '{_quote(str(trace))}' is not a W3C traceparent: "
            f"{TRACE_RULE}")
    return raw


def _ms(value: Optional[Seconds], what: str) -> int:
    if value is None:
        return 0
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise errors.BadInput(f"{what} must be seconds (a number) or a "
                              f"timedelta")
    ms = int(round(value * 1000))
    if ms < 0 or ms > MAX_DELAY_MS:
        raise errors.BadInput(
            f"{what} of {ms} ms is out of range: use 0 up to 100 years")
    return ms


# The bounds of per-task options: the manifest's for timeout and
# max_attempts, the hosts' last readable time for an expiry.
MAX_TIMEOUT_MS = 30 * 24 * 3600 * 1000
MAX_ATTEMPTS = 1000
MAX_TIME_MS = 253402300799999


def _options(timeout: Optional[Seconds], max_attempts: Optional[int],
             expire_in: Optional[Seconds],
             expires: Optional[datetime.datetime]) -> str:
    """A task's options as enqueue.lua takes them ("" for none), checked
    (docs/protocol.md)."""
    out = []
    if timeout is not None:
        ms = _ms(timeout, "timeout")
        if ms < 1 or ms > MAX_TIMEOUT_MS:
            raise errors.BadInput(f"timeout of {ms} ms is out of range: use "
                                  f"1 ms up to 30 days")
        out += ["timeout_ms", str(ms)]
    if max_attempts is not None:
        if isinstance(max_attempts, bool) or \
                not isinstance(max_attempts, int) or \
                not 1 <= max_attempts <= MAX_ATTEMPTS:
            raise errors.BadInput(f"max_attempts {max_attempts!r} is out of "
                                  f"range: use 1 up to {MAX_ATTEMPTS}")
        out += ["max_attempts", str(max_attempts)]
    if expire_in is not None and expires is not None:
        raise errors.BadInput("give expire_in or expires, not both")
    at = None
    if expire_in is not None:
        ms = _ms(expire_in, "expire_in")
        if ms < 1:
            raise errors.BadInput("expire_in must be 1 ms or more")
        at = int(time.time() * 1000) + ms
    if expires is not None:
        if not isinstance(expires, datetime.datetime) or \
                expires.tzinfo is None:
            raise errors.BadInput("expires must be a datetime with a "
                                  "time zone")
        at = int(expires.timestamp() * 1000)
        if at <= int(time.time() * 1000):
            raise errors.BadInput(f"expires {expires.isoformat()} is in the "
                                  f"past")
    if at is not None:
        if at > MAX_TIME_MS:
            raise errors.BadInput("the expiry is after the year 9999")
        out += ["expires_at", str(at)]
    return " ".join(out)


def new_trace() -> str:
    """A new W3C traceparent "00-<trace id>-<parent id>-01"."""
    b = bytearray(secrets.token_bytes(24))
    b[15] |= 1  # an all-zero id is invalid
    b[23] |= 1
    return f"00-{b[:16].hex()}-{b[16:].hex()}-01"


def hash_id(type_: str, payload: Payload) -> str:
    """The id of a task with no id given: hex SHA-256 of type "\\n"
    payload."""
    return hashlib.sha256(_check_type(type_) + b"\n" +
                          _bytes(payload)).hexdigest()


def _tls_cause(e: BaseException) -> Optional[ssl.SSLError]:
    """The TLS error behind a redis-py exception (which wraps it), if any."""
    while e is not None:
        if isinstance(e, ssl.SSLError):
            return e
        e = e.__cause__ or e.__context__
    return None


class _TLSMismatch(redis.exceptions.ConnectionError):
    """TLS on one side only: a TLS client at a plain port, or a plain
    client at a TLS port. Configuration, as for the C client."""


def _error_of(e: Exception, where: str, what: str) -> errors.WharfError:
    """The wharf error for a redis-py exception. A failed TLS handshake (a
    certificate not trusted, expired or for another name, a client
    certificate refused) and TLS on one side only are configuration, as
    for the C client."""
    if isinstance(e, _TLSMismatch):
        return errors.ConfigError(f"{what}: {where}: {e}")
    tls = _tls_cause(e)
    if isinstance(tls, ssl.SSLCertVerificationError):
        return errors.ConfigError(f"{what}: {where}: TLS: certificate verify "
                                  f"failed: {tls.verify_message}")
    if tls is not None:
        reason = getattr(tls, "reason", None) or str(tls)
        return errors.ConfigError(f"{what}: {where}: TLS: {reason}")
    if isinstance(e, redis.exceptions.AuthenticationError):
        return errors.ConfigError(f"{what}: {where}: {e}")
    if isinstance(e, (redis.exceptions.ConnectionError,
                      redis.exceptions.TimeoutError)):
        return errors.Unavailable(f"{what}: {where}: {e}")
    text = str(e)
    if text.startswith("OOM"):
        return errors.RedisFull(
            f"{where}: Redis is out of memory (maxmemory reached)")
    if text.startswith(("NOAUTH", "WRONGPASS")):
        return errors.ConfigError(f"{what}: {where}: {text}")
    if re.match(r"^(LOADING|BUSY|MASTERDOWN|TRYAGAIN|READONLY|CLUSTERDOWN)\b",
                text):
        return errors.Unavailable(f"{what}: redis answered: {text}")
    return errors.WharfError(f"{what}: redis answered: {text}")


def _seeds(text: str, default_port: int, url: str):
    """[(host, port)] of "h1:p1,h2,[::1]:p3", each port default_port
    unless given."""
    out = []
    for part in text.split(","):
        m = re.match(r"^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._-]+))"
                     r"(?::([0-9]{1,5}))?$", part)
        port = int(m.group(3)) if m and m.group(3) else default_port
        if not m or not 1 <= port <= 65535:
            raise errors.ConfigError(
                f"bad Redis URL '{redact(url)}': expected host:port"
                f"[,host:port...]")
        out.append((m.group(1) or m.group(2), port))
    return out


#: The TLS query parameters of a rediss URL, as the C client reads them.
TLS_PARAMS = ("tls_ca", "tls_cert", "tls_key", "tls_sni", "tls_verify")
#: The sentinels' own credentials, query parameters of a sentinel URL.
SENTINEL_PARAMS = ("sentinel_user", "sentinel_password")


def redact(url: str) -> str:
    """url for a message: quoted, with whatever could be a password (after
    the user name, up to the last '@') shown as ***, as the C core does."""
    start = url.find("://")
    start = start + 3 if start >= 0 else 0
    at = url.rfind("@", start, len(url.partition("?")[0]))
    if at < 0:
        return _quote(re.sub(r"([?&]sentinel_password=)[^&]*", r"\1***", url))
    colon = url.find(":", start, at)
    keep = colon + 1 if colon >= 0 else start
    return _quote(re.sub(r"([?&]sentinel_password=)[^&]*", r"\1***",
                         url[:keep] + "***" + url[at:]))


def _sentinel_options(url: str):
    """(url without the sentinels' credentials, redis-py's keywords for
    the sentinels) for a sentinel URL with sentinel_user and
    sentinel_password (the URL's own user and password are the
    master's); (url, {}) for any other."""
    base, _, query = url.partition("?")
    if not re.match(r"^rediss?\+sentinel://", url):
        if re.search(r"(^|&)sentinel_(user|password)=", query):
            raise errors.ConfigError(
                f"bad Redis URL '{redact(url)}': sentinel_user and "
                f"sentinel_password are for redis+sentinel:// only")
        return url, {}
    if not query:
        return url, {}
    kw, rest = {}, []
    for part in query.split("&"):
        name, eq, value = part.partition("=")
        if eq and name in SENTINEL_PARAMS:
            if ("username" if name == "sentinel_user" else "password") in kw:
                raise errors.ConfigError(
                    f"bad Redis URL '{redact(url)}': {name} is given twice")
            kw["username" if name == "sentinel_user" else "password"] = \
                urllib.parse.unquote(value)
        else:
            rest.append(part)
    return base + ("?" + "&".join(rest) if rest else ""), kw


def _tls_options(url: str):
    """(url without its TLS query, redis-py's connection keywords) for a
    rediss URL: tls_ca (a file or a folder), tls_cert, tls_key and
    tls_verify (yes/no), each at most once. The certificate and the host
    name are checked unless tls_verify=no. (None, {}) for any other URL."""
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme.startswith("rediss"):
        if "?" in rest and not url.startswith("unix://") and \
                any(p in rest for p in TLS_PARAMS):
            raise errors.ConfigError(
                f"bad Redis URL '{redact(url)}': query parameters (tls_ca, "
                f"...) need rediss://, a TLS address")
        return url, {}
    base, _, query = url.partition("?")
    opts = {}
    for part in query.split("&") if query else ():
        name, eq, value = part.partition("=")
        if not eq or name not in TLS_PARAMS:
            raise errors.ConfigError(
                f"bad Redis URL '{redact(url)}': unknown query parameter "
                f"'{_quote(name)}' (known: "
                f"{', '.join(TLS_PARAMS + SENTINEL_PARAMS)})")
        if name in opts:
            raise errors.ConfigError(
                f"bad Redis URL '{redact(url)}': {name} is given twice")
        opts[name] = urllib.parse.unquote(value)
    verify = opts.get("tls_verify", "yes")
    if verify not in ("yes", "no", "true", "false", "1", "0"):
        raise errors.ConfigError(
            f"bad Redis URL '{redact(url)}': tls_verify: expected yes or no")
    verify = verify in ("yes", "true", "1")
    if "tls_sni" in opts and not re.match(r"^[A-Za-z0-9.:_-]{1,253}$",
                                          opts["tls_sni"]):
        raise errors.ConfigError(
            f"bad Redis URL '{redact(url)}': tls_sni: expected a host name")
    for name in ("tls_ca", "tls_cert", "tls_key"):
        if name in opts and not os.access(opts[name], os.R_OK):
            raise errors.ConfigError(
                f"bad Redis URL '{redact(url)}': cannot read {name} "
                f"'{_quote(opts[name])}'")
    kw = dict(ssl=True, ssl_cert_reqs="required" if verify else "none",
              ssl_check_hostname=verify)
    ca = opts.get("tls_ca")
    if ca:
        kw["ssl_ca_path" if os.path.isdir(ca) else "ssl_ca_certs"] = ca
    if "tls_cert" in opts:
        kw["ssl_certfile"] = opts["tls_cert"]
        kw["ssl_keyfile"] = opts.get("tls_key") or opts["tls_cert"]
    elif "tls_key" in opts:
        raise errors.ConfigError(
            f"bad Redis URL '{redact(url)}': tls_key needs tls_cert")
    if "tls_sni" in opts:
        kw["tls_sni"] = opts["tls_sni"]
    return scheme[:5] + scheme[6:] + "://" + base.partition("://")[2], kw


#: What OpenSSL says when the other side does not speak TLS at all.
_NOT_TLS = ("WRONG_VERSION_NUMBER", "PACKET_LENGTH_TOO_LONG",
            "RECORD_LAYER_FAILURE")


class _PlainConnection(redis.connection.Connection):
    """redis-py's TCP connection, telling a TLS port by the way it drops a
    plain client's first bytes at once, where a plain Redis always
    answers, even with an error."""

    def on_connect(self):
        try:
            super().on_connect()
            self.send_command("PING")
            self.read_response()
        except redis.exceptions.ResponseError:
            pass  # an answer: a Redis that speaks plain (NOAUTH, ...)
        except redis.exceptions.ConnectionError as e:
            if isinstance(e, (redis.exceptions.AuthenticationError,
                              _TLSMismatch)):
                raise
            self.disconnect()
            raise _TLSMismatch(f"{e} (is this a TLS port? use rediss://)") \
                from None


class _TLSConnection(redis.connection.SSLConnection):
    """redis-py's TLS connection with the server name (SNI, and the name
    checked) of tls_sni when given, else the host, and a handshake that a
    plain Redis does not answer told as such (redis-py 4.3 takes no
    server name but the host)."""

    tls_sni = None

    def _connect(self):
        sock = redis.connection.Connection._connect(self)
        context = ssl.create_default_context()
        context.check_hostname = self.check_hostname
        context.verify_mode = self.cert_reqs
        if self.certfile or self.keyfile:
            context.load_cert_chain(certfile=self.certfile,
                                    keyfile=self.keyfile)
        if self.ca_certs is not None or self.ca_path is not None:
            context.load_verify_locations(cafile=self.ca_certs,
                                          capath=self.ca_path)
        try:
            return context.wrap_socket(
                sock, server_hostname=self.tls_sni or self.host)
        except socket.timeout:
            sock.close()
            # A plain Redis reads the ClientHello as the start of a
            # command and waits for its end.
            raise _TLSMismatch(
                "TLS: no handshake answer within the timeout (is this port "
                "plain Redis? use redis://)") from None
        except ssl.SSLError as e:
            sock.close()
            if getattr(e, "reason", None) in _NOT_TLS:
                raise _TLSMismatch(
                    f"TLS: handshake failed: {e.reason.lower()} (is this "
                    f"port plain Redis? use redis://)") from None
            raise


def _bound(base, settings):
    """base with settings (keywords) given to every connection it makes:
    how the TLS settings reach a Redis Cluster's nodes (redis-py 4.3 drops
    ssl_check_hostname and ssl_ca_path from what it passes them) and a
    Sentinel's master, whose pools take a connection class but not every
    ssl_ keyword."""
    settings = dict(settings)
    sni = settings.pop("tls_sni", None)

    class Bound(base):
        tls_sni = sni

        def __init__(self, **kw):
            kw.update(settings)
            super().__init__(**kw)

    return Bound


def _tls_connection_class(tls):
    """The TLS connection class with tls's settings bound."""
    return _bound(_TLSConnection, {k: v for k, v in tls.items() if k != "ssl"})


class _SentinelTLSConnection(redis.sentinel.SentinelManagedConnection,
                             _TLSConnection):
    """A Sentinel's master over TLS, as _TLSConnection."""


def _open(url: str, password: Optional[str], timeout: float):
    """The redis-py client for url: redis:// and unix:// as redis-py reads
    them; redis+cluster://[user:pw@]h1:p1,h2:p2 (a Redis Cluster: redis-py
    follows MOVED and ASK, every key of a type is in one slot) and
    redis+sentinel://[user:pw@]s1:p1,s2:p2/MASTER[/db] (the master the
    sentinels name, found again after a failover), as the C client; each
    of the three over TLS as rediss, rediss+cluster and rediss+sentinel,
    with the C client's query parameters."""
    url, sentinel_auth = _sentinel_options(url)
    url, tls = _tls_options(url)
    for scheme, default_port in (("redis+cluster://", 6379),
                                 ("redis+sentinel://", 26379)):
        if not url.startswith(scheme):
            continue
        rest = url[len(scheme):]
        user = pw = None
        head = rest.split("/", 1)[0]
        if "@" in head:
            auth, rest = rest.split("@", 1)
            if ":" in auth:
                user, pw = auth.split(":", 1)
            else:
                pw = auth
            user = urllib.parse.unquote(user) if user else None
            pw = urllib.parse.unquote(pw) if pw else None
        if password is not None:
            pw = password
        hosts, _, path = rest.partition("/")
        seeds = _seeds(hosts, default_port, url)
        common = dict(username=user, password=pw, socket_timeout=timeout,
                      socket_connect_timeout=timeout)
        if scheme == "redis+cluster://":
            if path not in ("", "0"):
                raise errors.ConfigError(
                    f"bad Redis URL '{redact(url)}': a Redis Cluster has "
                    f"database 0 only")
            if tls:
                common["connection_class"] = _tls_connection_class(tls)
            try:
                return redis.cluster.RedisCluster(
                    startup_nodes=[redis.cluster.ClusterNode(h, p)
                                   for h, p in seeds], **common)
            except redis.exceptions.RedisClusterException as e:
                text = str(e)
                if "cluster support disabled" in text or \
                        "Cluster mode is not enabled" in text:
                    raise errors.ConfigError(
                        f"{hosts} is not in cluster mode (cluster-enabled "
                        f"no): use redis:// for a single Redis") from None
                raise errors.Unavailable(f"{hosts}: {text}") from None
            except redis.exceptions.RedisError as e:
                raise _error_of(e, hosts, "connect") from None
        name, _, db = path.partition("/")
        if not re.match(r"^[A-Za-z0-9._-]+$", name) or \
                (db and not db.isdigit()):
            raise errors.ConfigError(
                f"bad Redis URL '{redact(url)}': expected redis+sentinel://"
                f"host:port[,host:port...]/MASTER[/db]")
        if tls:
            # The master's pool takes the class; the sentinels' own
            # connections are redis-py's, named by their hosts.
            common["connection_class"] = _bound(
                _SentinelTLSConnection,
                {k: v for k, v in tls.items() if k != "ssl"})
        return redis.sentinel.Sentinel(
            seeds, socket_timeout=timeout,
            sentinel_kwargs=dict(socket_timeout=timeout,
                                 **{k: v for k, v in tls.items()
                                    if k != "tls_sni"},
                                 **sentinel_auth)).master_for(
                name, db=int(db or 0), **common)
    common = dict(password=password, socket_timeout=timeout)
    if tls:
        # from_url's scheme picks redis-py's class unless one is given.
        url = "rediss" + url[len("redis"):]
        common["connection_class"] = _tls_connection_class(tls)
    elif url.startswith("redis://"):
        common["connection_class"] = _PlainConnection
    # A unix socket's connection class takes socket_connect_timeout only
    # from redis-py 4.5 (4.3, Debian's, refuses it when it first connects;
    # there socket_timeout bounds the connect too).
    if not url.startswith("unix://") or _accepts(
            redis.connection.UnixDomainSocketConnection,
            "socket_connect_timeout"):
        common["socket_connect_timeout"] = timeout
    return redis.Redis.from_url(url, **common)


def _accepts(cls, name: str) -> bool:
    """Whether cls(name=...) is accepted: a parameter of its __init__ or,
    through **kwargs, of a base class's."""
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or klass is object:
            continue
        params = inspect.signature(klass.__init__).parameters
        if name in params:
            return True
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            return False
    return False


class _Task(NamedTuple):
    type: str
    type_raw: bytes
    payload: bytes
    id: Optional[bytes]
    trace: bytes
    delay_ms: int
    options: str = ""  # enqueue.lua's ARGV options ("" for none)


class Client:
    """A connection to one Redis and one key prefix. Not thread-safe: use
    one client per thread (redis-py's connection pool is shared safely).

    ``url`` is ``redis://[user:password@]host[:port][/db]``,
    ``unix:///path[?db=N]``, a Redis Cluster
    ``redis+cluster://host:port[,host:port...]`` or a master Redis Sentinel
    watches, ``redis+sentinel://host:port[,host:port...]/MASTER[/db]``; ``strict=True`` refuses (``UnservedType``)
    tasks of a type no host has ever published a policy for, where the
    default only warns (``UnservedTypeWarning``). ``lua_dir`` names the
    folder of the .lua scripts (default: ``WHARF_LUA_DIR``, the source
    tree's sdk/lua, then ``share/wharf`` under the usual prefixes)."""

    def __init__(self, url: str = DEFAULT_URL, *, prefix: str = DEFAULT_PREFIX,
                 password: Optional[str] = None, strict: bool = False,
                 timeout: float = 5.0, lua_dir: Optional[str] = None):
        if not _PREFIX.match(prefix.encode("utf-8")):
            raise errors.BadInput(
                f"key prefix '{_quote(prefix)}' is not valid: use 1-100 "
                f"printable ASCII characters, no spaces or braces")
        try:
            self._redis = _open(url, password, timeout)
        except ValueError as e:
            raise errors.ConfigError(
                f"bad Redis URL '{redact(url)}': {e}") from None
        self._where = re.sub(r"//[^@/]*@", "//", url.partition("?")[0])
        self.prefix = prefix
        self.strict = strict
        self._scripts = lua.load(lua_dir)
        try:
            for name, words in _WORDS.items():
                self._scripts[name].spec.check_words(words)
        except ValueError as e:
            raise errors.ConfigError(f"wharf: {e}") from None
        self._loaded = set()  # scripts SCRIPT LOADed on this connection
        self._types_added = set()  # types this client SADDed to P:types
        self._warned = set()

    def close(self) -> None:
        """Closes the connections."""
        self._redis.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- where commands go ----

    def _redis_for(self, type_: str) -> redis.Redis:
        """The connection that serves type_'s keys (all of a type's keys
        share one hash tag, {type}): on a Redis Cluster redis-py's cluster
        client, which sends each command to the node owning its slot."""
        return self._redis

    def _redis_global(self) -> redis.Redis:
        """The connection for keys of no type (<prefix>:types)."""
        return self._redis

    def _key(self, type_: str, what: str, id_: Optional[str] = None) -> str:
        key = f"{self.prefix}:{{{type_}}}:{what}"
        return key if id_ is None else f"{key}:{id_}"

    def _keys(self, name: str, type_: str,
              id_: Optional[str] = None) -> List[str]:
        """The numbered keys of script name, as its header states them,
        for type_ (and task id_)."""
        return [self._key(type_, k.what, id_ if k.form == "task" else None)
                for k in self._scripts[name].spec.keys]

    def _call(self, type_: str, name: str, keys: Sequence, args: Sequence):
        """EVALSHA of script name; on NOSCRIPT, SCRIPT LOAD and again."""
        r = self._redis_for(type_)
        s = self._scripts[name]
        try:
            if isinstance(r, redis.cluster.RedisCluster) and \
                    name not in self._loaded:
                # On every primary first: redis-py logs each NOSCRIPT a
                # cluster answers as an error.
                r.script_load(s.source)
                self._loaded.add(name)
            try:
                return r.evalsha(s.sha, len(keys), *keys, *args)
            except redis.exceptions.NoScriptError:
                r.script_load(s.source)
                return r.evalsha(s.sha, len(keys), *keys, *args)
        except redis.exceptions.RedisError as e:
            raise _error_of(e, self._where, name) from None

    def _protocol_error(self, type_: str, host) -> errors.ProtocolMismatch:
        host = host.decode() if isinstance(host, bytes) else str(host)
        return errors.ProtocolMismatch(
            f"the hosts serving '{type_}' speak wharf protocol {host}; this "
            f"client speaks {','.join(PROTOCOLS)}: upgrade it", host)

    # ---- enqueue ----

    def _task(self, type_: str, payload: Payload, id: Optional[str],
              delay: Optional[Seconds], trace: Optional[str]) -> _Task:
        raw = _check_type(type_)
        return _Task(type_, raw, _bytes(payload),
                     _check_id(id) if id is not None else None,
                     _check_trace(trace) if trace is not None
                     else new_trace().encode(), _ms(delay, "delay"))

    def _build(self, tasks: List[_Task]) -> (List, List):
        """KEYS and ARGV of one enqueue.lua call (sdk/lua/enqueue.lua)."""
        t0 = tasks[0]
        delayed = t0.delay_ms > 0
        spec = self._scripts["enqueue"].spec
        keys = self._keys("enqueue", t0.type)
        for t in tasks:
            if t.id is not None:
                id1 = id2 = t.id.decode()
            else:
                id1 = hashlib.sha256(t.type_raw + b"\n" + t.payload).hexdigest()
                id2 = secrets.token_hex(16)
            ids = {"id1": id1, "id2": id2}
            keys += [self._key(t.type, k.what, ids[k.placeholder])
                     for k in spec.each_keys]
        skip = len(self._key(t0.type, "seen:"))
        args = spec.argv(type=t0.type, id_offset=str(skip),
                         delayed="1" if delayed else "0", **DEFAULT_POLICY,
                         protocols=",".join(PROTOCOLS),
                         strict="1" if self.strict else "0",
                         options=t0.options)
        for t in tasks:
            args += [t.payload, t.trace]
            if delayed:
                args.append(str(t.delay_ms))
        return keys, args

    def _parse(self, tasks: List[_Task], reply) -> List:
        """Each task's EnqueueResult, or the error it was refused with."""
        if not isinstance(reply, list) or len(reply) != 1 + 3 * len(tasks):
            raise errors.WharfError(
                "enqueue: the enqueue script gave an unexpected reply")
        flags = int(reply[0])
        out = []
        for i, t in enumerate(tasks):
            word, id_, limit = reply[1 + 3 * i: 4 + 3 * i]
            word, id_ = word.decode(), id_.decode()
            if word in ("OK", "DUPLICATE"):
                out.append(EnqueueResult(id_, word == "DUPLICATE",
                                         bool(flags & 1), bool(flags & 2)))
            elif word == "TOO_LARGE":
                out.append(errors.TooLarge(
                    f"payload of {len(t.payload)} bytes is over max_payload "
                    f"{limit} of type '{t.type}'", int(limit)))
            elif word == "BACKPRESSURE":
                out.append(errors.Backpressure(
                    f"type '{t.type}' is at its backlog limit (max_backlog "
                    f"{limit}): try later", int(limit)))
            elif word == "UNSERVED":
                out.append(errors.UnservedType(
                    self._unserved_message(t.type) + "; refused (strict)"))
            elif word == "PROTOCOL":
                out.append(self._protocol_error(t.type, limit))
            else:
                out.append(errors.WharfError(
                    f"enqueue: the enqueue script answered '{word[:40]}'"))
        return out

    def _unserved_message(self, type_: str) -> str:
        """no host serves 'T'; served types: a, b (as the CLI says it)."""
        try:
            g = self._redis_global()
            names = sorted(m.decode() for m in
                           g.smembers(f"{self.prefix}:types"))
            served = [n for n in names
                      if self._redis_for(n).exists(self._key(n, "policy"))]
        except redis.exceptions.RedisError:
            served = []
        if served:
            return (f"no host serves '{type_}'; served types: "
                    f"{', '.join(served)}")
        return f"no host serves '{type_}'; no host serves any type yet"

    def _after(self, tasks: List[_Task], results: List) -> None:
        """Adds to <prefix>:types, once per type per client, the types of
        tasks that were added; warns once per type no host serves."""
        new = []
        for t, r in zip(tasks, results):
            if isinstance(r, EnqueueResult) and not r.duplicate:
                if t.type not in self._types_added and t.type not in new:
                    new.append(t.type)
            if isinstance(r, EnqueueResult) and r.unserved and \
                    t.type not in self._warned:
                self._warned.add(t.type)
                warnings.warn(errors.UnservedTypeWarning(
                    self._unserved_message(t.type)), stacklevel=3)
        if not new:
            return
        try:
            p = self._redis_global().pipeline(transaction=False)
            for type_ in new:
                p.sadd(f"{self.prefix}:types", type_)
            p.execute()
        except redis.exceptions.RedisError as e:
            raise _error_of(e, self._where, "enqueue: adding the type") \
                from None
        self._types_added.update(new)

    def enqueue(self, type: str, payload: Payload = b"", *,
                id: Optional[str] = None, delay: Optional[Seconds] = None,
                trace: Optional[str] = None,
                wait: Optional[Seconds] = None,
                timeout: Optional[Seconds] = None,
                max_attempts: Optional[int] = None,
                expire_in: Optional[Seconds] = None,
                expires: Optional[datetime.datetime] = None) -> EnqueueResult:
        """Enqueues one task with one atomic script in Redis and returns
        its id and whether it was a duplicate (then nothing was added).

        ``id`` is the task's idempotency key (default: the SHA-256 of type
        and payload, or random when the type's idempotency is none);
        ``delay`` (seconds or a timedelta) runs it no sooner than that;
        ``trace`` passes a W3C traceparent on (one is made otherwise);
        ``wait`` keeps trying for that long while the type refuses tasks
        with backpressure or Redis is full. Per-task options (a retry
        keeps them): ``timeout`` (seconds, 1 ms to 30 days; a run gets the
        shorter of it and the type's), ``max_attempts`` (1 to 1000,
        instead of the type's), ``expire_in`` (seconds) or ``expires`` (an
        aware datetime): an attempt not begun by then does not run, and
        the task is dead with "expired". Raises BadInput, TooLarge,
        UnservedType, Backpressure, RedisFull, ProtocolMismatch,
        Unavailable, ConfigError or WharfError."""
        task = self._task(type, payload, id, delay, trace)._replace(
            options=_options(timeout, max_attempts, expire_in, expires))
        deadline = time.monotonic() + _ms(wait, "wait") / 1000
        step = 0.0
        while True:
            keys, args = self._build([task])
            result = self._parse([task], self._call(type, "enqueue", keys,
                                                    args))[0]
            if not isinstance(result, errors.Backpressure):
                break
            left = deadline - time.monotonic()
            if left <= 0:
                break
            step = min(1.0, step * 2 if step else 0.01)
            time.sleep(min(step, left))
        if isinstance(result, Exception):
            raise result
        self._after([task], [result])
        return result

    def enqueue_many(self, type: str, payloads: Iterable[Payload], *,
                     delay: Optional[Seconds] = None,
                     timeout: Optional[Seconds] = None,
                     max_attempts: Optional[int] = None,
                     expire_in: Optional[Seconds] = None,
                     expires: Optional[datetime.datetime] = None) -> List:
        """Enqueues many tasks of one type, pipelined: one script call per
        run of up to 100 tasks (1 MiB of payloads), one round trip per 500
        tasks, each task judged by the script exactly as if enqueued alone.
        Returns one entry per payload, in order: its EnqueueResult, or the
        error it was refused with (TooLarge, Backpressure, ...), not
        raised. Raises (BadInput before anything is sent; Unavailable and
        the like) only when the batch as a whole failed: then some tasks
        may have been added, and enqueueing them again is safe (dedupe).
        The per-task options are enqueue's, the same for every task."""
        options = _options(timeout, max_attempts, expire_in, expires)
        tasks = [self._task(type, p, None, delay, None)._replace(
            options=options) for p in payloads]
        results: List = []
        r = self._redis_for(type)
        s = self._scripts["enqueue"]
        if isinstance(r, redis.cluster.RedisCluster):
            # redis-py pipelines no EVALSHA on a cluster: pipeline on the
            # node owning the type's slot, and send again through the
            # cluster client (which follows MOVED, ASK) what that node
            # turns away.
            try:
                r = r.get_node_from_key(self._key(type, "stream")) \
                    .redis_connection
            except redis.exceptions.RedisError as e:
                raise _error_of(e, self._where, "enqueue") from None
        try:
            if (id(r), "enqueue") not in self._loaded:
                r.script_load(s.source)
                self._loaded.add((id(r), "enqueue"))
            for start in range(0, len(tasks), ROUND_TASKS):
                round_ = tasks[start: start + ROUND_TASKS]
                calls, call, size = [], [], 0
                for t in round_:
                    if call and (len(call) == CALL_TASKS or
                                 size + len(t.payload) > CALL_BYTES):
                        calls.append(call)
                        call, size = [], 0
                    call.append(t)
                    size += len(t.payload)
                calls.append(call)
                p = r.pipeline(transaction=False)
                for c in calls:
                    keys, args = self._build(c)
                    p.evalsha(s.sha, len(keys), *keys, *args)
                replies = p.execute(raise_on_error=False)
                for c, reply in zip(calls, replies):
                    if isinstance(reply, (redis.exceptions.NoScriptError,
                                          redis.exceptions.AskError,
                                          redis.exceptions.MovedError,
                                          redis.exceptions.TryAgainError,
                                          redis.exceptions.ClusterDownError)):
                        keys, args = self._build(c)
                        reply = self._call(type, "enqueue", keys, args)
                    elif isinstance(reply, Exception):
                        raise reply
                    results += self._parse(c, reply)
        except redis.exceptions.RedisError as e:
            raise _error_of(e, self._where, "enqueue") from None
        self._after(tasks, results)
        return results

    # ---- workflows (docs/protocol.md, "Workflows") ----

    def _wf(self, type_: str, name: str, id_: Optional[str], args: List):
        """One call of a workflow script of type_ (or group) and task id_:
        its numbered keys from its header, args as given."""
        return self._call(type_, name, self._keys(name, type_, id_), args)

    def _notify(self, type_: str, id_: str, sender: str, state: str,
                result: bytes) -> None:
        spec = self._scripts["wf_notify"].spec
        self._wf(type_, "wf_notify", id_,
                 spec.argv(id=id_, sender=sender, state=state,
                           dead_ttl_ms="604800000") + [result])

    def enqueue_after(self, type: str, payload: Payload = b"", *,
                      after: Sequence, id: Optional[str] = None,
                      trace: Optional[str] = None,
                      on_parent_dead: str = "dead") -> EnqueueResult:
        """Enqueues a task held until every parent of ``after`` (pairs
        ``(type, id)`` or strings ``"type:id"``) has finished; it becomes
        runnable at once then. ``on_parent_dead`` is ``"dead"`` (a dead
        parent makes it dead, "parent T:id is dead") or ``"run"``. ``id``
        defaults to a random one. Raises BadInput for a parent that is not
        queued, running, delayed, held, done (result cached) or dead, for
        the task among its own parents, or for no parents; TooLarge,
        ProtocolMismatch, Unavailable."""
        raw = _bytes(payload)
        _check_type(type)
        id = id if id is not None else os.urandom(16).hex()
        _check_id(id)
        trace = trace if trace is not None else new_trace()
        _check_trace(trace)
        if on_parent_dead not in ("dead", "run"):
            raise errors.BadInput("on_parent_dead is dead or run")
        parents = [tuple(p.split(":", 1)) if isinstance(p, str) else tuple(p)
                   for p in after]
        if not parents:
            raise errors.BadInput("a task enqueued after others needs a "
                                  "parent")
        for p in parents:
            if len(p) != 2:
                raise errors.BadInput(f"parent {p!r} is not type:id")
            _check_type(p[0])
            _check_id(p[1])
            if "," in p[1]:
                raise errors.BadInput(f"parent id '{p[1]}' holds a ','")
            if p == (type, id):
                raise errors.BadInput(f"task {type}:{id} cannot be its own "
                                      f"parent")
        answers = []
        child = f"child {type} {id}"
        for ptype, pid in parents:
            spec = self._scripts["wf_register"].spec
            r = self._wf(ptype, "wf_register", pid,
                         spec.argv(id=pid, child=child))
            if r[0] == b"UNKNOWN":
                raise errors.BadInput(
                    f"parent {ptype}:{pid} is unknown (not queued, running, "
                    f"delayed, held, done with its result cached, or dead)")
            answers.append(r)
        spec = self._scripts["wf_enqueue"].spec
        r = self._wf(type, "wf_enqueue", id, spec.argv(
            type=type, id=id, trace=trace, protocols=",".join(PROTOCOLS),
            mode="held", dependent="",
            parents=",".join(f"{t}:{i}" for t, i in parents),
            on_parent_dead=on_parent_dead, max_payload="1048576",
            idempotency_ttl="300000") + [raw])
        word = r[0].decode()
        if word == "DUPLICATE":
            return EnqueueResult(id, True, False, False)
        if word == "PROTOCOL":
            raise self._protocol_error(type, r[1])
        if word == "TOO_LARGE":
            raise errors.TooLarge(f"payload too large for type '{type}'",
                                  int(r[1]))
        if word != "HELD":
            raise errors.WharfError(f"wf_enqueue answered '{word[:40]}'")
        for (ptype, pid), a in zip(parents, answers):
            if a[0] in (b"DONE", b"DEAD"):
                self._notify(type, id, f"{ptype}:{pid}",
                             "o" if a[0] == b"DONE" else "d", a[1] or b"")
        self._notify(type, id, "", "check", b"")
        self._after([_Task(type, type.encode(), raw, id.encode(),
                           trace.encode(), 0)],
                    [EnqueueResult(id, False, False, False)])
        return EnqueueResult(id, False, False, False)

    def enqueue_group(self, group: str, type: str,
                      payloads: Iterable[Payload], *, then: str,
                      then_payload: str = "",
                      ids: Optional[Sequence[str]] = None) -> List[str]:
        """Makes group ``group`` and enqueues one member of ``type`` per
        payload (ids ``ids``, or ``"<group>:<n>"`` from 1); when the last
        member ends, ok or dead, a host enqueues the callback of type
        ``then``, once, with id ``"group:<group>"`` and a JSON payload
        {"group", "ok", "dead", "members", "payload": then_payload}.
        Returns the member ids. Safe to call again after a failure (the
        members are duplicates). Raises BadInput (a bad name, no members,
        a group of that name with other members), Unavailable."""
        _check_type(group)
        _check_type(type)
        _check_type(then)
        raws = [_bytes(p) for p in payloads]
        if not raws:
            raise errors.BadInput(f"group '{group}' has no members: "
                                  f"nothing would ever end it")
        ids = list(ids) if ids is not None else \
            [f"{group}:{n}" for n in range(1, len(raws) + 1)]
        if len(ids) != len(raws):
            raise errors.BadInput("as many ids as payloads")
        for i in ids:
            _check_id(i)
        spec = self._scripts["wf_group_create"].spec
        r = self._wf(group, "wf_group_create", None, spec.argv(
            n=str(len(raws)), callback_type=then, payload=then_payload) +
            [f"{type}:{i}" for i in ids])
        if r[0] == b"CONFLICT":
            raise errors.BadInput(f"group '{group}' exists with other "
                                  f"members or another callback")
        spec = self._scripts["wf_enqueue"].spec
        for i, raw in zip(ids, raws):
            r = self._wf(type, "wf_enqueue", i, spec.argv(
                type=type, id=i, trace=new_trace(),
                protocols=",".join(PROTOCOLS), mode="member",
                dependent=f"group {group}", parents="", on_parent_dead="",
                max_payload="1048576", idempotency_ttl="300000") + [raw])
            if r[0] in (b"TOO_LARGE", b"PROTOCOL"):
                raise errors.TooLarge(f"group member {type}:{i} was refused "
                                      f"({r[0].decode()})", int(r[1]))
        self._after([_Task(type, type.encode(), b"", None, b"", 0)],
                    [EnqueueResult(ids[0], False, False, False)])
        return ids

    def group(self, group: str) -> Dict:
        """A group's state: n, ok, dead, pending, callback_type and
        callback ("waiting", "due", "enqueued" or "cancelled"). NotFound
        when there is no such group."""
        _check_type(group)
        try:
            r = self._redis_for(group)
            g = r.hgetall(self._key(group, "group"))
            done = r.hgetall(self._key(group, "group_done"))
        except redis.exceptions.RedisError as e:
            raise _error_of(e, self._where, "group") from None
        if not g:
            raise errors.NotFound(f"no group '{group}'")
        ok = sum(1 for v in done.values() if v == b"o")
        n = int(g[b"n"])
        return {"n": n, "ok": ok, "dead": len(done) - ok,
                "pending": n - len(done), "callback_type": g[b"type"].decode(),
                "callback": "cancelled" if b"cancelled" in g else
                "enqueued" if b"enqueued" in g else
                "due" if b"fired" in g else "waiting"}

    # ---- status, results, cancel ----

    def _status_reply(self, type_: str, id_: str, with_result: bool) -> Dict:
        _check_type(type_)
        _check_id(id_)
        reply = self._call(
            type_, "status", self._keys("status", type_, id_),
            self._scripts["status"].spec.argv(
                id=id_, group=GROUP, protocols=",".join(PROTOCOLS),
                with_result="result" if with_result else ""))
        if not isinstance(reply, list) or not reply:
            raise errors.WharfError(
                "status: the status script gave an unexpected reply")
        fields = {reply[i].decode(): reply[i + 1]
                  for i in range(1, len(reply) - 1, 2)}
        fields["state"] = reply[0].decode()
        if fields["state"] == "PROTOCOL":
            raise self._protocol_error(type_, fields.get("protocol", b"?"))
        return fields

    def status(self, type: str, id: str) -> TaskStatus:
        """Where task id of type is now, in one script call: queued,
        running (worker, since_ms), delayed (due_at_ms, attempt), done
        (result_bytes, expires_in_ms), dead (error, attempt), cancelled or
        unknown."""
        f = self._status_reply(type, id, False)

        def num(name):
            v = f.get(name)
            return int(v) if v not in (None, b"") else None

        def text(name):
            v = f.get(name)
            return v.decode("utf-8", "replace") if v is not None else None

        st = f["state"]
        return TaskStatus(
            state=st, now_ms=num("now") or 0, entry=text("entry"),
            attempt=num("attempts" if st == "dead" else "attempt"),
            enqueued_at_ms=num("enqueued_at"), worker=text("worker"),
            since_ms=(num("since") or 0) if st == "running" else None,
            cancel_requested=(f.get("cancel_requested") == b"1"
                              if st == "running" else None),
            due_at_ms=num("due_at"), died_at_ms=num("died_at"),
            error=text("error"), result_bytes=num("result_bytes"),
            expires_in_ms=num("expires_in_ms"),
            waits_for=text("waits_for") if st == "held" else None,
            timeout_ms=num("timeout_ms"), max_attempts=num("max_attempts"),
            expires_at_ms=num("expires_at"))

    def result(self, type: str, id: str, *,
               wait: Optional[Seconds] = None) -> bytes:
        """The result bytes of a finished task. Without ``wait``, NotFound
        when there is none (yet); with it, polls (5 ms growing to 100 ms)
        up to that long, then WaitTimeout. TaskDead or TaskCancelled at
        once when no result will ever come."""
        deadline = time.monotonic() + _ms(wait, "wait") / 1000
        step = POLL_FIRST_S
        while True:
            f = self._status_reply(type, id, True)
            st = f["state"]
            if st == "done" and "result" in f:
                return f["result"]
            if st == "dead":
                error = f.get("error", b"").decode("utf-8", "replace")
                attempts = int(f.get("attempts") or 0)
                raise errors.TaskDead(
                    f"task '{id}' of type '{type}' is dead after {attempts} "
                    f"attempts: {error}", error, attempts)
            if st == "cancelled":
                raise errors.TaskCancelled(
                    f"task '{id}' of type '{type}' was cancelled")
            left = deadline - time.monotonic()
            if wait is None:
                suffix = "" if st == "unknown" else f" yet (it is {st})"
                raise errors.NotFound(
                    f"no result for task '{id}' of type '{type}'{suffix}")
            if left <= 0:
                raise errors.WaitTimeout(
                    f"no result for task '{id}' of type '{type}' after "
                    f"{_ms(wait, 'wait')} ms")
            time.sleep(min(step, left))
            step = min(step * 2, POLL_MAX_S)

    def cancel(self, type: str, id: str) -> CancelResult:
        """Cancels a task in one atomic script call: a queued or delayed
        one is removed and never runs; a running one's host asks its plugin
        to end, and the run ends as cancelled, writing no result. NotFound
        when it has finished (done or dead) or is unknown. The id may be
        enqueued again at once, as a new task."""
        _check_type(type)
        _check_id(id)
        reply = self._call(
            type, "cancel", self._keys("cancel", type, id),
            self._scripts["cancel"].spec.argv(id=id, group=GROUP,
                                              protocols=",".join(PROTOCOLS)))
        if not isinstance(reply, list) or len(reply) != 2:
            raise errors.WharfError(
                "cancel: the cancel script gave an unexpected reply")
        word, detail = reply[0].decode(), reply[1].decode()
        if word == "PROTOCOL":
            raise self._protocol_error(type, detail)
        if word == "REMOVED":
            return CancelResult("removed", detail)
        if word == "CANCELLING":
            return CancelResult("cancelling", detail)
        if word == "CANCELLED":
            return CancelResult("already", "")
        if word == "FINISHED":
            raise errors.NotFound(
                f"task '{id}' of type '{type}' has finished ({detail}): "
                f"nothing to cancel")
        if word == "UNKNOWN":
            raise errors.NotFound(f"no task '{id}' of type '{type}' to cancel")
        raise errors.WharfError(
            f"cancel: the cancel script answered '{word[:40]}'")
