"""Compare VSperf results with a baseline and write an HTML and JSON report (``generate-report``).

Data flows one way: ``load`` (VSperf CSV/md/rst → records) → ``compare`` (baseline + current →
comparison, pure) → ``render`` (HTML, plots and JSON written into a directory it is given).
"""
