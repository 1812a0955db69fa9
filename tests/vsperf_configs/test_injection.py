"""No value from outside runs as code in the VSperf --conf-file, or leaves its NAME=VALUE line.

VSperf executes its configuration file as Python. Every generated file is parsed with ``ast`` (only
literal assignments) and executed in a subprocess beside a sentinel; hostile values go into every
string field of the inventory, of the catalog and of the command line. Each either is refused
with exit 2 naming the field, or ends up inert in a literal or an escaped comment.
"""

from __future__ import annotations

import ast
import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ovsperf_catalog.catalog import default_catalog_path, load_catalog
from vsperf_configs.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "vsperf_configs" / "inventory.example.yaml"
DUT = "dut01.example.com"


def _payload(sentinel: Path) -> str:
    return f"x\n__import__('os').system('touch {sentinel}')\n#"


def _check_config(text: str, sentinel: Path, tmp_path: Path) -> None:
    """Assert ``text`` holds only literal assignments, and executing it creates no sentinel."""
    for node in ast.parse(text).body:
        assert isinstance(node, ast.Assign), ast.dump(node)[:200]
        value = node.value
        if isinstance(value, ast.BinOp):  # PERFORMANCE_TESTS = PERFORMANCE_TESTS + [literal]
            assert isinstance(value.op, ast.Add) and isinstance(value.left, ast.Name)
            assert [value.left.id] == [t.id for t in node.targets if isinstance(t, ast.Name)]
            assert value.left.id == "PERFORMANCE_TESTS"
            value = value.right
        ast.literal_eval(value)
        for target in node.targets:
            while isinstance(target, ast.Subscript):
                ast.literal_eval(target.slice)
                target = target.value
            assert isinstance(target, ast.Name) and target.id.isupper()
    conf = tmp_path / "vsperf.conf"
    conf.write_text(text)
    # Executed as VSperf does (exec of the file in a module namespace holding its defaults).
    code = "import sys\nns = {'TRAFFIC': {}, 'PATHS': {'vswitch': {'OvsDpdkVhost': {}, 'OvsVanilla': {}}, "
    code += "'dpdk': {'bin': {}, 'src': {}}, 'qemu': {'bin': {}}}, "
    code += "'VSWITCHD_DPDK_CONFIG': {}, 'PERFORMANCE_TESTS': [], "
    code += "'VXLAN_FRAME_L3': {}, 'VXLAN_FRAME_L4': {}, 'GENEVE_FRAME_L3': {}, 'GENEVE_FRAME_L4': {}}\n"
    code += "exec(open(sys.argv[1]).read(), ns)\n"
    subprocess.run(
        [sys.executable, "-c", code, str(conf)],
        check=True,
        timeout=60,
        capture_output=True,
        cwd=sentinel.parent,
    )
    assert not sentinel.exists()


def _inventory_fields(inventory: dict[str, Any]) -> list[tuple[str, ...]]:
    dut = inventory["hosts"][DUT]
    paths = [("hosts", DUT, "guest_image"), ("hosts", DUT, "role"), ("hosts", DUT, "nics", 0)]
    paths += [("hosts", DUT, "cpus", "pmd"), ("hosts", DUT, "cpus", "guest")]
    paths += [("hosts", DUT, "moongen", key) for key in ("host", "address", "user", "base_dir")]
    assert all(key in dut["moongen"] for key in ("host", "address", "user", "base_dir"))
    return paths  # type: ignore[return-value]


def _set(data: dict[str, Any], path: tuple[Any, ...], value: object) -> None:
    for key in path[:-1]:
        data = data[key]
    data[path[-1]] = value


INVENTORY = yaml.safe_load(EXAMPLE.read_text())


