"""Markdown-aware chunks with the file lines they came from."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Bump when chunk boundaries or embedded text change: an index built by another version is refused.
CHUNKER_VERSION = "4"
MAX_CHARS = 1000  # about the 512 tokens multilingual-e5 reads, for Japanese text
# A conversation (lines that open with a speaker's name: "**Ann**: ...", "Ann: ...", "田中：...") is chunked into
# smaller windows of whole turns, each after the first starting with the last turns of the one before (up to half
# a window: a longer last turn is not carried, and the windows meet there), so every turn is read with the turns
# around it: a question about one exchange matches the window that holds it.
DIALOGUE_CHARS = 800  # at most; never more than the chunk size asked for, and the overlap is half a window
MIN_TURNS = 4  # a conversation has at least this many turns, and fewer speakers than half of them
# A section shorter than this (a line or two: "## 背景" and a sentence, a list of versions) is joined with the
# section it opens in its parent section: alone, the title and headings the model and the keyword leg read with it
# outweigh its own words, and it outranks the body that answers. Counted in tokens as the model reads them, about
# one a CJK character and one per three characters of other text: two lines of Japanese, two of English.
SHORT_TOKENS = 100

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
    code: bool = False  # a fenced block: code, a command's output, a log


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


@dataclass
class _Group:
    """The blocks of one chunk before it is cut to size: a section, part of one, or a window of turns."""

    blocks: list[_Block]
    heading: str  # the heading path of its text
    level: int  # the level of the section it starts in (0: before any heading)
    talk: bool = False  # a window of a conversation: never joined with another group


def _chunk(body: str, first_line: int, max_chars: int) -> list[Chunk]:
    lines = body.split("\n")
    groups = _join_short(lines, _groups(lines, _blocks(lines), max_chars), max_chars)
    chunks: list[Chunk] = []
    for group in groups:
        _emit(lines, group.blocks[0].start, group.blocks[-1].end, group.heading, first_line, chunks, max_chars)
    return chunks


def _groups(lines: list[str], blocks: list[_Block], max_chars: int) -> list[_Group]:
    """The blocks gathered into sections and windows of turns. A heading opens the chunk of the text under it:
    it never closes one, and headings with nothing between them go with the text after the last of them."""
    groups: list[_Group] = []
    headings: list[tuple[int, str]] = []
    current: list[_Block] = []
    current_heading, current_level = "", 0
    size = 0
    window = min(DIALOGUE_CHARS, max_chars)
    short = _short(max_chars)

    def path() -> tuple[str, int]:
        return " > ".join(text for _, text in headings), headings[-1][0] if headings else 0

    def flush(keep: int = 0):
        """Close the chunk being gathered; the headings at its end, and its last `keep` blocks, open the next
        one (nothing is closed when it holds nothing else)."""
        nonlocal current, size, current_heading, current_level
        cut = len(current) - keep
        while cut and current[cut - 1].level:
            cut -= 1
        if not cut and keep:
            return flush()
        if not cut:
            return
        body_blocks, trailing = current[:cut], current[cut:]
        groups.append(_Group(body_blocks, current_heading, current_level,
                             talk=any(block.turn for block in body_blocks)))
        current, size = trailing, sum(_size(lines, block) for block in trailing)
        if trailing:
            current_heading, current_level = path()

    for block in blocks:
        block_size = _size(lines, block)
        if block.level:
            if current and (block.level <= 2 or size > max_chars // 2):
                flush()
            heading_line = _HEADING.match(lines[block.start])
            assert heading_line is not None  # a block with a level is a heading line (_blocks)
            title = heading_line.group(2)
            headings = [(level, text) for level, text in headings if level < block.level]
            headings.append((block.level, title))
        elif current and block.turn and current[-1].turn and size + block_size > window:
            carry = _overlap(lines, current, window // 2)
            heading, level = current_heading, current_level
            flush()
            current, size = carry, sum(_size(lines, kept) for kept in carry)
            current_heading, current_level = heading, level
        elif current and size + block_size > max_chars:
            flush(keep=1 if block.code and _leads_in(lines, current[-1], short) else 0)
        elif current and block.turn != current[-1].turn and not all(kept.level for kept in current):
            flush()  # a conversation starts or ends: its own chunks
        if all(kept.level for kept in current):  # nothing but headings yet: the chunk is of the text under them
            current_heading, current_level = path()
        current.append(block)
        size += block_size
    if current and all(block.level for block in current) and groups and not groups[-1].talk:
        groups[-1].blocks.extend(current)  # headings with nothing under them close the file's last chunk
    elif current:
        groups.append(_Group(current, current_heading, current_level, talk=any(block.turn for block in current)))
    return groups


def _join_short(lines: list[str], groups: list[_Group], max_chars: int) -> list[_Group]:
    """Each section shorter than SHORT_TOKENS joined with the section after it, when that one is in the same
    parent section (at its level or deeper): a line or two ("## 背景", the versions used) is read, and found, with
    the body it opens, not alone under the note's title. A short section that closes its parent (a TODO list, the
    links at the end) stays on its own: joined with the body before it, it was no longer found for what it says
    (memories-questions, hybrid nDCG@10 0.901 -> 0.831)."""
    short = _short(max_chars)
    joined: list[_Group] = []
    for group in groups:
        before = joined[-1] if joined else None
        if before is not None and _is_short(lines, before, short) \
                and _joinable(lines, before, group, short, max_chars):
            larger = max((before, group), key=lambda part: _text_size(lines, part))
            joined[-1] = _Group(before.blocks + group.blocks, larger.heading, before.level)
        else:
            joined.append(group)
    return joined


def _is_short(lines: list[str], group: _Group, short: float) -> bool:
    return _tokens(lines, group.blocks) < short


def _short(max_chars: int) -> float:
    """The size under which a section is short, in tokens; never more than a tenth of a chunk of a smaller size."""
    return min(SHORT_TOKENS, max_chars / 10)


def _tokens(lines: list[str], blocks: list[_Block]) -> float:
    """About how many tokens the model reads in the blocks' text: one a CJK character, one per three others."""
    return sum(1.0 if character >= "\u2e80" else 1 / 3
               for block in blocks for i in range(block.start, block.end + 1) for character in lines[i])


