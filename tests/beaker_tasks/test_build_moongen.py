from __future__ import annotations

import subprocess

from jobcreator.jobmodel import DEFAULT_TRAFFICGEN_COMMIT

from .shims import REPO, Lab

TG = DEFAULT_TRAFFICGEN_COMMIT
"""The pinned lua-trafficgen commit: the git shim has ``trafficgen.lua`` only where upstream has it."""
MG = "0123456789abcdef0123456789abcdef01234567"
UPSTREAM_MASTER_2021 = "84ee89aeeaa635928b3228dd380e492a6d3d4a98"
"""lua-trafficgen master of 2021-04-27 (the old pin): no ``trafficgen.lua`` since cc4f4e5."""


def _params(lab: Lab, **extra: str) -> dict[str, str]:
    params = {
        "TRAFFICGEN_COMMIT": TG,
        "MOONGEN_COMMIT": MG,
        "MOONGEN_BASE_DIR": str(lab.root / "lua-trafficgen"),
        "INVENTORY": str(REPO / "vsperf_configs" / "inventory.example.yaml"),
        "BUILD_MOONGEN_HOST": "moongen01.example.com",
    }
    params.update(extra)
    return params


def test_fetch_build_configure(lab: Lab) -> None:
    base = lab.root / "lua-trafficgen"
    run = lab.run("build_moongen", **_params(lab))
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.reported() == [
        ("build_moongen/fetch", "PASS"),
        ("build_moongen/build", "PASS"),
        ("build_moongen/configure", "PASS"),
    ]
    order = [
        run.index("git", "clone", "https://github.com/atheurer/lua-trafficgen", str(base)),
        run.index("git", "-C", str(base), "checkout", "--detach", TG),
        run.index("git", "clone", "https://github.com/emmericp/MoonGen", str(base / "MoonGen")),
        run.index("git", "-C", str(base / "MoonGen"), "checkout", "--detach", MG),
        run.index("git", "-C", str(base / "MoonGen"), "submodule", "update", "--init", "--recursive"),
    ]
    assert order == sorted(order)
    assert (base / "MoonGen" / "build" / "MoonGen").exists()
    conf = (base / "dpdk-conf.lua").read_text()
    assert "DPDKConfig {" in conf
    assert "cores = {12,13,14,15,16,17}," in conf
    assert 'pciWhitelist = {"0000:81:00.0", "0000:81:00.1"},' in conf
    assert (base / "MoonGen" / "dpdk-conf.lua").read_text() == conf
    # Re-running (e.g. after a reboot) fetches instead of cloning and does not rebuild.
    run = lab.run("build_moongen", **_params(lab))
    assert run.returncode == 0, run.stdout + run.stderr
    assert not [c for c in run.called("git") if "clone" in c]
    assert ["-C", str(base), "fetch", "--tags", "origin"] in run.called("git")
    assert "MoonGen already built at these commits" in run.stdout


def test_parameters_without_inventory(lab: Lab) -> None:
    params = _params(lab, INVENTORY="", TEST_NICS="0000:03:00.0 0000:03:00.1", MOONGEN_CPUS="2,3,4")
    run = lab.run("build_moongen", **params)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "cores = {2,3,4}," in (lab.root / "lua-trafficgen" / "dpdk-conf.lua").read_text()


def test_repository_down_is_warn_and_abort(lab: Lab) -> None:
    run = lab.run("build_moongen", SHIM_GIT_FAIL="clone", **_params(lab))
    assert run.returncode == 2
    assert run.reported() == [("build_moongen/fetch", "WARN")]
    assert "Cannot clone 'https://github.com/atheurer/lua-trafficgen' (repository down?)." in run.stderr
    assert run.called("rstrnt-abort") == [["-t", "recipe"]]


def test_unknown_commit_is_warn_and_abort(lab: Lab) -> None:
    run = lab.run("build_moongen", SHIM_GIT_BAD_COMMIT=MG, **_params(lab))
    assert run.returncode == 2
    assert f"Commit {MG} does not exist in 'https://github.com/emmericp/MoonGen'." in run.stderr


def test_build_failure_is_fail(lab: Lab) -> None:
    run = lab.run("build_moongen", SHIM_BUILD_FAIL="1", **_params(lab))
    assert run.returncode == 1
    assert run.reported() == [("build_moongen/fetch", "PASS"), ("build_moongen/build", "FAIL")]
    assert "The build left no executable" in run.stdout
    assert not (lab.root / "lua-trafficgen" / "dpdk-conf.lua").exists()


def test_unpinned_commit_is_refused(lab: Lab) -> None:
    run = lab.run("build_moongen", **_params(lab, MOONGEN_COMMIT="master"))
    assert run.returncode == 2
    assert "Commit 'master' is not a git commit id" in run.stderr
    assert not run.called("git")


def test_a_trafficgen_commit_without_trafficgen_lua_is_warn_and_abort(lab: Lab) -> None:
    """The old pin (lua-trafficgen master of 2021) has no trafficgen.lua: refused before fetching MoonGen."""
    run = lab.run("build_moongen", **_params(lab, TRAFFICGEN_COMMIT=UPSTREAM_MASTER_2021))
    assert run.returncode == 2
    assert run.reported() == [("build_moongen/fetch", "WARN")]
    assert (
        f"lua-trafficgen commit {UPSTREAM_MASTER_2021} has no 'trafficgen.lua' (VSperf's MoonGen script, "
        "removed upstream in cc4f4e5); pin 61caf959e3ad38f490d4fa75a39f6115492680a1" in run.stderr
    )
    assert run.called("rstrnt-abort") == [["-t", "recipe"]]
    assert not [c for c in run.called("git") if "MoonGen" in " ".join(c)]
    assert not (lab.root / "lua-trafficgen" / "MoonGen" / "build").exists()


def test_moving_the_pin_off_trafficgen_lua_removes_it(lab: Lab) -> None:
    """A checkout that once had trafficgen.lua loses it when moved to a commit without it, as git does."""
    assert lab.run("build_moongen", **_params(lab)).returncode == 0
    assert (lab.root / "lua-trafficgen" / "trafficgen.lua").is_file()
    run = lab.run("build_moongen", **_params(lab, TRAFFICGEN_COMMIT=UPSTREAM_MASTER_2021))
    assert run.returncode == 2 and "has no 'trafficgen.lua'" in run.stderr
    assert not (lab.root / "lua-trafficgen" / "trafficgen.lua").exists()


def test_the_built_moongen_needs_its_script(lab: Lab) -> None:
    """The stand-in MoonGen fails as the real one does when VSperf's script is not there."""
    base = lab.root / "lua-trafficgen"
    assert lab.run("build_moongen", **_params(lab)).returncode == 0
    ran = subprocess.run(
        ["./MoonGen/build/MoonGen", "trafficgen.lua"], cwd=base, capture_output=True, text=True, check=False
    )
    assert ran.returncode == 0 and "fake MoonGen ran trafficgen.lua" in ran.stdout
    (base / "trafficgen.lua").unlink()
    ran = subprocess.run(
        ["./MoonGen/build/MoonGen", "trafficgen.lua"], cwd=base, capture_output=True, text=True, check=False
    )
    assert ran.returncode == 1 and "cannot open trafficgen.lua" in ran.stderr
