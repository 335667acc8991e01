"""Publish artifact versions to the Hugging Face Hub and get them back.

Layout and names (`layout`), the merged root card (`card`), the repo with retries (`remote`),
and the two operations: `push` (publish.py) and `pull` (download.py).
"""

from labeler.hub.download import pull
from labeler.hub.publish import Operation, Published, PushResult, push

__all__ = ["Operation", "Published", "PushResult", "pull", "push"]
