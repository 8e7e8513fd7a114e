"""Read Def-DTS style segmentation jsonl (SuperDialseg, TIAGE) into utterances and reference starts.

Format (see shared/data/segmentation/README.md): one `{"id", "dialogue"}` object per line; the
dialogue is turns joined by the literal token `[NEWLINE]`; each turn reads `user: ...` or
`agent: ...`; a standalone `[BOUNDARY]` turn means the next turn starts a new segment.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "SHARED_FILES",
    "Dialogue",
    "SharedSets",
    "Utterance",
    "cv_fold",
    "data_record",
    "default_data_dir",
    "file_sha256",
    "heldout_split",
    "iter_dialogues",
    "load_dialogues",
    "load_shared_sets",
    "parse_dialogue",
    "split_dialogues",
]

_NEWLINE = "[NEWLINE]"
_BOUNDARY = "[BOUNDARY]"


@dataclass(frozen=True, slots=True)
class Utterance:
    role: str  # "user" | "agent"
    text: str


@dataclass(frozen=True, slots=True)
class Dialogue:
    id: str
    utterances: tuple[Utterance, ...]
    starts: tuple[int, ...]  # 1 where a new segment starts; the first utterance is always 0

    @property
    def n_segments(self) -> int:
        return 1 + sum(self.starts)


def _split_role(turn: str) -> Utterance:
    # A turn without a known prefix is kept as agent text: it is never a decision point then.
    for role in ("user", "agent"):
        prefix = f"{role}:"
        if turn.startswith(prefix):
            return Utterance(role=role, text=turn[len(prefix) :].strip())
    return Utterance(role="agent", text=turn.strip())


def parse_dialogue(dialogue_id: str, text: str) -> Dialogue:
    """Split a Def-DTS dialogue string; doubled, leading and trailing `[BOUNDARY]` markers are ignored."""
    utterances: list[Utterance] = []
    starts: list[int] = []
    pending = False
    for raw in text.split(_NEWLINE):
        turn = raw.strip()
        if turn == _BOUNDARY:
            pending = True  # a doubled marker just sets the same flag again
            continue
        if not turn:
            continue
        utterances.append(_split_role(turn))
        starts.append(1 if pending and len(utterances) > 1 else 0)
        pending = False
    return Dialogue(id=dialogue_id, utterances=tuple(utterances), starts=tuple(starts))


def iter_dialogues(path: str | Path) -> Iterator[Dialogue]:
    with Path(path).open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                yield parse_dialogue(str(row["id"]), str(row["dialogue"]))


def load_dialogues(path: str | Path, limit: int | None = None) -> list[Dialogue]:
    out: list[Dialogue] = []
    for dialogue in iter_dialogues(path):
        if limit is not None and len(out) >= limit:
            break
        if dialogue.utterances:
            out.append(dialogue)
    return out


def heldout_split(dialogue_id: str, fraction: float = 0.3) -> bool:
    """True if the dialogue is in the held-out part: a fixed split by a hash of its id (stable across runs)."""
    digest = hashlib.sha256(dialogue_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def cv_fold(dialogue_id: str, folds: int) -> int:
    """Cross-validation fold of a training dialogue: a fixed assignment by a hash of its id."""
    digest = hashlib.sha256(f"fold:{dialogue_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % folds


def split_dialogues(dialogues: Sequence[Dialogue], fraction: float = 0.3) -> tuple[list[Dialogue], list[Dialogue]]:
    """(train, heldout) by `heldout_split`."""
    train = [d for d in dialogues if not heldout_split(d.id, fraction)]
    held = [d for d in dialogues if heldout_split(d.id, fraction)]
    return train, held


def default_data_dir() -> Path:
    """shared/data/segmentation beside the repository (the work tree and CI both lay it out so).

    ATHENA_SEGMENTATION_DATA overrides the search.
    """
    override = os.environ.get("ATHENA_SEGMENTATION_DATA")
    if override:
        return Path(override)
    for base in (Path.cwd().resolve(), Path(__file__).resolve()):
        for parent in (base, *base.parents):
            candidate = parent / "shared" / "data" / "segmentation"
            if candidate.is_dir():
                return candidate
    raise FileNotFoundError("shared/data/segmentation not found; set ATHENA_SEGMENTATION_DATA")


SHARED_FILES = ("superseg_validation", "tiage_train", "tiage_validation")
"""The shared labelled files every training command reads."""


@dataclass(frozen=True)
class SharedSets:
    """The shared files, read and split the one way every training command splits them."""

    files: dict[str, Path]
    superseg: list[Dialogue]
    superseg_train: list[Dialogue]
    superseg_heldout: list[Dialogue]
    tiage_train: list[Dialogue]
    tiage_validation: list[Dialogue]


def load_shared_sets(data_dir: Path, heldout_fraction: float) -> SharedSets:
    files = {name: data_dir / f"{name}.jsonl" for name in SHARED_FILES}
    superseg = load_dialogues(files["superseg_validation"])
    train, held = split_dialogues(superseg, heldout_fraction)
    return SharedSets(
        files=files,
        superseg=superseg,
        superseg_train=train,
        superseg_heldout=held,
        tiage_train=load_dialogues(files["tiage_train"]),
        tiage_validation=load_dialogues(files["tiage_validation"]),
    )


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def data_record(files: dict[str, Path]) -> dict[str, dict[str, str]]:
    """Path and sha256 of each shared file, for a trained artifact's record."""
    return {name: {"path": f"shared/data/segmentation/{p.name}", "sha256": file_sha256(p)} for name, p in files.items()}
