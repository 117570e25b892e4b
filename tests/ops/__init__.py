"""The built-in ops: each row of the op table checked, and each family's semantics beyond its rows."""