def _leads_in(lines: list[str], block: _Block, short: float) -> bool:
    """Whether a block is a short paragraph of prose that introduces the code block after it ("実行すると以下の
    エラーが出た:"): it goes into the code block's chunk, so that the code is found for what the prose says of it."""
    return not (block.level or block.code or block.turn) and _tokens(lines, [block]) < short


def _joinable(lines: list[str], before: _Group, after: _Group, short: float, max_chars: int) -> bool:
    """Whether a short group joins the one after it: neither is a window of a conversation, the later one is in
    the earlier one's section or beside it, and together they fit in a chunk (or the later one is cut to size
    anyway, the short one opening its first piece)."""
    if before.talk or after.talk or after.level and after.level < before.level:
        return False
    before_size, after_size = _text_size(lines, before), _text_size(lines, after)
    return before_size + after_size <= max_chars or after_size > max_chars


def _text_size(lines: list[str], group: _Group) -> int:
    return sum(_size(lines, block) for block in group.blocks)


def _size(lines: list[str], block: _Block) -> int:
    return sum(len(lines[i]) + 1 for i in range(block.start, block.end + 1))


def _overlap(lines: list[str], turns: list[_Block], limit: int) -> list[_Block]:
    """The last turns of a window, at most `limit` characters and never all of them: where the next
    window starts."""
    carry: list[_Block] = []
    carried = 0
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
        if fenced := _FENCE.match(line):
            end_of_talk()
            fence = fenced.group(1)
            end = i + 1
            while end < len(lines) and not lines[end].lstrip().startswith(fence):
                end += 1
            end = min(end, len(lines) - 1)
            blocks.append(_Block(i, end, code=True))
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
        speakers = {j: speaker for j in range(i, end + 1) if (speaker := _speaker(lines[j]))}
        starts = list(speakers)
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
    pieces, piece_start, size = [], start, 0
    for i in range(start, end + 1):
        line_size = len(lines[i]) + 1
        if size and size + line_size > max_chars:
            pieces.append((piece_start, i - 1))
            piece_start, size = i, 0
        size += line_size
    pieces.append((piece_start, end))
    if len(pieces) > 1:  # the last two share their lines evenly: a long code block or log does not end in a
        pieces[-2:] = _halves(lines, pieces[-2][0], end, max_chars)  # piece of its closing brace and fence
    for piece_start, piece_end in pieces:
        _emit(lines, piece_start, piece_end, heading, first_line, chunks, max_chars)


def _halves(lines: list[str], start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """The lines start..end (more than a chunk, at most two) as two runs cut where they are closest in size,
    each within max_chars where a cut allows it."""
    sizes = [len(lines[i]) + 1 for i in range(start, end + 1)]
    total, before = sum(sizes), 0
    best: tuple[int, int] | None = None
    for offset, line_size in enumerate(sizes[:-1]):
        before += line_size
        worst = max(before, total - before)
        if best is None or worst < best[0]:
            best = (worst, start + offset)
    assert best is not None  # two lines at least (the caller's last two pieces), so one cut
    return [(start, best[1]), (best[1] + 1, end)]


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
