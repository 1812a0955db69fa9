"""The two sides of ``ovsperf-lab compare``: which ovs-vswitchd, which DPDK libraries, which settings.

A side is ``system`` (the distribution's OVS-DPDK), an ``ovs-vswitchd`` binary (a build tree), or a
directory of unpacked ``.deb``/``.rpm`` packages (``dpkg-deb -x``, ``rpm2cpio | cpio -id``) holding
an ovs-vswitchd and/or DPDK libraries; plus an optional library directory (``LD_LIBRARY_PATH`` of
that side's ovs-vswitchd: another DPDK of the same ABI) and ``other_config`` settings. Everything
is checked before anything starts: the binary must run and say it is Open vSwitch built with DPDK
(with the side's libraries, so a library directory of another ABI fails here, naming the side),
and ``other_config`` keys must be ones the installed OVS documents (``ovs-vswitchd.conf.db(5)``),
not ones the lab sets itself and not ones naming a file or directory (:data:`PATH_KEYS`).
"""

from __future__ import annotations

import gzip
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ovsperf_lab.errors import LabError
from ovsperf_lab.ovs import OVS_DPDK_VSWITCHD

OVS_CONF_DB_MANPAGE = Path("/usr/share/man/man5/ovs-vswitchd.conf.db.5.gz")
"""The installed OVS's database documentation: the ``other_config`` keys it knows."""

LAB_KEYS = frozenset({"dpdk-init", "dpdk-socket-mem", "dpdk-lcore-mask", "pmd-cpu-mask", "dpdk-extra"})
"""``other_config`` keys the lab sets itself (sandbox, CPUs, ``--no-pci``)."""

PATH_KEYS = frozenset({"vhost-sock-dir", "dpdk-hugepage-dir", "certificate", "private-key", "ca-cert"})
"""``other_config`` keys that name a file or directory (vhost-user sockets, hugepage files, keys):
not settable, as every file of a run stays in its run directory (``vhost-sock-dir=..`` put the
sockets outside it) and hugepage files where cleanup finds them."""

VALUE_RE = re.compile(r"\A[A-Za-z0-9._,:+=-]{1,100}\Z")
"""An ``other_config`` value the lab passes on: one token, no quotes or spaces."""

VSWITCHD_IN_PACKAGES = (
    "usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk",
    "usr/sbin/ovs-vswitchd",
)
"""Where an unpacked package tree keeps the DPDK ovs-vswitchd (Debian, RHEL)."""

LIBDIRS_IN_PACKAGES = ("usr/lib/x86_64-linux-gnu", "usr/lib64", "usr/lib/aarch64-linux-gnu")
"""Where an unpacked package tree keeps shared libraries."""


@dataclass(frozen=True)
class SideSpec:
    """One side as the user gave it."""

    label: str
    """``A`` or ``B``."""
    source: str
    """``system``, a binary path or a package directory, as given."""
    lib_dir: Path | None = None
    """Extra library directory (``--b-lib-dir``)."""
    other_config: tuple[tuple[str, str], ...] = ()
    """``other_config`` settings (``--b-other-config KEY=VALUE``)."""


@dataclass(frozen=True)
class Side:
    """A checked side: what runs and how it says it is."""

    label: str
    """``A`` or ``B``."""
    vswitchd: Path
    """The ovs-vswitchd binary."""
    library_dir: Path | None
    """``LD_LIBRARY_PATH`` for it, ``None`` for the system's libraries."""
    other_config: tuple[tuple[str, str], ...]
    """Settings on top of the lab's."""
    version_banner: str
    """First line of ``ovs-vswitchd --version`` and its DPDK line, e.g.
    ``'ovs-vswitchd (Open vSwitch) 3.1.0; DPDK 22.11.11'``."""

    def describe(self) -> str:
        """Return a one-line description for logs and the page."""
        parts = [self.version_banner, str(self.vswitchd)]
        if self.library_dir is not None:
            parts.append(f"libraries {self.library_dir}")
        if self.other_config:
            parts.append(" ".join(f"{k}={v}" for k, v in self.other_config))
        return "; ".join(parts)

    def same_as(self, other: Side) -> bool:
        """Return whether both sides run the same binary, libraries and settings (an A/A run)."""
        return (self.vswitchd.resolve(), self.library_dir, sorted(self.other_config)) == (
            other.vswitchd.resolve(),
            other.library_dir,
            sorted(other.other_config),
        )


def parse_other_config(items: list[str] | None, option: str) -> tuple[tuple[str, str], ...]:
    """Return ``KEY=VALUE`` items as pairs.

    :raises LabError: naming ``option`` for an item without ``=``, an empty key or an unsafe value.
    """
    pairs = []
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,63}", key) or not VALUE_RE.match(value):
            raise LabError(
                f"Option '{option}' takes KEY=VALUE (key: lower-case letters, digits, '-'; value: one token "
                f"of letters, digits and ._,:+=-), got {item!r}."
            )
        pairs.append((key, value))
    return tuple(pairs)


