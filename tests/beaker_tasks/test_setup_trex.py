"""setup_trex for real on a fake machine: a tarball served over HTTP, a stand-in t-rex-64, stub systemd.

No TRex runs here: the tarball is built by the test (``t-rex-64`` is a Python stand-in that listens
on the sync port, or logs and exits, as the test asks), systemctl and journalctl are stubs on PATH
that start and stop that stand-in as a background process of the test (never a service of this
machine), and /etc is the fake machine's.
"""

from __future__ import annotations

import hashlib
import http.server
import io
import os
import signal
import socket
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.vsperf_configs.trexinv import TREX_DUT, TREX_NICS, TREX_TG, write_trex_inventory

from .shims import REPO, SHIM_DIR, TASKS, Lab

MACS = {TREX_NICS[0]: "3c:fd:fe:00:00:10", TREX_NICS[1]: "3c:fd:fe:00:00:11"}

FAKE_TREX = """#!/usr/bin/env python3
# Stand-in for TRex's t-rex-64 (tests only): log like the server, then listen on the sync port or fail.
import os, signal, socket, sys, time
print("Starting  TRex v3.04 please wait  ... ", " ".join(sys.argv[1:]), flush=True)
mode = os.environ.get("FAKE_TREX_MODE", "listen")
if mode == "fail":
    print("EAL: Error - exiting with code: 1  Cause: Cannot configure device: err=-22, port=0", flush=True)
    sys.exit(1)
if mode == "hang":
    print("Checking for link ... waiting", flush=True)
    time.sleep(3600)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", int(os.environ["TREX_SYNC_PORT"])))
server.listen(8)
print("-Per port stats table", flush=True)
while True:
    conn, _ = server.accept()
    conn.close()
"""

SYSTEMCTL = """#!/bin/bash
# Stub systemctl (tests only): record the call; 'restart trex.service' runs the install dir's
# t-rex-64 in the background with its output in the fake journal; 'stop' ends it by its PID.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\\\n"; } >>"${SHIM_LOG:?}"
case "$1" in
    restart)
        (cd "${TREX_INSTALL_DIR:?}" && exec ./t-rex-64 -i --cfg /etc/trex_cfg.yaml) \\
            </dev/null >>"${FAKE_JOURNAL:?}" 2>&1 3>&- &
        echo "$!" >"${FAKE_TREX_PIDFILE:?}"
        ;;
    is-active)
        [[ -f "${FAKE_TREX_PIDFILE:?}" ]] && kill -0 "$(cat "${FAKE_TREX_PIDFILE}")" 2>/dev/null
        exit
        ;;
    stop)
        [[ -f "${FAKE_TREX_PIDFILE:?}" ]] && kill "$(cat "${FAKE_TREX_PIDFILE}")" 2>/dev/null
        rm -f "${FAKE_TREX_PIDFILE}"
        ;;
    daemon-reload)
        [[ -z "${FAKE_SYSTEMCTL_RELOAD_FAILS:-}" ]] || { echo "Failed to reload daemon" >&2; exit 1; }
        ;;
esac
exit 0
"""

JOURNALCTL = """#!/bin/bash
# Stub journalctl (tests only): the fake journal of trex.service.
{ printf "%s" "${0##*/}"; for arg in "$@"; do printf " %q" "$arg"; done; printf "\\\\n"; } >>"${SHIM_LOG:?}"
cat "${FAKE_JOURNAL:?}"
"""


