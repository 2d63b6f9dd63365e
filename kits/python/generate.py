"""Writes `a2a_watcher_kit/models.py` from the JSON Schemas the watcher publishes: every file of
`docs/schemas/` (with the `$defs` they carry) and the answers of the watcher's HTTP API the kit's
client reads, from `docs/openapi.json` (`OPENAPI_COMPONENTS` below, with what they refer to).

    python kits/python/generate.py            # rewrite the committed models.py
    python kits/python/generate.py --check    # exit 1, with a diff, if it is not what this writes
    python kits/python/generate.py --out DIR/models.py

Standard library only. Each object schema becomes a keyword-only dataclass (snake_case
attributes, camelCase wire names, `to_dict`/`from_dict`, checked on construction); each `oneOf`
of string constants a `Literal` alias with its values. A schema this generator cannot translate
stops it with a message naming the schema and the construct, rather than being guessed.
"""

from __future__ import annotations

import argparse
import difflib
import json
import keyword
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
OUT = HERE / "a2a_watcher_kit" / "models.py"

# The answers (and the one request body) of the routes `WatcherClient` calls (docs/openapi.json).
OPENAPI_COMPONENTS = [
    "FactsOutcome",
    "LapsesPage",
    "RetryRequest",
    "RetryAnswer",
    "SubjectView",
    "Problem",
]

# What a value of a format is, in an error message's words.
HINTS = {
    "date-time": "an RFC 3339 instant with an offset, such as 2026-09-10T20:15:00Z",
    "duration": "an ISO 8601 duration, such as PT2H or P1DT12H",
}

HEADER = '''"""The wire types of the Expectations extension and the watcher's API, as dataclasses.

generated from docs/schemas and docs/openapi.json by kits/python/generate.py; do not edit.
"""
# ruff: noqa: E501

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from ._runtime import Field, Model, Spec
'''


class Unsupported(Exception):
    """A schema construct this generator does not translate."""


def snake(name: str) -> str:
    """`expectationId` -> `expectation_id`; a Python keyword gets a trailing underscore."""
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
    return s + "_" if keyword.iskeyword(s) else s


def python_pattern(p: str) -> str:
    """A JSON Schema (ECMA-262) pattern as a Python one: a final `$` matches only at the very
    end in ECMA, but before a trailing newline too in Python, so it becomes `\\Z`."""
    if p.endswith("$") and not p.endswith("\\$"):
        return p[:-1] + r"\Z"
    return p


def shape(schema: Any) -> Any:
    """A schema without its prose, to compare two schemas that share a name."""
    if isinstance(schema, dict):
        return {k: shape(v) for k, v in schema.items() if k not in ("description", "title", "$schema", "$defs", "default")}
    if isinstance(schema, list):
        return [shape(v) for v in schema]
    return schema


@dataclass
class Named:
    """A schema with a name of its own: an object (a class) or a `oneOf` of constants (an alias)."""

    name: str
    schema: dict[str, Any]
    origin: str
    # Names whose definitions this one refers to (so they are written before it).
    refs: list[str] = field(default_factory=list)


@dataclass
class Doc:
    """One JSON document (`origin` is its path in the repository), against which its `$ref`s
    (`#/$defs/X`, `#/components/schemas/X`) resolve."""

    origin: str
    body: dict[str, Any]


