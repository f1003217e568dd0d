"""House rules that keep the code findable: every module of the backend and the ui declares what it offers."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _modules() -> list[Path]:
    return [p for folder in ("audit_core", "ui") for p in sorted((ROOT / folder).rglob("*.py"))
            if p.name not in ("__init__.py", "__main__.py")]  # fmt: skip


def _public_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


def test_every_module_declares_all_and_lists_exactly_its_public_names():
    """``__all__`` names every public name a module defines, and only names it defines or imports (no stale entry)."""
    for path in _modules():
        tree = ast.parse(path.read_text())
        declared = next((node.value for node in tree.body if isinstance(node, ast.Assign)
                         and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)), None)  # fmt: skip
        assert declared is not None, f"{path.relative_to(ROOT)} declares no __all__"
        listed = set(ast.literal_eval(declared))
        public = _public_names(tree) - {"__all__"}
        imported = {a.asname or a.name for node in tree.body if isinstance(node, ast.ImportFrom) for a in node.names}
        assert public <= listed, f"{path.relative_to(ROOT)}: public but not in __all__: {sorted(public - listed)}"
        stale = sorted(listed - public - imported)
        assert not stale, f"{path.relative_to(ROOT)}: in __all__ but not defined: {stale}"
        assert not {n for n in listed if n.startswith("_")}, f"{path.relative_to(ROOT)}: a private name in __all__"
