"""Publishing: the Hub layout that `datasets`, LLaMA-Factory and TRL read, its card, a push to a loopback Hub, the commands."""

from __future__ import annotations

import argparse
import base64
import importlib.util
import io
import json
import re
import sys
import threading
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
import yaml
from test_export import COA_KEPT, KEPT, make_run

from factory.errors import FactoryError
from factory.export import ExportError, ExportOptions, publish
from factory.export.command import add_export_parser, add_publish_parser

STALE = "data/old_config/train-00000-of-00001.parquet"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return make_run(tmp_path_factory.mktemp("run"))


@pytest.fixture(scope="module")
def hub_folder(run_dir, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("hub")
    publish(run_dir, to=folder, options=ExportOptions(validation=0.3))
    return folder


def every_row(folder: Path, config: str) -> datasets.Dataset:
    return datasets.concatenate_datasets(list(datasets.load_dataset(str(folder), config).values()))


class FakeHub(BaseHTTPRequestHandler):
    """The few Hub endpoints a dataset push uses, answering as the Hub does; every request is recorded."""

    requests: list[dict] = []
    repo_files: list[str] = []
    fail_create: bool = False
    bad_card: bool = False

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _reply(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self) -> bytes:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.requests.append(
            {"method": self.command, "path": self.path, "body": body, "auth": self.headers.get("Authorization")}
        )
        return body

    def do_GET(self):
        self._record()
        if "/tree/" in self.path:
            return self._reply(200, [{"type": "file", "path": p, "size": 1, "oid": "0" * 40} for p in self.repo_files])
        self._reply(404, {"error": "not found"})

    def do_POST(self):
        body = self._record()
        if self.path == "/api/repos/create":
            if self.fail_create:
                return self._reply(403, {"error": "You don't have the rights to create a dataset under this namespace"})
            name = json.loads(body)
            return self._reply(200, {"url": f"{self.base}/datasets/{name['organization']}/{name['name']}"})
        if self.path == "/api/validate-yaml":  # the Hub checks the card's metadata before a commit
            if self.bad_card:
                return self._reply(400, {"errors": [{"message": '"license" must be one of [apache-2.0, mit, ...]'},
                                                    {"message": '"tags" must be an array'}]})  # fmt: skip
            return self._reply(200, {"errors": [], "warnings": []})
        if "/preupload/" in self.path:
            files = json.loads(body)["files"]
            return self._reply(
                200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False} for f in files]}
            )
        if "/commit/" in self.path:
            return self._reply(200, {"commitUrl": f"{self.base}/datasets/org/name/commit/abc123",
                                     "commitOid": "abc123", "pullRequestUrl": None})  # fmt: skip
        self._reply(404, {"error": "not found"})


@pytest.fixture
def hub():
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeHub)
    FakeHub.base = f"http://127.0.0.1:{server.server_port}"
    FakeHub.requests, FakeHub.repo_files = [], [STALE, "README.md"]
    FakeHub.fail_create = FakeHub.bad_card = False
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield FakeHub
    server.shutdown()
    server.server_close()


def commit_lines(hub) -> list[dict]:
    (commit,) = [r for r in hub.requests if "/commit/" in r["path"]]
    return [json.loads(line) for line in commit["body"].decode().splitlines()]


def test_local_folder_reads_back_with_load_dataset(run_dir, tmp_path):
    folder = tmp_path / "hub"
    result = publish(run_dir, to=folder, options=ExportOptions(validation=0.3, file_type="jsonl"))
    assert result.export.options.file_type == "parquet"  # the Hub layout is always Parquet
    assert (folder / "README.md").is_file()
    [sharegpt_files] = [fmt for fmt in result.export.formats if fmt.name == "sharegpt"]
    tag = sharegpt_files.fingerprint
    assert re.fullmatch(r"[0-9a-f]{12}", tag)
    assert sorted(p.relative_to(folder).as_posix() for p in (folder / "data" / "sharegpt").iterdir()) == [
        f"data/sharegpt/train-{tag}-00000-of-00001.parquet",
        f"data/sharegpt/validation-{tag}-00000-of-00001.parquet",
    ]
    sharegpt = datasets.load_dataset(str(folder), "sharegpt")
    assert set(sharegpt) == {"train", "validation"}
    assert {row["id"] for split in sharegpt.values() for row in split} == KEPT
    afm = datasets.load_dataset(str(folder), "afm")
    assert sum(len(split) for split in afm.values()) == len(COA_KEPT)
    default = datasets.load_dataset(str(folder))  # the card marks sharegpt as the default config
    assert "conversations" in default["train"].column_names


