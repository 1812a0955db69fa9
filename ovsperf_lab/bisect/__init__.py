"""``ovsperf-lab bisect``: which build between a good and a bad one made OVS slower.

- :mod:`~ovsperf_lab.bisect.model` — builds, steps, conclusions and the closed sets (light: the
  parser and the state file use them without scipy);
- :mod:`~ovsperf_lab.bisect.search` — the bisection itself: from the steps so far, the next build to
  compare or the conclusion (pure, deterministic: a resumed run replays the steps);
- :mod:`~ovsperf_lab.bisect.options` — the sub-command's parser and its request (light);
- :mod:`~ovsperf_lab.bisect.state` — the state file, written atomically after every step;
- :mod:`~ovsperf_lab.bisect.rpmunpack` — an RPM's files unpacked without ``rpm --root``
  (``rpm2cpio``, the cpio ``newc`` stream read here);
- :mod:`~ovsperf_lab.bisect.kojibuilds` — a package's builds from a Koji tag's history, each
  downloaded, verified and unpacked on demand (kojiwatch's client; bounded retries);
- :mod:`~ovsperf_lab.bisect.report` — the page and ``bisect.json`` (the compare page's style);
- :mod:`~ovsperf_lab.bisect.session` — the run: one ``compare`` per step, state, page, exit code.

This ``__init__`` imports nothing.
"""
