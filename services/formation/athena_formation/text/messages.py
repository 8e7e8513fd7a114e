"""Text plumbing shared by the heuristic analysis and the quality gate: messages, sentences, words."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from athena.text import is_unspaced, stem, stop_words
from athena.text import tokens as words
from athena_client.memory.v1 import memory_pb2
from athena_formation.text.stopwords import UNSPACED_SMALLTALK_PHRASES, is_content_word

__all__ = [
    "AGENT",
    "SYSTEM",
    "USER",
    "Message",
    "Sentence",
    "content_words",
    "conversation",
    "is_question_or_request",
    "role_label",
    "sentences_of",
    "split_sentences",
    "stem",
    "strip_markup",
    "without_smalltalk_phrases",
    "words",
]

USER = "user"
AGENT = "agent"
SYSTEM = "system"

_ROLES = {memory_pb2.ROLE_USER: USER, memory_pb2.ROLE_AGENT: AGENT, memory_pb2.ROLE_SYSTEM: SYSTEM}
_KINDS = {
    memory_pb2.EVENT_TYPE_MESSAGE: "message",
    memory_pb2.EVENT_TYPE_THOUGHT: "thought",
    memory_pb2.EVENT_TYPE_ACTION: "action",
    memory_pb2.EVENT_TYPE_OBSERVATION: "observation",
}


@dataclass(frozen=True)
class Message:
    """One event's text with its role ("user", "agent", "system") and kind ("message", "thought", ...)."""

    index: int
    """Position of the event in the segment."""
    role: str
    kind: str
    text: str

    @property
    def is_dialogue(self) -> bool:
        """A user or agent message: what a person would read as the conversation."""
        return self.kind == "message" and self.role in (USER, AGENT)


def conversation(events: Sequence[memory_pb2.Event]) -> list[Message]:
    """Every event with non-blank content, in order (unknown roles/types read as system/message)."""
    out = []
    for i, event in enumerate(events):
        text = (event.content or "").strip()
        if text:
            out.append(Message(i, _ROLES.get(event.role, SYSTEM), _KINDS.get(event.type, "message"), text))
    return out


def role_label(role: str) -> str:
    return {USER: "User", AGENT: "Agent"}.get(role, "System")


# --- markup ---------------------------------------------------------------------------------------

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_LIST_MARK = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)]|#{1,6})\s+", re.MULTILINE)
_MD_EMPH = re.compile(r"(\*\*|__)(.+?)\1")


def strip_markup(text: str) -> str:
    """Prose only: fenced code blocks out, list markers, headers and bold markers off."""
    text = _FENCE.sub(" ", text)
    text = _LIST_MARK.sub("", text)
    return _MD_EMPH.sub(r"\2", text)


# --- sentences ------------------------------------------------------------------------------------

_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs mr mrs ms dr prof st jr sr approx no fig inc ltd co corp dept est u.s a.m p.m".split()
)
# . ! ? followed by a space; or a full-width 。！？ (Chinese and Japanese put no space after them).
_SENTENCE_END = re.compile(r"([.!?…]+[\"')\]]*)\s+|[。！？]+[」』”’）]*\s*")
_WS = re.compile(r"\s+")


