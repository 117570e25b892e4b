"""The backward engine: graph walks, grad mode, roots, threads, deep chains, gradient ownership, native nodes."""
