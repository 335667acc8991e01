"""Versioned, schema-validated artifact folders: write, read back, verify (`labeler validate`'s
checks against each kind's own derivations: labeler.workflows.validate).

`<out>/<artifact>/<dataset>/<llm>/v<version>/` holds data.jsonl, manifest.json and README.md.

Each name below is imported from its module on first use, so that reading an artifact
(`labeler score`) does not import what writing one needs (huggingface_hub for the card).
"""

from labeler.lazy import lazy_exports

#: public name -> the module that defines it
_EXPORTS = {
    "Artifact": "labeler.artifacts.reader",
    "artifact_dir": "labeler.artifacts.writer",
    "load_artifact": "labeler.artifacts.reader",
    "schema_problems": "labeler.schemas",
    "verify_artifact": "labeler.artifacts.reader",
    "write_artifact": "labeler.artifacts.writer",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
