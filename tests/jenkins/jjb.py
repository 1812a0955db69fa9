"""Render ``jenkins/`` with the real ``jenkins-jobs test`` and read the job XML a Jenkins master gets.

Shared by the job tests, the install-group test and anything that runs the builders the way
Jenkins does (the shell steps of a rendered job, in order).

``jenkins-jobs`` comes from jenkins-job-builder's own venv, ``.venv-jjb`` next to ``.venv`` (made by
``make setup``; ``OVSPERF_JJB_VENV`` names another): JJB 6.x needs setuptools < 81, which must not
be in the product's venv, so it is not in the ``all`` install group.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from lxml import etree

ROOT = Path(__file__).resolve().parents[2]
JENKINS_DIR = ROOT / "jenkins"
JJB_VENV = Path(os.environ.get("OVSPERF_JJB_VENV") or ROOT / ".venv-jjb")
JJB = JJB_VENV / "bin" / "jenkins-jobs"


def render(src: Path, out: Path) -> dict[str, etree._Element]:
    """Run ``jenkins-jobs test -r SRC -o OUT --config-xml``; return job name → parsed config.xml."""
    assert JJB.is_file(), f"'{JJB}' is missing: 'make setup' makes jenkins-job-builder's venv '{JJB_VENV}'."
    proc = subprocess.run(
        [str(JJB), "-l", "warning", "test", "-r", str(src), "-o", str(out), "--config-xml"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=src,
    )
    assert proc.returncode == 0, proc.stderr
    # Nothing deprecated in our YAML (JJB 6 warns e.g. for !include-raw: and old git options).
    warnings = [line for line in proc.stderr.splitlines() if "WARNING" in line and "Config file" not in line]
    assert warnings == [], warnings
    return {p.parent.name: etree.parse(str(p)).getroot() for p in sorted(out.glob("*/config.xml"))}


def params(job: etree._Element) -> dict[str, str]:
    """Return the job's build parameters, name → default value, in the job's order."""
    defs = job.find("properties/hudson.model.ParametersDefinitionProperty/parameterDefinitions")
    assert defs is not None
    return {str(p.findtext("name")): p.findtext("defaultValue") or "" for p in defs}


def shell_commands(job: etree._Element) -> list[str]:
    """Return the job's shell build steps' scripts, in execution order."""
    return [str(c.text) for c in job.iterfind("builders/hudson.tasks.Shell/command")]
