"""`labeler push` and `labeler pull`: parse, call labeler.hub, render."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from labeler.cli.output import emit, json_option
from labeler.terminal import markup_safe


@click.command()
@click.argument("folders", nargs=-1, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--repo", required=True, help="Dataset repo to publish to: NAMESPACE/NAME.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default="out",
    show_default=True,
    help="Artifacts root searched when no FOLDERS are given.",
)
@click.option("--private", is_flag=True, help="Create the repo private (if it does not exist).")
@click.option(
    "--dry-run", is_flag=True, help="Show the operations and the card diff; send nothing."
)
@json_option
def push(folders, repo, out, private, dry_run, as_json) -> None:
    """Publish artifact versions to a Hugging Face dataset repo.

    FOLDERS are version folders (<out>/<artifact>/<dataset>/<llm>/v<N>/) or folders holding
    them; with none, every version under --out not yet published to REPO is pushed. One atomic
    commit carries the files and the merged root card; each version gets a tag
    (<artifact>.<dataset>.<llm>.v<N>) that `datasets.load_dataset(REPO, CONFIG, revision=TAG)`
    pins. The token comes from HF_TOKEN or `hf auth login`. With --verbose, the
    root card's diff is shown too.
    """
    from labeler.hub import push as push_versions
    from labeler.hub.layout import find_versions

    if not folders and not (out.is_dir() and find_versions(out)):
        raise click.BadParameter(
            f"{out} holds no artifact version (a folder with a manifest.json)" if out.is_dir()
            else f"{out} is not a folder", param_hint="'--out'")
    result = push_versions(
        list(folders) or None, repo=repo, out=out, private=private, dry_run=dry_run
    )
    data = {"repo": repo, "url": result.url, "dry_run": dry_run,
            "versions": [{"folder": p.version.prefix, "config": p.version.config,
                          "tag": p.version.tag, "status": p.status, "commit": p.commit}
                         for p in result.versions],
            "operations": [{"step": op.step, "action": op.action, "target": op.target,
                            "detail": op.detail} for op in result.operations],
            "card_diff": result.card_diff}
    if not result.versions:
        emit(data, (), [f"nothing to push to {repo}: every version under {out} is published"],
             as_json=as_json)
        return
    emit(data, _push_tables(result, dry_run), _push_lines(result, repo, dry_run),
         as_json=as_json)


def _push_tables(result, dry_run: bool):
    """The versions pushed, then (dry run) the operations not sent."""
    table = Table(title=f"{'dry run: ' if dry_run else ''}{result.url}")
    for column in ("version folder", "tag (config.vN)", "status", "commit"):
        table.add_column(column, overflow="fold")
    for p in result.versions:
        table.add_row(markup_safe(p.version.prefix), markup_safe(p.version.tag), p.status,
                      (p.commit or "")[:8])
    yield table
    if dry_run:
        ops = Table(title="operations (not sent)")
        for column in ("step", "action", "target", "detail"):
            ops.add_column(column, overflow="fold")
        for op in result.operations:
            ops.add_row(op.step, op.action, op.target, op.detail)
        yield ops


def _push_lines(result, repo: str, dry_run: bool) -> list[str]:
    """How to load each version pushed, then the card's diff (dry run or --verbose)."""
    from labeler.settings import verbose

    lines = [f'load_dataset("{repo}", "{p.version.config}", revision="{p.version.tag}")'
             for p in result.versions if p.status in ("pushed", "tagged")]
    if result.card_diff and (dry_run or verbose()):
        lines.append(result.card_diff.rstrip("\n"))
    return lines


@click.command()
@click.argument("repo")
@click.option("--config", help="Config to pull (<artifact>.<dataset>.<llm>); needed if several.")
@click.option("--revision", help="Version tag, branch or commit (default: main, the newest).")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Put the version under OUT/<artifact>/<dataset>/<llm>/v<N>/ "
    "(default: the Hugging Face cache).",
)
@json_option
def pull(repo, config, revision, out, as_json) -> None:
    """Download one artifact version from a Hub dataset repo and check its sha256 sums.

    Every data file is checked against the version's manifest.json; a mismatch is refused.
    Prints the local version folder.
    """
    from labeler.hub import pull as pull_version

    path = pull_version(repo, config=config, revision=revision, out=out)
    emit({"path": path}, (), [str(path)], as_json=as_json)
