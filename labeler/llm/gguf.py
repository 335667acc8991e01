"""GGUF models converted once (dequantized, float32) into a transformers folder, for the `hf`
and `vllm` backends to load."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from labeler.errors import ModelLoadError
from labeler.llm.models import ModelSpec
from labeler.paths import cache_root, check_free, locked, share_tree
from labeler.progress import info, track, transformers_quiet, warning

if TYPE_CHECKING:
    from transformers import GenerationConfig

#: written last into a converted model's folder: the name and size of each of its files
SNAPSHOT = "labeler-snapshot.json"
#: how a folder was converted; an older labeler's folders (transformers 4: another tokenizer
#: class, eos <|im_start|>) are converted again
CONVERSION = 2


def gguf_snapshot(spec: ModelSpec, revision: str, cache_dir: str | Path | None) -> Path:
    """A .gguf model converted once (dequantized, float32) into a transformers folder.

    Reading a GGUF through transformers parses the file four times (~20 s for SmolLM2);
    the converted folder, keyed by the file's sha256, loads in well under a second. A
    conversion writes into a `.partial-*` folder renamed into place once complete, under a
    lock that concurrent loads wait on (then reuse its folder); the next conversion removes
    what a killed one left. A folder whose files are not those its SNAPSHOT lists (a file
    removed or truncated since) is converted again.
    """
    target = cache_root(cache_dir) / "models" / f"{spec.alias}-{revision[:16]}"
    if snapshot_problem(target) is None:
        return target
    path = Path(spec.model_id)
    if not path.is_file():
        raise ModelLoadError(spec.model_id, "no such file")
    target.parent.mkdir(parents=True, exist_ok=True)
    with locked(target.with_name(f".{target.name}.lock")):
        problem = snapshot_problem(target)
        if problem is None:  # another process converted it while this one waited
            return target
        if target.exists():
            warning(f"the converted model {target} is damaged ({problem}): converting again")
            _remove(target, spec)
        for stale in target.parent.glob(f".partial-{target.name}-*"):  # left by a killed one
            _remove(stale, spec)
        check_free(target.parent, _float32_bytes(path), f"converting {path.name}")
        info(f"converting {path.name} once into {target} (later loads read that folder)")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

        import labeler.llm.lean_transformers  # noqa: F401  (first: keeps scikit-learn unimported)

        with transformers_quiet(), _tensor_progress(path.name):  # its tokenizer notices off
            tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
            # dequantized on loading: a plain float32 model, which save_pretrained writes
            model = AutoModelForCausalLM.from_pretrained(
                path.parent, gguf_file=path.name, dtype=torch.float32,
                quantization_config=GgufConfig(dequantize=True))
        partial = Path(tempfile.mkdtemp(prefix=f".partial-{target.name}-", dir=target.parent))
        try:
            info(f"writing the converted {path.name} into {target}")
            with transformers_quiet():
                model.save_pretrained(partial)
                _adopt_model_tokens(tokenizer, model.generation_config)
                tokenizer.save_pretrained(partial)
            _portable_tokenizer_class(partial / "tokenizer_config.json")
            files = {p.name: p.stat().st_size for p in sorted(partial.iterdir())}
            (partial / SNAPSHOT).write_text(json.dumps(
                {"source": path.name, "conversion": CONVERSION, "files": files}, indent=1))
            share_tree(partial)
            os.replace(partial, target)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return target


def _float32_bytes(path: Path) -> int:
    """The bytes `path`'s tensors take as float32, as the conversion writes them, and 64 MiB
    for the tokenizer and config: read from the GGUF's tensor index (memory-mapped)."""
    from gguf import GGUFReader

    return sum(int(t.n_elements) for t in GGUFReader(path).tensors) * 4 + 2**26


@contextmanager
def _tensor_progress(name: str) -> Iterator[None]:
    """Within: transformers' loop over a GGUF's tensors, which dequantizes them one by one for
    minutes, is labeler's progress (`track`: a bar on a terminal, a line every few seconds in
    a log) instead of its own tqdm bar, which is off outside a terminal."""
    from transformers import modeling_gguf_pytorch_utils as loading

    own = loading.tqdm
    loading.tqdm = lambda tensors, **_: track(tensors, f"dequantizing {name}", len(tensors))
    try:
        yield
    finally:
        loading.tqdm = own


def _adopt_model_tokens(tokenizer, generation: GenerationConfig) -> None:
    """The tokenizer's eos and pad: the model's own (its generation config, read from the
    GGUF's metadata), so a chat model's answer ends at its end-of-turn token."""
    for role in ("eos", "pad"):
        token_id = getattr(generation, f"{role}_token_id", None)
        if isinstance(token_id, list):
            token_id = token_id[0] if token_id else None
        if token_id is not None:
            setattr(tokenizer, f"{role}_token", tokenizer.convert_ids_to_tokens(token_id))


def _portable_tokenizer_class(config_file: Path) -> None:
    """Name the class that reads tokenizer.json as written in transformers 4 and 5 alike: a
    model-specific class (LlamaTokenizer) rebuilds its pre-tokenizer and loses the spaces."""
    config = json.loads(config_file.read_text())
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config_file.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")


def snapshot_problem(folder: Path) -> str | None:
    """Why `folder` is not a complete converted model, or None: each file its SNAPSHOT lists
    must be there with its size (checked on every load: sizes, not hashes, so it costs no
    reading)."""
    if not folder.is_dir():
        return "no such folder"
    try:
        listing = json.loads((folder / SNAPSHOT).read_text())
        expected = {str(name): int(size) for name, size in listing["files"].items()}
        conversion = listing.get("conversion", 1)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return f"no readable {SNAPSHOT}: an interrupted conversion, or an older labeler's"
    if conversion != CONVERSION:
        return f"converted by an older labeler (conversion {conversion}, now {CONVERSION})"
    for name, size in expected.items():
        file = folder / name
        if not file.is_file():
            return f"{name} is missing"
        if file.stat().st_size != size:
            return f"{name} holds {file.stat().st_size} bytes, not {size}"
    return None


def _remove(folder: Path, spec: ModelSpec) -> None:
    """Remove a damaged or stale converted folder; ModelLoadError when it cannot go."""
    try:
        shutil.rmtree(folder)
    except OSError as exc:
        raise ModelLoadError(spec.model_id, f"cannot remove the damaged converted copy {folder}: "
                             f"{exc.strerror or exc}", hint=f"remove it yourself: rm -r {folder}"
                             ) from exc
