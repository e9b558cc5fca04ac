"""Print a rendered example with the trained tokens marked.

    python -m train.show FILE.jsonl --tokenizer DIR [--row N] [--max-length L] [--train-on-observations]

`--tokenizer` takes a tokenizer folder, a .gguf file, or `tiny` (factory.mask.tiny's
offline tokenizer). Trained text is green on a terminal and wrapped in
[[...]] otherwise (logs, tests), so a reader sees at a glance what trains.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from factory.errors import FactoryError
from factory.mask.render import IGNORE, Rendered, render
from factory.rows import json_rows, parquet_rows

GREEN, RESET = "\033[42;30m", "\033[0m"


def runs(rendered: Rendered) -> list[tuple[bool, list[int]]]:
    """The token ids cut where training switches on or off: (trained, ids) in order."""
    out: list[tuple[bool, list[int]]] = []
    for token_id, label in zip(rendered.input_ids, rendered.labels):
        trained = label != IGNORE
        if out and out[-1][0] == trained:
            out[-1][1].append(token_id)
        else:
            out.append((trained, [token_id]))
    return out


def trained_segments(rendered: Rendered, tokenizer) -> list[str]:
    """Each stretch of consecutive trained tokens, decoded: what the loss sees, in order."""
    return [tokenizer.decode(ids) for trained, ids in runs(rendered) if trained]


def show(rendered: Rendered, tokenizer, color: bool | None = None) -> str:
    """The example's text with trained stretches coloured (color=True) or in [[...]] (color=False).

    color=None colours only when stdout is a terminal.
    """
    if color is None:
        color = sys.stdout.isatty()
    opening, closing = (GREEN, RESET) if color else ("[[", "]]")
    parts = []
    for trained, ids in runs(rendered):
        text = tokenizer.decode(ids)
        parts.append(f"{opening}{text}{closing}" if trained else text)
    header = f"{len(rendered.input_ids)} tokens, {rendered.trained_tokens} trained"
    if rendered.reason:
        header += f" ({rendered.reason})"
    return header + "\n" + "".join(parts)


def load_tokenizer(spec: str):
    if spec == "tiny":
        from factory.mask.tiny import tiny_tokenizer

        return tiny_tokenizer()
    from transformers import AutoTokenizer

    path = Path(spec)
    if not path.exists():
        raise FactoryError(f"--tokenizer {spec}: no such folder or .gguf file (or pass 'tiny')")
    try:
        if path.suffix == ".gguf":
            return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        return AutoTokenizer.from_pretrained(str(path))
    except (OSError, ValueError, ImportError) as exc:
        raise FactoryError(f"--tokenizer {spec}: cannot load ({str(exc).splitlines()[0]})") from None


def read_row(path: Path, number: int) -> dict:
    """Row `number` (1-based) of a .jsonl / .json / .parquet export."""
    if not path.is_file():
        raise FactoryError(f"{path}: no such file")
    if number < 1:
        raise FactoryError(f"--row {number}: rows count from 1")
    reader = parquet_rows if path.suffix.lower() == ".parquet" else json_rows
    count = 0
    for count, (_, row) in enumerate(reader(path)[1], 1):
        if count == number:
            return row
    raise FactoryError(f"{path}: no row {number} (the file has {count} rows)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.show", description=__doc__.split("\n\n")[0])
    parser.add_argument("file", help="an export file: .jsonl, .json or .parquet")
    parser.add_argument("--tokenizer", required=True, help="tokenizer folder, .gguf file, or 'tiny'")
    parser.add_argument("--row", type=int, default=1, help="which row, counting from 1 (default 1)")
    parser.add_argument("--max-length", type=int, help="truncate as training would")
    parser.add_argument("--train-on-observations", action="store_true", help="train on tool observations too")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    args = parser.parse_args(argv)
    try:
        row = read_row(Path(args.file), args.row)
        tokenizer = load_tokenizer(args.tokenizer)
        rendered = render(row, tokenizer, args.max_length, args.train_on_observations)
    except FactoryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    color = {"auto": None, "always": True, "never": False}[args.color]
    print(show(rendered, tokenizer, color))
    return 0


if __name__ == "__main__":
    sys.exit(main())
