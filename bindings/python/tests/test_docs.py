"""Every public name of the package has a docstring, at run time (what help() shows) and in
the stubs (what an IDE shows)."""

from __future__ import annotations

import ast
import inspect
import pathlib

import sets3lock


def _public_members(obj: object) -> list[str]:
    return [n for n in dir(obj) if not n.startswith("_")]


def test_every_public_name_has_a_docstring_at_run_time() -> None:
    missing = []
    for name in sets3lock.__all__:
        obj = getattr(sets3lock, name)
        if name == "__version__":
            continue
        if not (inspect.getdoc(obj) or "").strip():
            missing.append(name)
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for member in _public_members(obj):
                if not (inspect.getdoc(getattr(obj, member)) or "").strip():
                    missing.append(f"{name}.{member}")
    assert not missing, f"no docstring: {missing}"


def test_every_public_name_in_the_stubs_has_a_docstring() -> None:
    stub = pathlib.Path(sets3lock.__file__).with_name("_native.pyi")
    tree = ast.parse(stub.read_text())
    missing = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if not node.name.startswith("_") and ast.get_docstring(node) is None:
                missing.append(node.name)
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if (
                        isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and not item.name.startswith("_")
                        and ast.get_docstring(item) is None
                    ):
                        missing.append(f"{node.name}.{item.name}")
    assert not missing, f"no docstring in _native.pyi: {missing}"
