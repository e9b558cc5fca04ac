"""Progress bars say how the calls behind them went: errors, tokens and spend (over real HTTP)."""

import asyncio
import io

from loopback_server import Action, ok
from test_coa_mas import (
    ANSWERER,
    CODE,
    PLANNER,
    REFLECTOR,
    VERIFIER,
    answer,
    code,
    make_config,
    plan,
    reflect,
    write_tasks,
)
from tqdm import tqdm

from factory.coa import run_coa
from factory.llm import LLMClient, Request
from factory.llm.cost import prices
from factory.llm.progress import CallCounter, CallCounts, postfix

TOKENS_PER_REPLY = 15  # the loopback server's usage: 10 prompt + 5 completion


def requests(n):
    return [Request([{"role": "user", "content": f"question {i}"}]) for i in range(n)]


async def run_with_bar(config, n, store=None):
    out = io.StringIO()
    async with LLMClient(config, store) as llm:
        with tqdm(total=n, file=out, mininterval=0) as bar, CallCounter([llm], bar):
            async for _ in llm.iter_complete(requests(n)):
                bar.update(1)
    return out.getvalue(), llm.counts


def test_the_postfix_counts_errors_and_tokens_and_says_cost_unknown_when_unpriced(server, fast_config):
    server.route("question 2", Action(status=400))  # not retried: one failed call
    text, counts = asyncio.run(run_with_bar(fast_config(max_retries=0), 4))
    tokens = counts.prompt_tokens + counts.completion_tokens
    assert (counts.calls, counts.errors, tokens) == (4, 1, 3 * TOKENS_PER_REPLY)
    assert text.rstrip().endswith(f"errors 1, tokens {3 * TOKENS_PER_REPLY}, cost ?]")


def test_the_postfix_shows_spend_for_a_priced_model(server, fast_config):
    text, counts = asyncio.run(run_with_bar(fast_config(model="gpt-4o-mini"), 3))
    unit_in, unit_out = prices("openai", "gpt-4o-mini")
    spent = 3 * (10 * unit_in + 5 * unit_out)
    assert counts.priced == 3 and abs(counts.cost_usd - spent) < 1e-12
    assert f"errors 0, tokens {3 * TOKENS_PER_REPLY}, ${spent:.6f}]" in text


def test_postfix_wording():
    assert postfix(CallCounts(errors=2, prompt_tokens=1000, completion_tokens=234)) == "errors 2, tokens 1.2k"  # free
    assert postfix(CallCounts(prompt_tokens=5, priced=1, unpriced=1, cost_usd=1.5)) == "errors 0, tokens 5, $1.50+?"


def test_the_coa_bar_shows_the_errors_and_tokens_of_its_calls(server, fast_config, tmp_path, capsys):
    tasks = write_tasks(
        tmp_path / "m.jsonl", {"id": 1, "question": "2+2?", "answer": "4", "domain": "math", "data_source": "t"}
    )
    for marker, reply in ((PLANNER, plan()), (CODE, code("print(2 + 2)")), (REFLECTOR, reflect()),
                          (ANSWERER, answer("4")), (VERIFIER, ok(status=500))):  # fmt: skip
        server.route(marker, reply)
    config = make_config(tmp_path, fast_config, tasks)
    config = config.model_copy(update={"llm": config.llm.model_copy(update={"max_retries": 0})})
    run_coa(config, progress=True)
    bar = capsys.readouterr().err
    assert "coa: 100%" in bar and f"errors 1, tokens {4 * TOKENS_PER_REPLY}, cost ?" in bar


def test_a_price_in_the_config_prices_a_model_litellm_does_not_know(server, fast_config, tmp_path):
    from factory.llm.config import ModelPrice
    from factory.store import Store

    price = ModelPrice(input_usd_per_mtok=0.2, output_usd_per_mtok=0.6)
    store = Store(tmp_path / "s.sqlite")
    text, counts = asyncio.run(run_with_bar(fast_config(model="my-finetune", price=price), 3, store))
    spent = 3 * (10 * 0.2 + 5 * 0.6) / 1e6
    assert counts.priced == 3 and counts.unpriced == 0 and abs(counts.cost_usd - spent) < 1e-15
    assert f"${spent:.6f}]" in text
    [(rows, stored)] = store.query("SELECT count(*), sum(cost_usd) FROM llm_calls")
    assert rows == 3 and abs(stored - spent) < 1e-15


def test_the_configs_price_is_its_models_only():
    from factory.coa.config import RoleModels
    from factory.coa.mas.agents import role_configs
    from factory.llm import LLMConfig
    from factory.llm.cost import call_cost

    base = LLMConfig(model="my-finetune", price={"input_usd_per_mtok": 1, "output_usd_per_mtok": 2})
    roles = role_configs(base, RoleModels(planner="gpt-4o-mini", verifier="my-finetune"))
    assert roles["verifier"].price == base.price and roles["planner"].price is None
    assert call_cost("local", "local", 1_000_000, 0, base.price.per_token()) == 1.0  # the embedded model, priced
    assert call_cost("local", "local", 1_000_000, 0) is None  # free unless the config says otherwise
