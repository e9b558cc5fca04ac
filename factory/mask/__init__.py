"""The mask: which tokens of an export row train (DESIGN rule 8), decided by one function, `mask.render.render`.

    rows.py       export row -> messages, each with whether it may train (and the AFM observation spans)
    template.py   the tokenizer's chat template over each prefix of the conversation, fast
    render.py     messages -> input_ids and labels (-100 where a token does not train)
    tokenizer.py  the tokenizer to render with, by name (a folder, a Hub name checked offline first, `tiny`)
    tiny.py       the offline test tokenizer (and tiny random model) the tests and benchmarks render with

It lives in factory, not train/, because the exports derive their masks from it (trl, the llamafactory
lengths, the report's data samples); train/ reads the same function, so the layers stay one-way (train
imports factory, never the reverse; scripts/import_cycles.py checks it). Nothing here imports torch.
"""
