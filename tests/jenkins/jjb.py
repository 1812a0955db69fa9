"""Render ``jenkins/`` with the real ``jenkins-jobs test`` and read the job XML a Jenkins master gets.

Shared by the job tests, the install-group test and anything that runs the builders the way
Jenkins does (the shell steps of a rendered job, in order).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lxml import etree

ROOT = Path(__file__).resolve().parents[2]
JENKINS_DIR = ROOT / "jenkins"
JJB = Path(sys.executable).parent / "jenkins-jobs"


def render(src: Path, out: Path) -> dict[str, etree._Element]:
    """Run ``jenkins-jobs test -r SRC -o OUT --config-xml``; return job name → parsed config.xml."""
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