@pytest.mark.parametrize("path", _inventory_fields(INVENTORY), ids=lambda p: ".".join(map(str, p[2:])))
def test_hostile_inventory_values_are_refused_naming_the_field(
    path: tuple[Any, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sentinel = tmp_path / "SENTINEL"
    data = copy.deepcopy(INVENTORY)
    _set(data, path, _payload(sentinel))
    inv = tmp_path / "inv.yaml"
    inv.write_text(yaml.safe_dump(data))
    out = tmp_path / "out.conf"
    code = main(
        [
            "--scenario",
            "OVS_DPDK1q_GUEST_DPDK1q",
            "--host",
            DUT,
            "--inventory",
            str(inv),
            "--output",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    if code == 0:  # accepted: it must be inert
        _check_config(out.read_text(), sentinel, tmp_path)
    else:
        assert code == 2
        field = ".".join(str(p) for p in path[2:] if not isinstance(p, int))
        assert f"field '{field}" in err, err
        assert len(err.splitlines()) == 1 and not out.exists()
    assert not sentinel.exists()


def test_a_hostile_host_name_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = copy.deepcopy(INVENTORY)
    data["hosts"]["evil\n__import__('os')"] = data["hosts"].pop("moongen01.example.com")
    inv = tmp_path / "inv.yaml"
    inv.write_text(yaml.safe_dump(data))
    assert main(["--scenario", "OVS_DPDK1q", "--host", DUT, "--inventory", str(inv)]) == 2
    assert "the host's name" in capsys.readouterr().err


@pytest.mark.parametrize("field", ["description", "kernel_options"])
def test_hostile_catalog_values_are_refused_or_inert(
    field: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sentinel = tmp_path / "SENTINEL"
    catalog = yaml.safe_load(default_catalog_path().read_text())
    entry = catalog["scenarios"]["OVS_DPDK1q"]
    if field == "kernel_options":
        entry["kernel_options"] = ["iommu=pt", "quiet " + _payload(sentinel)]
    else:
        entry[field] = _payload(sentinel)
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump(catalog))
    inv = tmp_path / "inv.yaml"
    inv.write_text(EXAMPLE.read_text())
    code = main(["--scenario", "OVS_DPDK1q", "--host", DUT, "--inventory", str(inv), "--catalog", str(path)])
    captured = capsys.readouterr()
    assert code == 2 and f"field '{field}" in captured.err and captured.out == ""
    assert not sentinel.exists()


def test_hostile_command_line_paths_stay_in_a_comment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sentinel = tmp_path / "SENTINEL"
    odd = tmp_path / f"inv\n__import__('os').system('touch {sentinel.name}')\n#.yaml"
    odd.write_text(EXAMPLE.read_text())
    assert main(["--scenario", "OVS_DPDK1q_GUEST_DPDK1q", "--host", DUT, "--inventory", str(odd)]) == 0
    _check_config(capsys.readouterr().out, sentinel, tmp_path)
    guest_dpdk = f"/opt/x'\n__import__('os').system('touch {sentinel.name}')\n#"
    argv = ["--scenario", "OVS_DPDK1q_GUEST_DPDK1q", "--host", DUT, "--inventory", str(EXAMPLE)]
    assert main([*argv, "--guest-dpdk-dir", guest_dpdk]) == 0
    out = capsys.readouterr().out
    assert f"PATHS['dpdk']['src']['path'] = {guest_dpdk!r}  #" in out
    _check_config(out, sentinel, tmp_path)


@pytest.mark.parametrize("scenario", load_catalog().names())
def test_every_scenario_config_is_literal_assignments_only(
    scenario: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--scenario", scenario, "--host", DUT, "--inventory", str(EXAMPLE)]) == 0
    _check_config(capsys.readouterr().out, tmp_path / "SENTINEL", tmp_path)


def test_host_env_lines_stay_one_per_variable(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--host-env", "--host", DUT, "--inventory", str(EXAMPLE)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert all("=" in line and line.split("=", 1)[0].isupper() for line in lines)
    assert len(lines) == 20  # GENERATOR_CPUS and DPDK_PORTS beside the old MOONGEN_CPUS; GENERATOR, TREX_*
