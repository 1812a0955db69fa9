"""Hold the Jinja2 templates (installed as the ``ovsperf_templates`` package).

Only the templates know Beaker's job XML and the report's HTML; Python code renders them with
:func:`environment`.
"""

from __future__ import annotations

import jinja2


def environment(subdir: str, *, autoescape: bool) -> jinja2.Environment:
    """Return a Jinja2 environment over ``templates/<subdir>`` with ``StrictUndefined``.

    :param subdir: template folder, e.g. ``'beaker'`` or ``'report'``.
    :param autoescape: turn HTML/XML autoescaping on (always for HTML, STYLE.md §1).
    """
    return jinja2.Environment(
        loader=jinja2.PackageLoader("ovsperf_templates", subdir),
        undefined=jinja2.StrictUndefined,
        autoescape=autoescape,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
