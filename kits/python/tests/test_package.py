"""Ready to publish: the kit's version is the watcher's, its licence is the repository's, and it
ships its type information."""

from __future__ import annotations

import re
import tomllib
import unittest
from pathlib import Path

import a2a_watcher_kit

KIT = Path(__file__).resolve().parents[1]
ROOT = KIT.parents[1]


class PackageTests(unittest.TestCase):
    def test_the_version_is_the_watchers(self) -> None:
        cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())
        project = tomllib.loads((KIT / "pyproject.toml").read_text())["project"]
        self.assertEqual(project["version"], cargo["package"]["version"])
        self.assertEqual(a2a_watcher_kit.__version__, project["version"])

    def test_the_licence_is_the_repositorys(self) -> None:
        cargo = tomllib.loads((ROOT / "Cargo.toml").read_text())
        project = tomllib.loads((KIT / "pyproject.toml").read_text())["project"]
        self.assertEqual(project["license"], cargo["workspace"]["package"]["license"])
        # flit takes licence files from the kit's own folder: this copy must stay the same text.
        self.assertEqual((KIT / "LICENSE").read_text(), (ROOT / "LICENSE").read_text())

    def test_it_is_typed(self) -> None:
        self.assertTrue((KIT / "a2a_watcher_kit" / "py.typed").is_file())

    def test_the_readme_quick_start_is_ten_lines(self) -> None:
        readme = (KIT / "README.md").read_text()
        m = re.search(r"## Quick start\n.*?```python\n(.*?)```", readme, re.S)
        assert m is not None, "README.md has a Quick start with a python block"
        lines = [line for line in m.group(1).splitlines() if line.strip()]
        self.assertLessEqual(len(lines), 10, "\n".join(lines))


if __name__ == "__main__":
    unittest.main()
