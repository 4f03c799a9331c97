"""A namespace shown as a table in Jupyter: ``store.namespace("memories", "u42")``."""

from __future__ import annotations

import html
import json
from typing import Any

__all__ = ["NamespaceView"]


class NamespaceView:
    """The newest items of one namespace; renders as an HTML table (``_repr_html_``).

    Args:
        store: any store.
        namespace: the namespace shown (items of deeper namespaces are included).
        limit: how many items (newest first) the table shows.
    """

    def __init__(self, store: Any, namespace: tuple[str, ...], limit: int = 50) -> None:
        self.store = store
        self.namespace = namespace
        self.limit = limit

    def items(self) -> list[Any]:
        """The items shown, newest first."""
        found: list[Any] = self.store.search(self.namespace, limit=self.limit)
        return found

    def _repr_html_(self) -> str:
        items = self.items()
        title = html.escape(" / ".join(self.namespace))
        rows = "".join(
            "<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td></tr>".format(
                html.escape(" / ".join(item.namespace[len(self.namespace) :])),
                html.escape(item.key),
                html.escape(json.dumps(item.value, ensure_ascii=False)),
                html.escape(item.updated_at.strftime("%Y-%m-%d %H:%M:%S")),
            )
            for item in items
        )
        return (
            f"<div><b>{title}</b> ({len(items)} item{'s' if len(items) != 1 else ''}, "
            "newest first)<table><thead><tr><th>sub-namespace</th><th>key</th><th>value</th>"
            f"<th>updated (UTC)</th></tr></thead><tbody>{rows}</tbody></table></div>"
        )

    def __repr__(self) -> str:
        lines = [f"{' / '.join(self.namespace)}:"]
        for item in self.items():
            lines.append(f"  {item.key}: {json.dumps(item.value, ensure_ascii=False)}")
        return "\n".join(lines)
