"""make bench: bulk enqueue rate through the Python client, in chunks of
1000 payloads as wharf-bench does for the C client.
  enqueue.py PORT TYPE N   prints tasks, seconds and rate."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "clients",
                                "python"))
import wharf  # noqa: E402

CHUNK = 1000


def main(port, type_, n):
    c = wharf.Client(f"redis://127.0.0.1:{port}/0")
    tag = time.time_ns()
    start = time.monotonic()
    for done in range(0, n, CHUNK):
        payloads = [f"{tag}-{i}" for i in range(done, min(n, done + CHUNK))]
        for r in c.enqueue_many(type_, payloads):
            if isinstance(r, Exception):
                raise r
    seconds = time.monotonic() - start
    print(f"tasks {n}\nseconds {seconds:.6f}\nrate {n / seconds:.0f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