def _tarball(top: str = "v3.04", *, with_binary: bool = True) -> bytes:
    """Return a gzip tarball laid out like a TRex release: ``<top>/t-rex-64`` and the client library."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        files = {
            f"{top}/automation/trex_control_plane/interactive/trex_stl_lib/api.py": b"# stand-in\n",
            f"{top}/trex-cfg-example.yaml": b"- port_limit: 2\n",
        }
        if with_binary:
            files[f"{top}/t-rex-64"] = FAKE_TREX.encode()
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755 if name.endswith("t-rex-64") else 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class Served:
    """Files served over HTTP by a thread of the test on ``bind`` (127.0.0.1, or 0.0.0.0: every address
    of the test's namespace); ``hits`` counts the requests, ``clients`` lists their addresses."""

    def __init__(self, bind: str = "127.0.0.1") -> None:
        self.files: dict[str, bytes] = {}
        self.hits = 0
        self.clients: list[str] = []
        served = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                served.hits += 1
                served.clients.append(self.client_address[0])
                body = served.files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer((bind, 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        """Return the port the server listens on."""
        return int(self.server.server_address[1])

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def served() -> Iterator[Served]:
    server = Served()
    yield server
    server.close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def trex_lab(tmp_path: Path) -> Iterator[Lab]:
    """The fake TG, its NICs with MACs, stub systemctl/journalctl; the stand-in server ended after."""
    lab = Lab(tmp_path / "lab", nics=TREX_NICS)
    for index, pci in enumerate(TREX_NICS):
        (lab.sysfs / "bus" / "pci" / "devices" / pci / "net" / f"ens1f{index}" / "address").write_text(
            MACS[pci] + "\n"
        )
    for name, text in (("systemctl", SYSTEMCTL), ("journalctl", JOURNALCTL)):
        stub = lab.bin / name
        stub.unlink(missing_ok=True)
        stub.write_text(text)
        stub.chmod(0o755)
    yield lab
    pidfile = lab.root / "trex.pid"
    if pidfile.exists():
        try:
            os.kill(int(pidfile.read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass


def _params(lab: Lab, inventory: Path, install: Path, **extra: str) -> dict[str, str]:
    params = {
        "INVENTORY": str(inventory),
        "SETUP_TREX_HOST": TREX_TG,
        "TREX_INSTALL_DIR": str(install),
        "FAKE_JOURNAL": str(lab.root / "journal.log"),
        "FAKE_TREX_PIDFILE": str(lab.root / "trex.pid"),
        "TREX_SYNC_PORT": str(_free_port()),
        "TREX_DOWNLOAD_TIMEOUT_S": "30",
    }
    params.update(extra)
    return params


def _inventory(tmp_path: Path, served: Served, body: bytes, *, sha256: str | None = None) -> Path:
    served.files["/trex/release/v3.04.tar.gz"] = body
    return write_trex_inventory(
        tmp_path / "inventory.yaml",
        url=served.url("/trex/release/v3.04.tar.gz"),
        sha256=sha256 or hashlib.sha256(body).hexdigest(),
    )


def test_install_start_stop(tmp_path: Path, trex_lab: Lab, served: Served) -> None:
    lab = trex_lab
    install = lab.root / "opt" / "trex"
    params = _params(lab, _inventory(tmp_path, served, _tarball()), install)

    run = lab.run("setup_trex", **params)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.reported() == [
        ("setup_trex/download", "PASS"),
        ("setup_trex/unpack", "PASS"),
        ("setup_trex/configure", "PASS"),
    ]
    # Unpacked with the top directory stripped; the stamp records the checked tarball.
    assert os.access(install / "t-rex-64", os.X_OK)
    assert (install / "automation/trex_control_plane/interactive/trex_stl_lib/api.py").is_file()
    assert not (install / "v3.04").exists()
    assert not list(install.parent.glob("trex.ovsperf-*"))
    # /etc/trex_cfg.yaml, field by field.
    cfg = yaml.safe_load((lab.etc / "trex_cfg.yaml").read_text())
    assert isinstance(cfg, list) and len(cfg) == 1
    (entry,) = cfg
    assert entry["port_limit"] == 2
    assert entry["version"] == 2
    assert entry["c"] == 3
    assert entry["interfaces"] == [TREX_NICS[1], TREX_NICS[0]]  # trex.ports [1, 0]: port 0 first
    assert entry["port_info"] == [
        {"src_mac": MACS[TREX_NICS[1]], "dest_mac": MACS[TREX_NICS[0]]},
        {"src_mac": MACS[TREX_NICS[0]], "dest_mac": MACS[TREX_NICS[1]]},
    ]
    assert entry["platform"] == {
        "master_thread_id": 2,
        "latency_thread_id": 3,
        "dual_if": [{"socket": 1, "threads": [4, 5, 6]}],
    }
    unit = (lab.etc / "systemd" / "system" / "trex.service").read_text()
    assert f"WorkingDirectory={install}\n" in unit
    assert f"ExecStart={install}/t-rex-64 -i --iom 0 --cfg /etc/trex_cfg.yaml\n" in unit
    assert unit.startswith("# written by ovsperf setup_trex")
    assert (lab.etc / "trex_cfg.yaml").read_text().startswith("# written by ovsperf setup_trex")
    assert run.called("systemctl") == [["is-active", "--quiet", "trex.service"], ["daemon-reload"]]
    assert not list(lab.etc.rglob("*.ovsperf-*"))  # nothing of someone else's to keep
    assert ["-l", str(lab.etc / "trex_cfg.yaml")] in run.called("rstrnt-report-log")

    # Again: already installed at this checksum, nothing downloaded.
    hits = served.hits
    run = lab.run("setup_trex", **params)
    assert run.returncode == 0, run.stdout + run.stderr
    assert served.hits == hits
    assert "is already installed" in run.stdout

    run = lab.run("setup_trex", SETUP_TREX_ACTION="start", **params)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.reported() == [("setup_trex/start", "PASS")]
    assert run.called("systemctl")[0] == ["restart", "trex.service"]
    assert {tuple(c) for c in run.called("systemctl")[1:]} <= {("is-active", "--quiet", "trex.service")}
    pid = int((lab.root / "trex.pid").read_text())
    with socket.create_connection(("127.0.0.1", int(params["TREX_SYNC_PORT"])), timeout=5):
        pass

    run = lab.run("setup_trex", SETUP_TREX_ACTION="stop", **params)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.reported() == [("setup_trex/stop", "PASS")]
    assert run.called("systemctl") == [["stop", "trex.service"]]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    log = lab.state / "logs" / "boot0" / "trex-server.log"
    assert "Starting  TRex v3.04" in log.read_text()


def test_a_wrong_checksum_aborts_before_unpacking(tmp_path: Path, trex_lab: Lab, served: Served) -> None:
    lab = trex_lab
    (lab.bin / "tar").symlink_to(SHIM_DIR / "generic.sh")  # records a call, unpacks nothing
    install = lab.root / "opt" / "trex"
    inventory = _inventory(tmp_path, served, _tarball(), sha256="0" * 64)
    run = lab.run("setup_trex", **_params(lab, inventory, install))
    assert run.returncode == 2
    assert run.reported() == [("setup_trex/download", "WARN")]
    assert f"not the inventory's {'0' * 64}; nothing was unpacked." in run.stderr
    assert run.called("rstrnt-abort") == [["-t", "recipe"]]
    assert served.hits == 1
    assert not install.exists()
    assert not (lab.root / "opt").exists() or not list((lab.root / "opt").iterdir())
    assert not list(lab.state.glob("trex-download*"))
    assert not (lab.etc / "trex_cfg.yaml").exists()
    assert run.called("tar") == []
    assert [c for c in run.called("systemctl") if c[0] != "is-active"] == []


def test_a_wrong_checksum_leaves_an_installed_trex_alone(
    tmp_path: Path, trex_lab: Lab, served: Served
) -> None:
    lab = trex_lab
    install = lab.root / "opt" / "trex"
    good = _tarball()
    assert lab.run("setup_trex", **_params(lab, _inventory(tmp_path, served, good), install)).returncode == 0
    before = sorted(p.relative_to(install) for p in install.rglob("*"))
    other = _tarball("v3.05")
    inventory = _inventory(tmp_path, served, other, sha256=hashlib.sha256(good).hexdigest()[::-1])
    run = lab.run("setup_trex", **_params(lab, inventory, install))
    assert run.returncode == 2 and "nothing was unpacked" in run.stderr
    assert sorted(p.relative_to(install) for p in install.rglob("*")) == before


def test_download_failures_are_bounded_warn_and_abort(tmp_path: Path, trex_lab: Lab, served: Served) -> None:
    lab = trex_lab
    inventory = _inventory(tmp_path, served, _tarball())
    served.files.clear()  # the server answers 404
    start = time.monotonic()
    run = lab.run(
        "setup_trex", **_params(lab, inventory, lab.root / "opt" / "trex", TREX_DOWNLOAD_ATTEMPTS="2")
    )
    assert run.returncode == 2
    assert served.hits == 2
    assert time.monotonic() - start < 30
    assert run.reported() == [("setup_trex/download", "WARN")]
    assert "Cannot download the TRex tarball" in run.stderr and "in 2 attempts within 30 s" in run.stderr


def test_a_tarball_without_t_rex_64_is_refused(tmp_path: Path, trex_lab: Lab, served: Served) -> None:
    lab = trex_lab
    install = lab.root / "opt" / "trex"
    run = lab.run(
        "setup_trex", **_params(lab, _inventory(tmp_path, served, _tarball(with_binary=False)), install)
    )
    assert run.returncode == 2
    assert run.reported() == [("setup_trex/download", "PASS"), ("setup_trex/unpack", "WARN")]
    assert "not a TRex release tarball?" in run.stderr
    assert not install.exists()
    assert not list(install.parent.glob("trex.ovsperf-*"))


@pytest.mark.parametrize("mode", ["hang", "fail"])
def test_a_server_that_does_not_come_up_is_warn_with_its_log(
    tmp_path: Path, trex_lab: Lab, served: Served, mode: str
) -> None:
    lab = trex_lab
    params = _params(lab, _inventory(tmp_path, served, _tarball()), lab.root / "opt" / "trex")
    assert lab.run("setup_trex", **params).returncode == 0
    start = time.monotonic()
    run = lab.run(
        "setup_trex", SETUP_TREX_ACTION="start", TREX_START_TIMEOUT_S="3", FAKE_TREX_MODE=mode, **params
    )
    elapsed = time.monotonic() - start
    assert run.returncode == 2
    assert run.reported() == [("setup_trex/start", "WARN")]
    if mode == "hang":  # waited for its deadline (whole seconds of `date +%s`)
        assert 2 <= elapsed < 20
        assert "did not accept connections on 127.0.0.1:" in run.stderr and "within 3 s" in run.stderr
    else:  # an exited server is reported at once
        assert elapsed < 3
        assert "exited before it accepted connections on 127.0.0.1:" in run.stderr
    log = lab.state / "logs" / "boot0" / "trex-server.log"
    assert ["-l", str(log)] in run.called("rstrnt-report-log")
    text = log.read_text()
    assert "Starting  TRex v3.04" in text
    assert ("Cannot configure device" if mode == "fail" else "Checking for link") in text
    assert run.called("journalctl") == [["--unit", "trex.service", "--no-pager", "--lines", "2000"]]
    assert run.called("rstrnt-abort") == [["-t", "recipe"]]


def test_the_dut_unpacks_the_client_only(tmp_path: Path, trex_lab: Lab, served: Served) -> None:
    lab = trex_lab
    install = lab.root / "opt" / "trex"
    params = _params(lab, _inventory(tmp_path, served, _tarball()), install, SETUP_TREX_HOST=TREX_DUT)
    run = lab.run("setup_trex", **params)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.reported() == [("setup_trex/download", "PASS"), ("setup_trex/unpack", "PASS")]
    assert (install / "automation/trex_control_plane/interactive/trex_stl_lib/api.py").is_file()
    assert not (lab.etc / "trex_cfg.yaml").exists()
    assert not run.called("systemctl")


def test_a_moongen_dut_refuses(tmp_path: Path, trex_lab: Lab) -> None:
    run = trex_lab.run(
        "setup_trex",
        INVENTORY=str(REPO / "vsperf_configs" / "inventory.example.yaml"),
        SETUP_TREX_HOST="dut01.example.com",
        TREX_INSTALL_DIR=str(tmp_path / "trex"),
    )
    assert run.returncode == 2
    assert "does not drive TRex: its inventory peer's generator is 'moongen'" in run.stderr


def test_a_bound_nic_without_its_mac_is_warn_and_abort(tmp_path: Path, trex_lab: Lab, served: Served) -> None:
    lab = trex_lab
    for pci in TREX_NICS:  # what setup_dpdk leaves: no kernel interface
        net = lab.sysfs / "bus" / "pci" / "devices" / pci / "net"
        for child in net.rglob("*"):
            if child.is_file():
                child.unlink()
        for child in sorted(net.iterdir()):
            child.rmdir()
    run = lab.run(
        "setup_trex", **_params(lab, _inventory(tmp_path, served, _tarball()), lab.root / "opt" / "trex")
    )
    assert run.returncode == 2
    assert run.reported()[-1] == ("setup_trex/configure", "WARN")
    assert f"Cannot read the MAC address of TRex port {TREX_NICS[1]}" in run.stderr
    assert not (lab.etc / "trex_cfg.yaml").exists()


# --- never replace what is not ours -------------------------------------------------------------


def test_a_foreign_install_dir_is_never_replaced(tmp_path: Path, trex_lab: Lab, served: Served) -> None:
    """A directory holding anything but our stamp is someone else's: abort before the download,
    naming it; its file stays as it was."""
    lab = trex_lab
    install = lab.root / "opt" / "trex"
    install.mkdir(parents=True)
    (install / "notes.txt").write_text("someone else's\n")
    run = lab.run("setup_trex", **_params(lab, _inventory(tmp_path, served, _tarball()), install))
    assert run.returncode == 2
    assert run.reported() == [("setup_trex/download", "WARN")]
    assert f"TREX_INSTALL_DIR '{install}' exists and is not ours" in run.stderr
    assert served.hits == 0
    assert sorted(p.name for p in install.iterdir()) == ["notes.txt"]
    assert (install / "notes.txt").read_text() == "someone else's\n"
    assert sorted(p.name for p in install.parent.iterdir()) == ["trex"]


def test_an_empty_or_older_install_dir_of_ours_is_replaced(
    tmp_path: Path, trex_lab: Lab, served: Served
) -> None:
    lab = trex_lab
    install = lab.root / "opt" / "trex"
    install.mkdir(parents=True)  # empty: taken
    run = lab.run("setup_trex", **_params(lab, _inventory(tmp_path, served, _tarball()), install))
    assert run.returncode == 0, run.stdout + run.stderr
    (install / "left-by-v3.04").write_text("x")
    newer = _tarball("v3.05")
    run = lab.run("setup_trex", **_params(lab, _inventory(tmp_path, served, newer), install))
    assert run.returncode == 0, run.stdout + run.stderr
    assert (install / ".ovsperf-sha256").read_text() == hashlib.sha256(newer).hexdigest() + "\n"
    assert not (install / "left-by-v3.04").exists()
    assert sorted(p.name for p in install.parent.iterdir()) == ["trex"]


@pytest.mark.parametrize(
    "directory",
    ["/", "/opt", "/usr/local", "/var/lib", "/home/alice", "/etc/trex", "/opt/../etc/trex", "/opt/./trex",
     "/opt//trex", "opt/trex", "/sys/trex"],
)  # fmt: skip
def test_system_and_odd_install_dirs_are_refused(trex_lab: Lab, directory: str) -> None:
    run = trex_lab.run("setup_trex", SETUP_TREX_ACTION="start", TREX_INSTALL_DIR=directory)
    assert run.returncode == 2
    assert f"TREX_INSTALL_DIR '{directory}' is not a directory to install TRex into" in run.stderr
    assert not run.called("systemctl")


def test_a_foreign_trex_cfg_and_unit_are_kept_once(tmp_path: Path, trex_lab: Lab, served: Served) -> None:
    lab = trex_lab
    install = lab.root / "opt" / "trex"
    params = _params(lab, _inventory(tmp_path, served, _tarball()), install)
    cfg, unit = lab.etc / "trex_cfg.yaml", lab.etc / "systemd" / "system" / "trex.service"
    unit.parent.mkdir(parents=True)
    cfg.write_text("- port_limit: 4  # the lab's own\n")
    unit.write_text("[Service]\nExecStart=/usr/local/bin/their-trex\n")
    run = lab.run("setup_trex", **params)
    assert run.returncode == 0, run.stdout + run.stderr
    assert Path(f"{cfg}.ovsperf-orig").read_text() == "- port_limit: 4  # the lab's own\n"
    assert Path(f"{unit}.ovsperf-orig").read_text() == "[Service]\nExecStart=/usr/local/bin/their-trex\n"
    assert cfg.read_text().startswith("# written by ovsperf setup_trex")
    assert unit.read_text().startswith("# written by ovsperf setup_trex")
    # Ours again: replaced, the kept original untouched.
    run = lab.run("setup_trex", **params)
    assert run.returncode == 0, run.stdout + run.stderr
    assert Path(f"{cfg}.ovsperf-orig").read_text() == "- port_limit: 4  # the lab's own\n"
    # A foreign file once more, with the original already kept: neither is replaced.
    cfg.write_text("- port_limit: 8  # changed by hand\n")
    run = lab.run("setup_trex", **params)
    assert run.returncode == 2
    assert run.reported()[-1] == ("setup_trex/configure", "WARN")
    assert f"'{cfg}' is not ours" in run.stderr and "already keeps an earlier one" in run.stderr
    assert cfg.read_text() == "- port_limit: 8  # changed by hand\n"
    assert Path(f"{cfg}.ovsperf-orig").read_text() == "- port_limit: 4  # the lab's own\n"
    assert not list(lab.etc.rglob("*.ovsperf-tmp"))


def _bind_to_dpdk(lab: Lab) -> None:
    """What setup_dpdk leaves: no kernel interface, the driver vfio-pci."""
    vfio = lab.sysfs / "bus" / "pci" / "drivers" / "vfio-pci"
    vfio.mkdir(parents=True, exist_ok=True)
    for pci in TREX_NICS:
        device = lab.sysfs / "bus" / "pci" / "devices" / pci
        for child in sorted((device / "net").rglob("*"), reverse=True):
            child.unlink() if child.is_file() else child.rmdir()
        (device / "driver").unlink()
        (device / "driver").symlink_to(vfio)


def test_a_second_install_on_nics_bound_to_dpdk_uses_the_cached_macs(
    tmp_path: Path, trex_lab: Lab, served: Served
) -> None:
    lab = trex_lab
    params = _params(lab, _inventory(tmp_path, served, _tarball()), lab.root / "opt" / "trex")
    assert lab.run("setup_trex", **params).returncode == 0
    first = (lab.etc / "trex_cfg.yaml").read_text()
    assert {pci: (lab.state / "macs" / pci).read_text() for pci in TREX_NICS} == {
        pci: f"{mac}\n" for pci, mac in MACS.items()
    }
    _bind_to_dpdk(lab)
    (lab.etc / "trex_cfg.yaml").unlink()  # the cache alone
    run = lab.run("setup_trex", **params)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (lab.etc / "trex_cfg.yaml").read_text() == first
    assert f"TRex port {TREX_NICS[1]}: MAC {MACS[TREX_NICS[1]]}" in run.stdout
    # Without the cache, our own configuration gives them.
    for pci in TREX_NICS:
        (lab.state / "macs" / pci).unlink()
    run = lab.run("setup_trex", **params)
    assert run.returncode == 0, run.stdout + run.stderr
    assert (lab.etc / "trex_cfg.yaml").read_text() == first
    # Neither: a clear abort.
    (lab.etc / "trex_cfg.yaml").write_text("- port_limit: 2  # not ours\n")
    run = lab.run("setup_trex", **params)
    assert run.returncode == 2
    port = TREX_NICS[1]
    assert (
        f"Cannot read the MAC address of TRex port {port}: no kernel interface (bound to 'vfio-pci')"
        in run.stderr
    )
    assert "no cached address" in run.stderr and "no configuration of ours" in run.stderr


def test_start_opens_the_async_and_sync_ports_in_firewalld(
    tmp_path: Path, trex_lab: Lab, served: Served
) -> None:
    lab = trex_lab
    params = _params(lab, _inventory(tmp_path, served, _tarball()), lab.root / "opt" / "trex")
    assert lab.run("setup_trex", **params).returncode == 0
    firewall = lab.bin / "firewall-cmd"
    firewall.unlink()
    firewall.symlink_to(SHIM_DIR / "generic.sh")  # firewalld runs: --state succeeds
    run = lab.run("setup_trex", SETUP_TREX_ACTION="start", TREX_ASYNC_PORT="4500", **params)
    assert run.returncode == 0, run.stdout + run.stderr
    sync = params["TREX_SYNC_PORT"]
    assert run.called("firewall-cmd") == [
        ["--state"], ["--add-port=4500/tcp"], ["--state"], [f"--add-port={sync}/tcp"],
    ]  # fmt: skip
    assert run.index("firewall-cmd", f"--add-port={sync}/tcp") < run.index("systemctl", "restart")
    run = lab.run("setup_trex", SETUP_TREX_ACTION="stop", **params)
    assert run.returncode == 0


@pytest.mark.parametrize(
    ("name", "value"),
    [("TREX_SYNC_PORT", "65536"), ("TREX_ASYNC_PORT", "99999"),
     ("TREX_URL", "http://127.0.0.1:70000/trex/v3.04.tar.gz"), ("TREX_URL", "http://h/trex/v3.04.tar.gz;"),
     ("TREX_URL", "http://h/trex/v3.04.tar gz"), ("TREX_URL", "http://h/" + "a" * 1020)],
)  # fmt: skip
def test_ports_and_urls_out_of_bounds_are_refused(trex_lab: Lab, name: str, value: str) -> None:
    run = trex_lab.run(
        "setup_trex",
        **{
            "TREX_INSTALL_DIR": str(trex_lab.root / "opt" / "trex"),
            "TREX_SHA256": "a" * 64,
            "TREX_URL": "http://127.0.0.1/trex/v3.04.tar.gz",
            name: value,
        },
    )
    assert run.returncode == 2
    assert f"{name} '{value}' is not" in run.stderr
    assert not (trex_lab.root / "opt").exists()


def test_a_server_that_accepts_and_never_sends_costs_one_share_per_attempt(
    tmp_path: Path, trex_lab: Lab
) -> None:
    """Three attempts within 6 s: each gets its 2 s share (all three are made), not the whole
    deadline for the first."""
    accepted: list[socket.socket] = []
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            accepted.append(conn)  # kept open, never answered

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.getsockname()[1]}/trex/release/v3.04.tar.gz"
    start = time.monotonic()
    try:
        run = trex_lab.run(
            "setup_trex",
            timeout_s=55,
            **_params(
                trex_lab,
                write_trex_inventory(tmp_path / "inventory.yaml", url=url),
                trex_lab.root / "opt" / "trex",
                TREX_DOWNLOAD_TIMEOUT_S="6",
                TREX_DOWNLOAD_ATTEMPTS="3",
            ),
        )
    finally:
        elapsed = time.monotonic() - start
        stop.set()
        thread.join(5)
        for conn in accepted:
            conn.close()
        server.close()
    assert run.returncode == 2
    assert "in 3 attempts within 6 s" in run.stderr
    assert len(accepted) == 3
    assert elapsed < 20
    log = (trex_lab.state / "logs" / "boot0" / "01-download.log").read_text()
    assert "download attempt 1/3 (at most 2 s of 6 s left)" in log


def test_the_task_asks_for_a_python_with_pyyaml_that_runs_our_package() -> None:
    """RHEL 8's python3 is 3.6: python3.11 and its PyYAML (task.sh task_python) come as soft
    dependencies, as vsperf_test's do; the RHTS Makefile lists them too."""
    import configparser

    meta = configparser.ConfigParser()
    meta.read(TASKS / "setup_trex" / "metadata")
    soft = meta["restraint"]["softDependencies"].split(";")
    assert {"python3.11", "python3.11-pyyaml"} <= set(soft)
    requires = (TASKS / "setup_trex" / "Makefile").read_text()
    assert "python3.11 python3.11-pyyaml" in requires


def test_install_stops_a_running_server_first(tmp_path: Path, trex_lab: Lab, served: Served) -> None:
    lab = trex_lab
    params = _params(lab, _inventory(tmp_path, served, _tarball()), lab.root / "opt" / "trex")
    assert lab.run("setup_trex", **params).returncode == 0
    assert lab.run("setup_trex", SETUP_TREX_ACTION="start", **params).returncode == 0
    pid = int((lab.root / "trex.pid").read_text())
    run = lab.run("setup_trex", **params)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.called("systemctl")[:2] == [["is-active", "--quiet", "trex.service"], ["stop", "trex.service"]]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        if "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]:
            break
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_a_failed_daemon_reload_aborts(tmp_path: Path, trex_lab: Lab, served: Served) -> None:
    lab = trex_lab
    params = _params(lab, _inventory(tmp_path, served, _tarball()), lab.root / "opt" / "trex")
    run = lab.run("setup_trex", FAKE_SYSTEMCTL_RELOAD_FAILS="1", **params)
    assert run.returncode == 2
    assert run.reported()[-1] == ("setup_trex/configure", "WARN")
    assert "systemctl daemon-reload failed" in run.stderr
    assert run.called("rstrnt-abort") == [["-t", "recipe"]]
