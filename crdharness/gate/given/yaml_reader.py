"""A small YAML file read node by node, so every problem names its line and key
(``gate.yaml:7: webhook.comand: unknown key (known: ...)``): the gate file's reader."""

from __future__ import annotations

from pathlib import Path

import yaml

from crdharness.gate.given.config import GateConfigError


class Reader:
    """Walks the composed YAML so every error can name its line."""

    def __init__(self, source: Path):
        self.source = source
        try:
            text = source.read_text()
        except OSError as exc:
            raise GateConfigError(f"{source}: cannot read the gate file: {exc.strerror}") from None
        try:
            self.node = yaml.compose(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{source}:{mark.line + 1}" if mark else str(source)
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise GateConfigError(f"{where}: not valid YAML: {problem}") from None

    def fail(self, node: yaml.Node | None, key: str, problem: str) -> GateConfigError:
        line = f":{node.start_mark.line + 1}" if node is not None else ""
        return GateConfigError(f"{self.source}{line}: {key}: {problem}")

    def mapping(self, node, key: str, known: set[str]) -> dict[str, yaml.Node]:
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, key or "(top)", "must be a mapping of keys to values")
        result = {}
        for key_node, value_node in node.value:
            name = key_node.value
            if name not in known:
                raise self.fail(
                    key_node,
                    f"{key}.{name}" if key else name,
                    f"unknown key (known: {', '.join(sorted(known))})",
                )
            result[name] = value_node
        return result

    def scalar(self, node, key: str, kind: type):
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, key, f"must be a {kind.__name__}")
        value = yaml.safe_load(yaml.serialize(node))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if kind is str and isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)  # `1.37` in YAML is a float; as a version it is a string
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.fail(node, key, f"must be a {kind.__name__}, not {value!r}")
        return value

    def at_least(self, node, key: str, kind: type, least: int):
        """A number of ``kind``, ``least`` or more."""
        value = self.scalar(node, key, kind)
        if value < least:
            raise self.fail(node, key, f"must be {least} or more")
        return value

    def strings(self, node, key: str) -> list[str]:
        if isinstance(node, yaml.ScalarNode):
            return [self.scalar(node, key, str)]
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, key, "must be a string or a list of strings")
        return [self.scalar(item, f"{key}[{i}]", str) for i, item in enumerate(node.value)]

    def path(self, node, key: str, must_exist: bool = True) -> Path:
        path = (self.source.parent / self.scalar(node, key, str)).resolve()
        if must_exist and not path.exists():
            raise self.fail(node, key, f"{path} does not exist")
        return path
