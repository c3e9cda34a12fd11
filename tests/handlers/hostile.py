"""Handler programs that break the protocol, for tests/test_coprocess.c;
the first argument says how. Raw frames (docs/handlers.md), not the
wharf.handler library: the library would not let them misbehave.

    garbage    answers hello, then writes text to stdout at the first task
    silent     answers hello, then reads tasks and cancels and answers none
    stranger   answers each task with an ok for a request it never got
    oldproto   answers hello with protocol version 99
    noready    reads the hello and never answers it, then exits
"""

import os
import struct
import sys
import time

HEAD = struct.Struct(">IcI")


def read_exact(n):
    data = b""
    while len(data) < n:
        chunk = os.read(0, n - len(data))
        if not chunk:
            sys.exit(0)
        data += chunk
    return data


def read_frame():
    (length,) = struct.unpack(">I", read_exact(4))
    body = read_exact(length)
    return body[0:1], struct.unpack(">I", body[1:5])[0], body[5:]


def send(kind, request, body):
    os.write(1, HEAD.pack(5 + len(body), kind, request) + body)


def ready(version=1):
    kind, _, _ = read_frame()
    assert kind == b"H", kind
    send(b"R", 0, struct.pack(">I", version))


def main(how):
    if how == "noready":
        read_frame()
        time.sleep(0.2)
        sys.exit(4)
    ready(99 if how == "oldproto" else 1)
    while True:
        kind, request, _ = read_frame()
        if kind != b"T":
            continue
        if how == "garbage":
            os.write(1, b"hello from a stray print\n")
        elif how == "stranger":
            send(b"O", request + 1000, struct.pack(">I", 2) + b"no")


main(sys.argv[1])
