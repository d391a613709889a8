"""Markdown-aware chunks with the file lines they came from."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Bump when chunk boundaries or embedded text change: an index built by another version is refused.
CHUNKER_VERSION = "3"
MAX_CHARS = 1000  # about the 512 tokens multilingual-e5 reads, for Japanese text
# A conversation (lines that open with a speaker's name: "**Ann**: ...", "Ann: ...", "田中：...") is chunked into
# smaller windows of whole turns, each after the first starting with the last turns of the one before (up to half
# a window: a longer last turn is not carried, and the windows meet there), so every turn is read with the turns
# around it: a question about one exchange matches the window that holds it.
DIALOGUE_CHARS = 800  # at most; never more than the chunk size asked for, and the overlap is half a window
MIN_TURNS = 4  # a conversation has at least this many turns, and fewer speakers than half of them

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_TURN = re.compile(r"^\s*(?:[-*>]\s+)?(?:\*\*([^*\n]{1,40}?)\*\*\s*[:：]|__([^_\n]{1,40}?)__\s*[:：]"
                   r"|([^\s:：*#>|`\-][^:：\n]{0,29}?)(?::\s|：))\s*\S")


@dataclass(frozen=True)
class Chunk:
    text: str
    start_line: int  # 1-based, inclusive, lines of the whole file
    end_line: int
    heading: str  # the section's heading path, "A > B"


@dataclass
class _Block:
    start: int  # index into the body's lines
    end: int  # inclusive
    level: int = 0  # heading level, 0 for other blocks
    turn: bool = False  # one turn of a conversation


def chunk_markdown(body: str, first_line: int = 1, size: int = MAX_CHARS, overlap: int = 0) -> list[Chunk]:
    """Split a Markdown body at headings and paragraphs into chunks of at most `size` characters.

    With `overlap`, each chunk after the first starts with up to that many characters from the end
    of the chunk before it (cut at a line or word boundary when there is one), still within `size`;
    its line range stays that of its own text."""
    if size < 1 or overlap < 0 or overlap >= size:
        raise ValueError(f"chunk size {size} and overlap {overlap}: need 0 <= overlap < size")
    chunks = _chunk(body, first_line, size - overlap)
    if overlap:
        chunks = [chunks[0]] + [Chunk(_tail(before.text, overlap) + chunk.text, chunk.start_line, chunk.end_line,
                                      chunk.heading) for before, chunk in zip(chunks, chunks[1:])] if chunks else []
    return chunks


def _tail(text: str, limit: int) -> str:
    """At most `limit` characters from the end of a chunk, ending in a line break, started after a line,
    sentence or word boundary when one lies in the first half of that span."""
    tail = text[-(limit - 1):] if limit > 1 else ""
    if len(tail) < len(text):
        cuts = [cut for cut in (tail.find(separator) for separator in ("\n", "。", " ")) if 0 <= cut < len(tail) // 2]
        if cuts:
            tail = tail[min(cuts) + 1:]
    tail = tail.strip()
    return tail + "\n" if tail else ""


def _chunk(body: str, first_line: int, max_chars: int) -> list[Chunk]:
    lines = body.split("\n")
    blocks = _blocks(lines)
    chunks: list[Chunk] = []
    headings: list[tuple[int, str]] = []
    current: list[_Block] = []
    current_heading = ""
    size = 0
    window = min(DIALOGUE_CHARS, max_chars)

    def flush():
        nonlocal current, size
        if current:
            _emit(lines, current[0].start, current[-1].end, current_heading, first_line, chunks, max_chars)
        current, size = [], 0

    for block in blocks:
        block_size = _size(lines, block)
        if block.level:
            if current and (block.level <= 2 or size > max_chars // 2):
                flush()
            title = _HEADING.match(lines[block.start]).group(2)
            headings = [(level, text) for level, text in headings if level < block.level]
            headings.append((block.level, title))
        elif current and block.turn and current[-1].turn and size + block_size > window:
            carry = _overlap(lines, current, window // 2)
            heading = current_heading
            flush()
            current, size, current_heading = carry, sum(_size(lines, kept) for kept in carry), heading
        elif current and size + block_size > max_chars:
            flush()
        elif current and block.turn != current[-1].turn and not all(kept.level for kept in current):
            flush()  # a conversation starts or ends: its own chunks
        if not current:
            current_heading = " > ".join(text for _, text in headings)
        current.append(block)
        size += block_size
    flush()
    return chunks


def _size(lines: list[str], block: _Block) -> int:
    return sum(len(lines[i]) + 1 for i in range(block.start, block.end + 1))


def _overlap(lines: list[str], turns: list[_Block], limit: int) -> list[_Block]:
    """The last turns of a window, at most `limit` characters and never all of them: where the next
    window starts."""
    carry, carried = [], 0
    for turn in reversed(turns[1:]):
        carried += _size(lines, turn)
        if not turn.turn or carried > limit:
            break
        carry.insert(0, turn)
    return carry


def _blocks(lines: list[str]) -> list[_Block]:
    blocks: list[_Block] = []
    talk: list[tuple[int, int, str]] = []  # the turns of the conversation being read: (start, end, speaker)

    def end_of_talk():
        if _is_talk([speaker for _, _, speaker in talk]):
            blocks.extend(_Block(start, end, turn=True) for start, end, _ in talk)
        else:  # a few "Key: value" lines, not a conversation: paragraphs as they were
            for start, end, _ in talk:
                if blocks and not blocks[-1].level and blocks[-1].end + 1 == start and lines[start - 1].strip():
                    blocks[-1] = _Block(blocks[-1].start, end)
                else:
                    blocks.append(_Block(start, end))
        talk.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if _FENCE.match(line):
            end_of_talk()
            fence = _FENCE.match(line).group(1)
            end = i + 1
            while end < len(lines) and not lines[end].lstrip().startswith(fence):
                end += 1
            end = min(end, len(lines) - 1)
            blocks.append(_Block(i, end))
            i = end + 1
            continue
        heading = _HEADING.match(line)
        if heading:
            end_of_talk()
            blocks.append(_Block(i, i, level=len(heading.group(1))))
            i += 1
            continue
        end = i
        while end + 1 < len(lines) and lines[end + 1].strip() and not _HEADING.match(lines[end + 1]) \
                and not _FENCE.match(lines[end + 1]):
            end += 1
        speakers = {j: _speaker(lines[j]) for j in range(i, end + 1)}
        starts = [j for j, speaker in speakers.items() if speaker]
        if starts and starts[0] == i:  # a paragraph that opens a turn: split at each turn
            for start, after in zip(starts, starts[1:] + [end + 1]):
                talk.append((start, after - 1, speakers[start]))
        else:
            end_of_talk()
            blocks.append(_Block(i, end))
        i = end + 1
    end_of_talk()
    return blocks


def turn_spans(text: str, first_line: int) -> list[tuple[int, int]]:
    """The file lines (first, last) of each turn of a conversation that a chunk's text holds, its text's lines
    being the file's from `first_line` on; a turn runs until the next one opens, blank lines at its end left
    out. Lines before the first turn belong to none."""
    lines = text.split("\n")
    starts = [i for i, line in enumerate(lines) if _speaker(line)]
    spans = []
    for start, after in zip(starts, starts[1:] + [len(lines)]):
        end = after - 1
        while end > start and not lines[end].strip():
            end -= 1
        spans.append((first_line + start, first_line + end))
    return spans


def reads_as_conversation(text: str) -> bool:
    """Whether the turns that open lines of `text` make a conversation, as the chunker reads one."""
    return _is_talk([speaker for line in text.split("\n") if (speaker := _speaker(line))])


def _is_talk(speakers: list[str]) -> bool:
    """Turns by these speakers, in order, are a conversation: at least MIN_TURNS of them, by fewer speakers than
    half the turns (a few "Key: value" lines are not)."""
    return len(speakers) >= MIN_TURNS and len(set(speakers)) * 2 <= len(speakers)


def _speaker(line: str) -> str | None:
    """The speaker's name when the line opens a turn of a conversation, else None."""
    match = _TURN.match(line)
    if not match:
        return None
    return next(name for name in match.groups() if name is not None).strip().casefold() or None


