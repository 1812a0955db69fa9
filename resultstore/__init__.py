"""Store processed results, comparisons and tester verdicts (SQLite by default, PostgreSQL when shared)."""
