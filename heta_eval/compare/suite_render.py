"""A suite comparison for the terminal and as files: each member's comparison in its own
directory (comparison.md/.html/.json, with power), and suite_comparison.md/.json holding the
macro average over the members."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from heta_eval.compare.power import power_text
from heta_eval.compare.render import rich_table, write_outputs
from heta_eval.compare.suites import SuiteComparison

MACRO_COLUMNS = (
    "metric", "run", "against", "members", "Δ (macro)", "95% CI", "p (z)", "Holm p", "n", "MDE",
    "n needed", "verdict",
)  # fmt: skip


def macro_rows(comparison: SuiteComparison) -> list[list[str]]:
    rows = []
    for t in comparison.macro:
        mde, needed, verdict = power_text(t.power, t.difference)
        rows.append(
            [
                t.metric,
                t.run,
                t.baseline,
                str(len(t.members)),
                f"{t.difference:+.4f}" + (" *" if t.significant else ""),
                f"[{t.ci_low:+.3f}, {t.ci_high:+.3f}]",
                f"{t.p_value:.4f}",
                f"{t.p_holm:.4f}",
                str(t.paired),
                mde,
                needed,
                verdict,
            ]
        )
    return rows


def macro_guide(comparison: SuiteComparison) -> str:
    return (
        "Macro average: the unweighted mean over the members of each member's mean paired "
        "difference (run - against); its standard error combines the members' as independent "
        "(sqrt(sum of s_m^2 / n_m) / M), with a two-sided z-test "
        "(Holm-corrected over the macro tests; * marks Holm p < alpha) and its 95% interval. MDE: "
        f"the smallest macro difference detected with 80% power at alpha = {comparison.alpha:g}; "
        "n needed: the total paired cases (every member grown in proportion) to detect the "
        "observed macro Δ. Each member's own tests are Holm-corrected within the member."
    )


def rich_suite(comparison: SuiteComparison) -> Group:
    parts: list = []
    for member, member_comparison in comparison.members.items():
        parts.append(Text(f"\n{comparison.member_key}={member}", style="bold"))
        parts.append(rich_table(member_comparison))
    macro = Table(
        title=f"suite {comparison.suite}: macro average over the members", title_justify="left"
    )
    for name in MACRO_COLUMNS:
        macro.add_column(name, justify="left" if name in ("metric", "run", "against") else "right")
    for row in macro_rows(comparison):
        macro.add_row(*(escape(c) for c in row))
    parts += [Text(""), macro, Text(macro_guide(comparison))]
    if comparison.unpaired:
        parts.append(Text(f"members with one run only: {', '.join(comparison.unpaired)}"))
    return Group(*parts)


def to_markdown(comparison: SuiteComparison) -> str:
    lines = [f"# Suite {comparison.suite}: comparison per member and macro average", ""]
    lines += ["## Macro average", ""]
    lines.append("| " + " | ".join(MACRO_COLUMNS) + " |")
    lines.append("|" + "---|" * len(MACRO_COLUMNS))
    lines += [
        "| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in macro_rows(comparison)
    ]
    lines += ["", macro_guide(comparison), "", "## Members", ""]
    for member in comparison.members:
        link = f"{member}/comparison.md"
        lines.append(f"- `{comparison.member_key}={member}`: [{link}]({link})")
    if comparison.unpaired:
        lines += ["", f"Members with one run only: {', '.join(comparison.unpaired)}"]
    return "\n".join(lines) + "\n"


def write_suite_outputs(comparison: SuiteComparison, out_dir: Path) -> dict[str, Path]:
    """Each member's outputs in `out_dir/<member>/`; suite_comparison.md and .json."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for member, member_comparison in comparison.members.items():
        for kind, path in write_outputs(member_comparison, out_dir / member).items():
            paths[f"{member} {kind}"] = path
    md = out_dir / "suite_comparison.md"
    md.write_text(to_markdown(comparison), encoding="utf-8")
    js = out_dir / "suite_comparison.json"
    js.write_text(json.dumps(comparison.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
    paths["markdown"], paths["json"] = md, js
    return paths
