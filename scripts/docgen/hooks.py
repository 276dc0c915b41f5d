"""MkDocs hooks (``hooks:`` in mkdocs.yml): add the pages generated from the code that are not committed under docs/
(the CLI and HTTP references; ``python scripts/docgen/pages.py`` writes the others there) and expand the
benchmark-table markers of every page from ``benchmarks/results/*.json``.  A marker that cannot be rendered fails
the build, naming the page."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mkdocs.exceptions import PluginError  # noqa: E402
from mkdocs.structure.files import File  # noqa: E402

import pages as generated  # noqa: E402
import results  # noqa: E402

_PAGES: dict[str, str] = {}
_EXPANDED: dict[str, str] = {}


def on_config(config):
    """Fill the nav sections that name a generated index page with that section's generated pages."""
    _PAGES.clear()
    _PAGES.update(generated.generated_pages())

    def expand(items):
        out = []
        named = {i for i in items if isinstance(i, str)}  # a page the section names itself keeps its place
        for item in items:
            if isinstance(item, dict):
                out.append({k: expand(v) if isinstance(v, list) else v for k, v in item.items()})
            elif isinstance(item, str) and item.endswith("/index.md") and item in _PAGES:
                folder = item.rsplit("/", 1)[0]
                out += [item, *sorted(p for p in _PAGES if p.startswith(folder + "/") and p not in named)]
            else:
                out.append(item)
        return out

    config["nav"] = expand(config["nav"])
    return config


def on_files(files, config):
    for path, content in _PAGES.items():
        if files.get_file_from_path(path) is None:  # the committed ones are in docs/ already (kept equal by a test)
            files.append(File.generated(config, path, content=content))
    charts: dict[str, bytes] = {}
    for file in list(files):
        if not file.src_uri.endswith(".md"):
            continue
        text = _PAGES.get(file.src_uri)
        if text is None:
            text = Path(file.abs_src_path).read_text(encoding="utf-8")
        try:
            _EXPANDED[file.src_uri], page_charts = results.expand(text, file.src_uri.count("/"))
        except results.MarkerError as err:
            raise PluginError(f"{file.src_uri}: {err}") from None
        charts.update(page_charts)
    for path, png in charts.items():
        files.append(File.generated(config, path, content=png))
    return files


def on_page_markdown(markdown, page, config, files):
    return _EXPANDED.get(page.file.src_uri, markdown)
