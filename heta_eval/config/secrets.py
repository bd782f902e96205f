"""Keep secrets (API keys, tokens, passwords) out of logs, params and reports.

The rules (docs/reliability.md's trust model lists them for users):

- by key name (`heta_eval.redaction.is_secret_key`): a key with a word that names a secret
  (`password`, `pwd`, `secret`, `session`, `cookie`, `ssh`, `bearer`, `auth`,
  `credentials`, ...), or whose last word is `key` or `token` (`api_key`, `sshKey`,
  `github-token`), in any case and with any separators; not a key whose last word points at
  a secret (`api_key_env`, `ssh_key_path`) nor a key of data (`primary_key`, `member_key`);
  and everything under a key named `secrets`;
- by value: the password of a URL (`http://user:KEY@host` becomes `http://user:***@host`),
  what looks like a credential (`Bearer ...`, `token ...`, a PEM block's body), and any
  value equal to the value of an environment variable whose name says key, token, secret or
  password (`OPENAI_API_KEY`, `GITHUB_TOKEN`);
- by origin: a value written `${oc.env:NAME}` (see `interpolated_env_values`);
- in free text (log lines, Hydra's launcher line): the value of every `KEY=VALUE` whose key
  names a secret (`mask_assignments`).

Masking a value in a config replaces it by `***`; scrubbing text replaces every occurrence of
a known secret, and of any prefix of 8 characters or more of it, by `***`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from heta_eval.config.resolve import ConfigError
from heta_eval.redaction import (
    MASK,
    MIN_PREFIX,
    SECRET_SECTIONS,
    is_secret_key,
    mask_credentials,
    mask_url_credentials,
    redact,
    url_password_spans,
)

__all__ = ["MASK", "is_secret_key", "mask_url_credentials"]  # the rule lives in redaction

# Words of an environment variable's name that say its value is a secret.
_ENV_SECRET_WORDS = frozenset(
    {"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PWD", "PASSPHRASE", "COOKIE"}
)
_ENV_SECRET_SUFFIXES = ("APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD")
_ENV_POINTER_WORDS = frozenset({"PATH", "FILE", "DIR", "ENV", "NAME", "ID", "URL", "HOST"})

CREDENTIAL_VARIABLES = ("MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN")
"""MLflow's credentials: masked at any length (scrubbed from text from MIN_SCRUBBED on)."""

# Shorter values are not scrubbed from text: they would mangle unrelated words, and are no
# real keys.
MIN_SCRUBBED = 6


_remembered: set[str] = set()  # secret values found in this process's config


def remember_secrets(values: Iterable[str]) -> None:
    """Mask these values (found in the config, e.g. by origin) wherever this process masks."""
    _remembered.update(v for v in values if v)


def is_secret_path(dotted: str) -> bool:
    """Whether a dotted config key (`recipe.metadata.secrets.x`) names a secret or lies
    under a `secrets` section."""
    parts = dotted.lstrip("+~").split(".")
    return is_secret_key(parts[-1]) or any(p.lower() in SECRET_SECTIONS for p in parts)


