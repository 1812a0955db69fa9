"""The stand-in Beaker hub as ``ovsperf-koji submit`` meets it: client configuration, recorded jobs.

``ovsperf-koji`` submits through jobcreator in-process (``create_job``), so the process edge is the
Beaker hub: the real beaker-client talks to the XML-RPC double of ``tests/jobcreator/fakehub.py``.
:meth:`RecordingBeaker.calls` reads each uploaded job back as the ``jobcreator`` options that
describe it, so tests assert what was submitted in the same words a user would type.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from lxml import etree

from tests.jobcreator.conftest import HUB_PASSWORD, HUB_USER, write_client_conf
from tests.jobcreator.fakehub import FakeBeakerHub

FIRST_JOB_ID = 4201
"""Job id the stand-in hub gives the first upload (then +1 per upload)."""


class RecordingBeaker:
    """A running stand-in Beaker hub plus a client configuration pointing at it."""

    def __init__(self, workdir: Path) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.hub = FakeBeakerHub(HUB_USER, HUB_PASSWORD)
        self.hub.state.first_job_id = FIRST_JOB_ID
        self.conf = write_client_conf(workdir / "beaker-client.conf", self.hub.url)

    def __enter__(self) -> RecordingBeaker:
        self.hub.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.hub.__exit__(*exc)

    def env(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """Return ``base`` (default: this process's environment) with the client configuration set."""
        env = dict(os.environ if base is None else base)
        env["BEAKER_CLIENT_CONF"] = str(self.conf)
        return env

    def refuse(self, *scenarios: str) -> None:
        """Make the hub refuse the jobs of ``scenarios`` from now on (none: accept all again)."""
        self.hub.state.refuse_containing = tuple(f"ovsperf {name} on " for name in scenarios)

    def calls(self) -> list[list[str]]:
        """Return every job offered to the hub (accepted or refused) as jobcreator options, in order."""
        return [_as_jobcreator_argv(xml) for xml in self.hub.state.offered]


def _as_jobcreator_argv(xml: str) -> list[str]:
    """Read a job back as jobcreator options (``--host TG --host DUT --config S --distro D ...``)."""
    job = etree.fromstring(xml.encode("utf-8"))
    whiteboard = job.findtext("whiteboard") or ""
    match = re.match(r"^(?:\[(?P<tag>.*?)\] )?ovsperf (?P<scenario>\S+) on ", whiteboard)
    assert match is not None, whiteboard
    recipes = {r.get("role"): r for r in job.iter("recipe")}
    host = {role: r.find("hostRequires/and/hostname").get("value") for role, r in recipes.items()}
    dut = recipes["DUT"]
    argv = ["--host", host["TRAFFICGEN"], "--host", host["DUT"], "--config", match["scenario"]]
    argv += ["--distro", dut.find("distroRequires/and/distro_name").get("value")]
    for repo in dut.findall("repos/repo"):
        if repo.get("name", "").startswith("ovsperf-kickrepo-"):
            argv += ["--kickrepo", repo.get("url")]
    if match["tag"] is not None:
        argv += ["--tag", match["tag"]]
    reserve = dut.find("reservesys")
    if reserve is not None:
        argv += ["--reserve", f"{int(reserve.get('duration')) / 3600:g}"]
    return [*argv, "--autosubmit"]
