"""lucid.func and lucid.autograd.functional, and higher-order derivatives through create_graph."""
