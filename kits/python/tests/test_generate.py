"""The committed models.py is what generate.py writes from the schemas: a schema change the kit
does not follow fails here (run `python kits/python/generate.py` and commit the result)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import generate

KIT = Path(__file__).resolve().parents[1]
ROOT = KIT.parents[1]
COMMITTED = KIT / "a2a_watcher_kit" / "models.py"


def copy_of_docs(into: Path) -> Path:
    """A repository root under `into` with a copy of docs/schemas and docs/openapi.json."""
    (into / "docs").mkdir()
    shutil.copytree(ROOT / "docs" / "schemas", into / "docs" / "schemas")
    shutil.copy(ROOT / "docs" / "openapi.json", into / "docs" / "openapi.json")
    return into


class GenerateTests(unittest.TestCase):
    def test_the_committed_models_are_what_the_schemas_generate(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "models.py"
            run = subprocess.run(
                [sys.executable, str(KIT / "generate.py"), "--out", str(out)],
                capture_output=True, text=True, check=False,
            )
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertEqual(
                out.read_text(), COMMITTED.read_text(),
                "kits/python/a2a_watcher_kit/models.py is stale: run python kits/python/generate.py",
            )
        check = subprocess.run([sys.executable, str(KIT / "generate.py"), "--check"],
                               capture_output=True, text=True, check=False)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)

    def test_a_changed_schema_makes_the_check_fail_with_a_diff(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = copy_of_docs(Path(tmp))
            path = root / "docs" / "schemas" / "Expectation.json"
            schema = json.loads(path.read_text())
            schema["properties"]["priority"] = {"type": "integer", "description": "How urgent."}
            path.write_text(json.dumps(schema))
            check = subprocess.run(
                [sys.executable, str(KIT / "generate.py"), "--root", str(root), "--check",
                 "--out", str(COMMITTED)],
                capture_output=True, text=True, check=False,
            )
            self.assertEqual(check.returncode, 1, check.stderr)
            self.assertIn("+    priority: int | None = None", check.stdout)
            self.assertIn("is not what kits/python/generate.py writes", check.stderr)

    def test_every_schema_file_becomes_a_class(self) -> None:
        text = COMMITTED.read_text()
        for file in sorted((ROOT / "docs" / "schemas").glob("*.json")):
            title = json.loads(file.read_text())["title"]
            self.assertIn(f"class {title}(Model):", text, file.name)

    def test_an_untranslatable_construct_stops_the_generator_naming_it(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = copy_of_docs(Path(tmp))
            path = root / "docs" / "schemas" / "Fact.json"
            schema = json.loads(path.read_text())
            schema["properties"]["observedAt"] = {"type": ["string", "integer"]}
            path.write_text(json.dumps(schema))
            with self.assertRaises(generate.Unsupported) as e:
                generate.generate(root)
            self.assertIn("Fact.observedAt", str(e.exception))

    def test_two_schemas_of_one_name_and_different_shapes_are_refused(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = copy_of_docs(Path(tmp))
            path = root / "docs" / "schemas" / "Subject.json"
            schema = json.loads(path.read_text())
            schema["required"] = ["type"]
            path.write_text(json.dumps(schema))
            with self.assertRaises(generate.Unsupported) as e:
                generate.generate(root)
            self.assertIn("Subject", str(e.exception))

    def test_a_final_dollar_becomes_end_of_text(self) -> None:
        self.assertEqual(generate.python_pattern("^a$"), "^a\\Z")
        self.assertEqual(generate.python_pattern("^a\\$"), "^a\\$")
        self.assertEqual(generate.snake("expectationId"), "expectation_id")
        self.assertEqual(generate.snake("from"), "from_")


if __name__ == "__main__":
    unittest.main()
