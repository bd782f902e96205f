"""An LLM judge of generated answers, over any OpenAI-compatible chat endpoint.

The judge asks a model whether the generated answer states the same fact as one of the
expected answers and expects one word back: CORRECT (1.0) or INCORRECT (0.0). Any other
reply gives an *undetermined* score (value None, `undetermined=True`) that the summary counts
apart and never averages in. An endpoint that cannot be asked (down, 401, a missing key, still
failing after its retries) raises EndpointError: the metric failed for that case, which the
runner records as a failed case result, counts in its failure gate and evaluates again on
resume; it is never a verdict.

Verdicts are cached on disk, one JSON file per sha256 of what determines the verdict
(endpoint, model, system prompt, rendered prompt, temperature, max_tokens), so a re-run
re-asks nothing it already knows. Undetermined outcomes are not cached.
"""

from __future__ import annotations

import logging
import re
import string
from pathlib import Path

from heta_eval.config.ranges import (
    MAX_TOKENS_RANGE,
    MAX_TOP_K,
    TEMPERATURE_RANGE,
    Range,
)
from heta_eval.endpoints import (
    EndpointError,
    EndpointSettings,
    MissingAPIKeyError,
    OpenAICompatibleClient,
)
from heta_eval.json_cache import JsonFileCache, material_key
from heta_eval.protocols import Evaluator
from heta_eval.records import BenchmarkCase, EvaluationScore, QueryResponse

log = logging.getLogger(__name__)

PROMPT_FIELDS = ("question", "expected", "answer", "context")
"""The fields a prompt template may use."""

EXPECTED_SEPARATOR = " | "
"""How several expected answers are joined into `{expected}`."""

CORRECT, INCORRECT = "CORRECT", "INCORRECT"
_VALUES = {CORRECT: 1.0, INCORRECT: 0.0}
_RAW_CHARS = 200
_CACHE_VERSION = 1
CONTEXT_RESULTS_RANGE = Range(0, MAX_TOP_K)
CONTEXT_CHARS_RANGE = Range(0, 10_000_000)

DEFAULT_SYSTEM = (
    "You are a strict, impartial grader of answers to questions. You compare a generated "
    "answer with the expected answer(s) and reply with exactly one word: CORRECT or INCORRECT."
)

DEFAULT_PROMPT = """\
Decide whether the generated answer to the question is correct.

Question:
{question}

Expected answer(s), separated by " | " (matching any one of them is enough):
{expected}

Generated answer:
{answer}

Rules:
- CORRECT if the generated answer states the same fact as at least one expected answer, \
even in other words.
- Numbers are equal when they agree up to rounding or differ only in form: 0.57, 57% and \
57 percent are the same, 1,200 and 1200 are the same, and units or currency symbols may be \
left out. A different value is INCORRECT.
- Extra details that are correct do not make an answer incorrect. An answer that \
contradicts the expected answer, offers several different answers, or only hedges or \
refuses is INCORRECT.
- Judge against the expected answer(s) only, not against your own knowledge.

Reply with exactly one word: CORRECT or INCORRECT."""

_THINKING = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_LABEL = re.compile(r"^(final\s+)?(verdict|answer|grade|judgement|judgment)\s*[:=-]\s*", re.I)
_WORDS = re.compile(r"\b(correct|incorrect)\b", re.IGNORECASE)
_STRIP = string.punctuation + string.whitespace + "\u201c\u201d\u2018\u2019"
_NEGATION = re.compile(r"\b(not|no|never|isn't|isnt|wasn't|neither|nor)\b", re.IGNORECASE)


def parse_verdict(raw: str) -> str | None:
    """CORRECT, INCORRECT, or None when the reply is not a clear verdict.

    Case, surrounding punctuation, markdown and a label such as `Verdict:` are ignored
    (`"**Verdict: correct.**"` is CORRECT). A reply that names both words, names neither,
    or negates the word (`"not correct"`) is not a verdict. `<think>` blocks are dropped.
    """
    text = _THINKING.sub(" ", raw)
    text = text.strip(_STRIP)
    text = _LABEL.sub("", text).strip(_STRIP)
    if text.upper() in _VALUES:
        return text.upper()
    found = {w.upper() for w in _WORDS.findall(text)}
    if len(found) == 1 and not _NEGATION.search(text):
        return found.pop()
    return None


