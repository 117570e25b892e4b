"""The benchmark harness and the instruction-count guard (benchmarks/), on fake inputs."""
