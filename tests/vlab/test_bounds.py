"""Values that reach QEMU options, shell hooks and sockets are checked; a QMP peer cannot fill memory."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from ovsperf_common.deadline import Deadline
from vlab.config import LabConfig, VlabError
from vlab.qmp import MAX_MESSAGE_BYTES, Qmp, QmpError


@pytest.mark.parametrize(
    "state_dir",
    ["relative/state", "/tmp/a,b", '/tmp/a"$(id)"', "/tmp/a b", "/tmp/`id`", "/" + "x" * 100],
)
def test_a_state_dir_that_would_break_a_qemu_option_or_a_hook_is_refused(state_dir: str) -> None:
    with pytest.raises(VlabError, match="'state_dir' must be an absolute path of at most 90"):
        LabConfig(state_dir=Path(state_dir))


@pytest.mark.parametrize(
    "mirror",
    [
        "--customize-hook=touch /x",
        "ftp://deb.debian.org/debian",
        "http://a b/debian",
        "http://x/'y",
        "http:///x",
    ],
)
def test_a_mirror_that_is_no_plain_http_url_is_refused(mirror: str) -> None:
    with pytest.raises(VlabError, match="'mirror' must be an http\\(s\\) URL"):
        LabConfig(state_dir=Path("/var/lib/ovsperf-vlab"), mirror=mirror)


def test_a_qmp_peer_sending_no_newline_is_cut_off_at_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "qmp.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    sent = [0]

    def flood() -> None:
        conn, _ = server.accept()
        chunk = b"x" * 65536
        try:
            while sent[0] < 8 * MAX_MESSAGE_BYTES:
                conn.sendall(chunk)
                sent[0] += len(chunk)
        except OSError:
            pass  # the client gave up: what the test wants
        finally:
            conn.close()

    thread = threading.Thread(target=flood, daemon=True)
    thread.start()
    with pytest.raises(QmpError, match=f"more than {MAX_MESSAGE_BYTES} bytes without a newline"):
        Qmp(path, Deadline.in_seconds(10.0, "QMP"))
    thread.join(10)
    server.close()
    assert sent[0] < 8 * MAX_MESSAGE_BYTES  # it stopped reading, the peer could not send it all
