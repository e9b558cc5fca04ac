"""List the import cycles between files and between packages of the tree, and the imports against its layers.

    python scripts/import_cycles.py [ROOT ...]        # default: factory train

Every `import`/`from … import` counts, also those inside functions (a deferred
import hides a cycle from Python, not from a reader). A file cycle is a strongly
connected set of modules; a package cycle the same over the packages they live in.
The layers are one-way: train/ builds on factory (the mask, the rows, the store),
so a factory module that imports train/ is a layering violation even without a
cycle: two packages that import each other are one package to read. factory
starts the trainer through its `factory.plugins` entry point (factory/plugins.py).
Exit status 1 when a cycle or a violation exists, so CI can keep the tree free of them.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

# (lower, upper): no module of `lower` may import `upper`.
LAYERS = [("factory", "train")]


def module_name(path: Path) -> str:
    parts = list(path.with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, name: str, known: set[str]) -> set[str]:
    """The tree's modules `path` imports: `from pkg import mod` counts `pkg.mod` when that is a module, else
    `pkg`; imports under `if TYPE_CHECKING:` are left out (they never run)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join([*base, node.module] if node.module else base)
            children = {f"{target}.{alias.name}" for alias in node.names} & known
            found.update(children or {target})
    return {nearest_known(m, known) for m in found if nearest_known(m, known)} - {name}


def runtime_nodes(tree: ast.AST):
    """Every node but those under `if TYPE_CHECKING:`."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for child in node.orelse for n in [child, *runtime_nodes(child)])
            continue
        yield node
        yield from runtime_nodes(node)


def nearest_known(module: str, known: set[str]) -> str | None:
    while module and module not in known:
        module = module.rpartition(".")[0]
    return module or None


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan), each sorted."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def file_graph(roots: list[str]) -> dict[str, set[str]]:
    paths = {module_name(p): p for root in roots for p in sorted(Path(root).rglob("*.py"))}
    known = set(paths)
    return {name: imported_modules(path, name, known) for name, path in paths.items()}


def package_graph(files: dict[str, set[str]], roots: list[str]) -> dict[str, set[str]]:
    """Modules folded into their package; a top-level module of a root (factory/cli.py) is its own node."""

    def package(module: str) -> str:
        parts = module.split(".")
        return ".".join(parts[:2])

    graph: dict[str, set[str]] = defaultdict(set)
    for module, targets in files.items():
        graph[package(module)].update(package(t) for t in targets if package(t) != package(module))
        # a package's __init__ re-exporting its children is not a cycle of the package with itself
    return graph


def layering_violations(files: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) for each import from a lower layer into an upper one, launchers left out."""
    return sorted(
        (module, target)
        for lower, upper in LAYERS
        for module, targets in files.items()
        if in_package(module, lower)
        for target in targets
        if in_package(target, upper)
    )


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def main(argv: list[str]) -> int:
    roots = argv or ["factory", "train"]
    files = file_graph(roots)
    file_cycles, package_cycles = cycles(files), cycles(package_graph(files, roots))
    violations = layering_violations(files)
    counts = f"{len(file_cycles)} file cycles, {len(package_cycles)} package cycles"
    print(f"{len(files)} modules; {counts}, {len(violations)} layering violations")
    for kind, found in (("file", file_cycles), ("package", package_cycles)):
        for members in found:
            print(f"  {kind} cycle ({len(members)}): {' ↔ '.join(members)}")
    for module, target in violations:
        print(f"  layering violation: {module} → {target} (a lower layer imports an upper one)")
    return 1 if file_cycles or package_cycles or violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
