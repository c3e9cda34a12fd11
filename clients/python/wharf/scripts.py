"""The Lua scripts, loaded from the same .lua files the C client, the CLI
and the hosts are built from (sdk/lua in the source tree; the wheel's
wharf/lua copy or share/wharf once installed), run with EVALSHA and
loaded on NOSCRIPT. Each file's header states its keys, arguments and
reply words (sdk/lua/README.md); parse reads it as the C build does, so
the client builds every call from it."""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path
from typing import Dict, Iterable, List, NamedTuple, Optional

NAMES = ("enqueue", "status", "cancel", "wf_register", "wf_enqueue",
         "wf_notify", "wf_group_create", "wf_group_count")


def _candidates(explicit: Optional[str]) -> List[Path]:
    out = []
    if explicit:
        out.append(Path(explicit))
    if os.environ.get("WHARF_LUA_DIR"):
        out.append(Path(os.environ["WHARF_LUA_DIR"]))
    # An installed wheel's own copy (wharf/lua, put there by the build).
    out.append(Path(__file__).resolve().parent / "lua")
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


class Key(NamedTuple):
    """One key a script takes, as its header states it: form "type"
    (<prefix>:{<type>}:<what>), "task" (... :<what>:<placeholder>),
    "whole" (a key the caller gives whole) or "prose" (a "then <name>"
    key the header describes in words)."""

    what: str
    form: str
    placeholder: str = ""


class Spec:
    """What a script's header states (sdk/lua/README.md): its numbered
    keys, then its "then" keys (each a run of one per task) or "each" keys
    (repeated per task, in order); its numbered arguments, then the "then"
    ones; its reply words."""

    def __init__(self, name: str):
        self.name = name
        self.keys: List[Key] = []
        self.then_keys: List[Key] = []
        self.each_keys: List[Key] = []
        self.args: List[str] = []
        self.then_args: List[str] = []
        self.words: List[str] = []

    def argv(self, **values) -> List:
        """The numbered arguments, in the header's order, from their names
        (a missing or unknown name is a bug of the caller: ValueError)."""
        if set(values) != set(self.args):
            raise ValueError(
                f"{self.name}.lua takes {', '.join(self.args)}, not "
                f"{', '.join(sorted(values))}")
        return [values[a] for a in self.args]

    def check_words(self, words: Iterable[str]) -> None:
        """ValueError unless every word is one the script answers."""
        missing = [w for w in words if w not in self.words]
        if missing:
            raise ValueError(
                f"{self.name}.lua does not answer {', '.join(missing)}: the "
                f"scripts are not the ones this client was written for")


_KEY_TYPE = re.compile(r"^([a-z_]+)$")
_KEY_TASK = re.compile(r"^([a-z_]+):<([a-z0-9_]+)>$")
_KEY_NAMED = re.compile(r"^<([a-z_]+)>$")
_ARG = re.compile(r"^[a-z][a-z0-9_]*$")
_ARG_THEN = re.compile(r"^(<[a-z_]+>|[a-z][a-z0-9_]*)$")
_WORD = re.compile(r"^[A-Za-z][A-Za-z_]*$")


def _key(token: str, numbered: bool, where: str) -> Key:
    m = _KEY_TYPE.match(token)
    if m:
        return Key(m.group(1), "type")
    m = _KEY_TASK.match(token)
    if m:
        if numbered and m.group(2) != "id":
            raise ValueError(f"{where}: a numbered key of a task is "
                             f"<what>:<id>")
        return Key(m.group(1), "task", m.group(2))
    m = _KEY_NAMED.match(token)
    if m:
        return Key(m.group(1), "whole" if numbered else "prose")
    raise ValueError(f"{where}: '{token}' is not a key: what, what:<id> or "
                     f"<name>")


def parse(name: str, source: bytes) -> Spec:
    """The Spec of script name from its text, read as sdk/lua/embed.cmake
    reads it; ValueError naming the line when the header breaks the
    form."""
    spec = Spec(name)
    section, number, tail = "", 0, False
    order = {"KEYS": "", "ARGV": "KEYS", "Reply": "ARGV"}
    lines = source.decode("utf-8").split("\n")
    for n, line in enumerate(lines, 1):
        where = f"{name}.lua:{n}"
        if not line.startswith("--"):
            break
        if n == 1:
            if not line.startswith(f"-- {name}: "):
                raise ValueError(f"{where}: the first line is "
                                 f"\"-- {name}: what it does\"")
            continue
        m = re.match(r"^-- (KEYS|ARGV|Reply):", line)
        if m:
            if order[m.group(1)] != section:
                raise ValueError(f"{where}: sections are KEYS:, ARGV:, "
                                 f"Reply:, once each, in that order")
            section, number, tail = m.group(1), 0, False
            continue
        if line.startswith("--    ") or section == "":
            continue
        m = re.match(r"^--   (\S+) *(\S*)", line)
        if not m:
            if section == "Reply":
                break
            raise ValueError(f"{where}: inside KEYS: and ARGV: a line is "
                             f"an item or continues one")
        tag, token = m.group(1), m.group(2)
        if section == "Reply":
            if not _WORD.match(tag):
                raise ValueError(f"{where}: a reply item starts with its "
                                 f"word")
            spec.words.append(tag)
        elif tag.isdigit():
            number += 1
            if int(tag) != number or tail:
                raise ValueError(f"{where}: numbered items count 1, 2, ... "
                                 f"before any then or each")
            if section == "KEYS":
                spec.keys.append(_key(token, True, where))
            else:
                if not _ARG.match(token) or token in ("cmd", "prefix"):
                    raise ValueError(f"{where}: an argument is named by a "
                                     f"C identifier")
                if token in spec.args:
                    raise ValueError(f"{where}: argument '{token}' is named "
                                     f"twice")
                spec.args.append(token)
        elif tag in ("then", "each"):
            tail = True
            if not token:
                raise ValueError(f"{where}: '{tag}' is followed by a key or "
                                 f"a name")
            if section == "ARGV":
                if tag == "each" or not _ARG_THEN.match(token):
                    raise ValueError(f"{where}: an argument after the "
                                     f"numbered ones is \"then name\"")
                spec.then_args.append(token)
            else:
                k = _key(token, False, where)
                if tag == "then":
                    spec.then_keys.append(
                        k._replace(placeholder="id") if k.form == "task"
                        else k)
                elif k.form != "task":
                    raise ValueError(f"{where}: an each key is what:<name>")
                else:
                    spec.each_keys.append(k)
        else:
            raise ValueError(f"{where}: an item starts with its number, "
                             f"then or each")
    if section != "Reply":
        raise ValueError(f"{name}.lua: no KEYS:, ARGV: and Reply: sections")
    return spec


class Script:
    """One script: its exact bytes and their SHA1, as Redis computes it,
    and what its header states (spec)."""

    def __init__(self, name: str, source: bytes):
        self.name = name
        self.source = source
        self.sha = hashlib.sha1(source).hexdigest()
        self.spec = parse(name, source)


def load(explicit: Optional[str] = None) -> Dict[str, Script]:
    d = find_dir(explicit)
    return {n: Script(n, (d / f"{n}.lua").read_bytes()) for n in NAMES}
