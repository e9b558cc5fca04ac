"""factory eval with native tool calls (issue 27): the actions go to the player as `tools`, and a call is read
in the form its model family writes it (Hermes/Qwen, Llama 3.x, Mistral) or as the server parsed it."""

import json

from loopback_server import Action, completion, ok
from test_refine_world import GARDEN

from factory.evaluate import Environment, LLMPlayer, evaluate
from factory.evaluate.native import parse_tool_call
from factory.llm.transport import parse_completion
from factory.refine.script import Script


def test_a_call_is_read_as_each_model_family_writes_it():
    hermes = 'I need the can.\n<tool_call>\n{"name": "take", "arguments": {"item": "watering_can"}}\n</tool_call>'
    text, parsed = parse_tool_call(hermes)
    assert text == "I need the can." and (parsed.name, parsed.params) == ("take", {"item": "watering_can"})
    llama = '<|python_tag|>{"name": "go", "parameters": {"place": "garden"}}'
    assert parse_tool_call(llama)[1].params == {"place": "garden"}
    mistral = '[TOOL_CALLS] [{"name": "water", "arguments": {"litres": 2}}]'
    assert parse_tool_call(mistral)[1].params == {"litres": 2}
    assert parse_tool_call("I would walk to the garden.") is None
    assert parse_tool_call('<tool_call>{"name": 3}</tool_call>') is None


def test_a_call_the_server_parsed_reads_as_hermes_text():
    payload = completion("")
    payload["choices"][0]["message"] = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "x", "type": "function", "function": {"name": "go", "arguments": '{"place": "garden"}'}}]}  # fmt: skip
    reply = parse_completion(json.dumps(payload).encode())
    assert reply.content == '<tool_call>\n{"name":"go","arguments":{"place":"garden"}}\n</tool_call>'
    assert parse_tool_call(reply.content)[1].params == {"place": "garden"}


def test_a_native_episode_succeeds_with_tools_in_every_request(server, fast_config):
    parsed_by_server = completion("")
    parsed_by_server["choices"][0]["message"] = {"role": "assistant", "content": "Now outside.", "tool_calls": [
        {"id": "s1", "type": "function", "function": {"name": "go", "arguments": '{"place": "garden"}'}}]}  # fmt: skip
    server.route(
        GARDEN["task"],
        ok("The can first.\n<tool_call>\n" + json.dumps({"name": "take", "arguments": {"item": "watering_can"}})
           + "\n</tool_call>"),
        ok("Hmm."),  # no call: a format error, answered by a user message
        Action(body=json.dumps(parsed_by_server)),
        ok('<tool_call>\n{"name": "water", "arguments": {"litres": 2}}\n</tool_call>'),
    )  # fmt: skip
    env = Environment("garden:0", Script.model_validate(GARDEN), 3)
    report = evaluate([env], LLMPlayer(fast_config(temperature=0)), max_steps=6, native_tools=True)
    assert report.episodes[0].status == "success" and report.overall["format_errors"] == 1
    bodies = [r["body"] for r in server.requests]
    assert all([t["function"]["name"] for t in b["tools"]] == ["go", "take", "water"] for b in bodies)
    last = bodies[-1]["messages"]
    assert [m["role"] for m in last] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
    ]
    assert last[3]["tool_call_id"] == last[2]["tool_calls"][0]["id"] and "watering can" in last[3]["content"]
    assert not last[3]["content"].startswith("Observation:")  # a tool message, not the text form's label
    assert report.settings["tool_calls"] == "native"


def test_an_hf_checkpoint_is_prompted_with_the_tools_and_its_calls(monkeypatch):
    from native_rows import qwen_tools_tokenizer

    from factory.evaluate import HFPlayer, native
    from factory.mask.tiny import tiny_model

    tokenizer = qwen_tools_tokenizer()
    player, prompts = HFPlayer(tiny_model(tokenizer), tokenizer), []
    monkeypatch.setattr(player, "_generate_texts", lambda texts: prompts.extend(texts) or ["x"] * len(texts))
    script = Script.model_validate(GARDEN)
    _, take = parse_tool_call('<tool_call>{"name": "take", "arguments": {"item": "watering_can"}}</tool_call>')
    messages = native.first_messages(script) + [native.assistant_message("", take, 1),
                                                native.tool_message(1, "take", "Observation: You take it.")]  # fmt: skip
    player._generate([(messages, native.tools(script))])
    assert "<tools>" in prompts[0] and '{"name": "take", "arguments": {"item": "watering_can"}}' in prompts[0]
    assert prompts[0].endswith("<tool_response>\nYou take it.\n</tool_response><|im_end|>\n<|im_start|>assistant\n")


def test_an_action_the_environment_lacks_is_its_own_mistake(server, fast_config):
    """Not a logic error (issue 28): the table's `unknown` column counts it."""
    server.route(GARDEN["task"], ok('<tool_call>{"name": "fly", "arguments": {}}</tool_call>'))
    env = Environment("garden:0", Script.model_validate(GARDEN), 3)
    report = evaluate([env], LLMPlayer(fast_config(temperature=0)), max_steps=1, native_tools=True)
    assert report.episodes[0].invalid_by_type == {"unknown_action": 1}
    assert report.overall["invalid_by_type"]["unknown_action"] == 1 and report.overall["invalid_by_type"]["logic"] == 0
