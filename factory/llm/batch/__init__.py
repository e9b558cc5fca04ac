"""Provider batch APIs (OpenAI Batch, Anthropic Message Batches) as an LLM transport.

With `llm.batch.enabled` (`--batch`) the client sends every request through a batching transport
(transport.py) instead of one HTTP call each: requests queue up, go to the provider as one batch
(openai_api.py, anthropic_api.py), and each caller gets its reply when the batch ends. Everything
above the transport (parse retries, the cache, the call log, the spend cap) is unchanged. Batch
ids live in the run store (ledger.py), so a rerun follows a batch instead of paying for it twice.
This module stays light: llm/config.py imports its config.
"""
