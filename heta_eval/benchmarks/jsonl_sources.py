"""Where a documents.jsonl line's bytes come from, checked as data: `text`, `content_base64`,
`path` (inside the benchmark's data directory) or `source_uri` (a public http(s) URL).

A data file must not turn a local file or an internal service into a document: `path` is
resolved (symlinks and `..` included) and must stay inside the directory of documents.jsonl,
`file:` URIs are refused, and so are URLs whose host is a loopback, private, link-local or
otherwise non-public address, unless the benchmark's config opts in
(`allow_paths_outside_data_dir`, `allow_private_urls`: true, or a list of host names).
Host names are judged as written here (`localhost` and `*.localhost` are loopback); the
fetch resolves them and checks every address and every redirect (`url_guard`).
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from heta_eval.benchmarks.jsonl_files import BenchmarkDataError
from heta_eval.benchmarks.url_guard import PrivateHosts, host_allowed, public_address

SOURCES = ("text", "content_base64", "path", "source_uri")
URL_SCHEMES = ("http", "https")


@dataclass(frozen=True)
class SourcePolicy:
    """What a benchmark's documents may point at beyond its own data directory."""

    data_dir: Path
    allow_paths_outside_data_dir: bool = False
    allow_private_urls: PrivateHosts = False


def document_source(record: dict[str, Any], policy: SourcePolicy, where: str) -> dict[str, Any]:
    """The record's fields for a BenchmarkDocument: its one source turned into `data`,
    `path` or `source_uri` (with a default name and media type); `where` is `file:line`."""
    given = [k for k in SOURCES if record.get(k) is not None]
    if len(given) != 1:
        shown = ", ".join(given) if given else "none"
        raise BenchmarkDataError(
            f"{where}: exactly one of text, content_base64, path and source_uri must be set, "
            f"got {shown}"
        )
    field = given[0]
    value = record.pop(field)
    if not isinstance(value, str):
        raise BenchmarkDataError(
            f"{where}: {field}: expected a string, got {type(value).__name__} ({value!r:.60})"
        )
    document_id = record.get("document_id")
    if field == "text":
        record["data"] = value.encode("utf-8")  # text is text, whatever it starts with
        default_name = f"{document_id}.txt"
    elif field == "content_base64":
        try:
            record["data"] = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise BenchmarkDataError(
                f"{where}: content_base64: not valid base64 ({exc}); binary content must be "
                "standard base64 (A-Z a-z 0-9 + /, padded with =)"
            ) from None
        default_name = f"{document_id}.bin"
        record.setdefault("media_type", "application/octet-stream")
    elif field == "path":
        record["path"] = _inside(value, policy, where)
        default_name = f"{document_id}.txt"
    else:
        record["source_uri"] = _public_url(value, policy, where)
        default_name = f"{document_id}.txt"
    if "name" not in record and isinstance(document_id, str):
        record["name"] = default_name
    return record


def _inside(value: str, policy: SourcePolicy, where: str) -> Path:
    data_dir = policy.data_dir.resolve()
    resolved = (data_dir / Path(value).expanduser()).resolve()
    if not policy.allow_paths_outside_data_dir and not resolved.is_relative_to(data_dir):
        raise BenchmarkDataError(
            f"{where}: path: {value!r} resolves to {resolved}, outside the benchmark's data "
            f"directory {data_dir} (the directory of documents.jsonl); move the file there, "
            "or set benchmark.allow_paths_outside_data_dir=true if the data file is yours"
        )
    return resolved


def _public_url(value: str, policy: SourcePolicy, where: str) -> str:
    parts = urlsplit(value.strip())
    scheme = parts.scheme.lower()
    if scheme == "file":
        if policy.allow_paths_outside_data_dir:
            return value
        raise BenchmarkDataError(
            f"{where}: source_uri: file: URIs are refused ({value!r:.80}); give a local file "
            "as `path` (inside the directory of documents.jsonl), or set "
            "benchmark.allow_paths_outside_data_dir=true if the data file is yours"
        )
    if scheme not in URL_SCHEMES or not parts.hostname:
        raise BenchmarkDataError(
            f"{where}: source_uri: expected an http(s) URL with a host, got {value!r:.80}"
        )
    if not host_allowed(parts.hostname, policy.allow_private_urls) and not _public_host(
        parts.hostname
    ):
        raise BenchmarkDataError(
            f"{where}: source_uri: {parts.hostname!r} is a loopback, private or link-local "
            f"address ({value!r:.80}); set benchmark.allow_private_urls=true to fetch "
            "documents from your own network"
        )
    return value


def _public_host(host: str) -> bool:
    name = host.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return False
    try:
        ipaddress.ip_address(name)
    except ValueError:
        try:
            socket.inet_aton(name)
        except OSError:
            return True  # a name: resolved and checked when the document is fetched
    return public_address(name)
