"""The options several commands share, each help written once, and the task options made from
the task configs' fields.

A decorator here adds a group of options to a command, in the order listed, as stacked
`click.option`s would. The registries (sources, pools, tasks) are read when a command is
defined, so that a command taking none of these options (score) imports only click here.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import click

Decorator = Callable[[Callable], Callable]

INDEX_HELP = ("Dense index: flat (exact, the default), ivf[:nlist=N,nprobe=N,pq=M,refine=R] "
              "(FAISS IVF, lists on disk; pq=M compresses to M bytes a vector; refine=R "
              "re-scores R x k candidates exactly) or hnsw[:M=N,efConstruction=N,efSearch=N]; "
              "built once beside the embeddings. ivf and hnsw report their recall@k against "
              "exact search.")
CORPUS_HELP = ("Corpus to retrieve from instead of the dataset's own (nq, tq, hotpotqa, fever, "
               "2wiki and the -train sets: kilt-w100 by default): kilt-w100 (KILT's Wikipedia "
               "in DPR's 100-word "
               "passages, the paper's), wiki-dpr (DPR's 21M psgs_w100), msmarco-passage, "
               "kilt-wikipedia (KILT paragraphs), or a FlashRAG-format file ({id, contents}).")
ENCODER_HELP = ("Retriever of the top k: bm25, or a dense bge-m3 (default, falls back to the "
                "bundled minilm offline), minilm, or an HF repo id / local folder")
BM25_HELP = {
    "fields": "BM25: the fields searched, each with its boost (contents = title and text), "
              "e.g. title^9.3,text^4.1; the score sums boost x each field's BM25 [default: the "
              "dataset's (wands, esci: title^9.4,text^4), else contents].",
    "stemmer": "BM25: a Snowball stemmer language (the experiment's analyser: punctuation "
               "out, no stop words), or none (bm25s's tokens, English stop words out) "
               "[default: the dataset's (wands, esci: english), else none].",
    "k1": "BM25's k1 [default: 1.2].",
    "b": "BM25's b [default: 0.75].",
}
#: the default of --k where the command does not leave it to the artifact's config
K = 20


class Names(click.Choice):
    """A choice among a registry's names, read when the option is parsed or shown, so that
    installed plugins' names are among them."""

    def __init__(self, names: Callable[[], Iterable[str]]) -> None:
        self.names = names
        super().__init__((), case_sensitive=True)

    @property
    def choices(self) -> tuple[str, ...]:
        return tuple(self.names())

    @choices.setter
    def choices(self, value) -> None:  # click.Choice.__init__ sets it; the registry rules
        pass


class DeclaredOption(click.Option):
    """An option whose help is made when shown, from what a registry's classes declare
    (`described`), so that a command's definition imports none of them."""

    def __init__(self, *args, described: Callable[[], str], **kwargs) -> None:
        self.described = described
        super().__init__(*args, **kwargs)

    @property
    def help(self) -> str:
        return self.described()

    @help.setter
    def help(self, value) -> None:  # click.Option.__init__ sets it; the declarations rule
        pass


def registry_names(module: str, registry: str) -> Callable[[], list[str]]:
    """The names of `module.registry`, imported when first asked for."""
    def names() -> list[str]:
        import importlib

        return list(getattr(importlib.import_module(module), registry))
    return names


class DatasetName(click.ParamType):
    """A dataset `load_source` knows: a registry name, or a file with its prefix (`jsonl:PATH`,
    `search:PATH`). Another name is a usage error (exit 2) saying the closest name."""

    name = "dataset"

    def convert(self, value: str, param: click.Parameter | None, ctx: click.Context | None
                ) -> str:
        from labeler.errors import UnknownNameError
        from labeler.sources.registry import JSONL_PREFIX, SEARCH_PREFIX, SOURCES, available

        if value in SOURCES or value.startswith((JSONL_PREFIX, SEARCH_PREFIX)):
            return value
        self.fail(str(UnknownNameError("dataset", value, available())), param, ctx)


def stacked(*decorators: Decorator) -> Decorator:
    """One decorator applying `decorators` so that their options list in the given order."""
    def apply(command: Callable) -> Callable:
        for decorator in reversed(decorators):
            command = decorator(command)
        return command
    return apply


