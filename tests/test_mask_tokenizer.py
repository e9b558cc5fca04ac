"""A Hub name offline fails at once with one line (issue 28), instead of a minute of retries."""

import pytest

from factory.errors import FactoryError
from factory.mask.tokenizer import check_reachable


def test_offline_a_hub_name_is_one_line_at_once(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(FactoryError, match=r"^--tokenizer: 'org/not-cached' is not a local folder .* HF_HUB_OFFLINE"):
        check_reachable("org/not-cached", "--tokenizer")


def test_an_unreachable_hub_is_named(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # the discard port: nothing listens
    with pytest.raises(FactoryError, match="the Hub cannot be reached"):
        check_reachable("org/not-cached", "model.path")


def test_a_local_folder_is_never_looked_up(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    check_reachable(str(tmp_path), "--tokenizer")  # no error
