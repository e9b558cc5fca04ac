"""Report section: sample trajectories, kept (left) beside dropped or failed (right).

Every stored text is untrusted (model output, crawled pages): all of it goes through `html.escape`.
Colours name the AFM tags; what trains is marked from `data_samples` (render's verdicts), never decided here.
"""

from __future__ import annotations

from html import escape
from typing import Any

from .data_samples import TAIL_TURNS, Sample, Segment, ShownTurn
from .page import empty, section

TAG_COLORS = {"think": "#efe4fb", "plan": "#dbeafe", "web_search": "#d9f2e3", "crawl_page": "#ccefe8",
              "code": "#fdf0c4", "observation": "#eef1f4", "reflection": "#fbe0ee", "suggested_answer": "#fde3cc",
              "double_check": "#e0e4fb", "answer": "#c6f0d2"}  # fmt: skip
CSS = """
#samples .sides { display: grid; grid-template-columns: 1fr 1fr; gap: 20px; align-items: start; }
#samples .sample { border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; margin: 0 0 14px; }
#samples .sample h4 { margin: 0 0 2px; font-size: 13px; word-break: break-all; }
#samples .facts, #samples .legend { color: var(--muted); font-size: 12px; }
#samples .why { color: #b42318; font-size: 12px; margin: 2px 0 6px; }
#samples .turn { border-left: 4px solid #cbd2d9; padding: 2px 8px; margin: 6px 0; }
#samples .turn.trained { border-left-color: #2f9e44; }
#samples .turn.mistake { border-left-color: #d64545; background: #fff5f5; }
#samples .turn.masked { border-left-style: dashed; }
#samples .who { font-size: 11px; color: var(--muted); text-transform: uppercase; letter-spacing: .03em; }
#samples .mistake .who, #samples .feedback { color: #b42318; }
#samples .feedback { font-size: 12px; }
#samples pre { white-space: pre-wrap; word-break: break-word; margin: 2px 0; font-size: 12px; line-height: 1.4; }
#samples .nt { background-image: repeating-linear-gradient(135deg, transparent 0 5px, rgba(0,0,0,.08) 5px 10px);
               outline: 1px dashed #9aa5b1; }
#samples .cut { color: var(--muted); font-style: italic; font-size: 12px; }
""" + "".join(f"#samples .tag-{tag} {{ background-color: {color}; }}\n" for tag, color in TAG_COLORS.items())


def samples(data: dict[str, Any]) -> str:
    shown = data["kept"] + data["dropped"]
    intro = (
        f"A few trajectories `factory export` keeps (left) and a few it drops or that failed (right), "
        f"picked by a seeded hash (seed {data['seed']!r}). Green edge: a turn that trains; red: a mistake kept "
        "in context with the DM's feedback, not trained; dashed or hatched: not trained (loss=false, tool "
        "observations). Long texts are cut."
    )
    legend = ('<p class="legend">AFM tags: '
              + " ".join(f'<span class="tag-{tag}">&lt;{tag}&gt;</span>' for tag in TAG_COLORS)
              + ' · <span class="nt">not trained</span></p>') if any(s.segments for s in shown) else ""  # fmt: skip
    kept = "".join(sample_html(s) for s in data["kept"]) or empty("nothing kept: no verified row that a filter kept")
    dropped = "".join(sample_html(s) for s in data["dropped"]) or empty("nothing dropped or failed")
    sides = f'<div class="sides"><div><h3>Kept</h3>{kept}</div><div><h3>Dropped or failed</h3>{dropped}</div></div>'
    return section("samples", "Sample trajectories", intro, [f"<style>{CSS}</style>", legend, sides])


def sample_html(sample: Sample) -> str:
    why = f'<div class="why">{escape(sample.reason)}</div>' if sample.reason else ""
    head = f'<h4>{escape(sample.trajectory_id)}</h4><div class="facts">{escape(sample.facts)}</div>{why}'
    if sample.note:
        body = empty(sample.note)
    elif sample.segments or sample.prompt is not None:
        body = afm_html(sample)
    else:
        body = turns_html(sample)
    return f'<article class="sample" data-sample="{escape(sample.trajectory_id)}">{head}{body}</article>'


def turns_html(sample: Sample) -> str:
    parts = [turn_html(turn) for turn in sample.turns]
    if sample.hidden_turns:  # between the head and the tail
        parts.insert(len(parts) - TAIL_TURNS, f'<p class="cut">… {sample.hidden_turns} turns not shown …</p>')
    return "".join(parts)


def turn_html(turn: ShownTurn) -> str:
    if turn.label:  # a coa trace's event: never exported
        kind = "mistake" if turn.error else ("" if turn.role != "assistant" else "masked")
        label = f"{turn.label} · ✗ {turn.error} error" if turn.error else turn.label
        label += " · not exported"
    elif turn.role != "assistant":
        kind, label = "", f"{turn.role} · context"
    elif turn.played:  # a failed row: nothing of it is exported
        kind, label = (
            ("mistake", f"assistant · ✗ {turn.error} error · played, not exported")
            if turn.error
            else ("masked", "assistant · played, not exported")
        )
    elif turn.trains:
        kind, label = "trained", "assistant · trained"
    elif turn.error:
        kind, label = "mistake", f"assistant · ✗ {turn.error} error · not trained"
    else:
        kind, label = "masked", "assistant · not trained (loss=false)"
    feedback = f'<div class="feedback">DM feedback: {escape(turn.feedback)}</div>' if turn.feedback else ""
    return (
        f'<div class="turn {kind}"><div class="who">{escape(label)}</div>'
        f"<pre>{escape(turn.text)}{cut_note(turn.cut)}</pre>{feedback}</div>"
    )


def afm_html(sample: Sample) -> str:
    prompt = f'<div class="turn"><div class="who">user · prompt</div><pre>{escape(sample.prompt or "")}</pre></div>'
    text = "".join(segment_html(segment) for segment in sample.segments)
    return (
        f'{prompt}<div class="turn trained"><div class="who">assistant · AFM completion (hatched: not trained)'
        f"</div><pre>{text}{cut_note(sample.cut)}</pre></div>"
    )


def segment_html(segment: Segment) -> str:
    classes = ([f"tag-{segment.tag}"] if segment.tag in TAG_COLORS else []) + ([] if segment.trains else ["nt"])
    if not classes:
        return escape(segment.text)
    title = ' title="not trained"' if not segment.trains else ""
    return f'<span class="{" ".join(classes)}"{title}>{escape(segment.text)}</span>'


def cut_note(cut: int) -> str:
    return f'<span class="cut">\n… {cut:,} more characters not shown</span>' if cut else ""
