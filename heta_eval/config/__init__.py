"""The configuration: Hydra composition, validation, `_target_` resolution, secrets masking.

Modules: `assembly` (a composed config → validated, ready-to-run components), `components`
(`_target_` resolution with errors that say what was meant), `compose` (composition from
overrides, for the library API), `secrets` and `hydra_outputs` (keys kept out of every output).
"""

from __future__ import annotations

from pathlib import Path


def config_dir() -> Path:
    """The Hydra config groups: inside the package in a wheel, `conf/` in a source checkout."""
    package = Path(__file__).resolve().parent.parent
    packaged = package / "conf"
    return packaged if packaged.is_dir() else package.parent / "conf"
