"""lucid's benchmarks: run ``python benchmarks/run.py --help`` from the repository root."""
