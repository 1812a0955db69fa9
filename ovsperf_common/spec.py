"""Parse closed sets from their string spelling: one ``from_spec`` for every string enum.

STYLE.md §3: closed sets are ``Enum``s with string values, each with a ``from_spec()`` that lists
the valid values when it rejects input (tmt ``ResultOutcome.from_spec``). The rule, the same for
every enum of the project: the exact value first, then the value or the member name ignoring case
and surrounding spaces; anything else (including a non-string) raises
:class:`~ovsperf_common.errors.FieldError` listing the valid values.
"""

from __future__ import annotations

import enum
from typing import TypeVar

from ovsperf_common.errors import FieldError

_E = TypeVar("_E", bound="SpecEnum")


class SpecEnum(str, enum.Enum):
    """An ``Enum`` with string values and one spelling rule (:meth:`from_spec`).

    Members are strings: they compare equal to their value, serialise to JSON as it, and
    ``str()``/``format()`` give the value, so they read as they are spelled in files and on pages.
    (``str`` mixin rather than ``enum.StrEnum``: this module runs on Python ≥ 3.9.)
    """

    def __str__(self) -> str:
        """Return the member's value."""
        return str(self.value)

    def __format__(self, format_spec: str) -> str:
        """Format the member's value (``f"{Verdict.PASS}"`` is ``'PASS'``)."""
        return format(str(self.value), format_spec)

    @classmethod
    def from_spec(cls: type[_E], spec: object, *, field: str | None = None) -> _E:
        """Return the member spelled ``spec`` (value, or value/name in any case).

        :param field: the field's name for the error message, when known.
        :raises FieldError: when ``spec`` names no member; the message lists the valid values.
        """
        if isinstance(spec, cls):
            return spec
        if isinstance(spec, str):
            for member in cls:
                if member.value == spec:
                    return member
            wanted = spec.strip().casefold()
            for member in cls:
                if wanted in (str(member.value).casefold(), member.name.casefold()):
                    return member
        valid = ", ".join(f"'{m.value}'" for m in cls)
        raise FieldError(f"{spec!r} is not a valid {cls.spec_label()}; expected one of {valid}.", field=field)

    @classmethod
    def spec_label(cls) -> str:
        """Return what a member is called in messages: ``BuildState`` → ``'build state'``.

        Override it where the field has a shorter name users know (``HostRole`` → ``'role'``).
        """
        words: list[str] = []
        for ch in cls.__name__.lstrip("_"):
            if ch.isupper() and words:
                words.append(" ")
            words.append(ch.lower())
        return "".join(words)
