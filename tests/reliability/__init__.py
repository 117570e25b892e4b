"""Bad inputs, IEEE edge values, zero-size tensors and random differential programs."""
