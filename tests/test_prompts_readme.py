"""prompts/README.md has a row for every prompt file, and no row names a file that is gone.

A row's first cell names files as code spans: a path, `{a,b}` for alternatives, and `*` or a
`<placeholder>` for any name (such a pattern must match at least one file).
"""

import re
from pathlib import Path

from factory.paths import prompts_dir

CELL = re.compile(r"^\|\s*(.+?)\s*\|", re.MULTILINE)
SPAN = re.compile(r"`([^`]+)`")
BRACES = re.compile(r"\{([^{}]*,[^{}]*)\}")


def expand(pattern: str) -> list[str]:
    """`a/{b,c}.md` -> `a/b.md`, `a/c.md`; `<tool>` -> `*`."""
    pattern = re.sub(r"<[^<>/]+>", "*", pattern)
    match = BRACES.search(pattern)
    if match is None:
        return [pattern]
    return [p for option in match.group(1).split(",") for p in expand(pattern.replace(match.group(0), option, 1))]


def readme_patterns(text: str) -> list[str]:
    cells = [cell for cell in CELL.findall(text) if cell not in ("file", "---")]
    return [p for cell in cells for span in SPAN.findall(cell) for p in expand(span)]


def prompt_files(root: Path) -> set[Path]:
    return {path for path in root.rglob("*") if path.is_file() and path.name != "README.md"}


def problems(root: Path) -> list[str]:
    """A row whose file is missing, or a file no row names."""
    named: set[Path] = set()
    out = []
    for pattern in readme_patterns((root / "README.md").read_text(encoding="utf-8")):
        matched = {path for path in root.glob(pattern) if path.is_file()}
        if not matched:
            out.append(f"row names a missing file: {pattern}")
        named |= matched
    out += [f"no row for {path.relative_to(root)}" for path in sorted(prompt_files(root) - named)]
    return out


def test_every_prompt_file_has_a_row_and_every_row_a_file():
    assert problems(prompts_dir()) == []


def test_the_check_sees_a_missing_file_and_a_file_without_a_row(tmp_path):
    (tmp_path / "coa" / "tools").mkdir(parents=True)
    for name in ("coa/planner.md", "coa/tools/code.md", "coa/extra.md"):
        (tmp_path / name).write_text("x")
    (tmp_path / "README.md").write_text(
        "| file | used by |\n|---|---|\n| `coa/{planner,gone}.md` | roles |\n| `coa/tools/<tool>.md` | tools |\n"
        "| `coa/nothing_*.md` | none |\n"
    )
    assert problems(tmp_path) == [
        "row names a missing file: coa/gone.md",
        "row names a missing file: coa/nothing_*.md",
        "no row for coa/extra.md",
    ]
    assert expand("p/system_{math,code}.md") == ["p/system_math.md", "p/system_code.md"]
