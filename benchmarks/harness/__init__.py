"""What the suites and probes share: sizes, cases, runs, records, the report and its targets."""
