"""The typed C loops and what feeds them: block loops, SIMD tanh, the array pool, index fast paths."""
