"""The client's build backend (PEP 517), in the standard library alone.

Why not setuptools: `pip install --no-index ./clients/python` builds in an
isolated environment that can install nothing, and Debian 12 ships no
wheel of `wheel`, which setuptools 66 asks for, so no setuptools build can
work offline there. This backend needs nothing: it reads pyproject.toml's
[project] table and zips the package into a pure-Python wheel, with the
Lua scripts the client runs (enqueue, status, cancel) copied from the
source tree's sdk/lua into wharf/lua, where wharf/scripts.py finds them
once installed, and the project's LICENSE in the .dist-info."""

import base64
import hashlib
import os
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent  # clients/python
ROOT = HERE.parent.parent  # the source tree
LUA = ("enqueue", "status", "cancel", "wf_register", "wf_enqueue",
       "wf_notify", "wf_group_create", "wf_group_count")  # as wharf/scripts.py's NAMES


def _project():
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        raise RuntimeError(
            "building the wharf client needs Python 3.11 or later (tomllib); "
            "on an older Python put clients/python on PYTHONPATH instead")
    with open(HERE / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


def _metadata(project):
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project['description']}",
        f"License: {project['license']['text']}",
        f"Requires-Python: {project['requires-python']}",
    ]
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    return "\n".join(lines) + "\n"


def _files():
    """(name in the wheel, bytes) of every file the wheel holds but its
    .dist-info: the package's .py files and py.typed, and the Lua scripts.
    A missing script is an error, not a wheel that fails at import."""
    out = []
    for path in sorted((HERE / "wharf").rglob("*")):
        if path.is_file() and (path.suffix == ".py" or path.name == "py.typed"):
            out.append((path.relative_to(HERE).as_posix(), path.read_bytes()))
    for name in LUA:
        script = ROOT / "sdk" / "lua" / f"{name}.lua"
        if not script.is_file():
            raise FileNotFoundError(f"{script}: not found: build the wharf "
                                    "client from the wharf source tree")
        out.append((f"wharf/lua/{name}.lua", script.read_bytes()))
    return out


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return f"{name},sha256={digest.rstrip(b'=').decode()},{len(data)}"


def _dist_info(project):
    info = f"{project['name']}-{project['version']}.dist-info"
    files = [
        (f"{info}/METADATA", _metadata(project).encode()),
        (f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: wharf_build\n"
                          b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    if (ROOT / "LICENSE").is_file():
        files.append((f"{info}/LICENSE", (ROOT / "LICENSE").read_bytes()))
    return info, files


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory,
                                     config_settings=None):
    project = _project()
    info, files = _dist_info(project)
    for name, data in files:
        path = Path(metadata_directory) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return info


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None):
    project = _project()
    info, meta = _dist_info(project)
    entries = _files() + meta
    record = [_record_line(n, d) for n, d in entries] + [f"{info}/RECORD,,"]
    entries.append((f"{info}/RECORD", ("\n".join(record) + "\n").encode()))
    wheel = f"{project['name']}-{project['version']}-py3-none-any.whl"
    tmp = os.path.join(wheel_directory, wheel + ".part")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            # A fixed date: the same source makes the same wheel.
            entry = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            entry.external_attr = 0o644 << 16
            z.writestr(entry, data, zipfile.ZIP_DEFLATED)
    os.replace(tmp, os.path.join(wheel_directory, wheel))
    return wheel
