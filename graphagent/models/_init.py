"""``init_chat_model("provider:model")``: a client and base URL chosen by provider name."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from graphagent.errors import UserError
from graphagent.models._anthropic import AnthropicChatModel
from graphagent.models._base import HTTPChatModel
from graphagent.models._openai import OpenAIChatModel

__all__ = ["PROVIDERS", "Provider", "init_chat_model"]


@dataclass(frozen=True)
class Provider:
    """Where a provider lives and which environment variables configure it."""

    base_url: str
    key_env: str | None
    url_env: str
    anthropic: bool = False
    stream_usage: bool = False
    key_required: bool = True


PROVIDERS: dict[str, Provider] = {
    "openai": Provider(
        "https://api.openai.com/v1", "OPENAI_API_KEY", "OPENAI_BASE_URL", stream_usage=True
    ),
    "dashscope": Provider(
        "https://dashscope.aliyuncs.com/compatible-mode/v1",
        "DASHSCOPE_API_KEY",
        "DASHSCOPE_BASE_URL",
        stream_usage=True,
    ),
    "deepseek": Provider(
        "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", stream_usage=True
    ),
    "moonshot": Provider("https://api.moonshot.cn/v1", "MOONSHOT_API_KEY", "MOONSHOT_BASE_URL"),
    "ollama": Provider("http://localhost:11434/v1", None, "OLLAMA_BASE_URL"),
    "vllm": Provider(
        "http://localhost:8000/v1", "VLLM_API_KEY", "VLLM_BASE_URL", key_required=False
    ),
    "llamacpp": Provider("http://localhost:8080/v1", None, "LLAMACPP_BASE_URL"),
    "anthropic": Provider(
        "https://api.anthropic.com", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", anthropic=True
    ),
}


def init_chat_model(spec: str, **kwargs: Any) -> HTTPChatModel:
    """A chat model from ``"provider:model"``.

    The base URL and API key come from the provider's environment variables
    (``OPENAI_API_KEY``, ``DASHSCOPE_API_KEY``, ``OLLAMA_BASE_URL``, ...) unless given as
    ``base_url=`` / ``api_key=``. Other keyword arguments go to the client.

    Example:
        >>> init_chat_model("ollama:llama3.1")
        <OpenAIChatModel 'llama3.1' at http://localhost:11434/v1>

    A provider that needs a key (all but Ollama, llama.cpp and vLLM) and has none
    raises ``ModelConfigError`` (a ``UserError``) naming its variable at the first
    request, before sending.

    Raises:
        UserError: an unknown provider, or a spec without ``provider:``.
    """
    provider_name, sep, model = spec.partition(":")
    provider = PROVIDERS.get(provider_name.lower())
    if not sep or not model or provider is None:
        raise UserError(
            f"cannot read model spec {spec!r}: write 'provider:model' with provider one of "
            f"{', '.join(PROVIDERS)} (e.g. 'openai:gpt-4o-mini', 'ollama:llama3.1')"
        )
    base_url = kwargs.pop("base_url", None) or os.environ.get(provider.url_env) or provider.base_url
    api_key = kwargs.pop("api_key", None)
    if api_key is None and provider.key_env:
        api_key = os.environ.get(provider.key_env)
    if provider.key_required and provider.key_env:
        kwargs.setdefault("key_env", provider.key_env)
    # "" and not None: the client must not fall back to another provider's variable
    client: HTTPChatModel
    if provider.anthropic:
        client = AnthropicChatModel(model, base_url=base_url, api_key=api_key or "", **kwargs)
    else:
        kwargs.setdefault("stream_usage", provider.stream_usage)
        client = OpenAIChatModel(model, base_url=base_url, api_key=api_key or "", **kwargs)
    client.provider = provider_name.lower()  # logs and traces name the provider, not the API
    return client
