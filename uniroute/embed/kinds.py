"""What each embedder is, by name: whether it is fitted on the prompts it embeds, whether a build can serve
routers on it, whether it needs attribute labels. The one place that branches on an embedder's name."""

from __future__ import annotations

from dataclasses import dataclass

from uniroute.errors import UnirouteError


class EmbedderError(UnirouteError, ValueError):
    """An embedder name that is unknown, or not usable where it was asked for; the message names the choices."""


@dataclass(frozen=True)
class EmbedderKind:
    """One embedder's description (no model is loaded)."""

    name: str
    # Fitted on the texts it embeds (TF-IDF on a build's training prompts, the attribute heads on labelled
    # prompts): nothing can be embedded ahead of the build, and an evaluation fits it once on every prompt.
    fitted: bool
    # Routers built on it can be stored and rebuilt (embed.portable carries it); the attribute heads cannot yet.
    serves_builds: bool
    # Its model file is built once from the local MiniLM into a cache folder (artifacts).
    built_file: bool = False
    # It needs a file of 0/1 prompt-attribute labels (`uniroute evaluate --attribute-labels`).
    needs_labels: bool = False
    # The embedder whose vectors of its fit texts it is fitted to (a build embeds them through it first).
    teacher: str | None = None


EMBEDDER_KINDS = (
    EmbedderKind("minilm", fitted=False, serves_builds=True),
    EmbedderKind("minilm-onnx", fitted=False, serves_builds=True, built_file=True),
    EmbedderKind("static", fitted=False, serves_builds=True, built_file=True),
    EmbedderKind("tfidf", fitted=True, serves_builds=True),
    # The static table fitted to minilm-onnx's vectors of every text the store has seen (embed.static_tuned): fitted,
    # and built from both model files (static's and minilm-onnx's) in the cache folder; its table travels with routers.
    EmbedderKind("static-tuned", fitted=True, serves_builds=True, built_file=True, teacher="minilm-onnx"),
    EmbedderKind("attributes", fitted=True, serves_builds=False, needs_labels=True),
)
# The embedders a build can serve routers on, and the ones that build a model file first.
EMBEDDERS = tuple(k.name for k in EMBEDDER_KINDS if k.serves_builds)
BUILT_EMBEDDERS = tuple(k.name for k in EMBEDDER_KINDS if k.built_file)
_BY_NAME = {k.name: k for k in EMBEDDER_KINDS}


def embedder_kind(name: str) -> EmbedderKind:
    """The description of the embedder called `name`; EmbedderError naming the known ones."""
    kind = _BY_NAME.get(name)
    if kind is None:
        raise EmbedderError(f"unknown embedder {name!r}; known: {', '.join(_BY_NAME)}")
    return kind


def build_embedder_kind(name: str) -> EmbedderKind:
    """The description of an embedder a build may serve routers on; EmbedderError in one line otherwise."""
    kind = _BY_NAME.get(name)
    if kind is None:
        raise EmbedderError(f"unknown embedder {name!r}; build with one of {', '.join(EMBEDDERS)}")
    if not kind.serves_builds:
        raise EmbedderError(f"the {name} embedder is for evaluation only (`uniroute evaluate --embedder {name}`): "
                            f"routers built on it cannot be stored yet; build with one of {', '.join(EMBEDDERS)}")
    return kind
