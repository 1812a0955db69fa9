"""Download a results tarball over HTTP(S), bounded in size and time, checking its gzip stream on the way.

The URL is the one ``taskactions.files`` gives (the lab controller or archive server serving the
task's logs); no credential is sent (Beaker serves logs anonymously). While the bytes arrive they
are written to the file and fed through ``zlib`` (gzip mode), so that when the download ends the
compressed stream is known to be whole (the gzip trailer's CRC-32 and length match) and its
unpacked size is known to be under the cap — a truncated or corrupt file, or a compression bomb,
is refused before ``tarfile`` ever reads it.

Transient failures (refused or dropped connection, timeout, HTTP 5xx, a body cut short) are
retried (:func:`beakerwatch.hub.with_retries`); a missing file (HTTP 404/410), a file over the
cap and a broken gzip stream are not (:class:`~beakerwatch.errors.UnusableResultsError`).
"""

from __future__ import annotations

import http.client
import itertools
import logging
import ssl
import urllib.error
import urllib.parse
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from beakerwatch.errors import UnusableResultsError
from beakerwatch.hub import HubRetryPolicy, with_retries
from ovsperf_common.deadline import Deadline
from ovsperf_common.resultdir import MAX_DELIVERY_ENTRIES

log = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20
"""Bytes read from the socket at a time [B]."""
_GZIP_WBITS = 16 + zlib.MAX_WBITS


@dataclass(frozen=True)
class Limits:
    """Caps on what a results tarball may be."""

    max_tarball_bytes: int
    """Largest compressed download [B]."""
    max_unpacked_bytes: int
    """Largest uncompressed tar stream [B] (headers and padding included)."""
    max_members: int = MAX_DELIVERY_ENTRIES
    """Most entries (files, directories) in the tarball [1] (``process-ci-results`` scans no more)."""


@dataclass(frozen=True)
class Download:
    """A downloaded, gzip-checked tarball."""

    path: Path
    """Where it was written."""
    size_bytes: int
    """Compressed size [B]."""
    unpacked_bytes: int
    """Uncompressed tar stream size [B]."""


def _read_into(
    response: http.client.HTTPResponse, dest: Path, url: str, limits: Limits, deadline: Deadline
) -> Download:
    """Stream ``response`` into ``dest`` while checking size caps and the gzip stream.

    :raises UnusableResultsError: over a cap, or the bytes are not one whole gzip stream.
    :raises http.client.IncompleteRead: when the server closes before its ``Content-Length``.
    """
    declared = response.getheader("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > limits.max_tarball_bytes:
        raise UnusableResultsError(
            f"The results tarball '{url}' is {int(declared)} B, over the cap of {limits.max_tarball_bytes} B "
            "(--max-tarball-mb)."
        )
    inflater = zlib.decompressobj(_GZIP_WBITS)
    size = unpacked = 0
    with dest.open("wb") as out:
        while True:
            deadline.check()
            chunk = response.read1(CHUNK_BYTES)
            if not chunk:
                break
            size += len(chunk)
            if size > limits.max_tarball_bytes:
                raise UnusableResultsError(
                    f"The results tarball '{url}' is larger than the cap of {limits.max_tarball_bytes} B "
                    "(--max-tarball-mb)."
                )
            out.write(chunk)
            try:
                unpacked += _inflate(inflater, chunk, limits.max_unpacked_bytes - unpacked)
            except zlib.error as err:
                raise UnusableResultsError(f"The results tarball '{url}' is not valid gzip: {err}.") from err
            if inflater.eof and (inflater.unused_data or response.read1(1)):
                raise UnusableResultsError(f"The results tarball '{url}' has data after its gzip stream.")
            if unpacked > limits.max_unpacked_bytes:
                raise UnusableResultsError(
                    f"The results tarball '{url}' unpacks to more than the cap of "
                    f"{limits.max_unpacked_bytes} B (--max-unpacked-mb)."
                )
    if declared is not None and declared.isdigit() and size != int(declared):
        raise http.client.IncompleteRead(b"", int(declared) - size)
    if not inflater.eof:
        raise UnusableResultsError(
            f"The results tarball '{url}' is truncated: its gzip stream ends after {size} B "
            "without its trailer."
        )
    return Download(dest, size, unpacked)


def _inflate(inflater: zlib._Decompress, data: bytes, room: int) -> int:
    """Feed ``data`` to ``inflater`` in bounded pieces; return how many bytes came out (≤ room + 1 piece)."""
    produced = 0
    while data and produced <= room:
        out = inflater.decompress(data, CHUNK_BYTES)
        produced += len(out)
        data = inflater.unconsumed_tail
    return produced


MAX_REDIRECT_BODY_BYTES = 64 * 1024
"""Largest body of a redirect answer read [B] (a redirect's body is a line of HTML, if any)."""


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only to another http(s) URL (never ``ftp:``/``file:``)."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        """Return the redirected request, refusing a scheme other than http(s).

        :raises UnusableResultsError: when the hub redirects elsewhere.
        """
        if urllib.parse.urlsplit(newurl).scheme not in ("http", "https"):
            raise UnusableResultsError(f"The results tarball was redirected to a non-http(s) URL '{newurl}'.")
        # urllib reads a redirect's body whole before it follows it: read at most this much here and
        # close it, so that its read finds nothing (a hub cannot stream an endless redirect body).
        body = fp.read(MAX_REDIRECT_BODY_BYTES + 1)
        fp.close()
        if len(body) > MAX_REDIRECT_BODY_BYTES:
            raise UnusableResultsError(
                f"The redirect to '{newurl}' came with a body of more than {MAX_REDIRECT_BODY_BYTES} bytes."
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def download(
    url: str,
    dest: Path,
    limits: Limits,
    policy: HubRetryPolicy,
    deadline: Deadline,
    context: ssl.SSLContext | None = None,
) -> Download:
    """Download ``url`` to ``dest`` (written whole by the attempt that succeeds); return its sizes.

    :raises UnusableResultsError: when the URL is not http(s), the server answers 404/410 or
        another 4xx, the file exceeds :attr:`Limits.max_tarball_bytes`, unpacks beyond
        :attr:`Limits.max_unpacked_bytes`, or is not one whole gzip stream (corrupt, truncated).
    :raises HubError: when the server stays unreachable, slow or answers 5xx through every retry.
    """
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in ("http", "https"):
        raise UnusableResultsError(f"The results tarball URL '{url}' is not http or https.")

    opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context), _HttpOnlyRedirects())
    attempts = itertools.count(1)
    partials: list[Path] = []

    def attempt() -> Download:
        # Each attempt writes its own file, renamed to ``dest`` only when whole and checked: an
        # attempt abandoned at its timeout (its thread may still be writing) never mixes into it.
        partial = dest.with_name(f".{dest.name}.attempt-{next(attempts)}")
        partials.append(partial)
        request = urllib.request.Request(url, headers={"User-Agent": "ovsperf-beaker"})
        try:
            with opener.open(request, timeout=policy.timeout_s) as response:
                got = _read_into(response, partial, url, limits, deadline)
            partial.replace(dest)
            return got
        except urllib.error.HTTPError as err:
            if err.code >= 500:
                raise
            raise UnusableResultsError(
                f"The results tarball '{url}' could not be fetched: HTTP {err.code} {err.reason}."
            ) from err

    try:
        result = with_retries(f"Download of '{url}'", attempt, policy, deadline)
    finally:
        for partial in partials:
            partial.unlink(missing_ok=True)
    log.info("Downloaded '%s': %d B (%d B unpacked).", url, result.size_bytes, result.unpacked_bytes)
    return result