class Generator:
    """Collects the named schemas (dependencies first, in `order`) and renders models.py."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.named: dict[str, Named] = {}
        self.order: list[str] = []
        self.schema_titles: dict[str, str] = {}

    # -- collecting ----------------------------------------------------------------------------

    def resolve(self, ref: str, doc: Doc) -> tuple[str, dict[str, Any], Doc]:
        """The name, schema and document a `$ref` in `doc` points at."""
        if ref.startswith("#/$defs/"):
            name = ref[len("#/$defs/"):]
            return name, doc.body["$defs"][name], doc
        if ref.startswith("#/components/schemas/"):
            name = ref[len("#/components/schemas/"):]
            return name, doc.body["components"]["schemas"][name], doc
        m = re.fullmatch(r"(?:\.\./)?(?:docs/)?schemas/([A-Za-z0-9]+)\.json", ref)
        if m:
            file = self.root / "docs" / "schemas" / f"{m.group(1)}.json"
            body = json.loads(file.read_text())
            return body.get("title", m.group(1)), body, Doc(f"docs/schemas/{file.name}", body)
        raise Unsupported(f"{doc.origin}: $ref {ref!r}")

    def add(self, name: str, schema: dict[str, Any], doc: Doc) -> None:
        """Records `name` (and, first, everything it refers to) unless it is recorded already with
        the same shape; a different shape under the same name stops the generator."""
        if name in self.named:
            if shape(self.named[name].schema) != shape(schema):
                raise Unsupported(f"{name} in {doc.origin} differs from {name} in {self.named[name].origin}")
            return
        entry = Named(name, schema, doc.origin)
        self.named[name] = entry  # before the refs: a schema may refer to itself
        for ref in sorted(set(self.refs_in(schema))):
            ref_name, ref_schema, ref_doc = self.resolve(ref, doc)
            if self.is_named(ref_schema):
                self.add(ref_name, ref_schema, ref_doc)
                entry.refs.append(ref_name)
            else:
                # Inline (e.g. an anyOf of two strings): its own refs still need collecting.
                for inner in self.refs_in(ref_schema):
                    inner_name, inner_schema, inner_doc = self.resolve(inner, ref_doc)
                    self.add(inner_name, inner_schema, inner_doc)
        self.order.append(name)

    def refs_in(self, schema: Any) -> list[str]:
        """Every `$ref` in `schema`, at any depth (not inside a nested `$defs`)."""
        if isinstance(schema, dict):
            out = [schema["$ref"]] if isinstance(schema.get("$ref"), str) else []
            for k, v in schema.items():
                if k not in ("$defs",):
                    out += self.refs_in(v)
            return out
        if isinstance(schema, list):
            return [r for v in schema for r in self.refs_in(v)]
        return []

    @staticmethod
    def is_named(schema: dict[str, Any]) -> bool:
        """Whether `schema` gets a name of its own in models.py (a class or a Literal alias)."""
        return "properties" in schema or Generator.enum_values(schema) is not None

    @staticmethod
    def enum_values(schema: dict[str, Any]) -> list[str] | None:
        """The constants of a `oneOf` of string constants, else `None`."""
        alts = schema.get("oneOf")
        if isinstance(alts, list) and alts and all(isinstance(a, dict) and isinstance(a.get("const"), str) for a in alts):
            return [a["const"] for a in alts]
        return None

    def collect(self) -> None:
        """Every file of docs/schemas (sorted), then `OPENAPI_COMPONENTS`."""
        files = sorted((self.root / "docs" / "schemas").glob("*.json"))
        for file in files:
            body = json.loads(file.read_text())
            name = body.get("title", file.stem)
            self.schema_titles[name] = f"docs/schemas/{file.name}"
            self.add(name, body, Doc(f"docs/schemas/{file.name}", body))
        openapi = json.loads((self.root / "docs" / "openapi.json").read_text())
        doc = Doc("docs/openapi.json", openapi)
        for name in OPENAPI_COMPONENTS:
            self.add(name, openapi["components"]["schemas"][name], doc)

    # -- writing -------------------------------------------------------------------------------

    def type_of(self, schema: Any, doc_origin: str, where: str) -> tuple[str, str, bool]:
        """(Python annotation, `Spec(...)` source, nullable) for a property's schema."""
        if schema is True or schema == {}:
            return "Any", 'Spec("any")', False
        if not isinstance(schema, dict):
            raise Unsupported(f"{where}: schema {schema!r}")
        nullable = False
        if "anyOf" in schema:
            alts = [a for a in schema["anyOf"] if a != {"type": "null"}]
            nullable = len(alts) < len(schema["anyOf"])
            if len(alts) == 1:
                ann, spec, inner_null = self.type_of(alts[0], doc_origin, where)
                return ann, self.with_null(spec, nullable or inner_null), nullable or inner_null
            if all(isinstance(a, dict) and a.get("type") == "string" for a in alts):
                # Alternatives that are all strings (ClaimedObservedAt): any string.
                return "str", self.with_null('Spec("str")', nullable), nullable
            raise Unsupported(f"{where}: anyOf {alts!r}")
        if "$ref" in schema:
            ref = schema["$ref"]
            name = ref.rsplit("/", 1)[-1].removesuffix(".json")
            if ref.endswith(".json"):
                name = next((n for n, o in self.schema_titles.items() if o.endswith(f"/{name}.json")), name)
            target = self.named.get(name)
            if target is None:
                # An inline definition (not a class or alias): translate it in place.
                _, body, _ = self.resolve(ref, Doc(doc_origin, self.doc_body(doc_origin)))
                return self.type_of(body, doc_origin, where)
            values = self.enum_values(target.schema)
            if values is not None:
                return name, f'Spec("enum", values={tuple(values)!r})', False
            return name, f'Spec("model", model={name})', False
        values = self.enum_values(schema)
        if values is not None:
            ann = "Literal[" + ", ".join(json.dumps(v) for v in values) + "]"
            return ann, f'Spec("enum", values={tuple(values)!r})', False
        types = schema.get("type")
        if types is None:
            if "properties" in schema or "oneOf" in schema or "allOf" in schema:
                raise Unsupported(f"{where}: an untyped composite schema")
            return "Any", 'Spec("any")', False
        if isinstance(types, list):
            nullable = "null" in types
            types = [t for t in types if t != "null"]
            if len(types) != 1:
                raise Unsupported(f"{where}: type {schema['type']!r}")
            types = types[0]
        args: list[str] = []
        if nullable:
            args.append("nullable=True")
        if types == "string":
            for key, arg in (("minLength", "min_length"), ("maxLength", "max_length")):
                if key in schema:
                    args.append(f"{arg}={int(schema[key])}")
            if "pattern" in schema:
                args.append(f"pattern={python_pattern(schema['pattern'])!r}")
                hint = HINTS.get(schema.get("format", "")) or (HINTS["duration"] if schema["pattern"].startswith("^P") else None)
                if hint:
                    args.append(f"hint={hint!r}")
            if "const" in schema:
                args.append(f"values={(schema['const'],)!r}")
                return f"Literal[{json.dumps(schema['const'])}]", self.spec("enum", args), nullable
            return "str", self.spec("str", args), nullable
        if types == "integer":
            if "minimum" in schema:
                args.append(f"minimum={int(schema['minimum'])}")
            return "int", self.spec("int", args), nullable
        if types == "number":
            return "float", self.spec("num", args), nullable
        if types == "boolean":
            return "bool", self.spec("bool", args), nullable
        if types == "array":
            item_ann, item_spec, item_null = self.type_of(schema.get("items", True), doc_origin, f"{where}[]")
            if item_null:
                item_ann = f"{item_ann} | None"
            for key, arg in (("minItems", "min_items"), ("maxItems", "max_items")):
                if key in schema:
                    args.append(f"{arg}={int(schema[key])}")
            args.append(f"items={item_spec}")
            return f"list[{item_ann}]", self.spec("list", args), nullable
        if types == "object":
            if "properties" in schema:
                raise Unsupported(f"{where}: an inline object with properties (give it a name in $defs)")
            return "dict[str, Any]", self.spec("map", args), nullable
        raise Unsupported(f"{where}: type {types!r}")

    def doc_body(self, origin: str) -> dict[str, Any]:
        """The JSON document at `origin` (a path in the repository)."""
        body: dict[str, Any] = json.loads((self.root / origin).read_text())
        return body

    @staticmethod
    def spec(kind: str, args: list[str]) -> str:
        return f'Spec("{kind}"' + "".join(", " + a for a in args) + ")"

    @staticmethod
    def with_null(spec: str, nullable: bool) -> str:
        if not nullable or "nullable=True" in spec:
            return spec
        return spec[:-1] + ", nullable=True)"

    @staticmethod
    def docstring(text: str, indent: str) -> str:
        text = text.strip().replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
        lines = text.splitlines() or [""]
        if len(lines) == 1 and not text.endswith('"'):
            return f'{indent}"""{text}"""\n'
        body = "\n".join((indent + line) if line else "" for line in lines)
        return f'{indent}"""\n{body}\n{indent}"""\n'

    def write_one(self, entry: Named) -> str:
        """The source of one named schema: a Literal alias or a dataclass with its field table."""
        schema = entry.schema
        name = entry.name
        values = self.enum_values(schema)
        if values is not None:
            out = f"{name} = Literal[" + ", ".join(json.dumps(v) for v in values) + "]\n"
            out += self.docstring(schema.get("description", name), "")
            described = "".join(f"#: - `{a['const']}`: {a.get('description', '').splitlines()[0] if a.get('description') else ''}\n" for a in schema["oneOf"])
            out += described
            out += f"{snake(name).upper()}_VALUES: tuple[{name}, ...] = {tuple(values)!r}\n"
            return out
        if schema.get("type") != "object":
            raise Unsupported(f"{name} ({entry.origin}): properties on a non-object")
        required = set(schema.get("required", []))
        lines = ["@dataclass(kw_only=True)\n", f"class {name}(Model):\n"]
        doc = schema.get("description", name)
        doc += f"\n\nFrom {entry.origin}."
        lines.append(self.docstring(doc, "    "))
        lines.append("\n")
        table: list[str] = []
        for wire, prop in schema["properties"].items():
            attr = snake(wire)
            if attr in ("extra", "to_dict", "from_dict"):
                raise Unsupported(f"{name}.{wire}: clashes with the Model's own {attr}")
            ann, spec, nullable = self.type_of(prop, entry.origin, f"{name}.{wire}")
            is_required = wire in required
            if nullable or not is_required:
                ann = f"{ann} | None"
                spec = self.with_null(spec, True) if nullable else spec
            default = "" if is_required else " = None"
            lines.append(f"    {attr}: {ann}{default}\n")
            if isinstance(prop, dict) and prop.get("description"):
                lines.append(self.docstring(prop["description"], "    "))
            table.append(f"        Field({attr!r}, {wire!r}, {is_required}, {spec}),\n")
        lines.append("    extra: dict[str, Any] = field(default_factory=dict, repr=False)\n")
        lines.append('    """Members the schema does not define, kept as given."""\n\n')
        lines.append("    _fields: ClassVar[tuple[Field, ...]] = (\n")
        lines += table
        lines.append("    )\n")
        return "".join(lines)

    def render(self) -> str:
        """The whole of models.py."""
        parts = [HEADER]
        names = self.order
        parts.append("\n__all__ = [\n" + "".join(f'    "{n}",\n' for n in sorted(names)) + "".join(
            f'    "{snake(n).upper()}_VALUES",\n' for n in sorted(names) if self.enum_values(self.named[n].schema) is not None
        ) + "]\n")
        for n in names:
            parts.append("\n\n" + self.write_one(self.named[n]))
        return "".join(parts)


def generate(root: Path = ROOT) -> str:
    """The text of models.py for the schemas under `root`. Raises `Unsupported` naming the
    schema construct it cannot translate."""
    g = Generator(root)
    g.collect()
    return g.render()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository (docs/schemas, docs/openapi.json)")
    parser.add_argument("--out", type=Path, default=OUT, help="where to write models.py")
    parser.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    args = parser.parse_args()
    try:
        text = generate(args.root)
    except Unsupported as e:
        print(f"generate.py: cannot translate {e}", file=sys.stderr)
        return 2
    if args.check:
        old = args.out.read_text() if args.out.exists() else ""
        if old == text:
            return 0
        sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True), str(args.out), "generated"))
        print(f"{args.out} is not what kits/python/generate.py writes: run it and commit the result", file=sys.stderr)
        return 1
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
