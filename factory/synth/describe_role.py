"""The describer: an LLM role that writes a description of a corpus entity that does not name it.

Depth expansion over a user's own corpus (llm_depth.py) has no structured facts to
build descriptions from, so a model reads the entity's page and writes one. Each
part of the reply is checked against the corpus, never taken on the model's word:
`evidence` must be a sentence of the page (the description rests on it), the
description must not name the entity, and `query` must find the page with the
shipped BM25 search. Prompts: prompts/synth/describe_{system,user}.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from ..llm import Request
from ..llm.role import Role, chat
from ..prompts import load_prompt, render_prompt

STAGE = "synth_llm_depth"
PAGE_CHARS = 6000  # of the page the describer reads: a long page's lead holds its identifying facts


class DescribeReply(BaseModel):
    model_config = ConfigDict(extra="forbid")
    description: str = Field(min_length=8, max_length=300, description="a noun phrase true of this entity alone")
    evidence: str = Field(min_length=8, max_length=600, description="the page's sentence the description rests on")
    query: str = Field(min_length=3, max_length=120, description="a search query that finds the page")


@dataclass(frozen=True)
class Description:
    """One hop as the describer wrote it; llm_depth.py's gates decide whether it holds."""

    text: str
    evidence: str
    query: str


class DescribeRole(Role):
    """`request(seed_id, hop, name, page_text, avoid)` -> Request; `parse(reply)` -> Description."""

    name, reply_type = "describe", DescribeReply

    def request(self, seed_id: str, hop: int, name: str, page_text: str, avoid: list[str]) -> Request:
        page = page_text if len(page_text) <= PAGE_CHARS else page_text[:PAGE_CHARS] + " ..."
        user = render_prompt("synth/describe_user", entity=name, page=page, avoid="; ".join(avoid))
        return Request(chat(load_prompt("synth/describe_system"), user), DescribeReply, stage=STAGE, tag=(seed_id, hop))

    def parse(self, reply: DescribeReply) -> Description:
        text = " ".join(reply.description.split()).rstrip(".")
        return Description(text=text, evidence=" ".join(reply.evidence.split()), query=" ".join(reply.query.split()))
