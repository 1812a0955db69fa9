"""Render ``jenkins/`` with the real ``jenkins-jobs test``; check the job XML a Jenkins master would get."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from lxml import etree

from ovsperf_catalog.catalog import load_catalog
from tests.jenkins.jjb import JENKINS_DIR, params, render, shell_commands

TRIGGER = "com.redhat.jenkins.plugins.ci.CIBuildTrigger"
AMQ = "com.redhat.jenkins.plugins.ci.provider.data.ActiveMQSubscriberProviderData"
PACKAGES = ("openvswitch", "dpdk")


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, etree._Element]:
    return render(JENKINS_DIR, tmp_path_factory.mktemp("jjb"))


def checks(job: etree._Element) -> dict[str, str]:
    return {
        str(c.findtext("field")): str(c.findtext("expectedValue"))
        for c in job.iterfind(f"triggers/{TRIGGER}/providers/{AMQ}/checks/*")
    }


def rendered_install(extras: str) -> str:
    """The install builder as jenkins-jobs renders it for ``extras`` (Jinja2; no trailing newline)."""
    text = (JENKINS_DIR / "builders" / "install.sh").read_text()
    assert text.count("{{ extras }}") == 1 and text.count("{") - text.count("${") == 2
    return text.replace("{{ extras }}", extras).removesuffix("\n")


def builder(name: str) -> str:
    return (JENKINS_DIR / "builders" / name).read_text()


def test_one_trigger_job_per_package_and_one_nightly(jobs: dict[str, etree._Element]) -> None:
    assert sorted(jobs) == [
        "ovsperf-dpdk-koji-build",
        "ovsperf-nightly",
        "ovsperf-openvswitch-koji-build",
        "ovsperf-process-results",
    ]


def test_collector_job_publishes_junit_of_each_pass(jobs: dict[str, etree._Element]) -> None:
    job = jobs["ovsperf-process-results"]
    assert job.findtext("assignedNode") == "ovsperf-collector"
    assert params(job) == {
        "CIFLOW_CONFIG": "/etc/ovsperf/ciflow.yaml",
        "CI_IN": "/srv/ovsperf/ci_in",
        "BEAKER_STATE": "/srv/ovsperf/beaker-state.json",
        "COLLECT_DEADLINE_S": "1800",
    }
    assert job.findtext("triggers/hudson.triggers.TimerTrigger/spec") == "H/15 * * * *"
    commands = shell_commands(job)
    # The collector installs what ovsperf-beaker (beaker) and process-ci-results (report) import.
    assert commands == [rendered_install("beaker,report"), builder("process-results.sh")]
    assert "OVSPERF_EXTRAS='beaker,report'" in commands[0]
    collect = (
        '"${OVSPERF_VENV}/bin/ovsperf-beaker" collect --once --state "${BEAKER_STATE}" --ci-in "${CI_IN}"'
    )
    assert collect in commands[1]
    assert '--junit "${OUT}/ovsperf-junit.xml"' in commands[1]
    shells = job.findall("builders/hudson.tasks.Shell")
    assert shells[1].findtext("unstableReturn") == "1"
    junit = job.find("publishers/hudson.tasks.junit.JUnitResultArchiver")
    assert junit is not None
    assert junit.findtext("testResults") == "out/ovsperf-junit.xml"
    assert junit.findtext("allowEmptyResults") == "true"
    archiver = job.find("publishers/hudson.tasks.ArtifactArchiver")
    assert archiver is not None and archiver.findtext("artifacts") == "out/**"


@pytest.mark.parametrize("package", PACKAGES)
def test_trigger_listens_for_complete_builds_of_the_package_by_the_owner(
    jobs: dict[str, etree._Element], package: str
) -> None:
    job = jobs[f"ovsperf-{package}-koji-build"]
    triggers = job.findall(f"triggers/{TRIGGER}")
    assert len(triggers) == 1
    trigger = triggers[0]
    # Native <providers> form (plugin >= 1.1 / 2.x), not JJB's legacy flat fields.
    assert trigger.find("providerName") is None and trigger.find("selector") is None
    assert trigger.findtext("noSquash") == "true"
    provider = trigger.find(f"providers/{AMQ}")
    assert provider is not None
    assert provider.findtext("name") == "Red Hat UMB"
    assert provider.findtext("overrides/topic") == (
        "Consumer.rh-jenkins-ci-plugin.ovsperf.VirtualTopic.eng.brew.build.complete"
    )
    assert provider.findtext("selector") == (
        f"type = 'BuildStateChange' AND name = '{package}' AND new = 'COMPLETE'"
    )
    assert checks(job) == {
        "$.info.name": f"^{package}$",
        "$.new": "^1$",  # koji.BUILD_STATES['COMPLETE']
        "$.info.owner_name": "^ovs-team$",
    }
    assert provider.findtext("variable") == "CI_MESSAGE"
    assert job.find("triggers/hudson.triggers.TimerTrigger") is None


@pytest.mark.parametrize("package", PACKAGES)
def test_trigger_job_parameters_and_tag_filter(jobs: dict[str, etree._Element], package: str) -> None:
    job = jobs[f"ovsperf-{package}-koji-build"]
    assert params(job) == {
        "PACKAGE": package,
        "KOJI_OWNER": "ovs-team",
        "KOJI_BUILD_ID": "",
        "KOJI_TASK_ID": "",
        "KOJI_TAG_WAIT_S": "300",
        "CI_MESSAGE": "",
        "KOJI_PROFILE": "koji",
        "KOJI_HUB": "",
        "KOJI_TOPURL": "",
        "KOJI_TAG": "fdp-el9-candidate",
        "GENERATOR_HOST": "moongen.example.com",
        "DUT_HOST": "dut.example.com",
        "DISTRO": "RHEL-9.4.0",
        "SCENARIOS": "OVS_DPDK1q_GUEST_DPDK1q OVS_DPDK2q",
        "BASELINE": "",
        "RESERVE_HOURS": "",
        "REPO_PUBLISH_DIR": "/var/www/html/ovsperf-repos",
        "REPO_BASE_URL": "http://jenkins-agent.example.com/ovsperf-repos",
        "TASK_REPO": "",
        "INVENTORY": "",
        "SCENARIO_CATALOG": "",
        "COLLECTOR": "",
        "BEAKER_STATE": "/srv/ovsperf/beaker-state.json",
    }
    ci_message = job.find(
        "properties/hudson.model.ParametersDefinitionProperty/parameterDefinitions/"
        "hudson.model.TextParameterDefinition"
    )
    assert ci_message is not None and ci_message.findtext("name") == "CI_MESSAGE"
    # The tag is filtered by the builder (state messages carry no tag); "not in tag" is UNSTABLE.
    prepare = job.findall("builders/hudson.tasks.Shell")[1]
    assert '--tag "${KOJI_TAG}" --tag-wait-s "${KOJI_TAG_WAIT_S}"' in str(prepare.findtext("command"))
    assert '--owner "${KOJI_OWNER}"' in str(prepare.findtext("command"))
    assert prepare.findtext("unstableReturn") == "3"


def test_nightly_runs_on_a_timer_with_latest_tagged_builds(jobs: dict[str, etree._Element]) -> None:
    job = jobs["ovsperf-nightly"]
    assert [t.tag for t in job.find("triggers")] == ["hudson.triggers.TimerTrigger"]
    assert job.findtext("triggers/hudson.triggers.TimerTrigger/spec") == "H 2 * * *"
    p = params(job)
    assert p["PACKAGES"] == "openvswitch dpdk" and p["KOJI_TAG"] == "fdp-el9-candidate"
    assert {
        "GENERATOR_HOST",
        "DUT_HOST",
        "DISTRO",
        "SCENARIOS",
        "BASELINE",
        "KOJI_PROFILE",
        "KOJI_HUB",
    } <= set(p)
    assert "CI_MESSAGE" not in p and "KOJI_BUILD_ID" not in p
    commands = shell_commands(job)
    assert '--latest-tagged "${KOJI_TAG}" --package "${PACKAGES}"' in commands[1]


@pytest.mark.parametrize(
    "name", ["ovsperf-openvswitch-koji-build", "ovsperf-dpdk-koji-build", "ovsperf-nightly"]
)
def test_builders_run_our_scripts_verbatim(jobs: dict[str, etree._Element], name: str) -> None:
    commands = shell_commands(jobs[name])
    prepare = "prepare-repo-nightly.sh" if name.endswith("nightly") else "prepare-repo-trigger.sh"
    # ovsperf-koji (koji) and ovsperf-beaker track (beaker): the install line names both groups.
    assert commands == [rendered_install("koji,beaker"), builder(prepare), builder("submit.sh")]
    assert '"${OVSPERF_VENV}/bin/ovsperf-koji" prepare-repo' in commands[1]
    assert '"${OVSPERF_VENV}/bin/ovsperf-koji" submit' in commands[2]
    assert '"${OVSPERF_VENV}/bin/ovsperf-beaker" track --state "${TRACK_STATE}"' in commands[2]
    assert 'TRACK_STATE="${BEAKER_STATE:-}"' in commands[2]
    assert '--build-url "${BUILD_URL}"' in commands[2]
    for command in commands:
        assert command.startswith("#!/bin/bash\n")
        assert "set -o errexit -o nounset -o pipefail" in command
        assert "|| true" not in command


@pytest.mark.parametrize(
    "name", ["ovsperf-openvswitch-koji-build", "ovsperf-dpdk-koji-build", "ovsperf-nightly"]
)
def test_every_perf_job_locks_both_lab_hosts_and_archives_ids_and_jobs(
    jobs: dict[str, etree._Element], name: str
) -> None:
    job = jobs[name]
    lock = job.find("properties/org.jenkins.plugins.lockableresources.RequiredResourcesProperty")
    assert lock is not None
    # Same resource names in every job, from the build's own host parameters.
    assert lock.findtext("resourceNames") == "${GENERATOR_HOST} ${DUT_HOST}"
    assert job.findtext("concurrentBuild") == "false"
    archiver = job.find("publishers/hudson.tasks.ArtifactArchiver")
    assert archiver is not None and archiver.findtext("artifacts") == "out/**"
    submit = shell_commands(job)[2]
    assert '--ids-file "${OUT}/job-ids.json" --job-xml-dir "${OUT}/beaker-jobs"' in submit
    assert job.findtext(
        "buildWrappers/hudson.plugins.build__timeout.BuildTimeoutWrapper/strategy/timeoutMinutes"
    ) == ("120")


def test_default_scenarios_exist_in_the_catalog(jobs: dict[str, etree._Element]) -> None:
    catalog = load_catalog()
    for name in params(jobs["ovsperf-nightly"])["SCENARIOS"].split():
        catalog.get(name)


def test_project_values_are_parameters_not_hard_coded(tmp_path: Path) -> None:
    """A site project with other owner, tag, hosts, bus and schedule renders with exactly those."""
    src = tmp_path / "jenkins"
    shutil.copytree(JENKINS_DIR, src)
    docs = yaml.safe_load((src / "ovsperf.yaml").read_text())
    project = docs[0]["project"]
    project.update(
        {
            "name": "site",
            "package": ["openvswitch3.3"],
            "koji-owner": "alice",
            "koji-tag": "rhel-9.4-fdp-candidate",
            "generator-host": "tg1.lab",
            "dut-host": "dut1.lab",
            "msg-provider": "fedora-amqp",
            "msg-topic": "org.fedoraproject.prod.buildsys.build.state.change",
            "nightly-schedule": "H 4 * * 1-5",
            "nightly-packages": "openvswitch3.3 dpdk",
            "ciflow-config": "/srv/ovsperf/ciflow.yaml",
            "ci-in": "/srv/ovsperf/incoming",
            "beaker-state": "/nfs/ovsperf/jobs.json",
            "collect-deadline-s": 60,
            "collector-extras": "beaker,report,postgresql",
            "task-repo": "https://git.lab/ovsperf.tar.gz",
            "inventory": "lab/inventory.yaml",
            "scenario-catalog": "/etc/ovsperf/scenarios.yaml",
            "process-schedule": "H/5 * * * *",
        }
    )
    (src / "ovsperf.yaml").write_text(yaml.safe_dump(docs, sort_keys=False))
    jobs = render(src, tmp_path / "out")
    assert sorted(jobs) == ["site-nightly", "site-openvswitch3.3-koji-build", "site-process-results"]
    collector = jobs.pop("site-process-results")
    assert params(collector) == {
        "CIFLOW_CONFIG": "/srv/ovsperf/ciflow.yaml",
        "CI_IN": "/srv/ovsperf/incoming",
        "BEAKER_STATE": "/nfs/ovsperf/jobs.json",
        "COLLECT_DEADLINE_S": "60",
    }
    assert shell_commands(collector)[0] == rendered_install("beaker,report,postgresql")
    assert collector.findtext("triggers/hudson.triggers.TimerTrigger/spec") == "H/5 * * * *"
    trigger_job = jobs["site-openvswitch3.3-koji-build"]
    assert checks(trigger_job) == {
        "$.info.name": "^openvswitch3.3$",
        "$.new": "^1$",
        "$.info.owner_name": "^alice$",
    }
    provider = trigger_job.find(f"triggers/{TRIGGER}/providers/{AMQ}")
    assert provider is not None
    assert provider.findtext("name") == "fedora-amqp"
    assert provider.findtext("overrides/topic") == "org.fedoraproject.prod.buildsys.build.state.change"
    assert "name = 'openvswitch3.3'" in str(provider.findtext("selector"))
    for job in jobs.values():
        p = params(job)
        assert (p["KOJI_TAG"], p["GENERATOR_HOST"], p["DUT_HOST"]) == (
            "rhel-9.4-fdp-candidate",
            "tg1.lab",
            "dut1.lab",
        )
        assert (p["BEAKER_STATE"], p["TASK_REPO"], p["INVENTORY"], p["SCENARIO_CATALOG"]) == (
            "/nfs/ovsperf/jobs.json",
            "https://git.lab/ovsperf.tar.gz",
            "lab/inventory.yaml",
            "/etc/ovsperf/scenarios.yaml",
        )
        assert shell_commands(job)[0] == rendered_install("koji,beaker")
    assert jobs["site-nightly"].findtext("triggers/hudson.triggers.TimerTrigger/spec") == "H 4 * * 1-5"
    assert params(jobs["site-nightly"])["PACKAGES"] == "openvswitch3.3 dpdk"
