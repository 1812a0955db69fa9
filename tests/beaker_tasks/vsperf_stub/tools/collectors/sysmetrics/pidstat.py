"""VSperf's ``Pidstat`` collector as a subclass sees it; it logs its calls to ``pidstat_<test>.log``."""

import logging
import os


class Pidstat:
    _logger = logging.getLogger("pidstat")

    def __init__(self, results_dir: str, test_name: str) -> None:
        self._log = os.path.join(results_dir, "pidstat_" + test_name + ".log")

    def start(self) -> None:
        with open(self._log, "a") as log:
            log.write("pidstat start\n")

    def stop(self) -> None:
        with open(self._log, "a") as log:
            log.write("pidstat stop\n")
