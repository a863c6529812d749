"""The kernel: states, records, errors, retry policy, settings, timing, ports. No I/O."""
