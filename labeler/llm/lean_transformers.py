"""Imported before anything from `transformers`, this keeps scikit-learn out of the process.

transformers imports scikit-learn (and with it scipy and pandas: ~2 s, a third of the time to
import the hf backend, paid by every load of a model) only for assisted generation's learnt
confidence threshold, which labeler never uses; it decides once, here, whether it may. Where
scikit-learn is already imported, nothing changes.
"""

import transformers.utils.import_utils

transformers.utils.import_utils._sklearn_available = False
