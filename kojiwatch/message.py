"""Read the Koji build message Jenkins' JMS Messaging plugin hands a build as ``CI_MESSAGE``.

Shapes understood (reference: koji ``plugins/hub/protonmsg.py``, ``koji-fedoramessaging``):

* Red Hat UMB/Brew (koji ``protonmsg``) build state change: ``{"info": {"id", "name",
  "owner_name", ...}, "attribute": "state", "old": 0, "new": 1}``;
* UMB tag message: ``{"tag": {"name"}, "build": {"id", "name", "owner_name", ...}, "user": {...}}``;
* Fedora (fedora-messaging ``buildsys.build.state.change`` / ``buildsys.tag``) flat body:
  ``{"build_id", "name", "owner", "new", "tag"?}``, optionally wrapped in a fedmsg ``{"msg": ...}``.

``new`` is Koji's integer build state (1 = COMPLETE); protonmsg's JMS *properties* carry the
name instead, the body always the integer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kojiwatch.errors import KojiWatchError
from kojiwatch.model import BuildMessage, BuildState
from ovsperf_common.errors import FieldError
from ovsperf_common.regularfile import read_regular_text


def parse_message(text: str, path: Path | None = None) -> BuildMessage:
    """Return the build a Koji message is about.

    :raises KojiWatchError: naming ``path`` and the field when the text is not JSON or not a Koji
        build state/tag message.
    """
    where = f"'{path}'" if path is not None else "CI message"
    try:
        body = json.loads(text)
    except json.JSONDecodeError as err:
        raise KojiWatchError(f"{where} is not JSON: {err}") from err
    if isinstance(body, dict) and isinstance(body.get("msg"), dict):
        body = body["msg"]
    if not isinstance(body, dict):
        raise KojiWatchError(f"{where} is not a JSON object.")
    if isinstance(body.get("info"), dict):
        return _from_build_dict(body["info"], body.get("new"), None, where, path, "info")
    if isinstance(body.get("build"), dict):
        tag = body.get("tag")
        tag_name = tag.get("name") if isinstance(tag, dict) else tag
        return _from_build_dict(body["build"], None, _opt_str(tag_name), where, path, "build")
    if "build_id" in body:
        flat = {"id": body["build_id"], "name": body.get("name"), "owner_name": body.get("owner")}
        return _from_build_dict(flat, body.get("new"), _opt_str(body.get("tag")), where, path, "")
    raise KojiWatchError(f"{where} is not a Koji build message: no 'info', 'build' or 'build_id' field.")


def read_message_file(path: Path) -> BuildMessage:
    """Return the build the message in ``path`` is about.

    :raises KojiWatchError: when the file cannot be read or is not a Koji build message.
    """
    try:
        text = read_regular_text(path)
    except OSError as err:
        raise KojiWatchError(f"Cannot read CI message file '{path}': {err.strerror}.") from err
    return parse_message(text, path)


def _opt_str(value: Any) -> str | None:
    return str(value) if value is not None else None


def _from_build_dict(
    build: dict[str, Any], new: Any, tag: str | None, where: str, path: Path | None, prefix: str
) -> BuildMessage:
    key = f"{prefix}.id" if prefix else "build_id"
    build_id = build.get("id", build.get("build_id"))
    if isinstance(build_id, bool) or not isinstance(build_id, int) or build_id <= 0:
        raise KojiWatchError(f"{where}: field '{key}' is {build_id!r}, not a Koji build id.")
    state: BuildState | None = None
    if new is not None:
        try:
            state = BuildState.from_code(new) if isinstance(new, int) else BuildState.from_spec(new)
        except (KojiWatchError, FieldError) as err:
            raise KojiWatchError(f"{where}: field 'new': {err}") from err
    return BuildMessage(
        build_id=build_id,
        name=_opt_str(build.get("name")),
        owner=_opt_str(build.get("owner_name")),
        new_state=state,
        tag=tag,
    )
