"""The one rsync-destination rule (issue 25): what passes stays one word on the collector's shell.

rsync <= 3.2.3 (RHEL 8: 3.1.3, RHEL 9: 3.2.3) runs ``rsync --server ... <path>`` through the
remote login shell, so every character of the path that a shell treats specially runs there.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time

import pytest

from ovsperf_common.errors import FieldError
from ovsperf_common.fields import rsync_destination

GOOD = [
    "ovsperf@collector.example.com:/srv/ovsperf/ci_in",
    "ci@10.0.0.5:/srv/ci_in/",
    "u@h:/",
    "root@h:/a_b-c.d/e+f/g=h,i/j@k",
    "_svc@h-1.lab:/tmp/pytest-of-root/pytest-3/test_run0/ci_in",
]

BAD = [
    "root@h:/ci_in;touch${IFS}/tmp/x;",  # issue 25's hostile try
    "root@h:/ci_in/$(id)",
    "root@h:/ci_in/`id`",
    "root@h:/ci in",
    "root@h:/ci_in|id",
    "root@h:/ci_in&id",
    "root@h:/ci_in>x",
    "root@h:/ci_*",
    "root@h:/ci_?",
    "root@h:/ci_[ab]",
    "root@h:/ci_in'",
    'root@h:/ci_in"',
    "root@h:/ci_in\\n",
    "root@h:/~root",
    "root@h:/srv/../etc",
    "root@h:/srv/./x",
    "root@h://srv",
    "root@h:ci_in",
    "root@h:",
    "h:/srv",
    "/srv/ci_in",
    "root@h",
    "root@h;id:/srv",
    "root@-oProxyCommand=id:/srv",
    "-oProxyCommand=id@h:/srv",
    "root@[::1]:/srv",
    "root@h:/" + "a" * 1024,
    "",
]


@pytest.mark.parametrize("value", GOOD)
def test_accepted_destinations_are_one_shell_word(value: str) -> None:
    assert rsync_destination(value, "--collector") == value
    assert shlex.split(value.partition(":")[2]) == [value.partition(":")[2]]
    assert shlex.quote(value.partition(":")[2]) == value.partition(":")[2]  # nothing to quote


@pytest.mark.parametrize("value", BAD)
def test_refused_destinations_name_the_field(value: str) -> None:
    with pytest.raises(FieldError) as caught:
        rsync_destination(value, "COLLECTOR")
    assert caught.value.field == "COLLECTOR"


def test_a_password_is_refused_without_being_echoed() -> None:
    with pytest.raises(FieldError, match="without a password") as caught:
        rsync_destination("ovsperf:s3cr3t@collector.lab:/ci_in", "--collector")
    assert "s3cr3t" not in str(caught.value)


def test_a_long_hostile_path_is_refused_in_linear_time() -> None:
    start = time.monotonic()
    with pytest.raises(FieldError):
        rsync_destination("u@h:/" + "a" * 1000 + "!", "--collector")
    assert time.monotonic() - start < 0.1


def test_the_shell_check_is_the_same_rule() -> None:
    """``python3 -m ovsperf_common.fields`` (what vsperf_test runs) agrees with the function."""
    for value, code in [(GOOD[0], 0), (BAD[0], 2)]:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "ovsperf_common.fields",
                "rsync-destination",
                value,
                "--field",
                "COLLECTOR",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == code, done.stderr
        assert done.stdout == ""
        if code:
            assert done.stderr.splitlines() == [
                f"python3 -m ovsperf_common.fields: error: field 'COLLECTOR': {BAD[0]!r} is not an rsync "
                "destination 'user@host:/absolute/path': a user name, an RFC 1123 host name or IPv4 address, "
                "and an absolute path of A-Z a-z 0-9 . _ + @ = , - and / without '.' or '..' (nothing in it "
                "may reach a shell)."
            ]
