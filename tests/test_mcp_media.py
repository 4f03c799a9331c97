"""Images and files through MCP, both ways: a served tool's parts become the SDK's image
and resource blocks, and an MCP server's images reach a graphagent model as images."""

from __future__ import annotations

import base64
from typing import Any

from _mcp_helpers import serve_http
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

from graphagent.mcp import McpToolProvider, http_app
from graphagent.mcp._results import result_text
from graphagent.messages import AssistantMessage, FilePart, ImagePart, ToolCall
from graphagent.tools import ToolCallingManager, tool

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"


@tool
def chart() -> list[Any]:
    """Draw the sales chart."""
    return [
        "sales are up",
        ImagePart(data=PNG),
        FilePart(data=b"%PDF-1.7", mime_type="application/pdf", name="sales report.pdf"),
        ImagePart(url="https://img.example/logo.png"),
    ]


async def test_a_served_tools_parts_reach_the_sdk_client_as_blocks() -> None:
    """The SDK's client receives a text block, an image block, an embedded PDF and a
    resource link (before: serving this tool failed on the bytes)."""
    with serve_http(http_app([chart], name="media")) as base:
        async with (
            streamable_http_client(f"{base}/mcp") as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("chart", {})
    assert not result.isError
    text, image, pdf, link = result.content
    assert isinstance(text, types.TextContent) and text.text == "sales are up"
    assert isinstance(image, types.ImageContent) and base64.b64decode(image.data) == PNG
    assert image.mimeType == "image/png"
    assert isinstance(pdf, types.EmbeddedResource)
    assert isinstance(pdf.resource, types.BlobResourceContents)
    assert base64.b64decode(pdf.resource.blob) == b"%PDF-1.7"
    assert pdf.resource.mimeType == "application/pdf"
    assert isinstance(link, types.ResourceLink) and str(link.uri) == "https://img.example/logo.png"


def test_an_mcp_servers_image_reaches_the_model_as_an_image() -> None:
    """Through McpToolProvider and the manager, the server's image is an ImagePart on the
    tool message (before: a "[image (...)]" description), the PDF is described."""
    with (
        serve_http(http_app([chart], name="media")) as base,
        McpToolProvider.http(f"{base}/mcp", name="remote") as provider,
    ):
        tools = provider.tool_callbacks()
        asked = AssistantMessage(tool_calls=[ToolCall(id="c1", name="remote_chart")])
        message = ToolCallingManager().execute_tool_calls([], asked, tools=tools).tool_responses[0]
    assert message.parts == (ImagePart(data=PNG),)
    assert message.content.startswith("sales are up\n[resource attachment:///sales%20report.pdf")
    assert "https://img.example/logo.png" in message.content


def test_an_image_with_broken_base64_is_described_not_dropped() -> None:
    """An image block whose data is not base64 stays a described text line."""
    result = types.CallToolResult(
        content=[types.ImageContent(type="image", data="not base64!", mimeType="image/png")]
    )
    assert result_text(result, tool="t", server="s") == "[image (image/png, 11 base64 characters)]"
