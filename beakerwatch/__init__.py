"""Follow submitted Beaker jobs and pull their results into ``ci_in`` (``ovsperf-beaker``).

``track`` records the jobs ``ovsperf-koji submit`` submitted, with the build they test;
``collect`` asks the Beaker hub (beaker-client's ``HubProxy``) how they are doing, downloads the
``results_<ts>.tar.gz`` the ``vsperf_test`` task uploaded, unpacks it safely and delivers it into
``ci_in`` for ``process-ci-results`` (or delivers an infrastructure failure when the job never
measured anything); ``status`` lists what is tracked. See docs/beakerwatch.md.
"""
