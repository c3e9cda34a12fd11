"""One wharf call through the Python client, for the parity tests: it
prints what the call answered and exits with the error's exit code, as the
wharf CLI does for the same call.

  driver.py URL enqueue TYPE PAYLOAD [--id ID] [--delay MS] [--trace TP]
                                     [--strict] [--timeout MS]
                                     [--max-attempts N] [--expire-in MS]
  driver.py URL many TYPE PAYLOAD... [--max-attempts N]   one id a line
  driver.py URL result TYPE ID [--wait MS]
  driver.py URL status TYPE ID           one JSON object (the CLI's names)
  driver.py URL cancel TYPE ID
"""
import json
import sys
import warnings

import wharf


def opt(args, name, default=None):
    if name in args:
        i = args.index(name)
        value = args[i + 1]
        del args[i:i + 2]
        return value
    return default


def main(argv):
    url, op, type_ = argv[1], argv[2], argv[3]
    args = argv[4:]
    strict = "--strict" in args
    if strict:
        args.remove("--strict")
    warnings.simplefilter("always")
    warnings.showwarning = lambda m, *a, **k: print(f"wharf: {m}",
                                                     file=sys.stderr)
    c = wharf.Client(url, strict=strict)
    if op == "enqueue":
        id_, delay, trace = (opt(args, "--id"), opt(args, "--delay"),
                             opt(args, "--trace"))
        timeout, attempts, expire_in = (opt(args, "--timeout"),
                                        opt(args, "--max-attempts"),
                                        opt(args, "--expire-in"))
        r = c.enqueue(type_, args[0], id=id_, trace=trace,
                      delay=int(delay) / 1000 if delay else None,
                      timeout=int(timeout) / 1000 if timeout else None,
                      max_attempts=int(attempts) if attempts else None,
                      expire_in=int(expire_in) / 1000 if expire_in else None)
        print(r.id)
        if r.duplicate:
            print(f"duplicate: task '{r.id}' is already enqueued",
                  file=sys.stderr)
    elif op == "many":
        attempts = opt(args, "--max-attempts")
        for r in c.enqueue_many(
                type_, args,
                max_attempts=int(attempts) if attempts else None):
            if isinstance(r, Exception):
                raise r
            print(r.id)
    elif op == "result":
        wait = opt(args, "--wait")
        data = c.result(type_, args[0],
                        wait=int(wait) / 1000 if wait else None)
        sys.stdout.buffer.write(data)
    elif op == "status":
        s = c.status(type_, args[0])
        out = {k: v for k, v in vars(s).items() if v is not None}
        print(json.dumps(out, sort_keys=True))
        return 1 if s.state == "unknown" else 0
    elif op == "cancel":
        r = c.cancel(type_, args[0])
        print(f"{r.outcome} {r.detail}".strip())
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except wharf.WharfError as e:
        print(f"wharf: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
