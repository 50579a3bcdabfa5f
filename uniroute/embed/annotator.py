"""Prompt-attribute annotator: asks any OpenAI-compatible chat endpoint which attributes a prompt has.

The paper had Gemini annotate seven binary difficulty attributes (Li et al. 2024) on the training prompts;
here the endpoint is whatever the user configures (a local model server, for example) through Settings
(UNIROUTE_ANNOTATOR_URL, _MODEL, _KEY). Answers are cached in the store's `prompt_attributes` table keyed by
(sha256 of the text, annotator id), each committed as it arrives, so a text is asked about once per annotator
and an interrupted run resumes where it stopped. The HTTP client is the standard library's (urllib), reached
only when a prompt is annotated.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import pandas as pd
import pyarrow as pa

from uniroute import store
from uniroute.embed.attributes import ATTRIBUTES
from uniroute.embed.base import text_hash
from uniroute.errors import UnirouteError

log = logging.getLogger(__name__)

DESCRIPTIONS = {
    "specificity": "the prompt asks for a specific, well-defined output",
    "domain_knowledge": "answering needs knowledge of a particular field",
    "complexity": "the prompt has several parts or layers to handle",
    "problem_solving": "answering needs active reasoning or working something out",
    "creativity": "a good answer needs new ideas or original writing",
    "technical_accuracy": "a good answer must be technically precise and correct",
    "real_world_application": "the prompt concerns a practical, real-world situation",
}
INSTRUCTIONS = (
    "You label prompts for an LLM router. For the user's prompt, decide for each attribute below whether it "
    "applies (1) or not (0). Reply with one JSON object mapping every attribute name to 0 or 1, nothing else.\n"
)


class AnnotatorError(UnirouteError, RuntimeError):
    """The endpoint could not be reached or gave an unusable answer; the message says which and why."""


@dataclass(frozen=True)
class AnnotatorConfig:
    """Where to ask and what: plain values, built from Settings at the edge."""

    url: str  # base URL of an OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1
    model: str
    api_key: str | None = None
    timeout_seconds: float = 60.0
    attributes: tuple[str, ...] = ATTRIBUTES

    @property
    def endpoint(self) -> str:
        return self.url.rstrip("/") + "/chat/completions"

    @property
    def instructions(self) -> str:
        return INSTRUCTIONS + "".join(f"- {a}: {DESCRIPTIONS.get(a, a.replace('_', ' '))}\n" for a in self.attributes)

    @property
    def annotator_id(self) -> str:
        """The model and the question asked: another model or other instructions are another annotator."""
        digest = hashlib.sha256(self.instructions.encode()).hexdigest()[:10]
        return f"{self.model}@{digest}"


def parse_answer(answer: str, attributes: Sequence[str]) -> dict[str, int]:
    """The attribute labels in an answer: its first JSON object, every attribute 0/1 (true/false accepted)."""
    match = re.search(r"\{.*\}", answer, flags=re.DOTALL)
    if match is None:
        raise ValueError("no JSON object in the answer")
    try:
        found = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON: {exc.msg}") from exc
    labels = {}
    for name in attributes:
        value = found.get(name) if isinstance(found, dict) else None
        if isinstance(value, bool) or value in (0, 1):
            labels[name] = int(value)
        else:
            raise ValueError(f"{name} is {json.dumps(value)}, not 0 or 1")
    return labels


def ask(config: AnnotatorConfig, text: str) -> str:
    """One chat completion: the endpoint's answer text about one prompt."""
    body = json.dumps({
        "model": config.model,
        "temperature": 0,
        "messages": [{"role": "system", "content": config.instructions}, {"role": "user", "content": text}],
    }).encode("utf-8")
    headers = {"Content-Type": "application/json"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    request = urllib.request.Request(config.endpoint, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=config.timeout_seconds) as response:
            payload = json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")[:200].replace("\n", " ")
        raise AnnotatorError(f"{config.endpoint}: HTTP {exc.code} {exc.reason}: {detail}") from exc
    except urllib.error.URLError as exc:
        raise AnnotatorError(f"{config.endpoint}: cannot reach the endpoint: {exc.reason}") from exc
    except (TimeoutError, json.JSONDecodeError) as exc:
        raise AnnotatorError(f"{config.endpoint}: no usable response ({type(exc).__name__}: {exc})") from exc
    try:
        return str(payload["choices"][0]["message"]["content"])
    except (KeyError, IndexError, TypeError) as exc:
        raise AnnotatorError(f"{config.endpoint}: not a chat completion (no choices[0].message.content)") from exc


def annotate(con: store.Connection, texts: Sequence[str], config: AnnotatorConfig,
             progress: bool = True) -> pd.DataFrame:
    """(len(texts), A) 0/1 labels of the texts, in order: cached answers first, the endpoint for the rest.

    Each new answer is written to `prompt_attributes` as it arrives (in a session opened with atomic=False each
    insert commits on its own, so an interrupted run keeps what it was told).
    """
    from tqdm.auto import tqdm

    hashes = [text_hash(t) for t in texts]
    wanted = pa.table({"text_hash": pa.array(sorted(set(hashes)), pa.string())})
    with store.registered(con, "wanted_attribute_hashes", wanted):
        cached = store.query(con, "prompt_attributes_lookup", annotator_id=config.annotator_id)
    known = {row.text_hash: json.loads(row.attributes) for row in cached.itertuples()}
    todo = {h: t for h, t in zip(hashes, texts, strict=True) if h not in known}
    log.info("annotate with %s: %d texts, %d cached, %d to ask", config.annotator_id, len(set(hashes)),
             len(known), len(todo))
    for h, text in tqdm(todo.items(), total=len(todo), unit="prompt", desc=f"annotate {config.model}",
                        disable=not progress or len(todo) < 2):
        answer = ask(config, text)
        try:
            labels = parse_answer(answer, config.attributes)
        except ValueError as exc:
            raise AnnotatorError(f"{config.endpoint}: unusable answer about prompt {h[:12]} ({exc}): "
                                 f"{answer[:120]!r}") from exc
        store.execute(con, "prompt_attributes_insert", text_hash=h, annotator_id=config.annotator_id,
                      attributes=json.dumps(labels), answer=answer, now=datetime.now())
        known[h] = labels
    return pd.DataFrame([[known[h][a] for a in config.attributes] for h in hashes], columns=list(config.attributes))