def template_fields(template: str) -> list[str]:
    """The replacement fields of a str.format template, in order (nested specs included).

    Raises ValueError when the template is not a valid format string.
    """
    fields: list[str] = []
    for _, field, spec, _ in string.Formatter().parse(template):
        if field is None:
            continue
        fields.append(field)
        if spec:
            fields.extend(template_fields(spec))
    return fields


def check_template(template: str, what: str = "prompt") -> None:
    """Refuse a template that uses fields other than PROMPT_FIELDS, or no {answer}."""
    allowed = ", ".join(f"{{{f}}}" for f in PROMPT_FIELDS)
    if not isinstance(template, str) or not template.strip():
        raise ValueError(f"{what} must be a non-empty template string")
    try:
        fields = template_fields(template)
    except ValueError as exc:
        raise ValueError(
            f"{what} is not a valid str.format template ({exc}); write literal braces as "
            "{{ and }}"
        ) from None
    for field in fields:
        if field not in PROMPT_FIELDS:
            shown = "{}" if field == "" else f"{{{field}}}"
            raise ValueError(
                f"{what} uses unknown field {shown}; allowed fields: {allowed} "
                "(write literal braces as {{ and }})"
            )
    if "answer" not in fields:
        raise ValueError(f"{what} must contain {{answer}}, the generated answer to judge")
    try:
        template.format(**dict.fromkeys(PROMPT_FIELDS, "x"))
    except (ValueError, IndexError, KeyError) as exc:
        raise ValueError(f"{what} cannot be rendered: {exc}") from None


