"""Process results arriving from the lab (``process-ci-results``): report, record, move, never lose."""
