"""Versioned, schema-validated artifact folders: write, read back, verify, validate.

`<out>/<artifact>/<dataset>/<llm>/v<version>/` holds data.jsonl, manifest.json and README.md.
"""

from labeler.artifacts.reader import Artifact, load_artifact, verify_artifact
from labeler.artifacts.schema import schema_problems
from labeler.artifacts.validate import FileCheck, check_path, validate_path
from labeler.artifacts.writer import artifact_dir, write_artifact

__all__ = [
    "Artifact",
    "FileCheck",
    "artifact_dir",
    "check_path",
    "load_artifact",
    "schema_problems",
    "validate_path",
    "verify_artifact",
    "write_artifact",
]