def known_other_config_keys(manpage: Path = OVS_CONF_DB_MANPAGE) -> frozenset[str] | None:
    """Return the ``Open_vSwitch`` table's ``other_config`` keys the installed OVS documents.

    :returns: ``None`` when the manual page is not installed (then keys are not checked).
    """
    try:
        text = gzip.decompress(manpage.read_bytes()).decode("utf-8", "replace")
    except OSError:
        return None
    start = text.find('.SH "Open_vSwitch TABLE"')
    end = text.find('.SH "', start + 1)
    section = text[start:end] if start >= 0 else ""
    return frozenset(re.findall(r'\.IP "\\fBother_config : ([a-z0-9-]+)\\fR', section)) or None


def _version(vswitchd: Path, library_dir: Path | None, label: str) -> str:
    env = dict(os.environ)
    if library_dir is not None:
        env["LD_LIBRARY_PATH"] = str(library_dir)
    try:
        done = subprocess.run(
            [str(vswitchd), "--version"], env=env, capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise LabError(f"Side {label}: cannot run '{vswitchd} --version': {err}.") from err
    lines = done.stdout.splitlines()
    if done.returncode != 0 or not lines or "Open vSwitch" not in lines[0]:
        why = (done.stderr.strip().splitlines() or ["not an ovs-vswitchd"])[0]
        raise LabError(
            f"Side {label}: '{vswitchd}' is not a working ovs-vswitchd"
            f"{' with the libraries in ' + repr(str(library_dir)) if library_dir else ''}: {why}"
        )
    dpdk = next((line.strip() for line in lines[1:] if line.startswith("DPDK")), None)
    if dpdk is None:
        raise LabError(f"Side {label}: '{vswitchd}' is not built with DPDK ('--version' names no DPDK).")
    return f"{lines[0].strip()}; {dpdk}"


def _from_packages(directory: Path, label: str) -> tuple[Path | None, Path | None]:
    """Return (ovs-vswitchd, library directory) found in an unpacked package tree."""
    vswitchd = next((directory / p for p in VSWITCHD_IN_PACKAGES if (directory / p).is_file()), None)
    libdir = next(
        (directory / p for p in LIBDIRS_IN_PACKAGES if any((directory / p).glob("librte_eal.so*"))), None
    )
    if vswitchd is None and libdir is None:
        raise LabError(
            f"Side {label}: '{directory}' holds neither an ovs-vswitchd ({', '.join(VSWITCHD_IN_PACKAGES)}) "
            "nor DPDK libraries (librte_eal.so*); unpack the packages there first."
        )
    return vswitchd, libdir


def resolve(spec: SideSpec, *, system_vswitchd: Path = OVS_DPDK_VSWITCHD) -> Side:
    """Check ``spec`` and return the side to run.

    :raises LabError: naming the side and the option for every problem (see the module docstring).
    """
    option = f"--{spec.label.lower()}"
    vswitchd: Path | None
    library_dir = spec.lib_dir
    if spec.source == "system":
        vswitchd = system_vswitchd
    else:
        path = Path(spec.source)
        if path.is_dir():
            vswitchd, found_lib = _from_packages(path, spec.label)
            library_dir = library_dir or found_lib
            vswitchd = vswitchd or system_vswitchd
        elif path.is_file() and os.access(path, os.X_OK):
            vswitchd = path
        else:
            raise LabError(
                f"Option '{option}': {spec.source!r} is neither 'system', an executable ovs-vswitchd nor a "
                "directory of unpacked packages."
            )
    if library_dir is not None and not any(Path(library_dir).glob("librte_*.so*")):
        raise LabError(f"Option '{option}-lib-dir': '{library_dir}' holds no DPDK library (librte_*.so*).")
    known = known_other_config_keys()
    for key, _ in spec.other_config:
        if key in PATH_KEYS:
            raise LabError(
                f"Option '{option}-other-config': '{key}' names a file or directory; the lab keeps every "
                "file of a run in its run directory, so it is not settable."
            )
        if key in LAB_KEYS:
            raise LabError(
                f"Option '{option}-other-config': '{key}' is set by the lab (sandbox, CPUs); not overridable."
            )
        if known is not None and key not in known:
            raise LabError(
                f"Option '{option}-other-config': OVS does not know other_config key '{key}' "
                f"(ovs-vswitchd.conf.db(5), Open_vSwitch table)."
            )
    banner = _version(vswitchd, library_dir, spec.label)
    return Side(spec.label, vswitchd, library_dir, spec.other_config, banner)
