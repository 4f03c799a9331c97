"""Chat models: the ``ChatModel`` protocol, HTTP clients over httpx, and test doubles.

``OpenAIChatModel`` speaks the OpenAI-compatible chat completions protocol (OpenAI,
DashScope compatible mode, DeepSeek, Moonshot, Ollama, vLLM, llama.cpp);
``AnthropicChatModel`` speaks Anthropic's Messages API. ``FakeChatModel`` and
``FunctionChatModel`` stand in for them in tests.
"""

from __future__ import annotations

from graphagent.models._anthropic import AnthropicChatModel
from graphagent.models._base import ChatModel, HTTPChatModel
from graphagent.models._embeddings import FakeEmbeddings, OpenAIEmbeddings, init_embeddings
from graphagent.models._http import allow_model_requests
from graphagent.models._init import PROVIDERS, init_chat_model
from graphagent.models._openai import OpenAIChatModel
from graphagent.models._testing import FakeChatModel, FunctionChatModel, ModelCall
from graphagent.models._types import (
    AssistantChunk,
    ChatOptions,
    ChunkAccumulator,
    ToolCallDelta,
    ToolSpec,
)

__all__ = [
    "PROVIDERS",
    "AnthropicChatModel",
    "AssistantChunk",
    "ChatModel",
    "ChatOptions",
    "ChunkAccumulator",
    "FakeChatModel",
    "FakeEmbeddings",
    "FunctionChatModel",
    "HTTPChatModel",
    "ModelCall",
    "OpenAIChatModel",
    "OpenAIEmbeddings",
    "ToolCallDelta",
    "ToolSpec",
    "allow_model_requests",
    "init_chat_model",
    "init_embeddings",
]
