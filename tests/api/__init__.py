"""The public surface: tensor basics, errors, idioms, docs and examples, typing, the native-op ABI."""
