"""Validate the fields of a parsed config file (YAML/JSON mapping) with one set of rules.

Shared by the scenario catalog, the host inventory, the ciflow configuration and the lab's
generator configuration. Every validator takes the raw value and the field's dotted name and
returns the typed value or raises :class:`~ovsperf_common.errors.FieldError` naming the field;
the loader that knows the file wraps that error with the file and entry
(:meth:`FieldError.located`). ``bool`` is never accepted where a number is expected (YAML
``yes`` is not 1).

Shell scripts (the Beaker tasks) check a value with the same rule through
``python3 -m ovsperf_common.fields RULE VALUE`` (exit 0 valid, 2 and one line when not).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ovsperf_common.errors import FieldError
from ovsperf_common.runner import run_command

SAFE_NAME_RE: Final = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._+@=,-]{0,199}\Z")
"""A name that is safe as one path component, one shell word and one token of a line: 1..200
characters from ``A-Za-z0-9._+@=,-``, starting with a letter or digit (and, see :func:`is_safe_name`,
without ``..``): it cannot climb out of a directory, hide as a dotfile or break a log line."""

HOSTNAME_RE: Final = re.compile(
    r"\A(?=.{1,253}\Z)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\Z"
)
"""A DNS host name or an IPv4 address (RFC 1123 §2.1 labels)."""


def mapping(value: object, field: str | None = None) -> Mapping[str, Any]:
    """Return ``value`` if it is a mapping with string keys.

    :raises FieldError: when it is not a mapping, or a key is not a string.
    """
    if not isinstance(value, Mapping):
        raise FieldError(f"Expected a mapping, got {_kind(value)}.", field=field)
    for key in value:
        if not isinstance(key, str):
            raise FieldError(f"Key {key!r} is not a string.", field=field)
    return value


def reject_unknown(value: Mapping[str, Any], allowed: Iterable[str], field: str | None = None) -> None:
    """Raise when ``value`` has keys outside ``allowed`` (a typo must not be silently ignored).

    :raises FieldError: naming the first unknown key and listing the allowed ones.
    """
    allowed = tuple(allowed)
    for key in value:
        if key not in allowed:
            name = f"{field}.{key}" if field else key
            raise FieldError(f"unknown field; expected one of {', '.join(sorted(allowed))}.", field=name)


def required(value: Mapping[str, Any], key: str, field: str | None = None) -> Any:
    """Return ``value[key]``.

    :raises FieldError: when the key is missing.
    """
    name = f"{field}.{key}" if field else key
    if key not in value:
        raise FieldError("Required field is missing.", field=name)
    return value[key]


def string(value: object, field: str | None = None, *, allow_empty: bool = False, max_len: int = 4096) -> str:
    """Return ``value`` if it is a one-line string without control characters.

    :raises FieldError: when it is not a string, empty (unless allowed), longer than ``max_len``,
        or holds a newline or another control character (it would leave its line or token in a
        file that another program parses line by line).
    """
    if not isinstance(value, str):
        raise FieldError(f"Expected a string, got {_kind(value)}.", field=field)
    if not value and not allow_empty:
        raise FieldError("Must not be empty.", field=field)
    if len(value) > max_len:
        raise FieldError(f"Longer than {max_len} characters.", field=field)
    if any(not ch.isprintable() for ch in value):
        raise FieldError(f"Contains a control character (newline, tab, …): {value!r}.", field=field)
    return value


def is_safe_name(value: object) -> bool:
    """Return whether ``value`` is a safe name: :data:`SAFE_NAME_RE` and no ``..``."""
    return isinstance(value, str) and SAFE_NAME_RE.match(value) is not None and ".." not in value


def safe_name(value: object, field: str | None = None) -> str:
    """Return ``value`` if it is a safe name (:func:`is_safe_name`): a scenario, result or test name.

    :raises FieldError: otherwise, quoting the value escaped.
    """
    if not is_safe_name(value):
        raise FieldError(
            f"{value!r} is not a safe name: use 1-200 characters from A-Z a-z 0-9 . _ + @ = , - "
            "starting with a letter or digit, without '..'.",
            field=field,
        )
    assert isinstance(value, str)
    return value


def hostname(value: object, field: str | None = None) -> str:
    """Return ``value`` if it is a DNS host name or IPv4 address (:data:`HOSTNAME_RE`).

    :raises FieldError: otherwise.
    """
    if not isinstance(value, str) or not HOSTNAME_RE.match(value):
        raise FieldError(f"{value!r} is not a host name (RFC 1123) or IPv4 address.", field=field)
    return value


LOGIN_NAME_RE: Final = re.compile(r"\A[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}\Z")
"""A login name (POSIX portable characters, at most 32, as useradd accepts)."""

_PATH_WORD_RE: Final = re.compile(r"\A(?:/[A-Za-z0-9._+@=,-]+)*/?\Z")
"""A path of safe characters only, each component after one ``/`` (no ``//``): one word for any
shell, glob-free (one way to match, so no backtracking blow-up)."""

RSYNC_DESTINATION_FORM: Final = "user@host:/absolute/path"
"""How :func:`rsync_destination` values look (for messages and ``--help``)."""


def rsync_destination(value: object, field: str | None = None) -> str:
    """Return ``value`` if it is ``user@host:/absolute/path`` that stays one word on the remote shell.

    rsync hands the remote path to the far side's login shell, which splits and expands it (rsync
    ≤ 3.2.3 unless ``--protect-args``; RHEL 8 and 9 ship 3.1.3 and 3.2.3): a ``;``, ``$``, space,
    quote or glob character there runs as a command on the collector. One rule for every place a
    collector enters (jobcreator and ``ovsperf-koji`` ``--collector``, ``ovsperf-remote``, the
    ``vsperf_test`` task through ``python3 -m ovsperf_common.fields``):

    * ``user``: :data:`LOGIN_NAME_RE` (no ``user:password``: the collector is reached with SSH keys);
    * ``host``: :func:`hostname` (RFC 1123 name or IPv4 address);
    * ``path``: absolute, 1-1024 characters from ``A-Za-z0-9._+@=,-`` and ``/``, without a ``.`` or
      ``..`` component or an empty one (a trailing ``/`` is allowed).

    :raises FieldError: naming ``field``; a value carrying a password is not quoted.
    """
    text = string(value, field)
    user, at, rest = text.partition("@")
    if at and ":" in user:
        raise FieldError(
            f"expected '{RSYNC_DESTINATION_FORM}' without a password ('user:password@' given); "
            "the collector is reached with SSH keys.",
            field=field,
        )
    host, colon, path = rest.partition(":")
    if (
        not at
        or not colon
        or not LOGIN_NAME_RE.match(user)
        or not HOSTNAME_RE.match(host)
        or not path.startswith("/")
        or len(path) > 1024
        or not _PATH_WORD_RE.match(path)
        or any(part in (".", "..") for part in path.split("/"))
    ):
        raise FieldError(
            f"{text!r} is not an rsync destination '{RSYNC_DESTINATION_FORM}': a user name, an RFC 1123 "
            "host name or IPv4 address, and an absolute path of A-Z a-z 0-9 . _ + @ = , - and / "
            "without '.' or '..' (nothing in it may reach a shell).",
            field=field,
        )
    return text


KERNEL_OPTION_RE: Final = re.compile(r"\A[A-Za-z0-9_.,:/+@-]+(?:=[A-Za-z0-9_.,:/+@=-]*)?\Z")
"""One kernel command-line token ``key[=value]``: no spaces, quotes, ``$`` or control characters
(the kernel splits its command line on spaces; Beaker passes it through a shell-free attribute)."""


def kernel_option(value: object, field: str | None = None) -> str:
    """Return ``value`` if it is one kernel command-line token ``key[=value]`` (:data:`KERNEL_OPTION_RE`).

    :raises FieldError: otherwise, quoting the value escaped.
    """
    if not isinstance(value, str) or not KERNEL_OPTION_RE.match(value):
        raise FieldError(
            f"{value!r} is not one kernel option 'key[=value]' (no spaces, quotes or control characters).",
            field=field,
        )
    return value


def absolute_path(value: object, field: str | None = None) -> str:
    """Return ``value`` if it is an absolute path on one line without control characters or quotes.

    :raises FieldError: otherwise.
    """
    text = string(value, field)
    if not text.startswith("/") or any(ch in text for ch in "'\"`$\\"):
        raise FieldError(f"{text!r} is not an absolute path (no quotes, '$' or backslashes).", field=field)
    return text


def integer(
    value: object, field: str | None = None, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """Return ``value`` if it is an ``int`` (not a ``bool``) within ``[minimum, maximum]``.

    :raises FieldError: otherwise, stating the accepted range.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise FieldError(f"{value!r} is not a whole number.", field=field)
    _check_range(value, field, minimum, maximum)
    return value