def is_secret_env_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret (`OPENAI_API_KEY`,
    `GITHUB_TOKEN`, `DB_PASSWORD`; not `KEYBOARD`, `TOKENIZERS_PARALLELISM`, or one that
    names where a secret is: `SSH_KEY_PATH`, `API_KEY_ENV`)."""
    upper = name.upper()
    words = [w for w in re.split(r"[_\-.]+", upper) if w]
    if words and words[-1] in _ENV_POINTER_WORDS:
        return False
    return bool(set(words) & _ENV_SECRET_WORDS) or upper.endswith(_ENV_SECRET_SUFFIXES)


def env_secret_values(environ: Mapping[str, str] | None = None) -> set[str]:
    """Values of the environment variables whose names say they hold secrets: long enough
    to be keys rather than flags, and not file paths (scrubbing a path from text would hide
    where files are)."""
    env = os.environ if environ is None else environ
    found = {
        value.strip()
        for name, value in env.items()
        if is_secret_env_name(name)
        and len(value.strip()) >= MIN_PREFIX
        and not value.strip().startswith(("/", "~", "."))
    }
    # The tracking server's credentials are secrets whatever they look like.
    return found | {env[n].strip() for n in CREDENTIAL_VARIABLES if env.get(n, "").strip()}


def check_tracking_uri(tracking: Mapping[str, Any] | None) -> None:
    """Refuse a tracking server URI with a password in it (`http://alice:PW@host`): the
    URI is written into the run directory, the reports and the logs, and MLflow takes a
    server's credentials from MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD. (A
    database store's URI, `postgresql://user:PW@host/db`, has no other place for them: it
    is masked wherever it is written.)"""
    if not isinstance(tracking, Mapping) or "uri" not in tracking:
        return
    key, uri = "tracking.uri", tracking.get("uri")
    if not uri:
        key, uri = "MLFLOW_TRACKING_URI", os.environ.get("MLFLOW_TRACKING_URI", "")
    uri = str(uri)
    if uri.lower().startswith(("http://", "https://")) and url_passwords(uri):
        raise ConfigError(
            f"{key}: {mask_url_credentials(uri)} has a password in it, which would be written "
            "into the run directory, the reports and the logs; give the URI without "
            "credentials and set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD "
            "(environment variables) instead"
        )


def url_passwords(text: str) -> set[str]:
    """Passwords written into URLs in `text` (`scheme://user:PASSWORD@host`)."""
    return {text[start:end] for start, end in url_password_spans(text)}


def mask_secrets(config: Any, values: Iterable[str] = ()) -> Any:
    """A copy of `config` with every secret masked: values under secret-looking keys (and
    under a `secrets` key) become `***`, URL passwords are masked, and a string equal to a
    secret value (`values`, and those of secret-named environment variables) becomes `***`."""
    known = {v for v in values if v} | env_secret_values() | _remembered
    return _mask(config, known)


def _mask(config: Any, known: set[str]) -> Any:
    if isinstance(config, Mapping):
        return {
            k: (MASK if is_secret_key(str(k)) and v not in (None, "", {}) else _mask(v, known))
            for k, v in config.items()
        }
    if isinstance(config, list | tuple):
        return [_mask(v, known) for v in config]
    if isinstance(config, str):
        if config.strip() in known:
            return MASK
        return mask_credentials(config)
    return config


def mask_override(override: str, values: Iterable[str] = ()) -> str:
    """A command-line override with its value masked when its key names a secret
    (`+recipe.metadata.api_key=sk-...` becomes `+recipe.metadata.api_key=***`), when the value
    is a known secret, the values of secret-named keys inside a list or dict value
    (`[{user: ann, password: ***}]`), and with URL passwords masked."""
    key, sep, value = override.partition("=")
    if not sep or not value:
        return override
    bare = value.strip().strip("'\"")
    known = {v for v in values if v} | env_secret_values() | _remembered
    if is_secret_path(key) or bare in known:
        return f"{key}={MASK}"
    if value.lstrip().startswith(("[", "{")):
        value = _IN_VALUE.sub(_mask_in_value, value)
    return f"{key}={scrub(mask_credentials(value), known)}"


# `name: value` inside an override's list or dict value; the value quoted, or up to `,]}`.
_IN_VALUE = re.compile(
    r"(?P<key>[A-Za-z_][\w\-.]*)(?P<colon>\s*:\s*)"
    r"(?P<value>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^,\]\}\[\{]+?)(?=\s*[,\]\}]|$)"
)


def _mask_in_value(match: re.Match[str]) -> str:
    if not is_secret_key(match.group("key")):
        return match.group(0)
    return f"{match.group('key')}{match.group('colon')}{MASK}"


def secret_values(config: Any) -> set[str]:
    """The secret values of a resolved config (to scrub from files and logs): values under
    secret-looking keys, URL passwords, and values equal to a secret environment variable's."""
    env = env_secret_values()
    return _secret_values(config, env)


