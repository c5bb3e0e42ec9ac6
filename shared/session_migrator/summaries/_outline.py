"""The offline summary's outline: what the cut part of a conversation decided, the facts it
holds, the work it left open and the files it touched, each item one dated line.

:class:`Outline` reads the shape of the messages once (who asked for what and whether it was
done, which proposals the user agreed to, the newest to-do list, the files the tool calls
touched), takes the sentences the extractive reading scored, and writes the best of everything
within a token limit, grouped under :data:`HEADINGS`::

    Decisions:
    - [Mon 2026-01-12] agreed: Please confirm: a table for 2 at Sino at 7 pm. (done)
    - user: Decision: we rename the columns rather than quoting them.
    Facts:
    - [Mon 2026-01-12] assistant: Their phone number is 408-247-8880.
    Open tasks:
    - [Wed 2026-01-14] user: Find me a hotel in Paris for three nights.
    Files:
    - `ledgerd/repos/invoices.py`: edited, read

With ``requests=True`` (a hand-off's summary of the part it cut), every request the user made
comes first, shortened, under ``Requests:``: what the user asked for is what a later turn most
needs, and a request that was done is not an open task. What a harness put in a user turn
(AGENTS.md, environment context, skill rules) is never read as the user's words.

A rolling summary (``previous``) keeps its items under their headings: the new items join them,
a file touched again is one line, and an open task the new messages settle goes.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Sequence
from itertools import accumulate, compress

from session_migrator.counting._counter import TokenCounter
from session_migrator.counting._tokens import DigestMemo, remembered_count
from session_migrator.messages._messages import Message, ToolCall
from session_migrator.summaries._cues import (
    AGREES,
    ASKS,
    CLOSES,
    DONE,
    FACTLIKE,
    FAILED,
    FAREWELL,
    cue_bits,
    proposes,
    sittings,
)
from session_migrator.summaries._notes import (
    DECISION,
    MAYBE_INJECTED,
    PATH,
    SHELL_TOOLS,
    TASK,
    actions_text,
    call_paths,
    injected,
    is_todo_tool,
    last_todo_list,
    one_line,
    own_words,
    touched,
)
from session_migrator.summaries._outline_items import (
    AGREED,
    FILE_SCORES,
    REQUEST,
    REQUESTED,
    SCORERS,
    TODO,
    body_of,
    dated,
    frame_of,
    label_of,
)
from session_migrator.summaries._sentences import _GATES, _rows, _score_lines

__all__ = ["HEADINGS", "Outline"]

DECISIONS, FACTS, OPEN, FILES, REQUESTS = range(5)
HEADINGS = ("Decisions:", "Facts:", "Open tasks:", "Files:", "Requests:")
#: The order the sections are written in.
_WRITTEN = (REQUESTS, DECISIONS, FACTS, OPEN, FILES)
#: A request under ``Requests:`` is cut to this many characters (fewer when there are many).
_REQUEST_CHARS = 200
_REQUESTS_CHARS = 2_400
_SECTION_OF = {heading: k for k, heading in enumerate(HEADINGS)}
#: Longest item, in characters (a whole proposal or request; a sentence is cut shorter).
_ITEM_CHARS = 300
_MAX_MISSES = 48
#: Previous items keep a bonus: they were already judged worth keeping.
_KEPT = 1.0
_OUTCOME = {1: " (done)", -1: " (failed)", 0: ""}
_SPEAKERS = ("user", "assistant")
_PATH_GATE = _GATES[3]
#: What a tool's line is like, names and numbers aside: ``def #(invoice: Invoice) -> Money:``
_VARYING = re.compile(r"\b[^\W\d_]*[\d_]\w*")
_SELF = re.compile(r"\b(?:my|our|i am|i'm|call me)\b")

#: Scores of a rolling summary's earlier items, which come back at every update.
_memo: DigestMemo[float] = DigestMemo()
_frames: DigestMemo[str] = DigestMemo()


class Outline:
    """The items of one summary: built from the messages' shape and the ``previous`` summary's
    items, then fed the scored sentences (:meth:`add`); :meth:`write` picks and writes them.

    ``bodies`` are the messages' texts (``m.text``, joined once by the caller).
    """

    def __init__(
        self,
        messages: Sequence[Message],
        bodies: Sequence[str],
        previous: str | None = None,
        *,
        requests: bool = False,
    ) -> None:
        self.messages = messages
        self._requests = requests
        # the items, as parallel arrays: the text (whole for a previous item and for one found
        # from the shape, else the sentence without its label), the message it is dated by (-1
        # for a previous item), the score, the section (-1: a sentence, placed when picked)
        self.texts: list[str] = []
        self.owners = array("q")
        self.scores = array("d")
        self.sections = array("b")
        self.bare = array("b")  # 1: a sentence, written after its speaker's label
        #: messages whose sentences an item of the shape already holds (read no further)
        self.consumed: set[int] = set()
        self._settled_after: dict[int, int] = {}
        self._sitting: list[int] = sittings(messages)
        # open tasks of the previous summary wait, as the new messages' own requests do, for
        # what settles them
        self._carried = previous is not None and HEADINGS[OPEN] in previous.splitlines()
        self._calls: set[tuple[int, int]] = set()  # (message, call) that are items already
        #: path -> how it was touched, and the last message that touched it
        self._files: dict[str, tuple[set[str], int]] = {}
        self._speaks = [m.role in _SPEAKERS for m in messages]
        self._shape(bodies)
        if previous:
            self._previous(previous)

    # -- the shape of the conversation ------------------------------------------------------

    def _shape(self, bodies: Sequence[str]) -> None:
        messages = self.messages
        requests: list[int] = []
        files = self._files
        for index in [i for i, m in enumerate(messages) if m.tool_calls]:
            for k, call in enumerate(messages[index].tool_calls):
                if is_todo_tool(call.name):
                    self._calls.add((index, k))
                    continue
                for path, action in _paths(call):
                    files[path] = (touched(files.get(path, (set(), 0))[0], action), index)
                    self._calls.add((index, k))
        # the user and assistant messages with text of their own, and what each says (a user
        # turn may be the library's or a harness's: a marker, injected context)
        spoken = [
            i
            for i, m in enumerate(messages)
            if (role := m.role) in _SPEAKERS
            and (text := bodies[i])
            and (
                role == "assistant"
                or (
                    (not m.extra or m.marker is None)
                    and (text[0] not in MAYBE_INJECTED or not injected(text))
                )
            )
        ]
        # a user turn a harness wrote (AGENTS.md, a skill's rules) is not read at all
        for i, m in enumerate(messages):
            text = bodies[i]
            if m.role == "user" and text and text[0] in MAYBE_INJECTED and injected(text):
                self.consumed.add(i)
        # of the assistant's, the last before each user turn: its answer (what came before it
        # in the turn, a tool loop's "Searching for ...", tells neither what was done nor not)
        user = [messages[i].role == "user" for i in spoken]
        spoken = [i for k, i in enumerate(spoken) if user[k] or k + 1 == len(spoken) or user[k + 1]]
        # (an answer says first what was done, or that it failed: its head is read shorter)
        heard = cue_bits(
            [bodies[i] if messages[i].role == "user" else bodies[i][:160] for i in spoken]
        )
        sitting = self._sitting
        pending = self._carried  # a request of this sitting that nothing settled yet
        now = 0  # the sitting
        for k in compress(range(len(heard)), heard):  # (most turns say nothing of the kind)
            bits = heard[k]
            index = spoken[k]
            if sitting[index] != now:
                now = sitting[index]
                pending = False
            if messages[index].role == "user":
                said = spoken[k - 1] if k else -1
                if bits & AGREES and said >= 0 and messages[said].role == "assistant":
                    proposal = bodies[said]
                    if proposes(proposal):
                        # the assistant's answer tells whether it was carried out
                        after = k + 1 if k + 1 < len(spoken) else -1
                        if after >= 0 and messages[spoken[after]].role != "assistant":
                            after = -1
                        told = heard[after] if after >= 0 else 0
                        done = -1 if told & FAILED else 1 if told & DONE else 0
                        text = f"agreed: {one_line(proposal, _ITEM_CHARS)}{_OUTCOME[done]}"
                        self._item(DECISIONS, text, said, AGREED)
                        self._consume(said, text)
                if bits & CLOSES:
                    self._settle(index)
                    pending = False
                elif bits & ASKS:
                    requests.append(index)
                    pending = True
            elif pending and (bits & FAREWELL or (bits & DONE and not bits & FAILED)):
                self._settle(index)  # (while nothing is pending, what it says settles nothing)
                pending = False
        for index in requests:
            if not self.settled(index):
                text = "user: " + one_line(bodies[index], _ITEM_CHARS)
                self._item(OPEN, text, index, REQUESTED if self._requests else REQUEST)
                self._consume(index, text)
        if self._requests:
            self._all_requests(spoken, heard, set(requests))
        # what they hold adds to their scores (halved for a request: asking is what counts)
        for position, score in enumerate(_score_lines(self.texts)):
            self.scores[position] += score if self.sections[position] == DECISIONS else score / 2
        where, todo = last_todo_list(messages)
        for text, status in todo:
            suffix = " (in progress)" if status == "in_progress" else ""
            self._item(OPEN, f"to-do: {one_line(text, _ITEM_CHARS)}{suffix}", where, TODO)

    def _all_requests(self, spoken: Sequence[int], heard: Sequence[int], asked: set[int]) -> None:
        """Every request of the user (each user turn with words of its own, but a plain yes or
        no), shortened, under ``Requests:``: those still open are under ``Open tasks:``."""
        messages = self.messages
        said = [
            (index, words)
            for k, index in enumerate(spoken)
            if messages[index].role == "user"
            and index not in self.consumed
            and (words := own_words(messages[index].text))
            and (index in asked or not heard[k] & (AGREES | CLOSES) or len(words) > 40)
        ]
        limit = max(60, min(_REQUEST_CHARS, _REQUESTS_CHARS // max(1, len(said))))
        for order, (index, words) in enumerate(said):
            text = "user: " + one_line(words, limit)
            self._item(REQUESTS, text, index, REQUESTED - order / 1e3)
            self._consume(index, text)

    def _consume(self, index: int, text: str) -> None:
        """Message ``index`` is an item (``text``): its sentences are not read, the files it
        names are."""
        self.consumed.add(index)
        if _PATH_GATE.search(text):
            for path in PATH.findall(text):
                self._files.setdefault(path, ({"mentioned"}, index))[0].add("mentioned")

    def _settle(self, index: int) -> None:
        """Everything asked before ``index`` in its sitting is settled."""
        self._settled_after[self._sitting[index]] = index

    def settled(self, index: int) -> bool:
        """Whether what message ``index`` asked for was done, or dropped, later in its sitting."""
        return self._settled_after.get(self._sitting[index], -1) > index

    def keeps_call(self, index: int, k: int) -> bool:
        """Whether call ``k`` of message ``index`` is a line of its own (not a to-do list, nor
        a file the Files section names)."""
        return (index, k) not in self._calls

    def _item(self, section: int, text: str, owner: int, score: float, bare: int = 0) -> None:
        self.texts.append(text)
        self.owners.append(owner)
        self.scores.append(score)
        self.sections.append(section)
        self.bare.append(bare)

    # -- a rolling summary's earlier items ------------------------------------------------

    def _previous(self, previous: str) -> None:
        section = FACTS  # an item under no heading (a summary written before there were any)
        fresh = [i for i, m in enumerate(self.messages) if m.timestamp is not None]
        first_day = dated(self.messages[fresh[0]]) if fresh else ""
        # the first sitting of the new messages continues the previous one's last (same day,
        # or no times): what it settles, it settles for the previous items too
        settles = bool(self._settled_after) and min(self._settled_after) == 0
        new_todo = last_todo_list(self.messages)[0] >= 0
        for line in previous.splitlines():
            line = line.strip()
            if line in _SECTION_OF:
                section = _SECTION_OF[line]
                continue
            if not line.startswith("- "):
                continue
            if section == FILES and self._merged_file(line):
                continue
            if section == OPEN:
                body = line[2:]
                day = body[: body.index("] ") + 2] if body.startswith("[") and "] " in body else ""
                if body[len(day) :].startswith("to-do: ") and new_todo:
                    continue  # a newer to-do list replaces it
                if settles and (not day or day == first_day):
                    continue
            score = _memo.get(line, SCORERS[section], str(section))
            self._item(section, line, -1, score + _KEPT)

    def _merged_file(self, line: str) -> bool:
        """Whether a previous Files line names a file the new messages touched (its actions
        join theirs, in one line)."""
        start = line.find("`")
        end = line.find("`: ", start + 1)
        if start < 0 or end < 0 or line[start + 1 : end] not in self._files:
            return False
        actions = {a.strip() for a in line[end + 3 :].split(",")}
        self._files[line[start + 1 : end]][0].update(actions)
        return True

    # -- the sentences, and the summary ------------------------------------------------------

    def add(self, texts: Sequence[str], owners: Sequence[int], scores: Sequence[float]) -> None:
        """Sentences read from the messages (without their labels), with their scores."""
        self.texts.extend(texts)
        self.owners.extend(owners)
        self.scores.extend(scores)
        self.sections.extend([-1] * len(texts))
        self.bare.extend([1] * len(texts))

    def call(self, text: str, owner: int, score: float) -> None:
        """A tool call of message ``owner`` (``called name(args)``), a fact of what was done."""
        self._item(FACTS, text, owner, score, 1)

    def _place(self, position: int) -> int:
        """The section of a sentence: open work not settled later, a decision, a fact (a value,
        or what the user says of themselves); or -1, nothing a later turn needs ("I like the
        sound of that")."""
        text = self.texts[position]
        low = text.lower()
        if TASK.search(low):
            if not self.settled(self.owners[position]):
                return OPEN
        elif _decides(text, low):
            return DECISIONS
        if FACTLIKE.search(text):
            return FACTS
        if _SELF.search(low) and self.messages[self.owners[position]].role == "user":
            return FACTS  # what the user says of themselves ("I'm allergic to kiwi")
        return -1

    def _line(self, position: int) -> str:
        owner = self.owners[position]
        text = self.texts[position]
        if owner < 0:
            return text
        m = self.messages[owner]
        if self.bare[position]:
            text = f"{label_of(m)}: {text}"
        return f"- {dated(m)}{text}"

    def _mentioned(self) -> None:
        """The paths the sentences of the user and the assistant name (read, not whole texts):
        one search of them all, then of those it hits."""
        speaks, owners, texts, sections = self._speaks, self.owners, self.texts, self.sections
        rows = [p for p in range(len(texts)) if sections[p] < 0 and speaks[owners[p]]]
        said = [texts[p] for p in rows]
        block = "\n" + "\n".join(said)
        if not _PATH_GATE.search(block):
            return
        ends = list(accumulate(len(t) + 1 for t in said))
        for row in _rows(_PATH_GATE, block, ends):
            for path in PATH.findall(said[row]):
                owner = owners[rows[row]]
                self._files.setdefault(path, ({"mentioned"}, owner))[0].add("mentioned")

    def write(self, max_tokens: int, counter: TokenCounter) -> str:
        """The best items within ``max_tokens`` (each line counted with its newline, a heading
        once), under their headings, each section in the conversation's order."""
        self._file_items()
        chosen = self._pick(max_tokens, counter)
        lines: list[str] = []
        for section in _WRITTEN:
            heading = HEADINGS[section]
            picked = [p for p in chosen if self.sections[p] == section]
            if picked:
                lines.append(heading)
                picked.sort(key=lambda p: (self.owners[p], p))
                lines.extend(chosen[p] for p in picked)
        return "\n".join(lines)

    def _file_items(self) -> None:
        self._mentioned()
        files = self._files
        names = {p.rsplit("/", 1)[-1]: p for p in files if "/" in p}
        for path, (actions, owner) in files.items():
            if actions == {"mentioned"} and "/" not in path and path in names:
                continue  # "invoices.py", named in passing, is the ledgerd/repos/invoices.py read
            done = actions_text(actions)
            score = max(FILE_SCORES.get(a, 1.5) for a in actions)
            self._item(FILES, f"`{path}`: {done}", owner, score)

    def _pick(self, max_tokens: int, counter: TokenCounter) -> dict[int, str]:
        """The items chosen, best first (ties in the conversation's order: a reversed sort keeps
        equal keys in order), by position, each with its line."""
        scores = self.scores
        ranking = sorted(range(len(scores)), key=scores.__getitem__, reverse=True)
        chosen: dict[int, str] = {}
        costs: dict[int, int] = {}
        seen: set[str] = set()
        shapes: set[str] = set()  # of the tool output lines chosen (logs repeat, numbers aside)
        frames: dict[str, int] = {}  # a chosen fact or decision without its values -> the newest
        opened = [0] * len(HEADINGS)
        used = misses = 0
        messages, owners, bare = self.messages, self.owners, self.bare
        for position in ranking:
            section = self.sections[position]
            owner = owners[position]
            shape = ""
            if bare[position] and messages[owner].role == "tool":
                # what a tool printed is a fact; a line like one chosen but for its numbers and
                # identifiers is left out (logs, listings and code repeat)
                shape = _VARYING.sub("#", self.texts[position])
                if shape in shapes:
                    continue
                section = FACTS
            elif section < 0:
                section = self._place(position)
                if section < 0:
                    continue
            text = self._line(position)
            if text in seen:
                continue
            frame = self._frame(position) if section <= FACTS and not shape else ""
            older = frames.get(frame, -1) if frame else -1
            head = 0 if opened[section] else remembered_count(counter, HEADINGS[section]) + 1
            # a lower bound (one token per 8 characters) skips lines that cannot fit, untokenized
            cost = len(text) // 8 + 1 + head
            if used + cost <= max_tokens or older >= 0:
                cost = head + remembered_count(counter, text) + 1
                if (
                    used + cost > max_tokens
                    and older >= 0
                    and owners[older] < owner
                    and scores[older] <= scores[position]
                    and used - costs[older] + cost <= max_tokens
                ):
                    # the same fact with another value, said later, of the same weight: where
                    # both do not fit, the newer one takes the older one's place
                    used -= costs.pop(older)
                    seen.discard(chosen.pop(older))
                if used + cost <= max_tokens:
                    if shape:
                        shapes.add(shape)
                    if frame and (older < 0 or owners[older] < owner):
                        frames[frame] = position
                    chosen[position] = text
                    costs[position] = cost
                    seen.add(text)
                    opened[section] = 1
                    self.sections[position] = section
                    used += cost
                    misses = 0
                    continue
            misses += 1
            if misses >= _MAX_MISSES or used >= max_tokens - 4:
                break
        return chosen

    def _frame(self, position: int) -> str:
        """What an item says without its values (numbers, identifiers, names), to tell the same
        fact said again with another value: "" when it holds no value or little else."""
        text = self.texts[position]
        if self.owners[position] < 0:  # (a previous item comes back at every update)
            return _frames.get(text, lambda line: frame_of(body_of(line)[1]))
        return frame_of(text)


def _decides(text: str, low: str) -> bool:
    """Whether a sentence says what was decided or preferred (a word in capitals, as in code
    or SQL, "GENERATED ALWAYS", is not a decision)."""
    return any(not text[m.start() : m.end()].isupper() for m in DECISION.finditer(low))


def _paths(call: ToolCall) -> list[tuple[str, str]]:
    """The files a call touched, from its arguments (parsed only where they name a path)."""
    args = call.arguments
    if 'ath"' in args or 'filename"' in args or "File: " in args or call.name in SHELL_TOOLS:
        return list(call_paths(call.name, args))
    return []