def positive_int(value: object, field: str | None = None, *, maximum: int | None = None) -> int:
    """Return ``value`` if it is an ``int`` ≥ 1 (see :func:`integer`).

    :raises FieldError: when it is not a whole number, not positive, or above ``maximum``.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value < 1:
        raise FieldError(f"Expected a positive integer, got {value!r}.", field=field)
    return integer(value, field, minimum=1, maximum=maximum)


def non_negative_int(value: object, field: str | None = None, *, maximum: int | None = None) -> int:
    """Return ``value`` if it is an ``int`` ≥ 0 (see :func:`integer`)."""
    return integer(value, field, minimum=0, maximum=maximum)


def number(
    value: object,
    field: str | None = None,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: bool = False,
) -> float:
    """Return ``value`` as a finite ``float`` within the range (ints accepted, bools not).

    :raises FieldError: when it is not a number, not finite, or outside the range.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FieldError(f"{value!r} is not a number.", field=field)
    result = float(value)
    if not math.isfinite(result):
        raise FieldError(f"Expected a finite number, got {value!r}.", field=field)
    if exclusive_minimum and minimum is not None and result <= minimum:
        raise FieldError(f"{value!r} must be greater than {minimum:g}.", field=field)
    _check_range(result, field, minimum, maximum)
    return result