def load_llamafactory_converter(monkeypatch):
    """LLaMA-Factory's own converter, imported without its package __init__ files (they need torchaudio,
    omegaconf and the rest of its training stack); the converter modules themselves run unchanged."""
    spec = importlib.util.find_spec("llamafactory")
    if spec is None:
        return None
    root = spec.submodule_search_locations[0]
    for package in ("llamafactory.data", "llamafactory.hparams"):
        module = types.ModuleType(package)
        module.__path__ = [f"{root}/{package.split('.')[1]}"]
        monkeypatch.setitem(sys.modules, package, module)
    from llamafactory.data.converter import align_dataset
    from llamafactory.data.parser import DatasetAttr
    from llamafactory.hparams.data_args import DataArguments

    return align_dataset, DatasetAttr, DataArguments


def test_sharegpt_config_loads_in_llamafactory(hub_folder, monkeypatch):
    loaded = load_llamafactory_converter(monkeypatch)
    if loaded is None:
        pytest.skip("llamafactory not installed (pip install --no-deps llamafactory)")
    align_dataset, DatasetAttr, DataArguments = loaded
    dataset = every_row(hub_folder, "sharegpt")
    aligned = align_dataset(dataset, DatasetAttr("file", "factory", formatting="sharegpt"), DataArguments(), None)
    assert len(aligned) == len(KEPT)
    for row in aligned:
        assert row["_prompt"] and row["_response"], "LLaMA-Factory skipped a row as abnormal"
        assert row["_response"][0]["role"] == "assistant"
        assert {m["role"] for m in row["_prompt"]} <= {"user", "assistant"}


