"""Custom Functions (lucid.autograd.Function): apply, ctx, errors, the apply cache, checkpoint, opcheck."""
