"""The one-way layers: train/ may import factory, a factory module that imports train/ is reported (issue 30).

The real tree's check (0 violations) is tests/test_house.py's run of scripts/import_cycles.py; here the checker
itself is shown a small tree with one import in each direction, so a checker that stops looking fails."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def layered_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in {"factory/__init__.py": "", "train/__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def check(root: Path) -> subprocess.CompletedProcess:
    script = REPO / "scripts/import_cycles.py"
    return subprocess.run([sys.executable, str(script), "factory", "train"], cwd=root, capture_output=True, text=True)


def test_a_factory_module_importing_train_is_a_violation_even_deferred(tmp_path):
    layered_tree(
        tmp_path,
        {
            "factory/export.py": "def rows():\n    from train.data import read  # deferred: still a layering violation\n",
            "train/data.py": "from factory.export import rows\n",  # the allowed direction
        },
    )
    found = check(tmp_path)
    assert found.returncode == 1
    assert "0 file cycles" not in found.stdout  # the two modules also form a cycle
    assert "layering violation: factory.export → train.data" in found.stdout
    assert "train.data →" not in found.stdout


def test_train_importing_factory_is_allowed_and_no_factory_module_is_exempt(tmp_path):
    files = {
        "factory/rows.py": "ROWS = []\n",
        "train/sft.py": "from factory.rows import ROWS\n\ndef main():\n    return ROWS\n",
    }
    layered_tree(tmp_path, files)
    found = check(tmp_path)
    assert found.returncode == 0, found.stdout
    assert "0 file cycles, 0 package cycles, 0 layering violations" in found.stdout
    # the command line that starts the trainer is no exception: it finds train/ through the plugin entry point
    layered_tree(tmp_path, {"factory/cli.py": "def train_command():\n    from train.sft import main\n"})
    found = check(tmp_path)
    assert found.returncode == 1 and "layering violation: factory.cli → train.sft" in found.stdout


def test_factory_finds_the_trainer_through_its_entry_point():
    from factory.plugins import trainer

    found = trainer("this test")
    assert found.__name__ == "train.plugin"
    assert "output_dir" in found.RUN_CONTROL_FIELDS and callable(found.train_stage) and callable(found.main)
