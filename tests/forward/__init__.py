"""Forward-mode AD: dual tensors, every op's jvp, fused tangents, jvp, and its mixes with reverse mode."""
