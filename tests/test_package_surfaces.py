"""Each package shows a small public surface, and the product reaches others only through it.

A private module (`_name.py`) may change without notice; only its own package may import it. Every
name another module imports from a package must be in that package's `__all__`, and every name in an
`__all__` must exist.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT_ROOTS = [ROOT / "clients" / "python", ROOT / "libs", *sorted((ROOT / "services").glob("*"))]
ALL_ROOTS = [*PRODUCT_ROOTS, ROOT / "lab", ROOT / "tests"]


@dataclass(frozen=True)
class Import:
    file: Path
    importer: str  # dotted name of the importing module's package
    module: str  # the module imported from
    names: tuple[str, ...]


def _python_files(root: Path) -> Iterator[Path]:
    for path in root.rglob("*.py"):
        if "_pb2" not in path.name and not {".venv", "build"} & set(path.parts):
            yield path


def _package_of(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1])


def _imports(roots: list[Path]) -> Iterator[Import]:
    for root in roots:
        for path in _python_files(root):
            package = _package_of(root, path)
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    yield Import(path, package, node.module, tuple(a.name for a in node.names))
                elif isinstance(node, ast.Import):
                    for alias in node.names:
                        yield Import(path, package, alias.name, ())


def _private_owner(module: str) -> str | None:
    """The package owning the first private component of a dotted name, or None if all are public."""
    parts = module.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def _is_ours(module: str) -> bool:
    return module.split(".")[0] in {
        "athena",
        "athena_client",
        "athena_cli",
        "athena_ingest",
        "athena_cognition",
        "athena_formation",
    }


def test_no_product_module_imports_another_packages_private_module() -> None:
    trespasses = []
    for imp in _imports(PRODUCT_ROOTS):
        owner = _private_owner(imp.module)
        if owner is None or not _is_ours(imp.module):
            continue
        if imp.importer != owner and not imp.importer.startswith(owner + "."):
            trespasses.append(f"{imp.file.relative_to(ROOT)} imports {imp.module}")
    assert trespasses == []


def test_every_name_imported_from_a_package_is_in_its_all() -> None:
    missing = set()
    for imp in _imports(ALL_ROOTS):
        if not _is_ours(imp.module) or _private_owner(imp.module) is not None or "_pb2" in imp.module:
            continue
        try:
            module = importlib.import_module(imp.module)
        except ImportError:
            continue  # a lab-only dependency; the import itself is tested where it is used
        if not hasattr(module, "__path__"):
            continue  # a plain module, not a package
        exported = set(getattr(module, "__all__", ()))
        for name in imp.names:
            if name in exported or name == "*":
                continue
            if importlib.util.find_spec(f"{imp.module}.{name}") is not None:
                continue  # a sub-module or sub-package
            missing.add(f"{imp.module}.{name} (imported by {imp.file.relative_to(ROOT)})")
    assert sorted(missing) == []


def test_every_name_in_an_all_exists() -> None:
    absent = []
    for root in PRODUCT_ROOTS:
        for init in root.rglob("__init__.py"):
            package = _package_of(root, init)
            if "_pb2" in package or not package:
                continue
            module = importlib.import_module(package)
            for name in getattr(module, "__all__", ()):
                if not hasattr(module, name):
                    absent.append(f"{package}.{name}")
    assert absent == []
