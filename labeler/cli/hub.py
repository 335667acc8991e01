"""`labeler push` and `labeler pull`: parse, call labeler.hub, render."""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.table import Table


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
def push(folders, repo, out, private, dry_run) -> None:
    """Publish artifact versions to a Hugging Face dataset repo.

    FOLDERS are version folders (<out>/<artifact>/<dataset>/<llm>/v<N>/) or folders holding
    them; with none, every version under --out not yet published to REPO is pushed. One atomic
    commit carries the files and the merged root card; each version gets a tag
    (<artifact>.<dataset>.<llm>.v<N>) that `datasets.load_dataset(REPO, CONFIG, revision=TAG)`
    pins. The token comes from HF_TOKEN or `hf auth login`. With --verbose, the
    root card's diff is shown too.
    """
    from labeler.hub import push as push_versions
    from labeler.settings import verbose

    result = push_versions(
        list(folders) or None, repo=repo, out=out, private=private, dry_run=dry_run
    )
    console = Console()
    if not result.versions:
        console.print(
            f"nothing to push to {repo}: every version under {out} is published", highlight=False
        )
        return
    table = Table(title=f"{'dry run: ' if dry_run else ''}{result.url}")
    for column in ("version folder", "tag (config.vN)", "status", "commit"):
        table.add_column(column, overflow="fold")
    for p in result.versions:
        table.add_row(p.version.prefix, p.version.tag, p.status, (p.commit or "")[:8])
    console.print(table)
    for p in result.versions:
        if p.status in ("pushed", "tagged"):
            console.print(
                f'load_dataset("{repo}", "{p.version.config}", revision="{p.version.tag}")',
                soft_wrap=True,
                highlight=False,
                markup=False,
            )
    if dry_run:
        ops = Table(title="operations (not sent)")
        for column in ("step", "action", "target", "detail"):
            ops.add_column(column, overflow="fold")
        for op in result.operations:
            ops.add_row(op.step, op.action, op.target, op.detail)
        console.print(ops)
    if result.card_diff and (dry_run or verbose()):
        console.print(result.card_diff, markup=False, highlight=False, soft_wrap=True, end="")


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
def pull(repo, config, revision, out) -> None:
    """Download one artifact version from a Hub dataset repo and check its sha256 sums.

    Every data file is checked against the version's manifest.json; a mismatch is refused.
    Prints the local version folder.
    """
    from labeler.hub import pull as pull_version

    path = pull_version(repo, config=config, revision=revision, out=out)
    Console().print(str(path), soft_wrap=True, highlight=False)
