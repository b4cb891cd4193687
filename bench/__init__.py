"""Benchmarks (`make bench`): speed and accuracy targets, results written to bench/results/."""
