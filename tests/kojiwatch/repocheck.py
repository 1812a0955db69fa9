"""Read a published yum repo over HTTP the way dnf does: repomd.xml → primary.xml.gz → packages."""

from __future__ import annotations

import gzip
import urllib.request

from lxml import etree

REPO_NS = {"repo": "http://linux.duke.edu/metadata/repo"}
COMMON_NS = {"c": "http://linux.duke.edu/metadata/common"}


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as resp:
        data: bytes = resp.read()
        return data


def repo_packages(repo_url: str) -> set[tuple[str, str, str, str]]:
    """Return ``{(name, arch, version, release)}`` listed in the repo's primary metadata."""
    repomd = etree.fromstring(fetch(repo_url + "repodata/repomd.xml"))
    hrefs = repomd.xpath("repo:data[@type='primary']/repo:location/@href", namespaces=REPO_NS)
    assert len(hrefs) == 1, hrefs
    raw = fetch(repo_url + str(hrefs[0]))
    primary = etree.fromstring(gzip.decompress(raw) if str(hrefs[0]).endswith(".gz") else raw)
    count = int(primary.get("packages"))
    packages = set()
    for pkg in primary.xpath("c:package", namespaces=COMMON_NS):
        ver = pkg.find("c:version", COMMON_NS)
        packages.add(
            (
                pkg.findtext("c:name", namespaces=COMMON_NS),
                pkg.findtext("c:arch", namespaces=COMMON_NS),
                ver.get("ver"),
                ver.get("rel"),
            )
        )
    assert count == len(packages)
    return packages