def data_options(*, pools: bool = False, qrels: bool = False,
                 task_defaults: bool = False) -> Decorator:
    """--dataset, --corpus, --limit, --k, --encoder, --index, --bm25-fields, --bm25-stemmer,
    --bm25-k1, --bm25-b; with `pools` also --pool and --run, with `qrels` --qrels. With `task_defaults`, --k and --encoder are left to the artifact's
    config and their help shows each artifact's default."""
    if task_defaults:
        k = click.option("--k", type=click.IntRange(min=1),
                         help=f"Retrieved passages per query{_task_defaults('k')}.")
        encoder_help = f"{ENCODER_HELP}{_task_defaults('encoder')}."
    else:
        k = click.option("--k", type=click.IntRange(min=1), default=K, show_default=True,
                         help="Retrieved passages per query.")
        encoder_help = f"{ENCODER_HELP}."
    from labeler.retrieval.pools import POOLS
    from labeler.sources.registry import available

    names = available()
    options = [
        click.option("--dataset", required=True, type=DatasetName(),
                     help=f"Source: {', '.join(names[:-1])} or {names[-1]} (a queries TSV or "
                          "JSONL)."),
        click.option("--corpus", metavar="NAME|FILE", help=CORPUS_HELP),
        click.option("--limit", type=click.IntRange(min=1), help="Only the first N queries."),
        k,
    ]
    if pools:
        options += [
            click.option("--pool", type=click.Choice(POOLS), default="rp", show_default=True,
                         help="rp: top-k retrieved; hgp: human gold; mcp: both, deduplicated."),
            click.option("--run", type=click.Path(dir_okay=False, path_type=Path),
                         help="TREC or JSONL run file to use instead of retrieval."),
        ]
    if qrels:
        options.append(click.option(
            "--qrels", type=click.Path(dir_okay=False, path_type=Path),
            help="TREC qrels with the queries' graded human judgments (rubric: for NDCG)."))
    options += [click.option("--encoder", help=encoder_help),
                click.option("--index", metavar="KIND[:NAME=N,...]", help=INDEX_HELP),
                click.option("--bm25-fields", metavar="FIELD^BOOST,...",
                             help=BM25_HELP["fields"]),
                click.option("--bm25-stemmer", metavar="LANGUAGE", help=BM25_HELP["stemmer"]),
                click.option("--bm25-k1", type=click.FloatRange(min=0), help=BM25_HELP["k1"]),
                click.option("--bm25-b", type=click.FloatRange(0, 1), help=BM25_HELP["b"])]
    return stacked(*options)


#: the options `model_options` adds, by the `LLMConfig` field each sets
MODEL_SETTINGS = ("backend", "batch_size", "device", "dtype", "tensor_parallel", "base_url",
                  "prompt_format", "concurrency", "served_model", "max_rps", "max_tpm",
                  "price_in", "price_out")