def split_sentences(text: str) -> list[str]:
    """Sentences of a prose text: split at line breaks, at . ! ? followed by a space (not after
    common abbreviations ("e.g.", "Dr.") and not inside "v2.3" or "3.5": no space follows there),
    and after a full-width 。！？."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        start = 0
        for match in _SENTENCE_END.finditer(line):
            before = line[start : match.start()].split()
            last = before[-1].lower().rstrip(".") if before else ""
            if match.group(1) == "." and (last in _ABBREVIATIONS or (len(last) == 1 and last.isalpha())):
                continue
            piece = line[start : match.end()].strip()
            if piece:
                out.append(piece)
            start = match.end()
        rest = line[start:].strip()
        if rest:
            out.append(rest)
    return [_WS.sub(" ", s) for s in out]


@dataclass(frozen=True)
class Sentence:
    text: str
    role: str
    message: int
    """Index (in the Message list) of the message it comes from."""
    position: int
    """Order of the sentence in the segment."""


def sentences_of(messages: Sequence[Message]) -> list[Sentence]:
    out: list[Sentence] = []
    for m_index, message in enumerate(messages):
        for text in split_sentences(strip_markup(message.text)):
            out.append(Sentence(text, message.role, m_index, len(out)))
    return out


# --- words ------------------------------------------------------------------------------------------
# Words are athena.text's tokens (any script, casefolded, CJK as bigrams), stemmed by its one stemmer:
# `words` and `stem` here are those, under the names the analysis and the quality gate read.


def content_words(text: str) -> list[str]:
    """The text's content words (see athena_formation.text.stopwords), casefolded, in order: neither the English topic
    filter's words nor the stop words of the text's language."""
    found = words(without_smalltalk_phrases(text))
    stops = stop_words(found)
    return [w for w in found if w not in stops and is_content_word(w)]


def without_smalltalk_phrases(text: str) -> str:
    """The text with the small-talk phrases of the scripts written without spaces (CJK, Thai) taken
    out: a greeting there is no word of its own to drop, but bigrams that would read as content."""
    if not any(is_unspaced(ch) for ch in text):
        return text
    for phrase in UNSPACED_SMALLTALK_PHRASES:
        text = text.replace(phrase, " ")
    return text


# --- questions and requests ---------------------------------------------------------------------

_QUESTION_START = re.compile(
    r"^(?:so|and|but|also|ok|okay|hey|hi|well|oh)?[,\s]*"
    r"(?:what|what's|whats|how|how's|why|when|where|who|which|whose|whom|"
    r"can|could|would|should|will|shall|is|are|am|was|were|do|does|did|have|has|had|may|might|"
    r"isn't|aren't|don't|doesn't|didn't|won't|can't|couldn't|wouldn't|shouldn't|any|anything)\b",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"\b(?:please|pls|plz|help me|help with|i need|i'd need|we need|i want|we want|i'd like|i would like|"
    r"we'd like|i'm looking for|i am looking for|looking for|i'm trying to|i am trying to|trying to figure|"
    r"tell me|show me|give me|let me know|explain|recommend|suggest|remind me|find me|book me|"
    r"walk me through|teach me|i wonder|i was wondering|wondering if|any idea|any ideas|any tips|"
    r"any advice|how to|how do i|how can i|what's the best|is there a way|i'm planning|i am planning|"
    r"we're planning|we are planning|i plan to|we plan to|i'm thinking of|i'm thinking about)\b",
    re.IGNORECASE,
)
_IMPERATIVE = re.compile(
    r"^(?:please\s+)?(?:find|book|write|fix|create|make|add|remove|delete|update|set|change|install|"
    r"configure|compare|calculate|convert|translate|summarize|summarise|list|check|draft|plan|schedule|"
    r"cancel|reset|send|generate|describe|suggest|recommend|show|give|tell|explain|help)\b",
    re.IGNORECASE,
)


def _has_substance(sentence: str) -> bool:
    # "How are you?" / "What's up?" are phatic: a question counts only if it carries a content word.
    return bool(content_words(sentence))


def is_question_or_request(sentence: str) -> bool:
    """A question ("?", or an interrogative opening) or a request ("please...", "I need...", an
    imperative), that carries at least one content word: "How are you?" does not count."""
    s = sentence.strip().replace("’", "'")
    if not s or not _has_substance(s):
        return False
    return (
        s.rstrip(" \"')]").endswith(("?", "\uff1f"))  # "？": the full-width mark of Chinese and Japanese
        or bool(_QUESTION_START.match(s) and len(s.split()) >= 3 and not s.endswith("!"))
        or bool(_REQUEST.search(s))
        or bool(_IMPERATIVE.match(s))
    )
