"""Run the ovsperf Jenkins jobs' builders as Jenkins would, from ``jenkins-jobs test`` output.

:func:`render_jobs` renders ``jenkins/`` with jenkins-job-builder (``jenkins-jobs test -r jenkins
--config-xml``) and reads each job's ``config.xml``: its string and text parameters with their
rendered defaults, its ``<hudson.tasks.Shell>`` builders in order (command, ``unstableReturn``) and
its JUnit publisher's results pattern. :meth:`JenkinsJob.build` runs one build the way a
freestyle job does: each builder's command written to a script file and executed (a ``#!``
line names its interpreter; without one Jenkins runs ``sh -xe``) in ``WORKSPACE`` with the
environment Jenkins gives a build (``WORKSPACE``, ``BUILD_NUMBER``, ``BUILD_ID``, ``BUILD_URL``,
``JOB_NAME``, ``JOB_BASE_NAME``, ``JOB_URL``, ``BUILD_TAG``, ``JENKINS_URL``, ``NODE_NAME``,
``EXECUTOR_NUMBER``, every parameter); a builder exiting with its ``unstableReturn`` makes the
build UNSTABLE and the next builder runs, any other non-zero exit makes it FAILURE and ends it.

The one builder not run is the install step (``ovsperf-install``: ``pip install`` of the checkout
into ``OVSPERF_VENV``): the build runs against this checkout's venv (``OVSPERF_VENV``, set by the
caller like a node property), so no package index is needed; what it also does, emptying
``WORKSPACE/out`` for the build, is done here before every build.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

from tests.jenkins import jjb

REPO = jjb.ROOT
JENKINS_URL = "https://jenkins.example.com/"
INSTALL_MARK = 'bin/pip" install'
"""How the install builder is recognised in a rendered command (jenkins/builders/install.sh)."""


@dataclass(frozen=True)
class Builder:
    """One ``<hudson.tasks.Shell>`` of a job."""

    command: str
    unstable_return: int | None

    @property
    def is_install(self) -> bool:
        """Return whether this is the install step (skipped: module docstring)."""
        return INSTALL_MARK in self.command


@dataclass
class BuildResult:
    """One build: its status, each builder's exit status and the console."""

    number: int
    status: str
    """``SUCCESS``, ``UNSTABLE`` or ``FAILURE``."""
    exits: list[int]
    console: str
    duration_s: float


@dataclass
class JenkinsJob:
    """A rendered job: parameters (rendered defaults), builders, JUnit results pattern; its builds."""

    name: str
    parameters: dict[str, str]
    builders: list[Builder]
    junit: str | None
    builds: list[BuildResult] = field(default_factory=list)

    def build(
        self,
        workspace: Path,
        params: Mapping[str, str],
        env: Mapping[str, str],
        *,
        timeout_s: float = 300,
    ) -> BuildResult:
        """Run the next build of this job (module docstring).

        :param params: parameter values given to the build; a name the job does not define is refused.
        :param env: the node's environment (``PATH``, ``OVSPERF_VENV``, credentials bound to variables).
        :raises ValueError: for a parameter the job does not have.
        :raises subprocess.TimeoutExpired: when a builder runs longer than ``timeout_s``.
        """
        unknown = set(params) - set(self.parameters)
        if unknown:
            raise ValueError(f"Job '{self.name}' has no parameter(s) {sorted(unknown)}.")
        number = len(self.builds) + 1
        shutil.rmtree(workspace / "out", ignore_errors=True)
        (workspace / "out").mkdir(parents=True)
        job_url = f"{JENKINS_URL}job/{self.name}/"
        build_env = {
            **env,
            **self.parameters,
            **params,
            "WORKSPACE": str(workspace),
            "BUILD_NUMBER": str(number),
            "BUILD_ID": str(number),
            "BUILD_DISPLAY_NAME": f"#{number}",
            "BUILD_URL": f"{job_url}{number}/",
            "BUILD_TAG": f"jenkins-{self.name}-{number}",
            "JOB_NAME": self.name,
            "JOB_BASE_NAME": self.name,
            "JOB_URL": job_url,
            "JENKINS_URL": JENKINS_URL,
            "NODE_NAME": "built-in",
            "EXECUTOR_NUMBER": "0",
        }
        console: list[str] = []
        exits: list[int] = []
        status = "SUCCESS"
        started = time.monotonic()
        for builder in self.builders:
            if builder.is_install:
                console.append(
                    "[nightly-in-a-box] install builder skipped: OVSPERF_VENV is this checkout's venv\n"
                )
                continue
            with tempfile.NamedTemporaryFile("w", suffix=".sh", prefix="jenkins", delete=False) as script:
                script.write(builder.command)
            try:
                os.chmod(script.name, 0o755)
                argv = [script.name] if builder.command.startswith("#!") else ["sh", "-xe", script.name]
                proc = subprocess.run(
                    argv,
                    cwd=workspace,
                    env=build_env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    timeout=timeout_s,
                    check=False,
                )
            finally:
                os.unlink(script.name)
            console.append(proc.stdout)
            exits.append(proc.returncode)
            if proc.returncode == 0:
                continue
            if builder.unstable_return is not None and proc.returncode == builder.unstable_return:
                status = "UNSTABLE"
                continue
            status = "FAILURE"
            break
        result = BuildResult(number, status, exits, "".join(console), time.monotonic() - started)
        self.builds.append(result)
        return result


def parse_job(name: str, job: etree._Element) -> JenkinsJob:
    """Return the job of one rendered ``config.xml`` (parameters by ``tests/jenkins/jjb.py``)."""
    builders = []
    for shell in job.iterfind("builders/hudson.tasks.Shell"):
        unstable = shell.findtext("unstableReturn")
        builders.append(Builder(str(shell.findtext("command")), int(unstable) if unstable else None))
    junit = job.findtext("publishers/hudson.tasks.junit.JUnitResultArchiver/testResults")
    return JenkinsJob(name, jjb.params(job), builders, junit)


def render_jobs(out: Path) -> dict[str, JenkinsJob]:
    """Render ``jenkins/`` with ``jenkins-jobs test --config-xml`` into ``out``; return the jobs by name."""
    return {name: parse_job(name, job) for name, job in jjb.render(jjb.JENKINS_DIR, out).items()}


def make_workspace(path: Path) -> Path:
    """Return a job workspace at ``path``: the checkout's files the builders read (``jenkins/``).

    The builders source ``$WORKSPACE/jenkins/builders/env.sh`` and write ``$WORKSPACE/out``; the
    commands they run come from ``OVSPERF_VENV``.
    """
    path.mkdir(parents=True)
    shutil.copytree(REPO / "jenkins", path / "jenkins")
    return path
