"""The repository is self-contained: every path it names exists, and nothing points outside it.

Whoever takes the project over gets this checkout only, so the sources, tests, benchmarks, examples,
docs and README must not send a reader to a file that is not here: a repository-relative path they
name (starting with one of the folders ``tests``, ``torch_neuronx``, ``csrc``, ``docs``, ``bench`` or
``examples``) must exist, a bare upper-case Markdown name must be next to the file naming it or at the
root, and no text may cite a document outside the repository or an item of an issue tracker by number.
The test layout keeps test modules apart: every folder under ``tests`` that holds Python files is a
package, so two test files may share a basename.
"""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: What is scanned: these folders (when present) and root files.
SCANNED_DIRS = ("torch_neuronx", "csrc", "tests", "bench", "examples", "docs")
SCANNED_FILES = ("README.md",)
TEXT_SUFFIXES = {".py", ".md", ".cpp", ".h", ".hpp", ".cc", ".txt", ".toml", ".cfg", ".json", ".yaml", ".yml",
                 ".sh", ".ini"}
SKIPPED_DIRS = {"__pycache__", "build", ".git", ".pytest_cache"}

#: A repository-relative path: one of the top-level folders, then path characters. Wildcards and
#: placeholders (``*``, ``<name>``, ``{a,b}``, ``…``) make a pattern, not a path: those are skipped.
_ROOTS = "|".join(("tests", "torch_neuronx", "csrc", "docs", "bench", "examples"))
PATH = re.compile(r"(?<![\w./~$-])(?:" + _ROOTS + r")/[\w./*<>{}…-]*")
#: A bare upper-case Markdown document name (not part of a longer path).
DOCUMENT = re.compile(r"(?<![\w./-])[A-Z][A-Z0-9_]*\.md\b")
#: A bare test file name (not part of a longer path): it must exist somewhere under tests.
TEST_FILE = re.compile(r"(?<![\w./-])test_\w+\.py\b")

#: Text that points outside the repository: the shared folder of the team that wrote it, issue
#: numbers of a tracker that does not ship with it, design documents named without a path. Built
#: from pieces so that this file does not match itself.
OUTSIDE = [
    re.compile("shared" + "/docs"),
    re.compile(r"\.\./" + "shared"),
    re.compile("issue" + r" [0-9]"),
    re.compile("[Ii]" + r"ssue #?[0-9]"),
    # a design document cited by its bare name ("see ARCH" "ITECTURE ...") rather than a path
    re.compile(r"\b(?:" + "ARCH" + "ITECTURE|TRAIN" + "IUM|PYTORCH" + r"_BACKEND)\b(?!\.md)"),
]


def _scanned() -> list[Path]:
    files = [REPO / name for name in SCANNED_FILES if (REPO / name).is_file()]
    for top in SCANNED_DIRS:
        root = REPO / top
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if any(part in SKIPPED_DIRS or part.endswith(".egg-info") for part in path.relative_to(REPO).parts):
                continue
            if path.is_file() and path.suffix in TEXT_SUFFIXES:
                files.append(path)
    return files


def _lines(path: Path):
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return
    for number, line in enumerate(text.splitlines(), 1):
        yield number, line


def _where(path: Path, number: int) -> str:
    return f"{path.relative_to(REPO)}:{number}"


def test_scan_covers_the_repository():
    files = {p.relative_to(REPO).as_posix() for p in _scanned()}
    # The scan is real: it sees the files this test is about (and itself).
    assert {"README.md", "tests/test_repository.py", "torch_neuronx/__init__.py"} <= files
    assert any(f.startswith("csrc/") for f in files) and any(f.startswith("examples/") for f in files)


def test_named_paths_exist():
    missing = []
    test_files = {p.name for p in (REPO / "tests").rglob("test_*.py")}
    for path in _scanned():
        for number, line in _lines(path):
            for match in PATH.finditer(line):
                token = match.group(0)
                if any(c in token for c in "*<>{}…"):
                    continue  # a pattern such as tests/nki/test_*.py
                token = token.rstrip(".")
                if not (REPO / token).exists():
                    missing.append(f"{_where(path, number)}: {token}")
            for match in DOCUMENT.finditer(line):
                name = match.group(0)
                if not ((path.parent / name).is_file() or (REPO / name).is_file()):
                    missing.append(f"{_where(path, number)}: {name} (not in this folder nor at the root; "
                                   f"name it by its repository path, e.g. docs/{name})")
            for match in TEST_FILE.finditer(line):
                if match.group(0) not in test_files:
                    missing.append(f"{_where(path, number)}: {match.group(0)} (no such test file)")
    assert not missing, "paths named in the repository that do not exist:\n" + "\n".join(missing)


def test_nothing_points_outside_the_repository():
    hits = []
    for path in _scanned():
        for number, line in _lines(path):
            if any(p.search(line) for p in OUTSIDE):
                hits.append(f"{_where(path, number)}: {line.strip()[:160]}")
    assert not hits, (
        "text citing documents outside the repository or issue numbers (say it in the project's own "
        "words, or cite a file of the docs folder):\n" + "\n".join(hits)
    )


def test_every_test_folder_is_a_package():
    """With ``__init__.py`` in every test folder, pytest imports a test file as ``tests.<folder>.<name>``:
    basenames never collide and helpers are imported package-relative."""
    folders = sorted({p.parent for p in (REPO / "tests").rglob("*.py")
                      if "__pycache__" not in p.parts and p.parent != REPO / "tests" / "__pycache__"})
    missing = [str(f.relative_to(REPO)) for f in folders if not (f / "__init__.py").is_file()]
    assert not missing, f"test folders without __init__.py: {missing}"
