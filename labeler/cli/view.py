"""`labeler view`: parse, open the folders, serve the page until stopped, say what was kept."""

from __future__ import annotations

import getpass
import json
import webbrowser
from pathlib import Path

import click

from labeler.cli.output import json_option


@click.command()
@click.argument("folders", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="Port on 127.0.0.1 (0: a free one).")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in a web browser.")
@click.option("--reviewer", default=getpass.getuser, show_default="your user name",
              help="Reviewer id the verdicts are saved under.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Artifacts root of the review versions: <out>/review/<dataset>/<llm>/v<N>/ "
                   "(default: the labels' own <out>, beside <out>/utility/).")
@click.option("--submission", "submissions", multiple=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A submission (a selection, ranking or extraction, as `labeler score` reads "
                   "it), scored against each of FOLDERS as `labeler score SUB --against FOLDER` "
                   "scores it: a page of its per-query metrics beside the reference's gold "
                   "(repeat the option).")
@json_option
def view(folders: tuple[Path, ...], port: int, open_browser: bool, reviewer: str,
         out: Path | None, submissions: tuple[Path, ...], as_json: bool) -> None:
    """Look at artifact version FOLDERS in a local web page, side by side across LLMs.

    Prints the page's address, which carries the server's secret token (--json: {"url": ...}
    on one line); Ctrl-C stops. Verdicts (agree / disagree / unsure and a note) on a utility
    or rubric candidate, a SEER extraction or a query are saved the moment they are made, and
    written as the next `review` version beside the labels when the server stops (a killed
    server's are written by the next). Each --submission is scored against each of FOLDERS
    when the server starts, and its page lists its per-query metrics. Serves 127.0.0.1 only,
    to its own page only (docs/viewer.md says how, and what it does not guard against).
    """
    from labeler.view import make_server, open_viewing, serve_until_stopped

    viewing = open_viewing(list(folders), reviewer=reviewer, out=out,
                           submissions=list(submissions))
    server = make_server(viewing, port=port)
    url = server.url
    click.echo(json.dumps({"url": url}) if as_json else url)
    if open_browser:
        webbrowser.open(url)
    for folder in serve_until_stopped(server, viewing):
        click.echo(f"verdicts written: {folder}", err=as_json)