def _check_range(value: float, field: str | None, minimum: float | None, maximum: float | None) -> None:
    if minimum is not None and value < minimum:
        raise FieldError(f"{value!r} is below the minimum {minimum:g}.", field=field)
    if maximum is not None and value > maximum:
        raise FieldError(f"{value!r} is above the maximum {maximum:g}.", field=field)


def _kind(value: object) -> str:
    """Describe ``value`` for messages: ``'a string'``, ``'a list'``, ``'nothing (null)'``."""
    if value is None:
        return "nothing (null)"
    names = {bool: "true/false", int: "a whole number", float: "a number", str: "a string", list: "a list"}
    for kind, name in names.items():
        if type(value) is kind:
            return f"{name} ({value!r})" if kind in (bool, int, float) else name
    if isinstance(value, Mapping):
        return "a mapping"
    return type(value).__name__


def main(argv: list[str] | None = None) -> int:
    """Check one value from a shell script: ``python3 -m ovsperf_common.fields rsync-destination VALUE``.

    The Beaker tasks check the values they are given with the same rules as the commands that
    wrote them into the job (one rule, not a copy in shell).

    :returns: 0 when the value is valid; 2 (one line on stderr) when it is not.
    """
    checks = {"rsync-destination": rsync_destination}
    parser = argparse.ArgumentParser(
        prog="python3 -m ovsperf_common.fields",
        description="Check one value against a field rule; exit 0 when valid, 2 (one line) when not.",
    )
    parser.add_argument("rule", choices=sorted(checks), help="the rule to check against")
    parser.add_argument("value", help="the value")
    parser.add_argument("--field", help="the field's name in the message (e.g. COLLECTOR)")

    def check(args: argparse.Namespace) -> int:
        checks[args.rule](args.value, args.field)
        return 0

    return run_command(parser, check, argv)


if __name__ == "__main__":
    sys.exit(main())
