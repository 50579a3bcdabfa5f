"""The entries of one large JSON list read one at a time, so ingest memory follows an entry, not the file.

A RouterDC file (and a pairwise JSON file) is one JSON document: a list of objects. There is no streaming JSON
parser among the dependencies, so this one walks the list itself with the standard library's decoder
(json.JSONDecoder.raw_decode) over a buffer of the file's text: the list's brackets and commas here, each entry by
the decoder. An entry the buffer cuts is decoded again with more text; an error is raised only once the decoder
fails with the text that follows in the buffer, and it carries the message, line and column json.loads gives for
the whole document (the same one-line refusal naming the line and column).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from uniroute.ingest.staging import IngestError

_SPACE = re.compile(r"[ \t\n\r]*")
# Messages of a decoder that ran out of text; only these make the reader fetch more before it believes them.
_CUT = ("Unterminated string",)
_NUMBER_TAIL = re.compile(r"[0-9.eE+\-]*")
_NEAR_END = 8  # an escape cut mid-way (\uXXXX) fails up to this many characters before the buffer's end


class _Text:
    """A window on the file's text: where the reader is, and how many lines and columns lie before the window."""

    def __init__(self, handle: TextIO, chunk: int) -> None:
        self.handle, self.chunk = handle, chunk
        self.text, self.pos, self.eof = "", 0, False
        self.lines, self.column = 0, 0  # newlines before the window; characters after the last one

    def more(self, at_least: int = 0) -> bool:
        """Drop what was read, add at least one chunk (False at the end of the file)."""
        if self.eof:
            return False
        added = self.handle.read(max(self.chunk, at_least))
        if not added:
            self.eof = True
            return False
        done = self.text[: self.pos]
        newlines = done.count("\n")
        self.column = len(done) - done.rfind("\n") - 1 if newlines else self.column + len(done)
        self.lines += newlines
        self.text, self.pos = self.text[self.pos:] + added, 0
        return True

    def skip_space(self) -> str:
        """The next character after whitespace ('' at the end of the file)."""
        while True:
            self.pos = _SPACE.match(self.text, self.pos).end()  # type: ignore[union-attr]  # matches empty text
            if self.pos < len(self.text) or not self.more():
                return self.text[self.pos: self.pos + 1]

    def error(self, message: str, pos: int) -> json.JSONDecodeError:
        """The decoder's error for a position in the window, with the whole document's line and column."""
        before = self.text.count("\n", 0, pos)
        column = pos - self.text.rfind("\n", 0, pos) if before else self.column + pos + 1
        exc = json.JSONDecodeError(message, self.text, pos)
        exc.lineno, exc.colno = self.lines + before + 1, column
        return exc

    def value(self, decoder: json.JSONDecoder) -> tuple[Any, int]:
        """The JSON value at the reader's position and how many characters it took."""
        want = self.chunk
        while True:
            try:
                value, end = decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                cut = exc.msg.startswith(_CUT) or exc.pos >= len(self.text) - _NEAR_END
                if not (cut and self.more(want)):
                    raise self.error(exc.msg, exc.pos) from None
                want *= 2  # an entry longer than the buffer: read twice as much each time, not quadratically
                continue
            # A number the buffer's end may have cut ("-1." decodes as -1, "1e" as 1): decoded again with more text.
            # A pattern that matches the empty text never returns None.
            if _NUMBER_TAIL.match(self.text, end).end() >= len(self.text) and self.more(want):  # type: ignore[union-attr]
                continue
            taken, self.pos = end - self.pos, end
            return value, taken


def json_list_items(handle: TextIO, chunk: int, object_hook: Callable[[list[tuple[str, Any]]], Any] | None = None
                    ) -> Iterator[tuple[Any, int]]:
    """(entry, characters it took) for each entry of the JSON list the handle's text holds; json.JSONDecodeError
    (message, line and column as json.loads gives them) for a document that is not one valid JSON list."""
    decoder = json.JSONDecoder(object_pairs_hook=object_hook)
    text = _Text(handle, chunk)
    if text.skip_space() != "[":
        yield text.value(decoder)  # not a list: the caller refuses the value (or the decoder its text)
        return
    text.pos += 1
    if text.skip_space() == "]":
        text.pos += 1
    else:
        while True:
            yield text.value(decoder)
            following = text.skip_space()
            text.pos += 1
            if following == "]":
                break
            if following != ",":
                raise text.error("Expecting ',' delimiter", text.pos - 1)
            text.skip_space()
    if text.skip_space():
        raise text.error("Extra data", text.pos)


def entry_blocks(path: Path, chunk: int, block_bytes: int, block_rows: int,
                 object_hook: Callable[[list[tuple[str, Any]]], Any] | None = None
                 ) -> Iterator[tuple[list[Any], int]]:
    """(entries, the first one's number) of the JSON list in a file, in blocks of about block_bytes of text or
    block_rows entries; a document that is not valid JSON is one line naming its line and column, as json.loads
    of the whole file names them."""
    first, block, size = 1, [], 0
    with open(path, encoding="utf-8-sig", newline="") as handle:
        try:
            for entry, chars in json_list_items(handle, chunk, object_hook):
                block.append(entry)
                size += chars
                if size >= block_bytes or len(block) >= block_rows:
                    yield block, first
                    first += len(block)
                    block, size = [], 0
        except json.JSONDecodeError as exc:
            raise IngestError(f"{path}: not valid JSON (truncated?): {exc.msg} at line {exc.lineno} column "
                              f"{exc.colno}") from exc
    if block:
        yield block, first
