"""Helpers shared by the tests: ground-truth workloads and strace as an independent witness."""
