"""Training SEER's extractor on a seer artifact's λ-weighted preference pairs (TRL; the
optional extra `labeler[train]`).

    from labeler.train import TrainConfig, train_extractor
    trained = train_extractor("out/seer/nq-sample/smollm2-135m/v1", out="seer-extractor")

Each name below is imported from its module on first use: TRL loads only when a training does.
"""

from labeler.lazy import lazy_exports

#: public name -> the module that defines it
_EXPORTS = {
    "LambdaCollator": "labeler.train.lambda_dpo",
    "LambdaDPOTrainer": "labeler.train.lambda_dpo",
    "SeerPairs": "labeler.train.extractor",
    "TrainConfig": "labeler.train.config",
    "Trained": "labeler.train.extractor",
    "read_pairs": "labeler.train.extractor",
    "train_extractor": "labeler.train.extractor",
}

__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