def model_options(*, tensor_parallel: bool = False) -> Decorator:
    """--backend, --batch-size, --device, --dtype and the openai backend's --base-url,
    --prompt-format, --concurrency, --served-model, its rate limits and prices, for every
    command that runs an LLM; with
    `tensor_parallel` also --tensor-parallel. `model_settings` takes them out of a command's
    keyword arguments as `LLMConfig` takes them."""
    options = [
        click.option("--backend", type=Names(registry_names("labeler.llm", "BACKENDS")),
                     default="hf", show_default=True,
                     help="LLM backend (openai: a served model, --base-url)."),
        click.option("--batch-size", type=click.IntRange(min=1), cls=DeclaredOption,
                     described=_batch_size_help),
        click.option("--device", help="Device for the LLMs, e.g. cuda:0 [default: best "
                                      "available]."),
        click.option("--dtype", type=Names(_dtypes), cls=DeclaredOption, described=_dtype_help),
    ]
    if tensor_parallel:
        options.append(click.option(
            "--tensor-parallel", type=click.IntRange(min=1), default=1, show_default=True,
            cls=DeclaredOption, described=_tensor_parallel_help))
    options += [
        click.option("--base-url", metavar="URL", help="openai: the OpenAI-compatible "
                     "API's root, e.g. http://host:8000/v1 [default: $OPENAI_BASE_URL]; "
                     "the key is read from $OPENAI_API_KEY."),
        click.option("--prompt-format", type=click.Choice(["chat", "text"]),
                     default="chat", show_default=True,
                     help="openai: chat (the server applies the model's chat template) "
                          "or text (labeler's rendered prompt, byte-exact; vLLM only)."),
        click.option("--concurrency", type=click.IntRange(min=1),
                     help="openai: requests in flight [default: 64]."),
        click.option("--served-model", metavar="NAME", help="openai: the model's name on "
                     "the server, where it differs from --llm [default: the first of --llm's "
                     "names the server lists]."),
        click.option("--max-rps", type=click.FloatRange(min=0, min_open=True),
                     help="openai: requests a second at most [default: no limit]."),
        click.option("--max-tpm", type=click.IntRange(min=1),
                     help="openai: tokens a minute at most, as answers report them "
                          "[default: no limit]."),
        click.option("--price-in", type=click.FloatRange(min=0), metavar="USD",
                     help="openai: dollars per million prompt tokens, for the cost line."),
        click.option("--price-out", type=click.FloatRange(min=0), metavar="USD",
                     help="openai: dollars per million completion tokens, for the cost "
                          "line."),
    ]
    return stacked(*options)


def model_settings(options: dict) -> dict:
    """The `model_options` values, taken out of a command's keyword arguments `options`, as
    `LLMConfig(name, **settings)` takes them."""
    return {name: options.pop(name) for name in MODEL_SETTINGS if name in options}


def executor_options(work: str, loaded: str) -> Decorator:
    """--executor, --ray-address and --workers; `work` says what the executor does ("the shards
    are labelled") and `loaded` what each Ray worker loads once."""
    return stacked(
        click.option("--executor", type=Names(registry_names("labeler.executors", "EXECUTORS")),
                     default="local", show_default=True, help=f"Where {work}: local (here, one after another) or ray (on Ray workers, "
                          f"one {loaded} each; pip install 'labeler[ray]')."),
        click.option("--ray-address", metavar="ADDR", help="ray: the cluster to run on, e.g. "
                     "head:6379 [default: start Ray here]."),
        click.option("--workers", type=click.IntRange(min=1),
                     help=f"ray: workers (one loaded {loaded} each) [default: as many as fit]."),
    )


def _use_cache_dir(ctx: click.Context, param: click.Parameter, value: Path | None
                   ) -> Path | None:
    """--cache-dir, made the cache of all a command keeps (`settings.use_cache_dir`)."""
    if value is not None:
        from labeler import settings

        settings.use_cache_dir(value)
    return value


cache_dir_option = click.option(
    "--cache-dir", type=click.Path(file_okay=False, path_type=Path), callback=_use_cache_dir,
    help="Where labeler keeps LLM calls, embeddings, indexes, converted models, stored corpora "
         "and downloads (default: $LABELER_CACHE_DIR or ~/.cache/labeler).")


def task_options() -> Decorator:
    """An option for each field an artifact's config adds to `TaskConfig`, in `TASKS` order."""
    return config_options(_task_configs())


def config_options(configs: Mapping[str | None, type], *, skip: tuple[str, ...] = ()
                   ) -> Decorator:
    """An option for each field `configs` add to `TaskConfig` (but `skip`), one per field name:
    its help joined from every config that has the field, each prefixed with the config's key
    (none for a None key). A field's metadata gives its help, and optionally `metavar`, the
    bounds `min`, `max`, `min_open` and the allowed `choices`; every config declaring a field
    must agree on its type. A bool field is a flag that sets it against its default:
    `--NAME` for a False default, `--no-NAME` for a True one."""
    from labeler.tasks.base import TaskConfig

    shared = {f.name for f in dataclasses.fields(TaskConfig)} | set(skip)
    declared: dict[str, list[tuple[str | None, dataclasses.Field, type]]] = {}
    for owner, config in configs.items():
        hints = typing.get_type_hints(config)
        for f in dataclasses.fields(config):
            if f.name not in shared:
                declared.setdefault(f.name, []).append((owner, f, _without_none(hints[f.name])))
    return stacked(*(_field_option(name, found) for name, found in declared.items()))


