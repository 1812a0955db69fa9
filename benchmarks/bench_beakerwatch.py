"""Benchmark: ``ovsperf-beaker collect`` of one results tarball vs a plain download + ``tar -xzf``.

Makes a results tarball as ``vsperf_test`` packs it (result CSVs, MoonGen and VSperf logs, a bit
of incompressible capture data; about ``SIZE_MB`` unpacked), serves it from the stand-in Beaker hub
(``tests/jobcreator/fakehub.py``) on 127.0.0.1, and times per round:

* ``collect``: a whole pass of :func:`beakerwatch.collect.collect` for one finished job — the hub
  calls through beaker-client (``task_info``, ``to_xml``, ``files``), the download with its
  streamed gzip check and size caps, the checked extraction, the metadata rewrite and the atomic
  rename into ``ci_in``, the state file update under its lock;
* ``plain``: ``urllib`` download of the same URL to a file, then ``tar -xzf`` (what a shell script
  would do, without any check).

The ratio is the price of the checks and the bookkeeping; on a real lab the network dominates.

Usage: python benchmarks/bench_beakerwatch.py [SIZE_MB] (default 24)
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import benchcli  # noqa: E402

from beakerwatch.collect import CollectOptions, TrackRequest, collect, track  # noqa: E402
from beakerwatch.fetch import Limits  # noqa: E402
from beakerwatch.hub import HubRetryPolicy  # noqa: E402
from jobcreator.submit import load_client_config  # noqa: E402
from tests.beakerwatch.conftest import TS, Lab, results_tarball  # noqa: E402
from tests.jobcreator.conftest import HUB_PASSWORD, HUB_USER, write_client_conf  # noqa: E402
from tests.jobcreator.fakehub import FakeBeakerHub  # noqa: E402

ROUNDS = 3


def make_tarball(tmp: Path, size_mb: int) -> bytes:
    """Return a results tarball of about ``size_mb`` MiB unpacked (logs compress, captures do not)."""
    rng = random.Random(7)
    base = results_tarball(tmp)  # the real layout and metadata, then grown with bulk files
    work = tmp / "grow"
    work.mkdir()
    subprocess.run(["tar", "-C", str(work), "-xzf", "-"], input=base, check=True)
    results = work / TS
    for i in range(size_mb):
        lines = (f"{i} {rng.random():.6f} rx_pps={rng.randint(1, 14880952)}\n" for _ in range(14000))
        (results / "moongen" / f"trial-{i:03d}.log").write_text("".join(lines)[: 1 << 20])
    (results / "pcap-sample.bin").write_bytes(os.urandom(2 << 20))
    out = tmp / f"{TS}.tar.gz"
    subprocess.run(["tar", "-C", str(work), "-czf", str(out), TS], check=True)
    return out.read_bytes()


def main() -> int:
    parser = benchcli.parser(__doc__)
    parser.add_argument("size_mb", nargs="?", type=int, default=24, metavar="SIZE_MB", help="unpacked MiB")
    size_mb = parser.parse_args().size_mb
    benchcli.stop_on_sigterm()
    with tempfile.TemporaryDirectory(prefix="bench-beakerwatch-") as tmp_name:
        tmp = Path(tmp_name)
        tarball = make_tarball(tmp, size_mb)
        with FakeBeakerHub(HUB_USER, HUB_PASSWORD) as hub:
            conf = write_client_conf(tmp / "client.conf", hub.url)
            os.environ["BEAKER_CLIENT_CONF"] = str(conf)
            config = load_client_config()
            collect_s, plain_s = [], []
            for round_no in range(ROUNDS):
                lab = Lab(
                    hub, conf, tmp / f"state{round_no}.json", tmp / f"ci_in{round_no}", tmp / "ids.json", tmp
                )
                lab.ci_in.mkdir()
                job = lab.submit()
                lab.write_ids([job])
                track(lab.state, TrackRequest(ids_file=lab.ids_file, koji_tag="bench"), 10)
                lab.finish(job, tarball)
                options = CollectOptions(
                    ci_in=lab.ci_in,
                    deadline_s=300,
                    poll_s=1,
                    once=True,
                    limits=Limits(max_tarball_bytes=1 << 30, max_unpacked_bytes=8 << 30),
                    policy=HubRetryPolicy(timeout_s=120, retries=0),
                )
                start = time.perf_counter()
                done = collect(lab.state, options, config, lambda _r: None)
                collect_s.append(time.perf_counter() - start)
                assert [c.job.state.value for c in done] == ["delivered"], done

                url = hub.state.files(lab.run_task(job).t_id)[-1]["url"]
                plain = tmp / f"plain{round_no}"
                plain.mkdir()
                start = time.perf_counter()
                with (
                    urllib.request.urlopen(url, timeout=120) as response,
                    (plain / "t.tar.gz").open("wb") as out,
                ):
                    while chunk := response.read(1 << 20):
                        out.write(chunk)
                subprocess.run(["tar", "-C", str(plain), "-xzf", str(plain / "t.tar.gz")], check=True)
                plain_s.append(time.perf_counter() - start)
                assert (plain / TS / "result_0_phy2phy_tput_p2p.csv").is_file()
    pass_s, peer_s = statistics.median(collect_s), statistics.median(plain_s)
    compressed_mib = len(tarball) / (1 << 20)
    print(f"tarball:                                 {compressed_mib:8.1f} MiB, ~{size_mb + 2} MiB unpacked")
    print(f"ovsperf-beaker collect (one job):        {pass_s * 1000:8.1f} ms (median of {ROUNDS})")
    print(f"urllib download + tar -xzf, same file:   {peer_s * 1000:8.1f} ms (median of {ROUNDS})")
    print(f"ratio collect / plain:                   {pass_s / peer_s:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
