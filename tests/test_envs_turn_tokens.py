"""The tokens of a player's turn (factory/envs/turn_tokens.py) with real tokenizers of both kinds.

ChatML models (Qwen) split text with a pattern that keeps punctuation and the newlines after it in one
piece, so `)\\n` is one token and a cut after an action's `)` falls inside it; GPT-2-style byte-level
tokenizers (factory.mask.tiny's) split `)` from `\\n`. Both must give a turn whose tokens decode to the text
the game reads, keep the action whole, and re-render through factory.mask.render as the same tokens.
"""

from __future__ import annotations

import pytest
from env_rows import GARDEN_REPLIES

from factory.envs.text_game import cut_reply, parse_action
from factory.envs.turn_tokens import end_of_turn_ids, turn_tokens

# Qwen2's pre-tokenizer pattern (its tokenizer.json): `)` and the newlines after it are one piece.
QWEN_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
INVENTED = "\nObservation: You walk out into the garden."
EXTRA = "\nThought: Now the tomatoes.\nAction: water(litres=2)"


def qwen_like_tokenizer():
    """A byte-level BPE with Qwen2's pre-tokenizer, trained on refine turns, with ChatML and its template."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from factory.mask.tiny import CHAT_TEMPLATE, SPECIAL_TOKENS

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(QWEN_SPLIT), "isolated"), pre_tokenizers.ByteLevel(add_prefix_space=False,
                                                                                         use_regex=False)]
    )  # fmt: skip
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=list(SPECIAL_TOKENS), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())  # fmt: skip
    bpe.train_from_iterator([reply + INVENTED + EXTRA for reply in GARDEN_REPLIES] * 20, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        additional_special_tokens=["<|im_start|>"])  # fmt: skip
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def tiny():
    from factory.mask.tiny import tiny_tokenizer

    return tiny_tokenizer()


@pytest.fixture(scope="module", params=["qwen_like", "tiny"])
def tokenizer(request):
    return qwen_like_tokenizer() if request.param == "qwen_like" else tiny()


def encode(tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text, add_special_tokens=False)


def test_a_cut_keeps_the_turns_tokens_whole_and_drops_the_rest(tokenizer):
    reply = GARDEN_REPLIES[3]  # ... Action: go(place=garden)
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    for went_on in (INVENTED, EXTRA, INVENTED + EXTRA, "\n" + INVENTED):
        ids = encode(tokenizer, reply + went_on) + [end]
        turn = turn_tokens(tokenizer, ids)
        assert turn.cut and turn.token_ids == ids[: len(turn.token_ids)]
        assert turn.text.strip() == reply == cut_reply(reply + went_on)  # the action's ")" is kept
        assert turn.text == tokenizer.decode(turn.token_ids) and parse_action(turn.text).params == {"place": "garden"}
    clean = encode(tokenizer, reply) + [end]
    assert turn_tokens(tokenizer, clean) == type(turn)(clean, reply, False)  # a turn that ended itself stays whole


def test_the_tokens_that_train_are_the_tokens_render_trains_for_the_turn(tokenizer):
    from factory.mask.render import IGNORE, render

    user = {"role": "user", "content": "Water the tomatoes."}
    prompt = tokenizer.apply_chat_template([user], tokenize=True, add_generation_prompt=True)
    prompt = list(prompt["input_ids"] if hasattr(prompt, "keys") else prompt)
    turn = turn_tokens(tokenizer, encode(tokenizer, GARDEN_REPLIES[3] + INVENTED))
    ending = end_of_turn_ids(tokenizer)
    assert tokenizer.convert_ids_to_tokens(ending[:1]) == ["<|im_end|>"] and tokenizer.decode(ending[1:]) == "\n"
    rendered = render({"messages": [user, {"role": "assistant", "content": turn.text}]}, tokenizer)
    assert rendered.input_ids == prompt + turn.token_ids + ending
    trained = [token for token, label in zip(rendered.input_ids, rendered.labels) if label != IGNORE]
    assert trained == turn.token_ids + ending[:1]  # the loop appends the end-of-turn untrained: not sampled


def test_the_qwen_like_tokenizer_writes_the_parenthesis_and_newline_as_one_token():
    tokenizer = qwen_like_tokenizer()  # the case the straddling rule exists for
    assert ")\n" in [tokenizer.decode([token]) for token in encode(tokenizer, GARDEN_REPLIES[3] + INVENTED)]
    turn = turn_tokens(tokenizer, encode(tokenizer, GARDEN_REPLIES[3] + INVENTED))
    assert turn.text == GARDEN_REPLIES[3] + "\n"  # the newline rides in the same token as ")"
