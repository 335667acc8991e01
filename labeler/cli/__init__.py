"""The `labeler` command line: parse, call one function, render. Commands load lazily."""

from __future__ import annotations

import os
import sys
import traceback
from difflib import get_close_matches

import click

import labeler
from labeler import settings
from labeler.errors import LabelerError, StorageError
from labeler.lazy import load_entry
from labeler.paths import refused

# torch's OpenMP threads busy-wait between ops by default; on a few shared CPU cores that made
# one prompt 3-4x slower under load (measured on the demo build). Set before torch is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

#: command name -> ("module:attribute", its one-line summary); a command's module is imported
#: only when it runs or shows its own help, so `labeler --help` lists them from here
#: (tests/cli/test_startup.py checks each summary against its command's docstring).
COMMANDS = {
    "build": ("labeler.cli.build:build",
              ("Label the candidate passages of a dataset for each LLM, and write one artifact "
               "each.")),
    "retrieve": ("labeler.cli.retrieve:retrieve",
                 ("Retrieve the top-k passages for every query of a dataset into a TREC run "
                 "file: dense, or BM25 with --encoder bm25.")),
    "models": ("labeler.cli.llm:models", "List the model aliases and what each resolves to."),
    "cache": ("labeler.cli.llm:cache", "Inspect the persistent LLM call cache."),
    "validate": ("labeler.cli.artifacts:validate",
                 "Check an artifact version folder (or a folder of them) or a JSONL file."),
    "push": ("labeler.cli.hub:push", "Publish artifact versions to a Hugging Face dataset repo."),
    "pull": ("labeler.cli.hub:pull",
             "Download one artifact version from a Hub dataset repo and check its sha256 sums."),
    "score": ("labeler.cli.score:score", "Score SUBMISSIONS against reference labels."),
    "judge": ("labeler.cli.judge:judge",
              ("Judge the candidate passages of a dataset with one method, and write a "
              "submission.")),
    "compare": ("labeler.cli.compare:compare",
                "Compare utility ARTIFACTS of one dataset by several LLMs (version folders)."),
    "analyze": ("labeler.cli.analyze:analyze",
                "Analyses of built artifacts (the utility paper's figures)."),
    "reproduce": ("labeler.cli.reproduce:reproduce",
                  "Reproduce a paper's experiments end to end, as one report version."),
    "train-extractor": ("labeler.cli.train:train_extractor",
                        ("Train the extractor of a seer artifact on its preference pairs, each "
                        "pair's DPO loss weighted by its λ (SEER's LPO), and write the trained "
                        "model to --out.")),
    "plugins": ("labeler.cli.plugins:plugins",
                ("List the installed plugins: their tasks, backends and executors, and any that "
                 "fail to load.")),
    "view": ("labeler.cli.view:view",
             "Look at artifact version FOLDERS in a local web page, side by side across LLMs."),
    "merge-reviews": ("labeler.cli.reviews:merge_reviews",
                      "Merge two REVIEWS (review version folders of the same labels) by reviewer id."),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported on first use, keeping `--help` fast."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        return load_entry(COMMANDS[name][0])

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their summaries, as click lists them, without importing one."""
        width = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [(name, click.utils.make_default_short_help(COMMANDS[name][1], width))
                for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        """click's, with "Did you mean" for an unknown command: one the name begins
        (`train` -> `train-extractor`), else the closest spelling (`biuld` -> `build`)."""
        name = args[0] if args else ""
        if name in COMMANDS or name.startswith("-"):
            return super().resolve_command(ctx, args)
        close = ([c for c in sorted(COMMANDS) if c.startswith(name)] if name else []) \
            or get_close_matches(name, sorted(COMMANDS), n=1)
        maybe = f" Did you mean '{close[0]}'?" if close else ""
        ctx.fail(f"No such command '{name}'.{maybe}")


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """`--version`, read only when asked for (labeler.__version__ imports importlib.metadata)."""
    if value and not ctx.resilient_parsing:
        click.echo(f"labeler, version {labeler.__version__}")
        ctx.exit()


@click.group(cls=LazyGroup)
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_show_version, help="Show the version and exit.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars or hints.")
@click.option("-v", "--verbose", is_flag=True, help="More detail on stderr.")
@click.option("--debug", is_flag=True, help="Show the full traceback of an error.")
def cli(quiet: bool, verbose: bool, debug: bool) -> None:
    """Turn LLM behaviour into versioned, publishable RAG label datasets."""
    from labeler.progress import other_bars_off

    settings.apply_flags(debug=debug, quiet=quiet, verbose=verbose)
    other_bars_off()


def main() -> None:
    """Console entry point: every `LabelerError`, and an OSError of a full, read-only or
    forbidden disk, becomes one line on stderr and exit 1; a usage error (click's: an unknown
    option or command, a bad or missing value) one line naming the option, and exit 2.

    A Hub or network failure no call mapped is one line too (`labeler.network`). With --debug
    (or LABELER_DEBUG=1) its full traceback comes first. Any other exception is a bug and is
    never hidden: Python prints its traceback and exits 1.
    """
    try:
        code = cli.main(prog_name="labeler", standalone_mode=False)
        if isinstance(code, int) and code:  # non-standalone click returns ctx.exit(n)'s n
            sys.exit(code)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        click.echo(f"error: {usage_line(exc)}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except LabelerError as exc:
        _fail(exc)
    except OSError as exc:  # a disk that cannot take what a command writes is not a bug
        if refused(exc):
            _fail(StorageError.from_os(exc))
        _fail_if_network(exc)
    except Exception as exc:  # noqa: BLE001 - a bug unless it is a network failure: re-raised
        _fail_if_network(exc)


def _fail_if_network(exc: Exception) -> None:
    """Exit 1 with the one line of a Hub or network failure that reached the edge without its
    call mapping it (`labeler.network`); re-raise any other exception, a bug."""
    from labeler.network import hub_error

    error = hub_error(exc)
    if error is None:
        raise exc
    _fail(error)


def usage_line(error: click.ClickException) -> str:
    """Click's message as one line, with where to read the command's options for a usage
    error: `invalid value for '--k': 0 is not in the range x>=1. (see 'labeler judge --help')`."""
    from labeler.terminal import escape

    text = escape(" ".join(error.format_message().split()))  # a value given may be any text
    if text[:2].istitle():  # click's sentences start capitalised: "Invalid value", "No such"
        text = text[0].lower() + text[1:]
    ctx = getattr(error, "ctx", None)
    return f"{text} (see '{ctx.command_path} --help')" if ctx is not None else text


def _fail(error: LabelerError) -> None:
    """Exit 1 with the error's one line, its control characters escaped (a name from a file
    may hold any), after the traceback with --debug."""
    if settings.debug():
        traceback.print_exc()
    from labeler.terminal import escape

    click.echo(f"error: {escape(error.line())}", err=True)
    sys.exit(1)
