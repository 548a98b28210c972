"""Headless Chromium for the HTML report's tests: pages opened from files, their DOM after the scripts ran
(``--dump-dom``), what they wrote to the console and a screenshot, several pages at once; and the dumped DOM read
back as a small tree.

Chromium comes from Debian's packages (``make browser``, which ``make test`` runs). Without it the browser tests
fail, saying so: they never skip.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

#: the flags the page opens with: headless, and no network of Chromium's own (without them it hangs on a closed
#: network waiting for its services)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0"]


def chromium() -> str:
    """The ``chromium`` program, or a test failure that says how to install it."""
    found = shutil.which("chromium")
    if found is None:
        pytest.fail("headless Chromium is not installed, so the HTML report cannot be tested in a browser: run "
                    "`make browser` (apt-get install -y chromium; `make test` runs it first)", pytrace=False)
    return found


@dataclass
class Page:
    """What Chromium made of one file: the DOM after its scripts ran, the page's console lines, the screenshot."""

    dom: str
    console: list[str]
    screenshot: Path | None
    stderr: str = field(repr=False, default="")


def render(paths: list[Path | str], screenshots: list[Path | None], size: tuple[int, int] = (1200, 2000),
           timeout: float = 120.0) -> list[Page]:
    """Open every file (a path, or a ``file:`` address as a string) in its own headless Chromium, all at once (each
    with a fresh profile folder); returns their pages in order."""
    program = chromium()
    runs = []
    for path, shot in zip(paths, screenshots):
        profile = tempfile.mkdtemp(prefix="fairshare-chromium-")
        extra = [f"--screenshot={shot}", f"--window-size={size[0]},{size[1]}"] if shot is not None else []
        command = [program, *FLAGS, f"--user-data-dir={profile}", *extra, "--dump-dom",
                   path if isinstance(path, str) else Path(path).resolve().as_uri()]
        runs.append((subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), profile))
    pages = []
    try:
        for (process, profile), shot in zip(runs, screenshots):
            out, err = process.communicate(timeout=timeout)
            assert process.returncode == 0, f"chromium failed ({process.returncode}): {err[-2000:]}"
            console = [line for line in err.splitlines() if ":CONSOLE" in line]
            pages.append(Page(out, console, shot, err))
    finally:
        for process, profile in runs:
            if process.poll() is None:
                process.kill()
                process.wait()
            shutil.rmtree(profile, ignore_errors=True)
    return pages


@dataclass
class Element:
    tag: str
    attrs: dict
    children: list = field(default_factory=list)
    text: list = field(default_factory=list)

    def iter(self):
        yield self
        for child in self.children:
            yield from child.iter()

    def find_all(self, tag: str | None = None, css: str | None = None, id: str | None = None) -> list[Element]:
        return [e for e in self.iter() if (tag is None or e.tag == tag) and (id is None or e.attrs.get("id") == id)
                and (css is None or css in (e.attrs.get("class") or "").split())]

    def content(self) -> str:
        """The text of the element and its descendants, as a browser's ``textContent``."""
        return "".join(self.text) + "".join(c.content() for c in self.children)


_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list) -> None:
        element = Element(tag, dict(attrs))
        self.stack[-1].children.append(element)
        if tag not in _VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        self.stack[-1].children.append(Element(tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(Element("#text", {}, text=[data]))


def tree(document: str) -> Element:
    """``document`` read as a tree of elements, as a browser's parser builds it (text kept in order)."""
    parser = _Tree()
    parser.feed(document)
    parser.close()
    return parser.root
