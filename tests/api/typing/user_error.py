"""A user program with a deliberate mistake that mypy must report (tests/api/test_typing.py)."""
import lucid

x = lucid.ones(3)
x.not_a_method()
