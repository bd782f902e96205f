"""Answer generation over retrieved results: an extractive baseline and an LLM generator."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from heta_eval.config.ranges import (
    MAX_TOKENS_RANGE,
    TEMPERATURE_RANGE,
    TOP_K_RANGE,
    MaxTokens,
    Temperature,
    TopK,
)
from heta_eval.endpoints import EndpointSettings, OpenAICompatibleClient
from heta_eval.json_cache import JsonFileCache, material_key
from heta_eval.records import QueryResult

_WORD = re.compile(r"\w+")
_TOKEN = re.compile(r"\w+|[^\w\s]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])|\n\s*\n")
_CITATION = re.compile(r"\[(\d+)\]")
_STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "has",
        "have",
        "how",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "their",
        "this",
        "to",
        "was",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
    }
)

DEFAULT_ANSWER_PROMPT = (
    "Answer the question using only the numbered passages. Be brief: give the answer itself "
    "(a name, number or short phrase) and cite the passages you used as [1], [2].\n"
    "If the passages do not contain the answer, say: Insufficient information.\n\n"
    "Passages:\n{context}\n\nQuestion: {question}\nAnswer:"
)


@runtime_checkable
class Answerer(Protocol):
    """Turns a question and its retrieved results into an answer and the ids it cites;
    `aclose` releases what it holds (an endpoint's connections) when its knowledge base is
    closed."""

    async def answer(
        self, question: str, results: Sequence[QueryResult]
    ) -> tuple[str | None, tuple[str, ...]]: ...

    async def aclose(self) -> None: ...


class BaseAnswerer:
    """Base class of answerers: holds nothing to release. A subclass implements `answer`."""

    async def aclose(self) -> None:
        """Nothing to release."""


def count_tokens(text: str) -> int:
    """Approximate token count (words and punctuation), for context budgets."""
    return len(_TOKEN.findall(text))


class ExtractiveAnswerer(BaseAnswerer):
    """The baseline without a model: the sentence of the top results that shares the most
    content words with the question (earlier results win ties), citing its result."""

    def __init__(self, top_results: TopK = 3, max_words: MaxTokens = 60) -> None:
        TOP_K_RANGE.check("top_results", top_results)
        MAX_TOKENS_RANGE.check("max_words", max_words)
        self.top_results = top_results
        self.max_words = max_words

    async def answer(
        self, question: str, results: Sequence[QueryResult]
    ) -> tuple[str | None, tuple[str, ...]]:
        wanted = {w for w in _WORD.findall(question.lower()) if w not in _STOPWORDS}
        best: tuple[int, int, str, str] | None = None
        for rank, result in enumerate(results[: self.top_results]):
            for sentence in _SENTENCE.split(result.text):
                sentence = " ".join(sentence.split())
                if not sentence:
                    continue
                overlap = len(wanted & set(_WORD.findall(sentence.lower())))
                key = (overlap, -rank)
                if best is None or key > best[:2]:
                    best = (overlap, -rank, sentence, result.id)
        if best is None:
            return None, ()
        words = best[2].split()
        return " ".join(words[: self.max_words]), (best[3],)


class LLMAnswerer(BaseAnswerer):
    """Answers with any OpenAI-compatible chat endpoint over the top results.

    The prompt (with `{question}` and `{context}`) is part of the recipe; passages are
    numbered and added until `context_tokens` (approximate tokens) are used; `[n]` markers
    in the answer become citations of those results' ids. Answers are cached on disk by
    (endpoint, model, prompts, sampling), in `cache_dir` (default: `answers/` under the run's
    cache root during a run, following `runner.cache`); the key is read from `api_key_env`
    at call time and never logged or stored. Endpoint failures are retried by the client,
    then raised (the runner records them on the case).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        prompt: str = DEFAULT_ANSWER_PROMPT,
        system_prompt: str | None = None,
        context_tokens: MaxTokens = 2000,
        top_results: TopK = 10,
        temperature: Temperature | None = 0.0,
        max_tokens: MaxTokens | None = 256,
        cache_dir: str | Path | None = None,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff_seconds: float = 1.0,
        max_concurrency: int = 8,
    ) -> None:
        missing = [f for f in ("{question}", "{context}") if f not in prompt]
        if missing:
            raise ValueError(f"the answer prompt must contain {missing}")
        MAX_TOKENS_RANGE.check("context_tokens", context_tokens)
        TOP_K_RANGE.check("top_results", top_results)
        if temperature is not None:
            TEMPERATURE_RANGE.check("temperature", temperature)
        if max_tokens is not None:
            MAX_TOKENS_RANGE.check("max_tokens", max_tokens)
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
        self.prompt = prompt
        self.system_prompt = system_prompt
        self.context_tokens = context_tokens
        self.top_results = top_results
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.cache = JsonFileCache(cache_dir, "answers")

    def __repr__(self) -> str:
        return f"LLMAnswerer({self.client!r})"

    def context(self, results: Sequence[QueryResult]) -> tuple[str, list[str]]:
        """Numbered passages within the token budget, and the result id of each number."""
        passages: list[str] = []
        ids: list[str] = []
        used = 0
        for result in results[: self.top_results]:
            text = " ".join(result.text.split())
            cost = count_tokens(text)
            if passages and used + cost > self.context_tokens:
                break
            passages.append(f"[{len(passages) + 1}] {text}")
            ids.append(result.id)
            used += cost
        return "\n\n".join(passages), ids

    async def answer(
        self, question: str, results: Sequence[QueryResult]
    ) -> tuple[str | None, tuple[str, ...]]:
        context, ids = self.context(results)
        prompt = self.prompt.replace("{context}", context).replace("{question}", question)
        messages = (
            [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        ) + [{"role": "user", "content": prompt}]
        key = material_key(
            {
                "base_url": self.client.base_url,
                "model": self.client.model,
                "messages": messages,
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
            }
        )
        cached = self.cache.get(key)
        if cached is not None and isinstance(cached.get("answer"), str):
            text = cached["answer"]
        else:
            text = (
                await self.client.chat(
                    messages, temperature=self.temperature, max_tokens=self.max_tokens
                )
            ).strip()
            self.cache.put(key, {"answer": text, "model": self.client.model})
        cited = []
        for number in _CITATION.findall(text):
            index = int(number) - 1
            if 0 <= index < len(ids) and ids[index] not in cited:
                cited.append(ids[index])
        return text, tuple(cited)

    async def aclose(self) -> None:
        """Release the endpoint's connections."""
        await self.client.aclose()