def _field_option(name: str, found: list[tuple[str | None, dataclasses.Field, type]]
                  ) -> Decorator:
    """The option of field `name` as the configs in `found` declare it."""
    _, first, kind = found[0]
    shape = {key: value for key, value in first.metadata.items() if key != "help"}
    for owner, f, other in found[1:]:
        if other is not kind or {k: v for k, v in f.metadata.items() if k != "help"} != shape:
            raise TypeError(f"{owner} declares {name} unlike {found[0][0]}")
    flag = f"--{name.replace('_', '-')}"
    text = " ".join(_field_help(owner, f) for owner, f, _ in found)
    if kind is bool:  # a flag sets the field against its default; unset, the option is None
        if first.default is True:
            return click.option(f"--no-{flag[2:]}", name, is_flag=True, flag_value=False,
                                default=None, help=text)
        return click.option(flag, is_flag=True, default=None, help=text)
    bounds = {key: shape[key] for key in ("min", "max", "min_open") if key in shape}
    if "choices" in shape:
        kind = click.Choice(shape["choices"])
    elif kind is int:
        kind = click.IntRange(**bounds) if bounds else int
    elif kind is float:
        kind = click.FloatRange(**bounds) if bounds else float
    return click.option(flag, type=kind, metavar=shape.get("metavar"), help=text)


def _field_help(owner: str | None, field: dataclasses.Field) -> str:
    """"owner: help [default: D]." for `field`; no default shown for flags or a None default."""
    text = field.metadata["help"]
    if field.default is not None and not isinstance(field.default, bool):
        text += f" [default: {field.default}]"
    return f"{owner}: {text}." if owner else f"{text}."


def _task_defaults(name: str) -> str:
    """" [default: D; task: D2]" for `TaskConfig` field `name`: its default and every
    artifact whose config's differs; "" if there is neither."""
    from labeler.tasks.base import TaskConfig

    base = {f.name: f.default for f in dataclasses.fields(TaskConfig)}[name]
    shown = [] if base is None else [f"default: {base}"]
    for task, config in _task_configs().items():
        default = {f.name: f.default for f in dataclasses.fields(config)}[name]
        if default != base:
            shown.append(f"{task}: {default}")
    return f" [{'; '.join(shown)}]" if shown else ""


def _task_configs() -> dict[str, type]:
    """Every artifact kind's config class, in `TASKS` order (plugins that load)."""
    from labeler.tasks import TASKS

    return {name: task.Config for name, task in TASKS.loaded().items()}


def _backends() -> dict[str, type]:
    """Every backend's class, built-in and installed plugins' (those that load), by name."""
    from labeler.llm import BACKENDS

    return BACKENDS.loaded()


def _dtypes() -> list[str]:
    """Every dtype some backend takes (each backend checks its own: `LLMConfig`)."""
    return list(dict.fromkeys(d for kind in _backends().values() for d in kind.dtypes))


def _dtype_help() -> str:
    """--dtype's help: each backend's dtypes and its default, as its class declares them."""
    taken = [f"{name} {', '.join(kind.dtypes)}"
             + (f" [default: {kind.dtype_default}]" if kind.dtype_default else "")
             for name, kind in _backends().items() if kind.dtypes]
    return f"The weights' dtype: {'; '.join(taken)}."


def _batch_size_help() -> str:
    """--batch-size's help: each backend's default, as its class declares it."""
    defaults = ", ".join(f"{name} {kind.default_batch_size}"
                         for name, kind in _backends().items())
    return f"Prompts per forward pass or engine call [default: {defaults}]."


def _tensor_parallel_help() -> str:
    """--tensor-parallel's help: the backends that split a model over GPUs."""
    splitting = " or ".join(name for name, kind in _backends().items() if kind.tensor_parallel)
    return f"{splitting}: GPUs each model is split over (per Ray worker with --executor ray)."


def _without_none(hint: object) -> type:
    """`X` of an `X | None` hint, else the hint."""
    if isinstance(hint, types.UnionType):
        [kind] = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return kind
    return hint
