"""Sphinx configuration of lucid's documentation site: `sphinx-build -W -b html docs docs/_build/html`
(the `docs` extra installs what it needs). The guides are the Markdown files of this folder, read
by MyST; the API reference is made at build time from the installed lucid (docs/_ext/lucid_api.py).
The site loads nothing from the network."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "_ext"))

project = "lucid"
author = "lucid's authors"
copyright = "lucid's authors"

extensions = ["myst_parser", "lucid_api"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "img/*.md"]
myst_heading_anchors = 3                 # links to a guide's sections: guide.md#a-section

html_theme = "pydata_sphinx_theme"
html_title = "lucid"
html_static_path = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_prev_next": True,
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_show_sourcelink = False
html_copy_source = False
html_context = {"default_mode": "light"}   # the theme logs an error for an unset mode
