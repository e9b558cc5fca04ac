"""A run store whose rows convert to native tool calls, and a tokenizer whose template renders them.

The refine rows are written as the refine path writes them: a script saved with `save_script`, steps
judged by `verify_steps` and turned into turns by `build_trajectory` (mistakes kept with loss=false),
the steps stored beside them. The coa rows are consumer_rows' AFM code run. The template is
Qwen2.5-Instruct's public chat template with its tool branches (the `# Tools` system block with one
JSON schema a line inside <tools></tools>, each call as `<tool_call>\\n{"name": ..., "arguments": ...}
\\n</tool_call>` after the content, tool results as <tool_response> blocks in a user turn), written out
here since nothing is downloaded at test time.
"""

from __future__ import annotations

import json
from pathlib import Path

from consumer_rows import add_coa_row
from test_refine_verify import GOOD
from test_refine_world import GARDEN

from factory.refine.output import build_trajectory
from factory.refine.script import Script
from factory.refine.store import save_script, save_trajectory
from factory.refine.verify import verify_steps
from factory.store import Store

QWEN25_TOOLS_TEMPLATE = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] }}"
    "{%- else %}{{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}{%- endif %}"
    '{{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are '
    'provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}'
    '{%- for tool in tools %}{{- "\\n" }}{{- tool | tojson }}{%- endfor %}'
    '{{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within '
    '<tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": '
    '<args-json-object>}\\n</tool_call><|im_end|>\\n" }}'
    "{%- else %}"
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if (message.role == 'user') or (message.role == 'system' and not loop.first) or "
    "(message.role == 'assistant' and not message.tool_calls) %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
    "{%- elif message.role == 'assistant' %}"
    "{{- '<|im_start|>' + message.role }}"
    "{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}"
    "{%- for tool_call in message.tool_calls %}"
    "{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}"
    '{{- \'\\n<tool_call>\\n{"name": "\' }}{{- tool_call.name }}{{- \'", "arguments": \' }}'
    "{{- tool_call.arguments | tojson }}{{- '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != 'tool') %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' }}{{- message.content }}{{- '\\n</tool_response>' }}"
    "{%- if loop.last or (messages[loop.index0 + 1].role != 'tool') %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def qwen_tools_tokenizer():
    """The offline test tokenizer (byte-level BPE, ChatML specials) with Qwen2.5's tool-calling template."""
    from factory.mask.tiny import tiny_tokenizer

    tokenizer = tiny_tokenizer()
    tokenizer.chat_template = QWEN25_TOOLS_TEMPLATE
    return tokenizer


def add_refine_row(store: Store, number: int, steps: list[dict]) -> None:
    script = Script.model_validate({**GARDEN, "persona_id": f"p{number}"})
    verdict = verify_steps(script, steps)
    assert verdict.ok, verdict.reason
    save_script(store, f"p{number}:0", f"p{number}", 0, script, [])
    trajectory = build_trajectory(f"refine:p{number}", script, verdict.checks, {"dm_evaluation": "llm"})
    row = {"trajectory_id": trajectory.id, "source": "refine", "persona_id": f"p{number}", "script_id": f"p{number}:0",
           "verified": True, "reason": None, "steps": json.dumps(steps)}  # fmt: skip
    save_trajectory(store, row, trajectory)


def make_native_run(run_dir: Path, refine: bool = True, coa: bool = True) -> Path:
    """Two refine rows (GOOD's two corrected mistakes; the same with a non-ASCII thought) and two coa rows."""
    with Store.open(run_dir) as store:
        if refine:
            add_refine_row(store, 0, GOOD)
            accented = [dict(s) for s in GOOD]
            accented[1] = {**accented[1], "thought": "Die Gießkanne — « arrosoir » — steht hier."}
            add_refine_row(store, 1, accented)
        if coa:
            add_coa_row(store, "coa:odd", "What is the sum of the first 100 odd numbers? Use code.")
            add_coa_row(store, "coa:odd2", "Sum the odd numbers below 200.")
    return run_dir