class LLMJudge(Evaluator):
    """Answer correctness graded by an LLM behind an OpenAI-compatible chat endpoint.

    `prompt` is a str.format template over {question}, {expected} (the expected answers
    joined with " | "), {answer} (the generated answer) and {context} (the text of the top
    `context_results` retrieved results, cut to `context_chars` characters). The system
    prompt is sent as is (None sends none). The model must reply CORRECT (1.0) or
    INCORRECT (0.0); another reply gives an undetermined score. An endpoint that fails for
    good (after `max_retries` retries, or at once for a 4xx such as 401, or a missing key)
    raises EndpointError: a failed metric for the case, never an undetermined one. Cases
    without expected answers or without a generated answer are skipped without a call.

    Determined verdicts are cached in `cache_dir` (default: `judge/` under the run's cache
    root during a run, following `runner.cache`, else under the shared heta_eval cache);
    `details.cached` says whether a verdict came from there. The
    constructor does no I/O and needs no API key; only `evaluate()` does. The key is read
    from the environment variable `api_key_env` (None: no Authorization header) and never
    stored. Call `aclose()` before the event loop ends to release HTTP connections.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        prompt: str = DEFAULT_PROMPT,
        system_prompt: str | None = DEFAULT_SYSTEM,
        name: str = "llm_judge",
        cache_dir: str | Path | None = None,
        temperature: float | None = 0.0,
        max_tokens: int | None = 16,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff_seconds: float = 1.0,
        max_concurrency: int = 8,
        context_results: int = 5,
        context_chars: int = 4000,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError("name must be a non-empty string")
        check_template(prompt)
        if system_prompt is not None and not isinstance(system_prompt, str):
            raise ValueError("system_prompt must be a string or None")
        if temperature is not None:
            TEMPERATURE_RANGE.check("temperature", temperature)
        if max_tokens is not None:
            MAX_TOKENS_RANGE.check("max_tokens", max_tokens)
        CONTEXT_RESULTS_RANGE.check("context_results", context_results)
        CONTEXT_CHARS_RANGE.check("context_chars", context_chars)
        self._name = name
        self.prompt = prompt
        self.system_prompt = system_prompt or None
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.context_results = context_results
        self.context_chars = context_chars
        self._fields = frozenset(template_fields(prompt))
        self._cache = JsonFileCache(cache_dir, "judge")
        self._key_warned = False
        self.client = OpenAICompatibleClient.from_settings(
            EndpointSettings(
                base_url=base_url,
                model=model,
                api_key_env=api_key_env,
                timeout=timeout,
                max_retries=max_retries,
                backoff_seconds=backoff_seconds,
                max_concurrency=max_concurrency,
            )
        )

    @property
    def name(self) -> str:
        """Metric name in reports (`llm_judge` unless configured)."""
        return self._name

    @property
    def model(self) -> str:
        """The judging model."""
        return self.client.model

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self._name!r}, base_url={self.client.base_url!r}, "
            f"model={self.client.model!r}, api_key_env={self.client.api_key_env!r})"
        )

    # -- prompt ----------------------------------------------------------------------------

    def render(self, case: BenchmarkCase, response: QueryResponse) -> str:
        """The user prompt for one case: the template filled in."""
        values = {
            "question": case.query,
            "expected": EXPECTED_SEPARATOR.join(case.expected.answers),
            "answer": response.answer or "",
            "context": "",
        }
        if "context" in self._fields:
            texts = [r.text for r in response.results[: self.context_results]]
            values["context"] = "\n\n".join(texts)[: self.context_chars]
        return self.prompt.format(**values)

    def messages(self, prompt: str) -> list[dict[str, str]]:
        """The chat messages for a rendered prompt (system message first, if any)."""
        system = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return [*system, {"role": "user", "content": prompt}]

    def cache_key(self, prompt: str) -> str:
        """sha256 of what determines a verdict: endpoint, model, prompts and sampling."""
        material = {
            "version": _CACHE_VERSION,
            "base_url": self.client.base_url,
            "model": self.client.model,
            "system": self.system_prompt,
            "prompt": prompt,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        return material_key(material)

    # -- cache -----------------------------------------------------------------------------

    @property
    def cache_dir(self) -> Path:
        """Where verdicts are cached (created on first use)."""
        return self._cache.directory

    def _read_cache(self, key: str) -> tuple[str, str] | None:
        entry = self._cache.get(key)
        if entry is None:
            return None
        verdict = entry.get("verdict")
        if verdict not in _VALUES:
            log.warning("%s: ignoring a cached entry with verdict %r", self._name, verdict)
            return None
        return verdict, str(entry.get("raw", ""))

    # -- scoring ---------------------------------------------------------------------------

    def _undetermined(self, reason: str, raw: str = "") -> EvaluationScore:
        return EvaluationScore(
            name=self._name,
            value=None,
            undetermined=True,
            details={"reason": reason, "raw": raw[:_RAW_CHARS], "cached": False},
        )

    def _verdict(self, verdict: str, raw: str, cached: bool) -> EvaluationScore:
        return EvaluationScore(
            name=self._name,
            value=_VALUES[verdict],
            details={"verdict": verdict, "raw": raw[:_RAW_CHARS], "cached": cached},
        )

    async def evaluate(self, case: BenchmarkCase, response: QueryResponse) -> EvaluationScore:
        """Grade the generated answer of one case (see the class docstring)."""
        if not case.expected.answers:
            return EvaluationScore(
                name=self._name, value=None, skipped_reason="no expected answers"
            )
        if response.answer is None:
            return EvaluationScore(
                name=self._name, value=None, skipped_reason="no answer generated"
            )
        prompt = self.render(case, response)
        key = self.cache_key(prompt)
        hit = self._read_cache(key)
        if hit is not None:
            return self._verdict(*hit, cached=True)
        try:
            raw = await self.client.chat(
                self.messages(prompt), temperature=self.temperature, max_tokens=self.max_tokens
            )
        except EndpointError as exc:
            # A missing key fails every case the same way: say so once, not once per case.
            repeated = isinstance(exc, MissingAPIKeyError) and self._key_warned
            self._key_warned = self._key_warned or isinstance(exc, MissingAPIKeyError)
            level = logging.DEBUG if repeated else logging.WARNING
            log.log(level, "%s: case %s failed: %s", self._name, case.case_id, exc)
            raise
        verdict = parse_verdict(raw)
        if verdict is None:
            log.info("%s: case %s: reply is not a verdict: %.80r", self._name, case.case_id, raw)
            return self._undetermined("the judge replied neither CORRECT nor INCORRECT", raw)
        self._cache.put(
            key, {"verdict": verdict, "raw": raw[:_RAW_CHARS], "model": self.client.model}
        )
        return self._verdict(verdict, raw, cached=False)

    async def aclose(self) -> None:
        """Release the HTTP connections of the running event loop."""
        await self.client.aclose()