def _secret_values(config: Any, env: set[str]) -> set[str]:
    found: set[str] = set()
    if isinstance(config, Mapping):
        for key, value in config.items():
            if is_secret_key(str(key)):
                found |= _leaves(value)
            else:
                found |= _secret_values(value, env)
    elif isinstance(config, list | tuple):
        for value in config:
            found |= _secret_values(value, env)
    elif isinstance(config, str):
        found |= url_passwords(config)
        if config.strip() in env:
            found.add(config.strip())
    return found


def _leaves(value: Any) -> set[str]:
    if isinstance(value, Mapping):
        return {leaf for v in value.values() for leaf in _leaves(v)}
    if isinstance(value, list | tuple):
        return {leaf for v in value for leaf in _leaves(v)}
    if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
        return {str(value).strip()}
    return set()


def interpolated_env_values(cfg: Any) -> set[str]:
    """Resolved values of the config's `${oc.env:NAME}` interpolations, whatever their key.

    Absolute paths (`${oc.env:HOME}/data`) are left out: they are no secrets, and scrubbing
    them from text would hide where outputs go."""
    from omegaconf import OmegaConf

    found: set[str] = set()

    def walk(node: Any) -> None:
        if OmegaConf.is_dict(node):
            keys = list(node.keys())
        elif OmegaConf.is_list(node):
            keys = list(range(len(node)))
        else:
            return
        for key in keys:
            if key == "hydra" and node is cfg:
                continue
            raw = node._get_node(key)
            value = raw._value() if raw is not None else None
            if isinstance(value, str) and "oc.env:" in value:
                try:
                    resolved = node[key]
                except Exception:  # unresolvable: named when the config is resolved
                    continue
                text = str(resolved).strip()
                if text and not text.startswith(("/", "~")):
                    found.add(text)
            elif raw is not None and (OmegaConf.is_dict(raw) or OmegaConf.is_list(raw)):
                walk(raw)

    walk(cfg)
    return found


_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
_MAX_KEY = 200
_VALUE_ENDS = frozenset(" \t\r\n,&;")
# Every secret key name holds one of these (a text without any has nothing to mask).
_KEY_HINTS = ("key", "token", "pass", "pwd", "secret", "cred", "cookie", "session", "ssh")
_KEY_HINTS += ("bearer", "auth")


def mask_assignments(text: str) -> str:
    """`text` with the value of every `KEY=VALUE` whose key names a secret masked
    (`+recipe.metadata.password=hunter2` -> `+recipe.metadata.password=***`; a quoted value
    as a whole, else up to a space, `,`, `&` or `;`). Linear in the text."""
    lower = text.lower()
    if "=" not in text or not any(hint in lower for hint in _KEY_HINTS):
        return text
    parts: list[str] = []
    done = 0
    equals = text.find("=")
    while equals != -1:
        start = equals
        while start > 0 and equals - start < _MAX_KEY and text[start - 1] in _KEY_CHARS:
            start -= 1
        key = text[start:equals]
        end = equals + 1
        if start >= done and key and is_secret_path(key) and end < len(text):
            quote = text[end]
            if quote in "'\"":
                close = text.find(quote, end + 1)
                end = len(text) if close == -1 else close + 1
            else:
                while end < len(text) and text[end] not in _VALUE_ENDS:
                    end += 1
            if end > equals + 1 and text[equals + 1 : end] != MASK:
                parts += [text[done : equals + 1], MASK]
                done = end
        equals = text.find("=", max(end, equals + 1))
    return "".join(parts) + text[done:] if parts else text


def mask_text(text: str, secrets: Iterable[str] = ()) -> str:
    """Free text (a log line, an error message) with every known secret scrubbed, URL
    passwords and credential-looking values masked, and secret-named `KEY=VALUE`s masked."""
    return mask_assignments(mask_credentials(scrub(text, secrets)))


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every occurrence of each secret value replaced by `***`, and every prefix
    of 8+ characters of one (what is left of a key in a message cut short)."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) < MIN_SCRUBBED:
            continue
        text = redact(text, secret)
    return text
