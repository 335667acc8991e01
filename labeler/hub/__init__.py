"""Publish artifact versions to the Hugging Face Hub and get them back.

Layout and names (`layout`), the merged root card (`card`), the repo with retries (`remote`),
and the two operations: `push` (push.py) and `pull` (pull.py).
"""

from labeler.hub.pull import pull
from labeler.hub.push import Operation, Published, PushResult, push

__all__ = ["Operation", "Published", "PushResult", "pull", "push"]
