"""LambdaDPOTrainer: the collator hands on λ, TRL settings its loss leaves out are refused, and
each training step's logged loss is SEER's λ-weighted DPO loss (Eq. 8), recomputed here from
the policy's and the reference's own log-probabilities (a plain forward pass per sequence)."""

from __future__ import annotations

import math

import pytest
import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
from trl import DPOConfig

from labeler.llm.gguf import gguf_snapshot
from labeler.llm.models import model_revision, resolve_model
from labeler.train import LambdaCollator, LambdaDPOTrainer, TrainConfig, read_pairs
from labeler.train.run import dpo_config

#: two pairs as TRL's tokenization leaves them (token ids), with their λ
EXAMPLES = [{"prompt_ids": [5, 6, 7], "chosen_ids": [8, 9], "rejected_ids": [10],
             "lambda_weight": 0.25},
            {"prompt_ids": [5], "chosen_ids": [11], "rejected_ids": [12, 13, 14],
             "lambda_weight": 0.0}]


def test_the_collator_keeps_each_pairs_lambda():
    batch = LambdaCollator(pad_token_id=0)(EXAMPLES)
    assert batch["lambda_weight"].tolist() == [0.25, 0.0]
    assert batch["lambda_weight"].dtype == torch.float32
    # TRL's own layout is untouched: chosen rows, then rejected rows, right-padded
    assert batch["input_ids"].tolist() == [[5, 6, 7, 8, 9], [5, 11, 0, 0, 0],
                                           [5, 6, 7, 10, 0], [5, 12, 13, 14, 0]]


@pytest.mark.parametrize("setting, value", [("loss_type", ["ipo"]), ("ld_alpha", 0.5),
                                            ("use_weighting", True), ("label_smoothing", 0.1)])
def test_settings_of_trls_loss_that_lpo_leaves_out_are_refused(tmp_path, setting, value):
    args = DPOConfig(output_dir=str(tmp_path), bf16=False, **{setting: value})
    pairs = Dataset.from_list([{"prompt": "q", "chosen": "a", "rejected": "b",
                                "lambda_weight": 1.0}])
    with pytest.raises(ValueError, match=f"{setting} must be"):
        LambdaDPOTrainer(model="never loaded", args=args, train_dataset=pairs)


def test_pairs_without_lambda_are_refused(tmp_path):
    pairs = Dataset.from_list([{"prompt": "q", "chosen": "a", "rejected": "b"}])
    with pytest.raises(ValueError, match="no 'lambda_weight' column"):
        LambdaDPOTrainer(model="never loaded", args=DPOConfig(output_dir=str(tmp_path),
                                                              bf16=False), train_dataset=pairs)


def test_each_step_logs_the_lambda_weighted_dpo_loss(seer2_build, session_cache, tmp_path):
    """Two steps on one batch of two real pairs (the shortest of the SEER build):
    step 1's policy is the reference (every margin 0: the loss is mean(λ)·log 2); step 2's
    is the policy after one update, read by a callback before that step."""
    rows = sorted(read_pairs(seer2_build).rows, key=_characters)[:2]
    spec = resolve_model("smollm2-135m")
    folder = gguf_snapshot(spec, model_revision(spec), session_cache)  # the session's copy
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    config = TrainConfig(max_steps=2, batch_size=2, gradient_accumulation=1, warmup_ratio=0,
                         learning_rate=1e-4, gradient_checkpointing=False)
    trainer = LambdaDPOTrainer(model=model, args=dpo_config(config, tmp_path),
                               train_dataset=Dataset.from_list(rows),
                               processing_class=AutoTokenizer.from_pretrained(folder))
    tokens = [(r["prompt_ids"], r["chosen_ids"], r["rejected_ids"])
              for r in trainer.train_dataset]  # TRL's tokenization of the pairs
    weights = trainer.train_dataset["lambda_weight"]
    reference = _logps(model, tokens)
    after_first: list[tuple[float, float]] = []

    class AfterFirstStep(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kwargs):
            if state.global_step == 1:
                after_first.extend(_logps(model, tokens))

    trainer.add_callback(AfterFirstStep())
    trainer.train()

    logged = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    expected = [_lpo(reference, reference, weights, config.beta),
                _lpo(after_first, reference, weights, config.beta)]
    assert expected[0] == pytest.approx(sum(weights) / len(weights) * math.log(2))
    assert logged == pytest.approx(expected, rel=1e-4, abs=1e-7)
    # the check can fail: the update moved the policy, and λ changes the loss
    assert abs(expected[1] - expected[0]) > 1e-3 * expected[0]
    assert logged[1] != pytest.approx(_lpo(after_first, reference, [1.0] * 2, config.beta),
                                      rel=1e-2)


def _characters(pair: dict) -> int:
    return sum(len(message["content"]) for key in ("prompt", "chosen", "rejected")
               for message in pair[key])


def _logps(model, tokens) -> list[tuple[float, float]]:
    """log P(chosen | prompt) and log P(rejected | prompt) of each pair: one unpadded forward
    pass per sequence, log-softmax of the logits, summed over the completion's tokens."""
    was_training = model.training
    model.eval()
    found = []
    with torch.no_grad():
        for prompt, chosen, rejected in tokens:
            found.append(tuple(_completion_logp(model, prompt, completion)
                               for completion in (chosen, rejected)))
    model.train(was_training)
    return found


def _completion_logp(model, prompt: list[int], completion: list[int]) -> float:
    ids = torch.tensor([prompt + completion], device=model.device)
    logps = torch.log_softmax(model(input_ids=ids).logits[0, :-1].double(), dim=-1)
    per_token = logps.gather(1, ids[0, 1:, None])[:, 0]
    return per_token[len(prompt) - 1:].sum().item()


def _lpo(policy, reference, weights, beta: float) -> float:
    """Eq. 8 over a batch: mean of λ · −log σ(β · (policy − reference margin))."""
    losses = []
    for (pc, pr), (rc, rr), weight in zip(policy, reference, weights, strict=True):
        margin = beta * ((pc - rc) - (pr - rr))
        losses.append(weight * math.log1p(math.exp(-margin)))
    return sum(losses) / len(losses)
