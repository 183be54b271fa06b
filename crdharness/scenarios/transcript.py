"""A transcript a person can follow: each documented step, what was done, what was observed.

Scenario tests write one to ``artifacts/transcripts/<name>.md`` (also when they fail, so a
failure shows how far the scenario got); the pytest plugin prints those written during the
run at its end — from files, so it works with pytest-xdist workers too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from crdharness import paths


def _directory() -> Path:
    return paths.artifacts() / "transcripts"


@dataclass
class Step:
    title: str
    documented: str
    actions: list[str] = field(default_factory=list)
    observations: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Transcript:
    name: str
    title: str
    steps: list[Step] = field(default_factory=list)

    def step(self, title: str, documented: str = "") -> Step:
        self.steps.append(Step(title, documented))
        return self.steps[-1]

    def action(self, text: str) -> None:
        self.steps[-1].actions.append(text)

    def observe(self, what: str, value) -> None:
        self.steps[-1].observations.append((what, str(value)))

    def render(self) -> str:
        lines = [f"# {self.title}", ""]
        for step in self.steps:
            lines.append(f"## {step.title}")
            if step.documented:
                lines.append(f"> {step.documented}")
            lines.extend(f"- did: {a}" for a in step.actions)
            lines.extend(f"- saw: {w}: {v}" for w, v in step.observations)
            lines.append("")
        return "\n".join(lines)

    def __enter__(self) -> Transcript:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc is not None:
            self.step("(scenario stopped here)", "")
            self.observe("failure", f"{exc_type.__name__}: {str(exc).splitlines()[0][:300]}")
        self.write()

    def write(self) -> Path:
        _directory().mkdir(parents=True, exist_ok=True)
        path = _directory() / f"{self.name}.md"
        path.write_text(self.render())
        return path


def written_since(timestamp: float) -> list[Path]:
    if not _directory().is_dir():
        return []
    return sorted(p for p in _directory().glob("*.md") if p.stat().st_mtime >= timestamp)
