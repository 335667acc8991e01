"""Typed errors. Each carries its fields; `labeler.cli` turns one into a single line at the edge."""

from __future__ import annotations

import errno
import re
from dataclasses import dataclass, field
from difflib import get_close_matches


class LabelerError(Exception):
    """Base of every error a user can cause. `hint` says what to run or change next."""

    hint: str = ""

    def line(self) -> str:
        """The one line shown to a person."""
        text = str(self)
        return f"{text} ({self.hint})" if self.hint else text

    def __reduce__(self):
        """Pickled by its fields, so that an error raised in a worker process (a Ray actor)
        reaches the driver whole: Exception's own pickling passes only positional args."""
        return _restore, (type(self), dict(vars(self)))


def _restore(cls: type[LabelerError], fields: dict) -> LabelerError:
    error = cls.__new__(cls)
    error.__dict__.update(fields)
    return error


def first_line(error: BaseException) -> str:
    """The first line of what `error` says (its type's name if it says nothing): how a
    third-party failure is quoted inside one of ours."""
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


@dataclass
class InputError(LabelerError):
    """Bad user input at a known place: a file, a line number, a field."""

    message: str
    path: str | None = None
    line_no: int | None = None
    field_name: str | None = None
    hint: str = ""

    def __str__(self) -> str:
        where = ""
        if self.path:
            where = self.path + (f":{self.line_no}" if self.line_no is not None else "")
        elif self.line_no is not None:
            where = f"record {self.line_no}"
        if self.field_name:
            where = f"{where} field '{self.field_name}'" if where else f"field '{self.field_name}'"
        return f"{where}: {self.message}" if where else self.message


@dataclass
class PromptRefusedError(InputError):
    """A prompt the model's server refused as too long for its window (where no tokenizer
    here counts it first): that request's failure, raised once the call's other requests are
    answered. A build leaves the query out and records why (`labeler.workflows.labelling`);
    a rerun asks the prompt again (it is no answer, and is not cached)."""

    field_name: str | None = "prompt"
    hint: str = ("shorten the prompts (fewer or shorter passages) or serve a model with a "
                 "longer window")


@dataclass
class PromptTooLongError(InputError):
    """A prompt that, with the tokens its answer needs, does not fit the model's context window.

    Raised before any batch runs. A backend names the request by its position in the call; a
    caller that knows more (a qid) passes `name`, or re-raises with `dataclasses.replace`.
    """

    message: str = ""  # unused: the text is composed from the fields below
    field_name: str | None = "prompt"
    index: int = 0  # the request's position in the call
    tokens: int = 0  # the prompt's tokens (a log-likelihood continuation included)
    window: int = 0  # the model's context window, Backend.max_context
    reserved: int = 0  # tokens the answer needs past the prompt: max_tokens, or 1 for a choice
    name: str | None = None  # the caller's name for the request, e.g. its qid
    others: int = 0  # further requests of the same call that are too long
    hint: str = ("shorten the prompt (fewer or shorter passages), lower max_tokens, "
                 "or give the task a truncation rule")

    def __str__(self) -> str:
        who = f"the prompt for '{self.name}'" if self.name is not None \
            else f"the prompt of request {self.index}"
        room = f" + {self.reserved} for the answer" if self.reserved else ""
        more = "" if not self.others else \
            f" ({self.others} more {'is' if self.others == 1 else 'are'} too long)"
        return (f"{who} has {self.tokens} tokens{room}, more than the model's "
                f"{self.window}-token context window{more}")


@dataclass
class UnknownNameError(LabelerError):
    """A name (dataset, model alias, backend, kind, ...) that no registry knows."""

    kind: str
    name: str
    available: list[str] = field(default_factory=list)
    hint: str = ""

    def __str__(self) -> str:
        close = get_close_matches(self.name, self.available, n=1)
        maybe = f" Did you mean '{close[0]}'?" if close else ""
        return f"unknown {self.kind} '{self.name}'.{maybe} Available: {', '.join(self.available)}"


@dataclass
class MissingDependencyError(LabelerError):
    """An optional dependency is not installed."""

    feature: str
    package: str
    hint: str = ""

    def __str__(self) -> str:
        return f"{self.feature} needs the '{self.package}' package: pip install '{self.package}'"


@dataclass
class PluginError(LabelerError):
    """An installed package's entry point (a plugin's task, backend or executor) that cannot be
    loaded: its module missing or failing at import, its value malformed, or not a class of
    the kind its group holds."""

    group: str  # the entry-point group, e.g. "labeler.tasks"
    name: str  # the entry point's name
    package: str  # the distribution that declares it
    reason: str  # one line: the error's type and message
    hint: str = "fix or uninstall the package; `labeler plugins` lists what is installed"

    def __str__(self) -> str:
        return f"the {self.group} plugin '{self.name}' of package {self.package} cannot be " \
            f"loaded: {self.reason}"


@dataclass
class ModelLoadError(LabelerError):
    """A model could not be loaded."""

    model: str
    reason: str
    hint: str = ""

    def __str__(self) -> str:
        return f"cannot load model '{self.model}': {self.reason}"


@dataclass
class ArtifactError(LabelerError):
    """An artifact folder is missing, exists already, or fails its integrity checks."""

    message: str
    path: str | None = None
    hint: str = ""

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


@dataclass
class HubError(LabelerError):
    """A Hub operation failed or was refused."""

    message: str
    repo: str | None = None
    hint: str = ""

    def __str__(self) -> str:
        return f"{self.repo}: {self.message}" if self.repo else self.message


@dataclass
class StorageError(LabelerError):
    """A file or folder that cannot be written: a full disk, a read-only or forbidden place."""

    path: str | None
    reason: str  # the system's words, e.g. "No space left on device"
    hint: str = "write somewhere else"

    def __str__(self) -> str:
        return f"cannot write {self.path}: {self.reason}" if self.path else \
            f"cannot write: {self.reason}"

    @classmethod
    def from_os(cls, error: OSError, path: str | None = None) -> StorageError:
        """The StorageError of `error`, at `path` or the file `error` names."""
        where = path or error.filename
        cut = short_write(error)
        full = cut is not None or error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
        reason = f"the disk took {cut[1]} of a write's {cut[0]} bytes (full, or over quota)" \
            if cut else error.strerror or str(error)
        return cls(None if where is None else str(where), reason,
                   "free some space or write somewhere else, then run the same command again"
                   if full else "write somewhere else")


def short_write(error: OSError) -> tuple[int, int] | None:
    """(bytes asked, bytes written) where `error` is numpy's account of a write the disk took
    only part of (`tofile`, `np.save`: "61077 requested and 44016 written", no errno), else
    None."""
    found = re.fullmatch(r"(\d+) requested and (\d+) written", str(error))
    return None if error.errno is not None or found is None else \
        (int(found[1]), int(found[2]))


@dataclass
class WorkerError(LabelerError):
    """A worker process of a distributed build (a Ray actor) died: killed, out of memory, or
    its node lost. The shards it had not finished are not written; a rerun resumes them."""

    reason: str  # Ray's first line about it
    hint: str = "see the Ray logs for why, then run the same command again to resume"

    def __str__(self) -> str:
        return f"a Ray worker died: {self.reason}"


@dataclass
class CacheError(LabelerError):
    """The LLM call cache's database cannot be used: corrupt, locked, or on a full disk."""

    path: str
    message: str
    hint: str = ""

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"
