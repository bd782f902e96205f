"""ReplayRecipe: a recipe whose rankings and answers were produced elsewhere.

`recipe=replay recipe.run=FILE` scores a TREC run file, `recipe.predictions=FILE` predictions
JSON Lines, both together a run's ranking with the predictions' answers. The files are read
and checked once, by `check_files` (which the run's assembly calls, before any work), else on
first use; the knowledge base answers from what was read, so that the results are those of
the content whose sha256 digests are part of the run's identity (`content_digests`). Against
the benchmark's cases (`check_contents`, called by the runner once the benchmark is loaded):
an unknown case id or unit is an error, a docid that is not in the corpus is counted and
named in the report, and a case a file does not cover fails when it is evaluated, named in
its error.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import Field, PrivateAttr, model_validator

from heta_eval.config.components import resolve_target
from heta_eval.config.secrets import mask_secrets
from heta_eval.kb.documents import RawSource
from heta_eval.kb.replay.files import (
    MAX_SHOWN,
    ReplayedFile,
    ReplayedFiles,
    raise_problems,
    read_files,
)
from heta_eval.kb.replay.knowledge_base import ReplayKnowledgeBase, ReplaySettings
from heta_eval.kb.store import ObjectStore
from heta_eval.protocols import BaseRecipe
from heta_eval.records import BenchmarkContents
from heta_eval.records._base import JsonDict, NonEmptyStr, Record

log = logging.getLogger(__name__)


def _as_plain(value: Any) -> Any:
    from omegaconf import DictConfig, ListConfig, OmegaConf

    if isinstance(value, DictConfig | ListConfig):
        return OmegaConf.to_container(value, resolve=True)
    return value


class ReplayRecipe(Record, BaseRecipe):
    """Scores outputs produced elsewhere: a TREC run (`run`), predictions (`predictions`).

    `query_mode` names the one query mode of the run (`replay`); `parser` reads a document's
    text for retrieved items that give none (evidence metrics that match text).
    """

    name: NonEmptyStr = "replay"
    description: str = ""
    run: str | None = None
    predictions: str | None = None
    query_mode: NonEmptyStr = "replay"
    parser: JsonDict = Field(default_factory=lambda: {"_target_": "heta_eval.kb.MediaTypeParser"})

    _read: ReplayedFiles | None = PrivateAttr(default=None)
    _notes: list[str] = PrivateAttr(default_factory=list)
    _checks: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _plain(cls, data: Any) -> Any:
        data = _as_plain(data)
        if isinstance(data, dict):
            return {k: _as_plain(v) for k, v in data.items() if k != "_target_"}
        return data

    @model_validator(mode="after")
    def _check(self) -> ReplayRecipe:
        if not self.run and not self.predictions:
            raise ValueError(
                "replay needs recipe.run=FILE (a TREC run) and/or recipe.predictions=FILE "
                "(predictions JSON Lines)"
            )
        if "_target_" not in self.parser:
            raise ValueError("parser needs a _target_")
        resolve_target(self.parser["_target_"])  # a misspelt parser fails now, not per case
        return self

    def check_files(self) -> None:
        """Read and check the files now (each problem named `FILE:LINE`, a
        ReplayInputError); the run's assembly calls it, before any work. They are read once:
        the digests, the check against the benchmark and the knowledge bases use what was
        read."""
        self._replayed()

    def _replayed(self) -> ReplayedFiles:
        if self._read is None:
            self._read = read_files(self.run, self.predictions)
        return self._read

    # -- the RecipeLike contract ----------------------------------------------------------

    @property
    def query_modes(self) -> tuple[str, ...]:
        """The one query mode a replay offers."""
        return (self.query_mode,)

    def manifest(self) -> JsonDict:
        """The recipe, each file's path and sha256, whether it answers (`answerer`: only with a
        predictions file), and what the check against the benchmark found (`notes`: docids
        not in the corpus, cases not covered)."""
        data = self.model_dump(mode="json")
        # Answers come from a predictions file only: without one the replay answers nothing,
        # so answer metrics are skipped instead of scoring every case as a missing answer.
        data["answerer"] = "predictions file" if self.predictions else None
        data["files"] = {kind: file.facts() for kind, file in self.files.items()}
        if self._checks:
            data["checks"] = dict(self._checks)
        if self._notes:
            data["notes"] = list(self._notes)
        return mask_secrets(data)

    def content_digests(self) -> dict[str, str]:
        """The sha256 of each replayed file: part of the run's identity, so that a changed
        file is never answered with a stale result."""
        return self._replayed().digests()

    async def create_knowledge_base(
        self, *, name: str, store: ObjectStore, sources: Sequence[RawSource]
    ) -> Any:
        """A knowledge base that answers each case from the files (nothing is indexed); the
        files are read now unless `check_files` read them."""
        settings = ReplaySettings(
            recipe_name=self.name,
            query_modes=self.query_modes,
            parser=self.parser,
            component=f"{type(self).__module__}.{type(self).__name__}",
        )
        return ReplayKnowledgeBase(
            name=name, files=self._replayed(), settings=settings, store=store, sources=sources
        )

    # -- the files ------------------------------------------------------------------------

    @property
    def files(self) -> Mapping[str, ReplayedFile]:
        """The parsed files by kind (`run`, `predictions`), read on first use."""
        return self._replayed().by_kind

    # -- the check against the benchmark --------------------------------------------------

    def check_contents(self, contents: BenchmarkContents) -> None:
        """Refuse lines naming unknown cases or units, or a case id that several units share
        without a unit_id; count and name docids outside the corpus and cases not covered."""
        all_docs = frozenset(d.document_id for d in contents.documents)
        units_of: dict[str, list[str]] = {}
        unit_docs: dict[str, frozenset[str]] = {}
        for unit in contents.units:
            unit_docs[unit.unit_id] = frozenset(unit.document_ids) or all_docs
            for case in contents.unit_cases(unit):
                units_of.setdefault(case.case_id, []).append(unit.unit_id)
        problems: list[str] = []
        self._notes = []
        self._checks = {}
        for kind, file in self.files.items():
            outside: list[str] = []
            covered: set[tuple[str, str]] = set()
            for entry in file.cases:
                units = units_of.get(entry.case_id)
                if units is None:
                    problems.append(
                        f"{entry.where}: case id {entry.case_id!r} is not a case of "
                        f"benchmark {contents.manifest.name!r}"
                    )
                    continue
                if entry.unit_id is not None:
                    if entry.unit_id not in units:
                        problems.append(
                            f"{entry.where}: case {entry.case_id!r} is not in unit "
                            f"{entry.unit_id!r} (its units: {units[:5]})"
                        )
                        continue
                    chosen = [entry.unit_id]
                elif len(units) > 1:
                    problems.append(
                        f"{entry.where}: case id {entry.case_id!r} is in "
                        f"{len(units)} units ({units[:5]}); give its unit_id"
                    )
                    continue
                else:
                    chosen = units
                covered.update((u, entry.case_id) for u in chosen)
                docs = unit_docs[chosen[0]]
                outside.extend(
                    f"{file.path}:{i.line} {i.document_id!r}"
                    for i in entry.items or ()
                    if i.document_id not in docs
                )
            if outside:
                self._checks[f"{kind}.documents_not_in_corpus"] = len(outside)
                self._notes.append(
                    f"{file.path}: {len(outside)} retrieved docid(s) not in the corpus, ranked "
                    f"as non-relevant (as trec_eval does): {', '.join(outside[:MAX_SHOWN])}"
                )
            uncovered = [
                (unit, case_id)
                for case_id, units in units_of.items()
                for unit in units
                if (unit, case_id) not in covered
            ]
            if uncovered:
                self._checks[f"{kind}.cases_not_covered"] = len(uncovered)
                names = ", ".join(repr(c) for _, c in uncovered[:MAX_SHOWN])
                self._notes.append(
                    f"{file.path}: no line for {len(uncovered)} of {len(units_of)} cases; each "
                    f"fails when evaluated: {names}"
                )
        raise_problems(problems, f"replay: {len(problems)} line(s) do not fit the benchmark")
        for note in self._notes:
            log.warning("%s", note)
