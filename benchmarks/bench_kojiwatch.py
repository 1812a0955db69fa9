"""Benchmark: prepare a repo from Koji (download, verify, createrepo_c, publish) vs createrepo_c alone.

Builds one fake build with N real RPMs (rpmbuild), serves it from the stand-in Koji hub on
127.0.0.1, and times ``kojiwatch.repo.prepare_repo`` through the real koji client against
``createrepo_c --no-database`` over a local copy of the same RPMs. The ratio is the overhead of
the Koji side (XML-RPC calls, HTTP downloads, size/digest/SIGMD5 checks, atomic publish); on a real
lab it is dominated by the network instead.

Usage: python benchmarks/bench_kojiwatch.py [N_RPMS] (default 40)
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import benchcli  # noqa: E402

from kojiwatch.koji_client import KojiClient  # noqa: E402
from kojiwatch.model import BuildSelection, KojiServer, SelectionKind  # noqa: E402
from kojiwatch.repo import prepare_repo  # noqa: E402
from tests.kojiwatch.fakes import FakeKojiHub  # noqa: E402
from tests.kojiwatch.rpmtools import build_rpm  # noqa: E402

ROUNDS = 3


def main() -> int:
    parser = benchcli.parser(__doc__)
    parser.add_argument("n_rpms", nargs="?", type=int, default=40, metavar="N_RPMS", help="RPMs in the build")
    n_rpms = parser.parse_args().n_rpms
    benchcli.stop_on_sigterm()
    with tempfile.TemporaryDirectory(prefix="bench-kojiwatch-") as tmp_name:
        tmp = Path(tmp_name)
        subs = tuple((f"sub{i:03d}", "noarch" if i % 2 else "same") for i in range(n_rpms - 1))
        files = build_rpm(tmp, "openvswitch", "3.3.0", "1.el9", subpackages=subs)
        binaries = [f for f in files if not f.name.endswith(".src.rpm")]
        assert len(binaries) == n_rpms, len(binaries)
        hub = FakeKojiHub(tmp / "kojiroot").start()
        try:
            build_id = hub.add_build(files)
            client = KojiClient(KojiServer(hub_url=hub.hub_url, topurl=hub.topurl, timeout_s=30))
            selection = BuildSelection(kind=SelectionKind.BUILD, ref=str(build_id))
            publish = tmp / "www"
            publish.mkdir()
            prepare_s, createrepo_s = [], []
            for round_no in range(ROUNDS):
                start = time.perf_counter()
                repo = prepare_repo(client, selection, publish, "http://127.0.0.1/repos")
                prepare_s.append(time.perf_counter() - start)
                assert len(repo.rpms) == n_rpms
                plain = tmp / f"plain{round_no}"
                plain.mkdir()
                for f in binaries:
                    shutil.copyfile(f, plain / f.name)
                start = time.perf_counter()
                subprocess.run(["createrepo_c", "--no-database", "--quiet", str(plain)], check=True)
                createrepo_s.append(time.perf_counter() - start)
            client.close()
        finally:
            hub.stop()
    prep, plain_s = statistics.median(prepare_s), statistics.median(createrepo_s)
    print(f"RPMs per repo:                       {n_rpms}")
    print(f"prepare_repo (koji + createrepo_c):  {prep * 1000:8.1f} ms (median of {ROUNDS})")
    print(f"createrepo_c alone, same RPMs:       {plain_s * 1000:8.1f} ms (median of {ROUNDS})")
    print(f"ratio prepare_repo / createrepo_c:   {prep / plain_s:8.2f}")
    print(f"per RPM overhead:                    {(prep - plain_s) / n_rpms * 1000:8.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
