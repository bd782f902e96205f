"""The configuration: Hydra composition, validation, `_target_` resolution, secrets masking.

Modules: `compose` (composition from overrides, for the library API), `resolve` (the
composed config as plain data; `ConfigError`), `components` (`_target_` resolution with errors
that say what was meant), `ranges` (the numbers a component argument allows), `secrets` and
`hydra_outputs` (keys kept out of every output), `env_names` (no name or path from the
environment). The
package sits low: `kb`, `tracking` and `run` use it, it uses none of them; turning a config
into a run's components is `heta_eval.run.assembly`.
"""

from __future__ import annotations

from pathlib import Path


def config_dir() -> Path:
    """The Hydra config groups: inside the package in a wheel, `conf/` in a source checkout."""
    package = Path(__file__).resolve().parent.parent
    packaged = package / "conf"
    return packaged if packaged.is_dir() else package.parent / "conf"
