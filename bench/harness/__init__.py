"""The benchmark harness behind bench/run: starts Quill and MariaDB, runs each workload against
them in alternation, and reports medians and ratios. See bench/README.md."""
