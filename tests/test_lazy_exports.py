"""Package __init__ files name their API and import it on first use (factory/lazy_exports.py).
Nothing runs such a name until someone asks for it, so these tests ask for every one."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

FACTORY = Path(__file__).resolve().parents[1] / "factory"
LAZY_PACKAGES = sorted(
    ".".join(init.relative_to(FACTORY.parent).parent.parts)
    for init in FACTORY.rglob("__init__.py")
    if "lazy_exports(" in init.read_text(encoding="utf-8")
)


def fresh_python(source: str) -> str:
    return subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_every_exported_name_resolves(package):
    module = importlib.import_module(package)
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    assert set(module.__all__) <= set(dir(module))


def test_a_name_the_package_does_not_export_is_an_attribute_error():
    import factory.export

    with pytest.raises(AttributeError, match="no attribute 'export_everything'"):
        factory.export.export_everything  # noqa: B018


def test_a_function_named_like_its_submodule_stays_the_function():
    # factory.export.publish is a module and its function; importing the module first must not hide the function
    probe = (
        "import factory.export.publish; from factory.export import publish; print(callable(publish), publish.__name__)"
    )
    assert fresh_python(probe).split() == ["True", "publish"]


def test_importing_the_package_or_its_config_loads_no_heavy_library():
    heavy = ("duckdb", "pyarrow", "aiohttp", "huggingface_hub", "numpy", "torch", "litellm", "openai")
    probe = f"import sys, factory, factory.config; print([m for m in {heavy!r} if m in sys.modules])"
    assert fresh_python(probe).strip() == "[]"
