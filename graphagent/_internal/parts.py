"""Image and file parts of a message (re-exported by :mod:`graphagent.messages`).

They live here, below the messages module, so that module stays one job (the message
types and their stored shape) and the parts can be read by the model clients, the
drawing and the A2A bridge alike.
"""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["ContentPart", "FilePart", "ImagePart", "part_from_stored", "stored_part"]


class _Part(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    default_mime: ClassVar[str] = "application/octet-stream"

    data: bytes | None = None
    url: str | None = None
    mime_type: str = ""

    @model_validator(mode="after")
    def _one_source(self) -> _Part:
        if (self.data is None) == (self.url is None):
            raise ValueError(
                f"a {type(self).__name__} needs exactly one of data= (the bytes) or url= "
                "(an http(s) or data: URL)"
            )
        if not self.mime_type:
            object.__setattr__(self, "mime_type", self.default_mime)
        return self

    @property
    def data_url(self) -> str:
        """The part as a URL: its ``url``, or its bytes as a ``data:`` URL."""
        if self.url is not None:
            return self.url
        return f"data:{self.mime_type};base64,{self.base64}"

    @property
    def base64(self) -> str:
        """The bytes as base64 text (``""`` for a part given by URL)."""
        return base64.b64encode(self.data).decode("ascii") if self.data is not None else ""


class ImagePart(_Part):
    """An image in a user message or a tool result: bytes, or a URL the provider fetches.

    Example:
        >>> part = ImagePart(data=b"\\x89PNG...", mime_type="image/png")
        >>> part.data_url[:22]
        'data:image/png;base64,'
    """

    default_mime: ClassVar[str] = "image/png"
    kind: Literal["image"] = "image"

    @classmethod
    def from_path(cls, path: str | Path, mime_type: str | None = None) -> ImagePart:
        """An image read from a file (its type guessed from the name unless given)."""
        path = Path(path)
        guessed = mime_type or mimetypes.guess_type(path.name)[0] or cls.default_mime
        return cls(data=path.read_bytes(), mime_type=guessed)


class FilePart(_Part):
    """A file (a PDF, a text file) in a user message or a tool result.

    Example:
        >>> FilePart(data=b"%PDF-1.7", mime_type="application/pdf", name="a.pdf").name
        'a.pdf'
    """

    kind: Literal["file"] = "file"
    name: str | None = None

    @classmethod
    def from_path(cls, path: str | Path, mime_type: str | None = None) -> FilePart:
        """A file read from disk (its type guessed from the name unless given)."""
        path = Path(path)
        guessed = mime_type or mimetypes.guess_type(path.name)[0] or cls.default_mime
        return cls(data=path.read_bytes(), mime_type=guessed, name=path.name)


ContentPart = Annotated[Union[ImagePart, FilePart], Field(discriminator="kind")]  # noqa: UP007
"""An image or file part of a message."""


def stored_part(part: ImagePart | FilePart) -> list[Any]:
    """A part as stored inside its message's frame: ``[kind, mime, data, url, name]``."""
    return [part.kind, part.mime_type, part.data, part.url, getattr(part, "name", None)]


def part_from_stored(stored: Any) -> Any:
    """What :func:`stored_part` wrote, as the dict pydantic validates into a part."""
    if type(stored) is not list or len(stored) != 5:
        return stored  # validation then names what is wrong with it
    kind, mime, data, url, name = stored
    out: dict[str, Any] = {"kind": kind, "mime_type": mime, "data": data, "url": url}
    if kind == "file":
        out["name"] = name
    return out
