"""Metrics: answer matching, set and ranking metrics, SEER's experts, significance tests.

Each name below is imported from its module on first use, so that scoring a ranking does not
import what answer matching needs (the `regex` package).
"""

from labeler.lazy import lazy_exports

#: public name -> the module that defines it
_EXPORTS = {
    "Experts": "labeler.metrics.seer.experts",
    "Extraction": "labeler.metrics.seer.extraction",
    "PairedTest": "labeler.metrics.significance",
    "SelectionScores": "labeler.metrics.selection",
    "answer_f1": "labeler.metrics.answers",
    "answer_tokens": "labeler.metrics.answers",
    "cohen_kappa": "labeler.metrics.kappa",
    "experiment_ndcg": "labeler.metrics.ranking",
    "extraction_metrics": "labeler.metrics.extraction",
    "has_answer": "labeler.metrics.answers",
    "helpfulness": "labeler.metrics.seer.helpfulness",
    "load_experts": "labeler.metrics.seer.experts",
    "load_faithfulness": "labeler.metrics.seer.faithfulness",
    "paired_t_test": "labeler.metrics.significance",
    "rank_metrics": "labeler.metrics.ranking",
    "selection_metrics": "labeler.metrics.selection",
    "squad_normalize": "labeler.metrics.answers",
    "token_counts": "labeler.metrics.extraction",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
