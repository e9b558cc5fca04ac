"""Tiny offline tokenizer and model, for tests and CPU benchmarks.

Nothing here downloads: `tiny_tokenizer` trains a small byte-level BPE on the
built-in `SAMPLE_TEXT` (English, Python, the AFM tags, ChatML markers) and
caches it on disk, keyed by a hash of everything that shapes it, so repeated
calls load in milliseconds. `tiny_model` builds a randomly initialised Qwen2 or
Llama causal LM sized for that vocabulary.

    from factory.mask.tiny import tiny_tokenizer, tiny_model
    tok = tiny_tokenizer()
    model = tiny_model(tok)
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Literal

VOCAB_SIZE = 2000  # a cap: the sample allows about 1.1k tokens (every merge it has)
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
DEFAULT_SYSTEM = "You are a helpful assistant."

# ChatML as Qwen writes it: a default system prompt when the conversation has
# none, every role (tool included) in its own <|im_start|>role ... <|im_end|> turn.
CHAT_TEMPLATE = (
    "{%- if not messages or messages[0]['role'] != 'system' -%}"
    "{{- '<|im_start|>system\\n" + DEFAULT_SYSTEM + "<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)

SAMPLE_TEXT = """\
<|im_start|>system
You are a helpful assistant that solves tasks step by step.<|im_end|>
<|im_start|>user
You are in the kitchen. On the table there is a red apple, a knife and a blue cup.
Your task is to put a clean cup in the cabinet. What do you do first?<|im_end|>
<|im_start|>assistant
Thought: I need to find out whether the cup is clean before I move it.
Action: examine cup<|im_end|>
<|im_start|>tool
The blue cup is dirty. There is a sink to the north of the table.<|im_end|>
<|im_start|>assistant
Thought: The cup is dirty, so I should take it to the sink and wash it.
Action: take cup from table<|im_end|>
<|im_start|>user
Observation: You pick up the blue cup. Nothing happens.<|im_end|>
<|im_start|>assistant
Action: go to sink
Action: clean cup with sink
Action: go to cabinet
Action: put cup in cabinet<|im_end|>
<|endoftext|>
The question asks for the year in which the bridge over the river was opened.
<think>The question is about a bridge, so I should search for its history first.</think>
<plan>1. Search for the bridge. 2. Read the page. 3. Check the opening year.</plan>
<think>Let me search the web for the name of the bridge and the river.</think>
<web_search>bridge over the river opening year history</web_search>
<observation>Result 1: The old stone bridge was opened to traffic in 1887 after six years
of work. Result 2: A new steel bridge replaced it in 1962.</observation>
<think>The first result answers the question; I will read the page to be sure.</think>
<crawl_page>https://example.org/history/bridge</crawl_page>
<observation>The stone bridge across the river was opened on 12 May 1887.</observation>
<reflection>The page agrees with the search result. Score: 4</reflection>
<suggested_answer>1887</suggested_answer>
<double_check>Both sources give 1887 for the stone bridge. Score: 4</double_check>
<answer>1887</answer>
<|endoftext|>
<plan>Compute the sum of the squares of the first ten positive integers.</plan>
<think>I can write a short program and print the result.</think>
<code>
def sum_of_squares(n: int) -> int:
    total = 0
    for i in range(1, n + 1):
        total += i * i
    return total

print(sum_of_squares(10))
</code>
<observation>385</observation>
<reflection>The program is correct and the output is an integer.</reflection>
<think>The answer is 385.</think>
<answer>The sum is \\boxed{385}.</answer>
<|endoftext|>
import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Record:
    name: str
    values: list[int] = field(default_factory=list)

    def mean(self) -> float:
        if not self.values:
            return 0.0
        return sum(self.values) / len(self.values)


def load_records(path: Path) -> list[Record]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [Record(row["name"], row.get("values", [])) for row in rows]


class Counter:
    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def add(self, key: str, amount: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + amount

    def most_common(self, k: int = 3) -> list[tuple[str, int]]:
        return sorted(self.counts.items(), key=lambda item: -item[1])[:k]


if __name__ == "__main__":
    counter = Counter()
    for word in "the cat sat on the mat with the hat".split():
        counter.add(word)
    print(counter.most_common())
<|endoftext|>
Once upon a time a traveller walked along a narrow road between two villages. The
morning was cold and the fields were white with frost. She carried a small bag with
bread, a map and a letter for her brother, who lived by the sea. At noon she stopped
at an inn, where the keeper told her that the road ahead was closed because a storm
had brought down the old oak trees. "Take the path through the forest," he said, "and
keep the river on your left until you see the mill." She thanked him, paid for her
soup and set off again. The forest was quiet, and the only sound was the water running
over the stones. When the sun began to set she saw the mill, and beyond it the lights
of the village where her brother was waiting for her.
The player must find the key, open the door of the tower and read the book of maps.
Invalid action: the parameter 'location' must be one of kitchen, hall, garden.
Error: the item you tried to use is not in your inventory. Try again with a valid item.
Correct answer: 42. Wrong answer: 24. The score is 3 out of 5 and the task is done.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 12 16 25 32 64 100 128 256 512 1000 1024 2048.
"""


def tiny_tokenizer(cache_dir: str | os.PathLike | None = None):
    """A byte-level BPE (about 1.1k tokens) with ChatML special tokens and chat template.

    Trained once, saved under `cache_dir` (default: the system temp folder)
    in a subfolder named by a hash of its recipe, then loaded from there.
    """
    from transformers import PreTrainedTokenizerFast

    folder = Path(cache_dir or Path(tempfile.gettempdir()) / "factory-tiny-tokenizer") / _recipe_hash()
    if not (folder / "tokenizer.json").exists():
        _build_and_save(folder)
    return PreTrainedTokenizerFast.from_pretrained(folder)


def tiny_model(tokenizer, arch: Literal["qwen2", "llama"] = "qwen2", hidden: int = 64, layers: int = 2, seed: int = 0):
    """A randomly initialised causal LM (4 heads, 2 KV heads) for `tokenizer`'s vocabulary."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    configs = {"qwen2": Qwen2Config, "llama": LlamaConfig}
    if arch not in configs:
        raise ValueError(f"tiny_model: arch must be one of {sorted(configs)}, not {arch!r}")
    config = configs[arch](
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=tokenizer.bos_token_id,
    )
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(config, dtype=torch.float32)


def _recipe_hash() -> str:
    import tokenizers

    recipe = "\0".join([SAMPLE_TEXT, CHAT_TEMPLATE, str(VOCAB_SIZE), *SPECIAL_TOKENS, tokenizers.__version__])
    return hashlib.sha256(recipe.encode()).hexdigest()[:16]


def _build_and_save(folder: Path) -> None:
    """Train, save to a scratch folder beside `folder`, then rename: concurrent callers never see half a save."""
    from transformers import PreTrainedTokenizerFast

    folder.parent.mkdir(parents=True, exist_ok=True)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=_train_bpe(),
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        additional_special_tokens=["<|im_start|>"],
    )
    wrapped.chat_template = CHAT_TEMPLATE
    scratch = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
    wrapped.save_pretrained(scratch)
    try:
        os.rename(scratch, folder)
    except OSError:  # another process saved the same recipe first; theirs is identical
        shutil.rmtree(scratch, ignore_errors=True)


def _train_bpe():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    # trim_offsets=False: offsets must cover every character of a token (a leading
    # space included) so that masks by character ranges see where a token starts.
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=1,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator([SAMPLE_TEXT], trainer=trainer)
    return tokenizer
