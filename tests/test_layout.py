"""The house shows its architecture (issue 36): the top of ``src/fairshare`` holds only ``__init__.py``,
``__main__.py`` and concept folders, each saying in one line what lives there; imports run one way, down the
order written at the top of CONTRIBUTING.md (imports inside functions count); no circle; no module over 450
lines and no function over 80."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "fairshare"


def folder_order() -> list[str]:
    """The folders from the bottom up, as CONTRIBUTING.md writes them (``a < b < ...`` on its import-order line)."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    line = next(line for line in text.splitlines() if line.startswith("Import order:"))
    return re.findall(r"`([a-z_]+)/`", line)


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[int, str]]:
    """Every fairshare module ``module`` imports, anywhere in the file, with the line."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target.startswith("fairshare.") and target != module:
                found.append((node.lineno, target))
    return found


def _folder(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else None


def test_the_top_holds_only_the_api_and_folders_each_with_its_line():
    entries = {p.name for p in PACKAGE.iterdir() if p.name != "__pycache__"}
    files = {e for e in entries if (PACKAGE / e).is_file()}
    assert files == {"__init__.py", "__main__.py"}, files
    folders = entries - files
    assert folders == set(folder_order()), folders ^ set(folder_order())
    for name in folders:
        doc = ast.get_docstring(ast.parse((PACKAGE / name / "__init__.py").read_text(encoding="utf-8")))
        assert doc and doc.strip(), f"{name}/__init__.py says nothing of what lives there"


def test_imports_run_down_the_order_of_the_folders():
    order = {name: k for k, name in enumerate(folder_order())}
    modules = _modules()
    upward = []
    for module, path in modules.items():
        here = _folder(module)
        if here is None:                                   # the package's own __init__ and __main__: the API
            continue
        for line, target in _imports(module, path, modules):
            there = _folder(target)
            if there is None:
                upward.append(f"{module}:{line} imports the package's top ({target})")
            elif order[there] > order[here]:
                upward.append(f"{module}:{line} ({here}) imports {target} ({there}), a folder above it")
    assert not upward, "\n".join(upward)


def test_no_module_imports_itself_back():
    modules = _modules()
    edges = {m: {t for _, t in _imports(m, p, modules) if not (modules[t].name == "__init__.py" and
                                                              m.startswith(t + "."))} for m, p in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                circles.append(sorted(part))

    for v in edges:
        if v not in index:
            visit(v)
    assert not circles, circles


@pytest.mark.parametrize("limit, what", [(450, "module"), (80, "function")])
def test_modules_and_functions_stay_small(limit, what):
    big = []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if what == "module" and text.count("\n") > limit:
            big.append(f"{path.relative_to(PACKAGE)}: {text.count(chr(10))} lines")
        if what == "function":
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        node.end_lineno - node.lineno + 1 > limit:
                    big.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}: "
                               f"{node.end_lineno - node.lineno + 1} lines")
    assert not big, "\n".join(big)