def _emit(lines, start, end, heading, first_line, chunks, max_chars):
    """Append the lines start..end as chunks, splitting what is longer than max_chars."""
    text = "\n".join(lines[start:end + 1]).strip()
    if not text:
        return
    if len(text) <= max_chars:
        chunks.append(Chunk(text, first_line + start, first_line + end, heading))
        return
    if start == end:  # one long line: split between words
        chunks.extend(Chunk(piece, first_line + start, first_line + end, heading)
                      for piece in _pieces(text, max_chars))
        return
    piece_start, size = start, 0
    for i in range(start, end + 1):
        line_size = len(lines[i]) + 1
        if size and size + line_size > max_chars:
            _emit(lines, piece_start, i - 1, heading, first_line, chunks, max_chars)
            piece_start, size = i, 0
        size += line_size
    _emit(lines, piece_start, end, heading, first_line, chunks, max_chars)


def _pieces(text: str, max_chars: int) -> list[str]:
    """A line longer than max_chars in pieces of at most that, each cut at the last space or after the last
    Japanese comma or full stop in its second half, or at max_chars where there is none (unspaced Japanese), so
    that no word is cut in two."""
    pieces, offset = [], 0
    while len(text) - offset > max_chars:
        cut = max_chars
        for i in range(max_chars, max_chars // 2, -1):  # the character after the window may be the space
            if text[offset + i].isspace():
                cut = i
                break
            if i < max_chars and text[offset + i] in "。、":
                cut = i + 1
                break
        pieces.append(text[offset:offset + cut].rstrip())
        offset += cut
        while offset < len(text) and text[offset].isspace():
            offset += 1
    return pieces + [text[offset:]] if offset < len(text) else pieces


def embedding_text(title: str, chunk: Chunk) -> str:
    """What the model reads for a chunk: the record's title and section, then the text."""
    return join_context(embedding_context(title, chunk), chunk.text)


def embedding_context(title: str, chunk: Chunk) -> str | None:
    """The record's title and the chunk's section, as the model reads them before the text."""
    context = [title] if title else []
    if chunk.heading and chunk.heading != title:
        context.append(chunk.heading)
    return " / ".join(context) if context else None


def join_context(context: str | None, text: str) -> str:
    return f"{context}\n\n{text}" if context else text
