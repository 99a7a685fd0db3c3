"""Benchmarking agents on suites: scores (pass@k, pass^k …), the run itself, and the report."""
