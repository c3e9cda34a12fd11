"""The Lua scripts, loaded from the same .lua files the C client, the CLI
and the hosts are built from (sdk/lua in the source tree, share/wharf
once installed), run with EVALSHA and loaded on NOSCRIPT."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Dict, List, Optional

NAMES = ("enqueue", "status", "cancel")


def _candidates(explicit: Optional[str]) -> List[Path]:
    out = []
    if explicit:
        out.append(Path(explicit))
    if os.environ.get("WHARF_LUA_DIR"):
        out.append(Path(os.environ["WHARF_LUA_DIR"]))
    # clients/python/wharf/scripts.py -> the source tree's sdk/lua
    out.append(Path(__file__).resolve().parents[3] / "sdk" / "lua")
    for prefix in (sys.prefix, "/usr/local", "/usr"):
        out.append(Path(prefix) / "share" / "wharf")
    return out


def find_dir(explicit: Optional[str] = None) -> Path:
    """The first folder that holds the scripts; FileNotFoundError naming
    where it looked otherwise."""
    tried = _candidates(explicit)
    for d in tried:
        if all((d / f"{n}.lua").is_file() for n in NAMES):
            return d
    raise FileNotFoundError(
        "wharf: cannot find the Lua scripts (enqueue.lua, ...) in "
        + ", ".join(str(d) for d in tried)
        + "; set WHARF_LUA_DIR")


class Script:
    """One script: its exact bytes and their SHA1, as Redis computes it."""

    def __init__(self, name: str, source: bytes):
        self.name = name
        self.source = source
        self.sha = hashlib.sha1(source).hexdigest()


def load(explicit: Optional[str] = None) -> Dict[str, Script]:
    d = find_dir(explicit)
    return {n: Script(n, (d / f"{n}.lua").read_bytes()) for n in NAMES}