def tiny_chat_tokenizer():
    """A word-level tokenizer with a ChatML template: enough for TRL's chat-template utilities, no download."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "<|im_start|>": 1, "<|im_end|>": 2}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend, unk_token="[UNK]", eos_token="<|im_end|>", chat_template=template
    )


def test_messages_config_goes_through_trl(hub_folder):
    from trl.data_utils import apply_chat_template, is_conversational

    dataset = every_row(hub_folder, "messages")
    assert all(is_conversational(row) for row in dataset)
    texts = dataset.map(apply_chat_template, fn_kwargs={"processing_class": tiny_chat_tokenizer()})
    row = next(r for r in texts if r["id"] == "refine:p1")
    assert row["text"].count("<|im_start|>assistant") == 3 and "take(brass key)" in row["text"]


def test_card_yaml_names_the_configs_and_the_provenance(hub_folder):
    from huggingface_hub import DatasetCard

    text = (hub_folder / "README.md").read_text()
    header = yaml.safe_load(text.split("---")[1])
    assert [c["config_name"] for c in header["configs"]] == ["sharegpt", "messages", "afm", "llamafactory", "openai"]
    tag = next((hub_folder / "data" / "sharegpt").glob("train-*")).name.split("-")[1]  # the content digest
    assert header["configs"][0]["data_files"] == [
        {"split": "train", "path": f"data/sharegpt/train-{tag}-*.parquet"},
        {"split": "validation", "path": f"data/sharegpt/validation-{tag}-*.parquet"},
    ]
    assert header["license"] == "apache-2.0" and header["size_categories"] == ["n<1K"]
    assert DatasetCard(text).data.to_dict()["task_categories"] == ["text-generation"]
    for fact in ["openai/gpt-4o-mini", "duplicate of coa:t2", "fewer than 2 corrections", "complexity",
                 "303 prompt + 30 completion tokens", "$0.0125", "refine: personas 8", '"from": "gpt"']:  # fmt: skip
        assert fact in text, fact


def test_push_creates_the_repo_and_sends_one_commit(run_dir, hub, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    result = publish(run_dir, repo_id="org/name", private=True, formats=["sharegpt", "afm"], endpoint=hub.base)
    create = next(r for r in hub.requests if r["path"] == "/api/repos/create")
    body = json.loads(create["body"])
    assert (body["name"], body["organization"], body["type"]) == ("name", "org", "dataset")
    assert body.get("visibility") == "private" or body.get("private") is True  # newer clients send `visibility`
    assert create["auth"] == "Bearer hf_test_token"
    assert len([r for r in hub.requests if "/commit/" in r["path"]]) == 1
    validated = next(r for r in hub.requests if r["path"] == "/api/validate-yaml")
    assert json.loads(validated["body"])["repoType"] == "dataset"
    lines = commit_lines(hub)
    added = {
        line["value"]["path"]: base64.b64decode(line["value"]["content"]) for line in lines if line["key"] == "file"
    }
    expected = {"README.md"} | {f"data/{fmt.folder.name}/{path.name}" for fmt in result.export.formats
                                for paths in fmt.files.values() for path in paths}  # fmt: skip
    expected |= {
        f"data/{fmt.name}/dataset_info.json" for fmt in result.export.formats if fmt.name in ("afm", "llamafactory")
    }  # the trainers' dataset lists
    assert set(added) == expected and any(p.startswith("data/afm/") for p in added)
    assert [line["value"]["path"] for line in lines if line["key"] == "deletedFile"] == [STALE]
    assert b"config_name: sharegpt" in added["README.md"] and b'load_dataset("org/name"' in added["README.md"]
    [train_path] = [path for path in added if path.startswith("data/sharegpt/train-")]
    train = pq.read_table(io.BytesIO(added[train_path]))
    assert set(train.column_names) == {"id", "conversations", "source", "task_id", "script_id", "weight"}
    assert result.commit_url.endswith("/commit/abc123") and result.folder is None


def test_push_without_a_token_is_a_one_line_error(run_dir, hub, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr("huggingface_hub.get_token", lambda: None)  # no login stored on this machine either
    with pytest.raises(ExportError, match="set HF_TOKEN") as info:
        publish(run_dir, repo_id="org/name", endpoint=hub.base)
    assert "\n" not in str(info.value) and hub.requests == []


def test_a_hub_refusal_is_a_one_line_error(run_dir, hub):
    hub.fail_create = True
    with pytest.raises(ExportError, match="push to org/name failed: 403") as info:
        publish(run_dir, repo_id="org/name", token="hf_x", endpoint=hub.base)
    assert "\n" not in str(info.value)


def test_a_card_the_hub_rejects_is_a_one_line_error(run_dir, hub):
    hub.bad_card = True
    with pytest.raises(ExportError, match='Invalid metadata in README.md. - "license" must be one of') as info:
        publish(run_dir, repo_id="org/name", token="hf_x", endpoint=hub.base)
    assert "\n" not in str(info.value)
    assert not [r for r in hub.requests if "/commit/" in r["path"]]


def test_publish_needs_exactly_one_target(run_dir, tmp_path):
    with pytest.raises(ExportError, match="exactly one target"):
        publish(run_dir)
    with pytest.raises(ExportError, match="exactly one target"):
        publish(run_dir, repo_id="org/name", to=tmp_path)
    with pytest.raises(ExportError, match="not of the form ORG/NAME"):
        publish(run_dir, repo_id="just-a-name", token="hf_x")
    with pytest.raises(FactoryError, match="publish options: field 'formats.0'"):
        publish(run_dir, to=tmp_path, formats=["alpaca"])


def test_publish_command_writes_a_local_folder(run_dir, tmp_path, capsys):
    parser = argparse.ArgumentParser()
    add_publish_parser(parser.add_subparsers())
    args = parser.parse_args(["publish", str(run_dir), "--to", str(tmp_path / "hub"), "--format", "messages"])
    assert args.func(args) == 0
    assert "messages: train" in capsys.readouterr().out
    assert datasets.load_dataset(str(tmp_path / "hub"), "messages")["train"].num_rows > 0


def test_export_command(run_dir, tmp_path, capsys):
    parser = argparse.ArgumentParser()
    add_export_parser(parser.add_subparsers())
    args = parser.parse_args(
        ["export", str(run_dir), "--format", "afm", "--out", str(tmp_path), "--jsonl", "--validation", "0"]
    )
    assert args.func(args) == 0
    printed = capsys.readouterr().out
    assert f"afm: train {len(COA_KEPT)}" in printed and "dataset card:" in printed
    assert list((tmp_path / "afm").glob("train-*.jsonl"))
