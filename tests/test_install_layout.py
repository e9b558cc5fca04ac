"""prompts/ and personas/ are found from a checkout and from a built wheel."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from factory.paths import personas_dir, prompts_dir
from factory.prompts import load_prompt

ROOT = Path(__file__).resolve().parents[1]


def test_checkout_finds_data_folders():
    assert prompts_dir() == ROOT / "prompts"
    assert personas_dir() == ROOT / "personas"
    assert "JSON" in load_prompt("llm/schema_instruction")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    return next(out.glob("factory-*.whl"))


def test_wheel_ships_the_data_folders(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "factory/_data/prompts/llm/schema_instruction.md" in names
    assert "factory/_data/personas/README.md" in names
    assert "train/__init__.py" in names


def test_installed_wheel_finds_its_data(wheel, tmp_path):
    target = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    code = "import factory.paths as p, factory.prompts as q; print(p.prompts_dir()); print(q.load_prompt('smoke/system')[:20])"
    # Run from an empty folder with only the installed copy on the path, never the checkout.
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    prompts_path, text = run.stdout.splitlines()
    assert prompts_path == str(target / "factory" / "_data" / "prompts")
    assert text == load_prompt("smoke/system")[:20]
