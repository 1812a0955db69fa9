# Hub method and argument names (getBuild, taskID, ...) are Koji's XML-RPC API and must match it.
# ruff: noqa: N803, N815
"""Test doubles at the process and network edges of kojiwatch.

* :class:`FakeKojiHub`: a stand-in Koji hub on 127.0.0.1 (random port, own thread) speaking
  koji's XML-RPC protocol (``koji.decode_args`` for keyword arguments, Koji fault codes) for the
  calls the real ``koji.ClientSession`` makes, and serving the RPM files over HTTP under
  ``/kojifiles`` (the topurl) in Koji's directory layout.
* :class:`StaticHttpServer`: serves the publish directory, as a lab web server would.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
import xmlrpc.client
import xmlrpc.server
from pathlib import Path
from typing import Any

import koji

from tests.kojiwatch.rpmtools import rpm_header

HUB_PATH = "/kojihub"
FILES_PATH = "/kojifiles"


class _HubHandler(xmlrpc.server.SimpleXMLRPCRequestHandler):
    rpc_paths = (HUB_PATH,)
    hub: FakeKojiHub

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        with self.hub.lock:
            if self.hub.fail_next > 0:
                self.hub.fail_next -= 1
                self.hub.failed_requests += 1
                self.send_error(503, "Service Unavailable (stand-in hub told to fail)")
                return
        super().do_POST()

    def end_headers(self) -> None:
        self.send_header("Koji-Version", "1.36.1")
        super().end_headers()

    def do_GET(self) -> None:
        if not self.path.startswith(FILES_PATH + "/"):
            self.send_error(404)
            return
        rel = self.path[len(FILES_PATH) + 1 :]
        target = (self.hub.topdir / rel).resolve()
        if self.hub.topdir.resolve() not in target.parents or not target.is_file():
            self.send_error(404)
            return
        data = target.read_bytes()
        with self.hub.lock:
            self.hub.downloads.append(rel)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-rpm")
        self.send_header("Content-Length", str(len(data)))
        super().end_headers()
        self.wfile.write(data)


class _Server(http.server.ThreadingHTTPServer, xmlrpc.server.SimpleXMLRPCDispatcher):
    daemon_threads = True
    logRequests = False

    def __init__(self, hub: FakeKojiHub) -> None:
        handler = type("Handler", (_HubHandler,), {"hub": hub})
        http.server.ThreadingHTTPServer.__init__(self, ("127.0.0.1", 0), handler)
        xmlrpc.server.SimpleXMLRPCDispatcher.__init__(self, allow_none=True, encoding=None)
        self.register_instance(hub)


class _Background:
    """Run an HTTP server in a daemon thread on 127.0.0.1; ``start()``/``stop()``."""

    _server: http.server.ThreadingHTTPServer

    def _init_thread(self, name: str) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> Any:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


class FakeKojiHub(_Background):
    """A stand-in Koji hub: builds, tags, tasks and RPM files held in memory and under ``topdir``."""

    def __init__(self, topdir: Path) -> None:
        self.topdir = topdir
        self.topdir.mkdir(parents=True, exist_ok=True)
        self.lock = threading.Lock()
        self.builds: dict[int, dict[str, Any]] = {}
        self.rpms: dict[int, list[dict[str, Any]]] = {}
        self.tags: dict[str, list[int]] = {}
        self.tasks: dict[int, dict[str, Any]] = {}
        self.task_output: dict[int, list[str]] = {}
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.downloads: list[str] = []
        self.fail_next = 0
        self.failed_requests = 0
        self._next_build = 1000
        self._next_rpm = 5000
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-koji-hub",
            daemon=True,
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def hub_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{HUB_PATH}"

    @property
    def topurl(self) -> str:
        return f"http://127.0.0.1:{self.port}{FILES_PATH}"

    def methods_called(self) -> list[str]:
        return [name for name, _, _ in self.calls]

    # --- test setup -------------------------------------------------------------------------

    def add_build(
        self,
        files: list[Path],
        *,
        owner: str = "ovs-team",
        state: str = "COMPLETE",
        tags: tuple[str, ...] = (),
        task_id: int | None = None,
    ) -> int:
        """Register a build made of ``files`` (its RPMs incl. the SRPM) and copy them into packages/."""
        src = next(rpm_header(f) for f in files if f.name.endswith(".src.rpm"))
        build_id = self._next_build
        self._next_build += 1
        build = {
            "id": build_id,
            "build_id": build_id,
            "package_id": abs(hash(src["name"])) % 10000,
            "package_name": src["name"],
            "name": src["name"],
            "version": src["version"],
            "release": src["release"],
            "epoch": None,
            "nvr": f"{src['name']}-{src['version']}-{src['release']}",
            "state": koji.BUILD_STATES[state],
            "owner_id": 7,
            "owner_name": owner,
            "task_id": task_id,
            "volume_id": 0,
            "volume_name": "DEFAULT",
            "draft": False,
            "extra": None,
        }
        base = self.topdir / "packages" / src["name"] / src["version"] / src["release"]
        infos = []
        for path in files:
            hdr = rpm_header(path)
            dest = base / hdr["arch"] / path.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
            infos.append(
                {
                    "id": self._next_rpm,
                    "name": hdr["name"],
                    "version": hdr["version"],
                    "release": hdr["release"],
                    "nvr": f"{hdr['name']}-{hdr['version']}-{hdr['release']}",
                    "arch": hdr["arch"],
                    "epoch": None,
                    "draft": False,
                    "payloadhash": hdr["sigmd5"],
                    "size": path.stat().st_size,
                    "buildtime": 1700000000,
                    "build_id": build_id,
                    "buildroot_id": 1,
                    "external_repo_id": 0,
                    "external_repo_name": "INTERNAL",
                    "metadata_only": False,
                    "extra": None,
                }
            )
            self._next_rpm += 1
        with self.lock:
            self.builds[build_id] = build
            self.rpms[build_id] = infos
            for tag in tags:
                self.tags.setdefault(tag, []).append(build_id)
        return build_id

    def tag_build(self, tag: str, build_id: int) -> None:
        with self.lock:
            self.tags.setdefault(tag, []).append(build_id)

    def add_scratch_task(self, task_id: int, files: list[Path], *, state: str = "CLOSED") -> int:
        """Register a scratch 'build' task with one buildArch child that wrote ``files``."""
        child = task_id + 1
        self.tasks[task_id] = {
            "id": task_id,
            "method": "build",
            "state": koji.TASK_STATES[state],
            "parent": None,
        }
        self.tasks[child] = {
            "id": child,
            "method": "buildArch",
            "state": koji.TASK_STATES[state],
            "parent": task_id,
        }
        workdir = self.topdir / "work" / "tasks" / str(child % 10000) / str(child)
        workdir.mkdir(parents=True, exist_ok=True)
        for path in files:
            shutil.copyfile(path, workdir / path.name)
        self.task_output[task_id] = []
        self.task_output[child] = [p.name for p in files] + ["build.log", "root.log"]
        return task_id

    def add_task(self, task_id: int, method: str, state: str = "CLOSED") -> None:
        self.tasks[task_id] = {
            "id": task_id,
            "method": method,
            "state": koji.TASK_STATES[state],
            "parent": None,
        }
        self.task_output[task_id] = []

    # --- XML-RPC ------------------------------------------------------------------------------

    def _dispatch(self, method: str, params: tuple[Any, ...]) -> Any:
        args, kwargs = koji.decode_args(*params)
        with self.lock:
            self.calls.append((method, tuple(args), dict(kwargs)))
        func = getattr(self, f"hub_{method}", None)
        if func is None:
            raise xmlrpc.client.Fault(koji.GenericError.faultCode, f"Invalid method: {method}")
        try:
            return func(*args, **kwargs)
        except koji.GenericError as err:
            raise xmlrpc.client.Fault(type(err).faultCode, str(err)) from err

    def hub_getKojiVersion(self) -> str:
        return "1.36.1"

    def hub_getAPIVersion(self) -> int:
        return 1

    def hub_getBuild(self, buildInfo: Any, strict: bool = False) -> dict[str, Any] | None:
        with self.lock:
            for build in self.builds.values():
                if buildInfo in (build["id"], build["nvr"]):
                    return dict(build)
        if strict:
            raise koji.GenericError(f"No such build: {buildInfo}")
        return None

    def hub_listBuilds(self, taskID: int | None = None, **_: Any) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(b) for b in self.builds.values() if taskID is not None and b["task_id"] == taskID]

    def hub_listTagged(
        self,
        tag: str,
        event: Any = None,
        inherit: bool = False,
        prefix: Any = None,
        latest: bool = False,
        package: str | None = None,
        **_: Any,
    ) -> list[dict[str, Any]]:
        with self.lock:
            if tag not in self.tags:
                raise koji.GenericError(f"No such entry in table tag: {tag}")
            # Newest tagging first, as the hub orders by tag event.
            builds = [dict(self.builds[i], tag_name=tag) for i in reversed(self.tags[tag])]
        builds = [b for b in builds if package is None or b["name"] == package]
        if latest:
            seen: set[str] = set()
            builds = [b for b in builds if not (b["name"] in seen or seen.add(b["name"]))]
        return builds

    def hub_queryHistory(
        self, tables: Any = None, tag: str | None = None, package: str | None = None, **_: Any
    ) -> dict[str, list[dict[str, Any]]]:
        """Tag history: one ``tag_listing`` entry per tagging, its event the tagging's position."""
        with self.lock:
            if tag is not None and tag not in self.tags:
                raise koji.GenericError(f"No such tagInfo: '{tag}'")
            entries = [
                {
                    "build_id": build_id,
                    "tag.name": name,
                    "name": self.builds[build_id]["name"],
                    "version": self.builds[build_id]["version"],
                    "release": self.builds[build_id]["release"],
                    "create_event": 100 + event,
                    "revoke_event": None,
                    "active": True,
                }
                for name, ids in self.tags.items()
                if tag in (None, name)
                for event, build_id in enumerate(ids)
                if package in (None, self.builds[build_id]["name"])
            ]
        return {"tag_listing": entries}

    def hub_listTags(self, build: int | None = None, **_: Any) -> list[dict[str, Any]]:
        with self.lock:
            return [{"name": t, "id": n} for n, (t, ids) in enumerate(self.tags.items()) if build in ids]

    def hub_listRPMs(self, buildID: int | None = None, arches: Any = None, **_: Any) -> list[dict[str, Any]]:
        with self.lock:
            infos = list(self.rpms.get(int(buildID) if buildID is not None else -1, []))
        if arches is not None:
            wanted = [arches] if isinstance(arches, str) else list(arches)
            infos = [i for i in infos if i["arch"] in wanted]
        return infos

    def hub_getTaskInfo(
        self, task_id: int, request: bool = False, strict: bool = False
    ) -> dict[str, Any] | None:
        task = self.tasks.get(int(task_id))
        if task is None and strict:
            raise koji.GenericError(f"No such task: {task_id}")
        return dict(task) if task else None

    def hub_getTaskChildren(
        self, task_id: int, request: bool = False, strict: bool = False
    ) -> list[dict[str, Any]]:
        return [dict(t) for t in self.tasks.values() if t["parent"] == task_id]

    def hub_listTaskOutput(
        self, taskID: int, stat: bool = False, all_volumes: bool = False, strict: bool = False
    ) -> list[str]:
        return list(self.task_output.get(int(taskID), []))


class StaticHttpServer(_Background):
    """Serve ``root`` over HTTP on 127.0.0.1 (the lab's repo web server)."""

    def __init__(self, root: Path) -> None:
        handler = functools.partial(_QuietFileHandler, directory=str(root))
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._init_thread("repo-http")
        self.base_url = f"http://127.0.0.1:{self.port}/repos"
        self.root = root


class _QuietFileHandler(http.server.SimpleHTTPRequestHandler):
    def translate_path(self, path: str) -> str:
        # Served under /repos/ like a lab web server's subdirectory.
        return super().translate_path(path.removeprefix("/repos"))

    def log_message(self, format: str, *args: Any) -> None:
        pass


def unused_port() -> int:
    """Return a 127.0.0.1 port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
