"""Where a case module's known issues are: its family's own file, `known_issues/<family>.toml` beside it, and its
folder's shared `known_issues.toml` (the entries about ops of several modules).  Pure path logic, imported before
torch or any extension."""

from __future__ import annotations

from pathlib import Path

SHARED_FILE = "known_issues.toml"  # beside case modules: the entries shared by several of them
FAMILY_FOLDER = "known_issues"  # beside case modules: <family>.toml, the entries of test_<family>.py alone


def files_beside(module_path: Path) -> list[Path]:
    """The known-issue files a case module's items read, in this order: its family's own, then its folder's shared
    file (an entry of the family's file is judged first)."""
    family = module_path.stem.removeprefix("test_")
    found = [module_path.parent / FAMILY_FOLDER / f"{family}.toml", module_path.parent / SHARED_FILE]
    return [path for path in found if path.is_file()]


def files_in_folder(folder: Path) -> list[Path]:
    """Every known-issue file of a folder of case modules (the stock suite's: all of its known issues)."""
    shared = folder / SHARED_FILE
    return sorted((folder / FAMILY_FOLDER).glob("*.toml")) + ([shared] if shared.is_file() else [])


def modules_spoken_of(path: Path) -> list[Path]:
    """The case modules a known-issue file beside them speaks of: a family file its module's, the shared file every
    module of its folder."""
    if path.parent.name == FAMILY_FOLDER:
        return [path.parent.parent / f"test_{path.stem}.py"]
    return sorted(path.parent.glob("test_*.py"))
