"""The repositories SWE tasks are built from: real projects' source distributions, as a `Snapshot`.

The bundled projects are small, permissively licensed, pure-Python packages whose sdists on PyPI
ship their own test suites. `make setup` downloads the sdists (`scripts/setup_swe.sh`, with
`pip download --no-deps --no-binary :all:`) into `sdist_dir()`; nothing of them is copied into
gfcr. A user's own repository becomes a snapshot with `Snapshot.from_directory`.

>>> sorted(PROJECTS)
['cachetools', 'inflection', 'parse', 'toolz']
>>> PROJECTS["cachetools"].pythonpath
('src',)
"""

from __future__ import annotations

import functools
import io
import os
import sys
import tarfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from gfcr.envs.swe import diffs
from gfcr.errors import ConfigError, GfcrError

SKIPPED_PARTS = {"__pycache__", ".git", ".pytest_cache", ".mypy_cache", ".tox", ".venv", "node_modules"}


@dataclass(frozen=True)
class Project:
    """One bundled project: its sdist, where its code and tests are, and how its tests import it.

    `sources` are the modules bugs are injected into; `tests` the test files or folders whose
    tests judge a task; `pythonpath` folders (relative to the root) the tests import from.
    """

    name: str
    version: str
    licence: str
    sources: tuple[str, ...]
    tests: tuple[str, ...]
    pythonpath: tuple[str, ...] = ()

    @property
    def ref(self) -> str:
        """How a task names its repository: "name@version"."""
        return f"{self.name}@{self.version}"

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"


PROJECTS: dict[str, Project] = {
    project.name: project
    for project in (
        Project("inflection", "0.5.1", "MIT", ("inflection/__init__.py",), ("test_inflection.py",)),
        Project("parse", "1.22.4", "MIT", ("parse/__init__.py",), ("tests",)),
        Project(
            "cachetools",
            "8.0.2",
            "MIT",
            ("src/cachetools/__init__.py", "src/cachetools/keys.py", "src/cachetools/func.py"),
            ("tests",),
            ("src",),
        ),
        Project(
            "toolz",
            "1.2.0",
            "BSD-3-Clause",
            ("toolz/itertoolz.py", "toolz/functoolz.py", "toolz/dicttoolz.py", "toolz/recipes.py"),
            ("toolz/tests",),
        ),
    )
}


@dataclass(frozen=True)
class Snapshot:
    """A repository's files as one gzipped tar (what a sandbox unpacks), with how its tests import it.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp()); _ = (root / "mod.py").write_text("x = 1\\n")
    >>> snapshot = Snapshot.from_directory(root)
    >>> snapshot.files()
    {'mod.py': b'x = 1\\n'}
    """

    name: str
    archive: bytes
    pythonpath: tuple[str, ...] = ()

    @classmethod
    def from_files(
        cls, name: str, files: Iterable[tuple[str, bytes]], pythonpath: tuple[str, ...] = ()
    ) -> Snapshot:
        """A snapshot of (relative path, content) pairs."""
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as archive:
            for path, data in sorted(files):
                info = tarfile.TarInfo(path)
                info.size, info.mode, info.mtime = len(data), 0o644, 0
                archive.addfile(info, io.BytesIO(data))
        return cls(name, buffer.getvalue(), pythonpath)

    @classmethod
    def from_directory(cls, root: str | Path, pythonpath: tuple[str, ...] = ()) -> Snapshot:
        """A snapshot of a directory's regular files (caches, .git and virtual envs left out)."""
        root = Path(root).resolve()
        if not root.is_dir():
            raise ConfigError(
                f"repository {str(root)!r} is not a folder; pass the path of a checked-out repository"
            )
        files = [
            (path.relative_to(root).as_posix(), path.read_bytes())
            for path in sorted(root.rglob("*"))
            if path.is_file()
            and not path.is_symlink()
            and not SKIPPED_PARTS & set(path.relative_to(root).parts)
        ]
        return cls.from_files(root.name, files, pythonpath)

    def files(self) -> dict[str, bytes]:
        """Every file: relative path -> content."""
        with tarfile.open(fileobj=io.BytesIO(self.archive), mode="r:gz") as archive:
            return {m.name: archive.extractfile(m).read() for m in archive.getmembers() if m.isfile()}  # type: ignore[union-attr]

    def changed(self, changes: Mapping[str, bytes | None]) -> Snapshot:
        """This snapshot with `changes` made: path -> new content, None to delete the file."""
        if not changes:
            return self
        files = {**self.files(), **changes}
        return self.with_files({p: d for p, d in files.items() if d is not None})

    def with_files(self, files: Mapping[str, bytes]) -> Snapshot:
        """A snapshot of `files` with this one's name and `pythonpath`."""
        return Snapshot.from_files(self.name, files.items(), self.pythonpath)

    def patched(self, *patches: str) -> Snapshot:
        """This snapshot with unified diffs applied in order (read by `gfcr.envs.swe.diffs`).

        >>> fix = "--- a/m.py\\n+++ b/m.py\\n@@ -1 +1 @@\\n-x = 1\\n+x = 2\\n"
        >>> Snapshot.from_files("demo", [("m.py", b"x = 1\\n")]).patched(fix).files()
        {'m.py': b'x = 2\\n'}
        """
        patches = tuple(patch for patch in patches if patch.strip())
        if not patches:
            return self
        files = self.files()
        for patch in patches:
            files = diffs.patched(files, patch)
        return self.with_files(files)


def sdist_dir() -> Path:
    """Where `make setup` puts the projects' sdists: $GFCR_SWE_SDISTS, else <venv>/share/gfcr/swe."""
    return Path(os.environ.get("GFCR_SWE_SDISTS") or Path(sys.prefix) / "share" / "gfcr" / "swe")


@functools.cache
def project_snapshot(name: str) -> Snapshot:
    """The pristine repository of bundled project `name`, read from its sdist."""
    project = PROJECTS[name]
    stem = f"{project.name.replace('-', '_')}-{project.version}"
    path = sdist_dir() / f"{stem}.tar.gz"
    if not path.exists():
        raise GfcrError(
            f"the sdist of {project.requirement} is missing ({path}); run `make setup`, or "
            f"`pip download --no-deps --no-binary :all: {project.requirement} -d {sdist_dir()}`"
        )
    files = []
    with tarfile.open(path, mode="r:gz") as archive:
        for member in archive.getmembers():
            parts = Path(member.name).parts[1:]  # below "<name>-<version>/"
            if (
                member.isfile()
                and parts
                and not any(p.endswith(".egg-info") or p in SKIPPED_PARTS for p in parts)
            ):
                files.append(("/".join(parts), archive.extractfile(member).read()))  # type: ignore[union-attr]
    return Snapshot.from_files(project.ref, files, project.pythonpath)
