"""SEER's Lambda Preference Optimization (LPO) on TRL's DPOTrainer: each pair's DPO loss
weighted by its λ (Zhao et al., Eq. 8):

    L = −E[ λ_{w,l} · log σ(β log π(e_w)/π_ref(e_w) − β log π(e_l)/π_ref(e_l)) ]

the expectation a batch mean. TRL 1.16's DPOTrainer has no per-pair hook (its loss is one
`_compute_loss` that averages the per-pair losses itself), so this trainer overrides three
points: the data collator (TRL's, keeping `lambda_weight`), the columns kept from the dataset,
and `compute_loss` (TRL's fused log-probs of the policy, its `compute_ref_log_probs` for the
reference, then the weighted sigmoid loss). Settings of TRL's loss this one does not implement
(another loss_type, ld_alpha, WPO weighting, an f-divergence) are refused when the trainer is
made, and a batch whose shapes are not those this module was written against raises.
"""

from __future__ import annotations

import dataclasses

import torch
import torch.nn.functional as F

from labeler.errors import MissingDependencyError

try:
    from trl import DPOTrainer
    from trl.trainer.dpo_trainer import DataCollatorForPreference
except ImportError as exc:
    raise MissingDependencyError("training the extractor", "labeler[train]",
                                 hint="from a checkout: pip install -e '.[train]'") from exc

#: the pairs table's column holding λ (schemas/seer-pairs.schema.json)
LAMBDA = "lambda_weight"


class LambdaCollator(DataCollatorForPreference):
    """TRL's preference collator, also handing on each pair's λ as a float tensor (TRL's own
    drops every key but the token ids and the reference log-probs)."""

    def torch_call(self, examples: list[dict]) -> dict:
        batch = super().torch_call(examples)
        batch[LAMBDA] = torch.tensor([float(example[LAMBDA]) for example in examples],
                                     dtype=torch.float32)
        return batch


class LambdaDPOTrainer(DPOTrainer):
    """A DPOTrainer whose loss is SEER's λ-weighted DPO; `train_dataset` needs a
    `lambda_weight` column beside prompt, chosen and rejected."""

    def __init__(self, *args, **kwargs) -> None:
        dataset = kwargs.get("train_dataset")
        if dataset is not None and LAMBDA not in (dataset.column_names or ()):
            raise ValueError(f"the training pairs have no '{LAMBDA}' column")
        _check_supported(kwargs.get("args"))
        super().__init__(*args, **kwargs)
        if self.aux_loss_enabled:
            raise ValueError("LambdaDPOTrainer leaves out a Mixture-of-Experts model's "
                             "auxiliary loss: set router_aux_loss_coef=0")
        if type(self.data_collator) is not DataCollatorForPreference:
            raise TypeError(f"{type(self).__name__} makes its own collator from TRL's "
                            f"DataCollatorForPreference, not {type(self.data_collator).__name__}"
                            " (a custom collator, or a vision dataset)")
        self.data_collator = LambdaCollator(**dataclasses.asdict(self.data_collator))

    def _set_signature_columns_if_needed(self) -> None:
        """TRL's columns, and λ: `remove_unused_columns` would drop it."""
        super()._set_signature_columns_if_needed()
        if LAMBDA not in self._signature_columns:
            self._signature_columns = [*self._signature_columns, LAMBDA]

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """Mean over the batch of λ · (−log σ(β · margin)), margin the policy's log-ratio of
        chosen over rejected minus the reference's; logs TRL's reward metrics and mean λ."""
        if return_outputs:
            raise NotImplementedError(f"{type(self).__name__} returns no outputs: set "
                                      "prediction_loss_only")
        weights = inputs[LAMBDA]
        inputs = {key: value for key, value in inputs.items() if key != LAMBDA}
        chosen, rejected = _sequence_logps(model, inputs)
        if self.precompute_ref_logps:
            ref_chosen, ref_rejected = inputs["ref_chosen_logps"], inputs["ref_rejected_logps"]
        else:  # TRL's reference: its ref_model, or the PEFT policy with the adapter off
            ref_chosen, ref_rejected = self.compute_ref_log_probs(
                model if self.ref_model is None else self.ref_model, inputs)
        if not (chosen.shape == rejected.shape == ref_chosen.shape == ref_rejected.shape
                == weights.shape):
            raise RuntimeError(
                f"per-pair shapes disagree (policy {tuple(chosen.shape)}, reference "
                f"{tuple(ref_chosen.shape)}, λ {tuple(weights.shape)}): TRL's batch layout has "
                "changed since labeler.train was written against trl 1.16")
        chosen_rewards = self.beta * (chosen - ref_chosen)
        rejected_rewards = self.beta * (rejected - ref_rejected)
        per_pair = -F.logsigmoid(chosen_rewards - rejected_rewards)
        loss = (weights.to(per_pair) * per_pair).mean()
        self._log_pairs(chosen_rewards.detach(), rejected_rewards.detach(), weights)
        return loss

    def _log_pairs(self, chosen_rewards: torch.Tensor, rejected_rewards: torch.Tensor,
                   weights: torch.Tensor) -> None:
        """TRL's reward metrics of the batch, and its mean λ, into what `log` averages."""
        metrics = self._metrics["train" if self.model.training else "eval"]
        gather = self.accelerator.gather_for_metrics
        for name, value in (("rewards/chosen", chosen_rewards),
                            ("rewards/rejected", rejected_rewards),
                            ("rewards/accuracies", (chosen_rewards > rejected_rewards).float()),
                            ("rewards/margins", chosen_rewards - rejected_rewards),
                            ("lambda", weights.to(chosen_rewards))):
            metrics[name].append(gather(value).mean().item())


def _sequence_logps(model, inputs: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """The policy's log-probability of each chosen and each rejected completion: summed over
    the completion's tokens, from TRL's fused LM head (batch rows: chosen, then rejected)."""
    completion = inputs["completion_mask"]
    labels = inputs["input_ids"].masked_fill(completion == 0, -100)
    outputs = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"],
                    labels=labels, use_cache=False, fused_lm_head=True)
    width = completion.shape[1] - 1
    per_token = outputs.log_probs
    if per_token is None or per_token.dim() != 2 or per_token.shape[0] != completion.shape[0]:
        raise RuntimeError("TRL's fused LM head gave no per-token log-probs of shape (rows, "
                           "tokens): its interface has changed since trl 1.16")
    per_token = per_token[:, -width:]  # PEFT prompt learning prepends virtual tokens
    return per_token.sum(dim=1).chunk(2, dim=0)


def _check_supported(args) -> None:
    """ValueError for a setting of TRL's DPO loss (in DPOConfig `args`) that LPO's loss
    leaves out; None is TRL's default config."""
    if args is None:
        return
    unsupported = {
        "loss_type": (list(args.loss_type) != ["sigmoid"], "sigmoid"),
        "ld_alpha": (args.ld_alpha is not None, "None"),
        "use_weighting": (args.use_weighting, "False"),
        "f_divergence_type": (args.f_divergence_type != "reverse_kl", "reverse_kl"),
        "label_smoothing": (args.label_smoothing != 0, "0"),
    }
    for name, (refused, allowed) in unsupported.items():
        if refused:
            raise ValueError(f"LambdaDPOTrainer computes SEER's λ-weighted sigmoid loss: "
                             f"{name} must be {allowed}")
