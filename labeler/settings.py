"""Every setting labeler reads from the environment, parsed here and nowhere else.

Each setting is a function that reads `os.environ` when called, not a constant frozen at
import: the CLI group sets the flags after the modules are imported, and tests change the
environment per test. The global flags reach child code (and child processes) through these
same variables: `labeler --quiet` is `LABELER_QUIET=1`, `--verbose` is `LABELER_VERBOSE=1`,
`--debug` is `LABELER_DEBUG=1`; `apply_flags` is the one place that sets them.

    >>> is_true("Yes"), is_true("0"), is_true(None)
    (True, False, False)
"""

from __future__ import annotations

import os
from pathlib import Path

from labeler.errors import InputError

__all__ = [
    "apply_flags",
    "cache_dir",
    "check_tokens",
    "cpu_threads",
    "debug",
    "github_raw",
    "hub_backoff",
    "is_true",
    "kilt_source",
    "offline",
    "openai_api_key",
    "openai_base_url",
    "passed_to_workers",
    "progress_seconds",
    "quiet",
    "server_backoff",
    "verbose",
    "vllm_compile_cache",
    "vllm_logging",
]

DEBUG = "LABELER_DEBUG"  # tracebacks instead of one `error:` line (`--debug`)
QUIET = "LABELER_QUIET"  # no progress bars or hints (`--quiet`)
VERBOSE = "LABELER_VERBOSE"  # more detail on stderr (`--verbose`)
CACHE_DIR = "LABELER_CACHE_DIR"  # the per-user cache folder (LLM calls, embeddings, models)
KILT_SOURCE = "LABELER_KILT_SOURCE"  # a copy of KILT's kilt_knowledgesource.json: URL or path
GITHUB_RAW = "LABELER_GITHUB_RAW"  # a mirror of raw.githubusercontent.com (files by repo@commit)
HUB_BACKOFF = "LABELER_HUB_BACKOFF"  # seconds before the first Hub retry (then doubling)
SERVER_BACKOFF = "LABELER_SERVER_BACKOFF"  # ... and before a served model's first retry
OPENAI_BASE_URL = "OPENAI_BASE_URL"  # the openai backend's server, when --base-url is not given
OPENAI_API_KEY = "OPENAI_API_KEY"  # its key: read here, sent in a header, written nowhere
CHECK_TOKENS = "LABELER_CHECK_TOKENS"  # encode each prompt whole too, and compare (debug)
PROGRESS_SECONDS = "LABELER_PROGRESS_SECONDS"  # seconds between plain progress lines (no TTY)
OMP_NUM_THREADS = "OMP_NUM_THREADS"  # threads a process may run (Ray sets an actor's CPUs)
XDG_CACHE_HOME = "XDG_CACHE_HOME"  # the user cache base when LABELER_CACHE_DIR is unset
HF_HUB_OFFLINE = "HF_HUB_OFFLINE"  # huggingface_hub's offline switch ...
TRANSFORMERS_OFFLINE = "TRANSFORMERS_OFFLINE"  # ... which also honours transformers' one
#: the switches that keep other libraries' tqdm bars off (tqdm's own, read by every tqdm bar
#: without an explicit `disable`, such as transformers' GGUF conversion; huggingface_hub's;
#: datasets'), each read when its library is imported
BAR_SWITCHES = ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS",
                "HF_DATASETS_DISABLE_PROGRESS_BARS")
#: what a worker process (a Ray actor, maybe on another node) must see as this process does:
#: the cache folder, the offline switches (datasets' too), the Hugging Face cache, the flags
WORKER_VARIABLES = (CACHE_DIR, HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE, "HF_DATASETS_OFFLINE",
                    "HF_HOME", DEBUG, QUIET, VERBOSE, PROGRESS_SECONDS, CHECK_TOKENS,
                    *BAR_SWITCHES)

VLLM_CACHE_ROOT = "VLLM_CACHE_ROOT"  # vllm's cache folder (compiled graphs) ...
INDUCTOR_CACHE = "TORCHINDUCTOR_CACHE_DIR"  # ... torch inductor's (compiled kernels) ...
VLLM_AOT_COMPILE = "VLLM_USE_AOT_COMPILE"  # ... and vllm's ahead-of-time compilation switch

#: What counts as "on", as in huggingface_hub.constants (compared case-insensitively).
TRUE_VALUES = frozenset({"1", "ON", "YES", "TRUE"})


def bar_switches_on() -> None:
    """Set every library's no-progress-bar switch (kept where the user set it already)."""
    for name in BAR_SWITCHES:
        os.environ.setdefault(name, "1")


def is_true(value: str | None) -> bool:
    """True for 1/on/yes/true in any case; False for anything else, unset included."""
    return value is not None and value.upper() in TRUE_VALUES


def debug() -> bool:
    """Show full tracebacks (`--debug` or LABELER_DEBUG)."""
    return is_true(os.environ.get(DEBUG))


def quiet() -> bool:
    """No progress bars or hints (`--quiet` or LABELER_QUIET)."""
    return is_true(os.environ.get(QUIET))


def verbose() -> bool:
    """Per-stage detail on stderr (`--verbose` or LABELER_VERBOSE)."""
    return is_true(os.environ.get(VERBOSE))


def check_tokens() -> bool:
    """Encode every prompt whole as well and fail where its ids by segments differ
    (LABELER_CHECK_TOKENS; `labeler.llm.segments`)."""
    return is_true(os.environ.get(CHECK_TOKENS))


