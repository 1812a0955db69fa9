"""Build real RPMs for the tests with ``rpmbuild`` and read their headers with ``rpm -qp``."""

from __future__ import annotations

import subprocess
from pathlib import Path


def build_rpm(
    workdir: Path,
    name: str,
    version: str,
    release: str,
    *,
    subpackages: tuple[tuple[str, str], ...] = (),
    target: str = "x86_64",
) -> list[Path]:
    """Build ``name`` (arch ``target``) plus ``subpackages`` ((suffix, "noarch"|"same")) with rpmbuild.

    :returns: the binary RPM paths, then the source RPM.
    """
    top = workdir / f"rpmbuild-{name}-{version}-{release}-{target}"
    spec = top / f"{name}.spec"
    top.mkdir(parents=True)
    lines = [
        f"Name: {name}",
        f"Version: {version}",
        f"Release: {release}",
        f"Summary: fake {name} for ovsperf tests",
        "License: Apache-2.0",
        "%description",
        f"Fake {name}.",
    ]
    files = ["%files", f"/usr/share/ovsperf-fake/{name}.txt"]
    install = ["%install", "mkdir -p %{buildroot}/usr/share/ovsperf-fake"]
    install.append(f"echo '{name} {version}' > %{{buildroot}}/usr/share/ovsperf-fake/{name}.txt")
    for suffix, arch in subpackages:
        lines += [f"%package {suffix}", f"Summary: fake {name}-{suffix}"]
        if arch == "noarch":
            lines.append("BuildArch: noarch")
        lines += [f"%description {suffix}", f"Fake {name}-{suffix}."]
        install.append(f"echo '{suffix}' > %{{buildroot}}/usr/share/ovsperf-fake/{name}-{suffix}.txt")
        files += [f"%files {suffix}", f"/usr/share/ovsperf-fake/{name}-{suffix}.txt"]
    spec.write_text("\n".join(lines + install + files) + "\n")
    subprocess.run(
        [
            "rpmbuild",
            "--define",
            f"_topdir {top}",
            "--define",
            "debug_package %{nil}",
            "--target",
            target,
            "-ba",
            str(spec),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    binaries = sorted((top / "RPMS").glob("*/*.rpm"))
    sources = sorted((top / "SRPMS").glob("*.rpm"))
    return binaries + sources


def rpm_header(path: Path) -> dict[str, str]:
    """Return NAME, VERSION, RELEASE, ARCH (``src`` for source RPMs) and SIGMD5 of an RPM via ``rpm -qp``."""
    out = subprocess.run(
        [
            "rpm",
            "-qp",
            "--nosignature",
            "--nodigest",
            "--qf",
            "%{NAME} %{VERSION} %{RELEASE} %{ARCH} %{SIGMD5}",
            str(path),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.split()
    arch = "src" if path.name.endswith(".src.rpm") else out[3]
    return {"name": out[0], "version": out[1], "release": out[2], "arch": arch, "sigmd5": out[4]}
