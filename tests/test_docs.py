"""The custom-Function and functional-transform guides' code blocks run as written
(docs/native_ops.md shows code from examples/native_op, which CI builds and tests on its own)."""
import pathlib
import re

import pytest

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def blocks():
    for path in [DOCS / "custom_functions.md", DOCS / "functional.md"]:
        for i, code in enumerate(BLOCK.findall(path.read_text())):
            yield pytest.param(code, id=f"{path.stem}-{i}")


@pytest.mark.parametrize("code", list(blocks()))
def test_doc_block_runs(code):
    exec(compile(code, "<doc>", "exec"), {"__name__": "__doc_example__"})
