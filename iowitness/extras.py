"""The optional parts: pyarrow for Parquet, matplotlib for the HTML charts.

`run`, `attach`, `show`, `report` (text, JSON, CSV, Markdown), `check` and `compare` need
neither; `pip install iowitness` leaves them out (pyarrow alone is ~170 MB). A command that
needs one says so in one line, with the pip command that adds it (pyproject.toml's extras).

Example: `pq = require("pyarrow.parquet", "parquet", "export --parquet")`.
"""

from __future__ import annotations

import importlib

from iowitness.errors import NotFound

# module -> the extra of pyproject.toml that installs it
EXTRAS = {"pyarrow": "parquet", "matplotlib": "html"}


def require(module: str, extra: str, what: str):
    """The module, imported; NotFound naming the extra to install when it is missing."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        if getattr(exc, "name", None) not in (None, top, module) and not str(exc).startswith(f"No module named '{top}"):
            raise   # the module is there but broken: its own error says more than ours would
        raise NotFound(f"{what} needs {top}, which is not installed: pip install 'iowitness[{extra}]' "
                       f"(or pip install {top})") from None