def offline() -> bool:
    """No network: HF_HUB_OFFLINE, or TRANSFORMERS_OFFLINE when HF_HUB_OFFLINE is unset or
    empty (huggingface_hub's own rule, so labeler and the Hub client always agree)."""
    return is_true(os.environ.get(HF_HUB_OFFLINE) or os.environ.get(TRANSFORMERS_OFFLINE))


def cache_dir() -> Path:
    """The default cache folder: $LABELER_CACHE_DIR, else $XDG_CACHE_HOME/labeler, else
    ~/.cache/labeler. Not created here (`labeler.paths.cache_root` does that)."""
    if explicit := os.environ.get(CACHE_DIR):
        return Path(explicit).expanduser()
    base = os.environ.get(XDG_CACHE_HOME) or Path.home() / ".cache"
    return Path(base).expanduser() / "labeler"


def use_cache_dir(folder: Path) -> None:
    """Make `folder` (--cache-dir) the cache of everything this process and its workers keep:
    what a command is handed explicitly and what it finds by `cache_dir()` alike (the stored
    corpora, the downloads)."""
    os.environ[CACHE_DIR] = str(Path(folder).expanduser().absolute())


def passed_to_workers() -> dict[str, str]:
    """The WORKER_VARIABLES this process has, by name, to set in a worker's environment."""
    return {name: os.environ[name] for name in WORKER_VARIABLES if name in os.environ}


def kilt_source(default: str) -> str:
    """Where the KILT knowledge source is read from: LABELER_KILT_SOURCE, else `default`."""
    return os.environ.get(KILT_SOURCE) or default


def github_raw(default: str) -> str:
    """Where files of GitHub repos are read from: LABELER_GITHUB_RAW, else `default`."""
    return (os.environ.get(GITHUB_RAW) or default).rstrip("/")


def progress_seconds() -> float:
    """Seconds between two progress lines of a loop where stderr is not a terminal
    ($LABELER_PROGRESS_SECONDS, default 10)."""
    return _seconds(PROGRESS_SECONDS, "10")


def hub_backoff() -> float:
    """Seconds to wait before the first retry of a Hub call ($LABELER_HUB_BACKOFF, default 1)."""
    return _seconds(HUB_BACKOFF, "1")


def server_backoff() -> float:
    """Seconds before the first retry of a request to a served model
    ($LABELER_SERVER_BACKOFF, default 1)."""
    return _seconds(SERVER_BACKOFF, "1")


def openai_base_url() -> str | None:
    """The OpenAI-compatible server the openai backend talks to ($OPENAI_BASE_URL)."""
    return os.environ.get(OPENAI_BASE_URL) or None


def openai_api_key() -> str | None:
    """The key the openai backend sends ($OPENAI_API_KEY); never logged or stored."""
    return os.environ.get(OPENAI_API_KEY) or None


def _seconds(name: str, default: str) -> float:
    """The number of seconds >= 0 that variable `name` holds, else `default`."""
    raw = os.environ.get(name) or default
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also rejects nan
        raise InputError(f"{name} must be a number of seconds >= 0, not {raw!r}",
                         hint=f"unset it or set e.g. {name}={default}")
    return seconds


def vllm_logging() -> None:
    """vllm's log level, which it reads once, on import: its per-step INFO lines only with
    --verbose; a user's own VLLM_LOGGING_LEVEL wins."""
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "INFO" if verbose() else "WARNING")


def vllm_compile_cache(root: Path) -> Path:
    """Put vllm's compile cache under `root` (labeler's cache folder's `vllm`) for the engine's
    processes, which inherit this environment, and return where it is; a user's own
    VLLM_CACHE_ROOT, TORCHINDUCTOR_CACHE_DIR or VLLM_USE_AOT_COMPILE wins. Torch inductor's
    kernels go in its `inductor`: importing vllm sets TORCHINDUCTOR_CACHE_DIR to torch's
    default (under /tmp), which is taken as unset. vllm 0.32 cannot load the ahead-of-time
    compiled model it saves ("'function' object has no attribute 'finalize_loading'") and
    compiled again on every start; without it, inductor's cache serves a later start
    (SmolLM2 on 2 cores: 153 s, then 76 s)."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    os.environ.setdefault(VLLM_CACHE_ROOT, str(root))
    root = Path(os.environ[VLLM_CACHE_ROOT]).resolve()
    if os.environ.get(INDUCTOR_CACHE) in (None, default_cache_dir()):
        os.environ[INDUCTOR_CACHE] = str(root / "inductor")
    os.environ.setdefault(VLLM_AOT_COMPILE, "0")
    return root


def apply_flags(*, debug: bool = False, quiet: bool = False, verbose: bool = False) -> None:
    """Turn on the global CLI flags for this process and its children. A flag not given
    leaves the variable as the user set it, so `LABELER_QUIET=1 labeler ...` works too."""
    for name, on in ((DEBUG, debug), (QUIET, quiet), (VERBOSE, verbose)):
        if on:
            os.environ[name] = "1"


def cpu_threads() -> int:
    """Threads a CPU-bound pass may run: OMP_NUM_THREADS where set (Ray sets it to an actor's
    CPUs), else every CPU this process may run on."""
    value = os.environ.get(OMP_NUM_THREADS, "")
    return int(value) if value.isdigit() and int(value) > 0 else len(os.sched_getaffinity(0))
