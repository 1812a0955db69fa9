from __future__ import annotations

from .shims import REPO, Lab

TG = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
MG = "0123456789abcdef0123456789abcdef01234567"


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
