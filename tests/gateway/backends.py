"""The local OpenAI-compatible test backends ship with the demo (deployments/backends.py); tests import them here."""

from deployments.backends import ANSWER_TOKENS, Backend, prompt_tokens
from deployments.serve import free_port

__all__ = ["ANSWER_TOKENS", "Backend", "free_port", "prompt_tokens"]
