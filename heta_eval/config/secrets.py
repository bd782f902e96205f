"""Keep secrets (API keys, tokens, passwords) out of logs, params and reports.

The rules (docs/reliability.md's trust model lists them for users):

- by key name: a key whose last word names a secret (`api_key`, `openaiApiKey`,
  `aws_secret_access_key`, `private_key`, `db_password`, `auth_token`), and everything under a
  key named `secrets`;
- by value: the password of a URL (`http://user:KEY@host` becomes `http://user:***@host`),
  and any value equal to the value of an environment variable whose name says key, token,
  secret or password (`OPENAI_API_KEY`, `GITHUB_TOKEN`);
- by origin: a value written `${oc.env:NAME}` (see `interpolated_env_values`).

Masking a value in a config replaces it by `***`; scrubbing text replaces every occurrence of
a known secret, and of any prefix of 8 characters or more of it, by `***`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from heta_eval.redaction import (
    MASK,
    MIN_PREFIX,
    SECRET_SECTIONS,
    URL_CREDENTIALS,
    is_secret_key,
    mask_url_credentials,
    redact,
)

__all__ = ["MASK", "is_secret_key", "mask_url_credentials"]  # the rule lives in redaction

# Words of an environment variable's name that say its value is a secret.
_ENV_SECRET_WORDS = frozenset({"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD"})
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


def url_passwords(text: str) -> set[str]:
    """Passwords written into URLs in `text` (`scheme://user:PASSWORD@host`)."""
    return {m.group("pw") for m in URL_CREDENTIALS.finditer(text)}


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
        return mask_url_credentials(config)
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
    return f"{key}={scrub(mask_url_credentials(value), known)}"


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


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every occurrence of each secret value replaced by `***`, and every prefix
    of 8+ characters of one (what is left of a key in a message cut short)."""
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) < MIN_SCRUBBED:
            continue
        text = redact(text, secret)
    return text


def scrub_file(path: Path, secrets: Iterable[str]) -> bool:
    """Rewrite a text file (atomically) without the secret values; whether it changed."""
    import stat
    import tempfile

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    clean = scrub(text, secrets)
    if clean == text:
        return False
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".scrub.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(fd, stat.S_IMODE(os.stat(path).st_mode))  # the mode the file had
        handle.write(clean)
    os.replace(tmp, path)
    return True
