"""`loglikelihood` and `choice_probs` from prompt log-probabilities (vLLM's `prompt_logprobs`,
in process or served): each request becomes one list of token ids scored in one forward pass,
and each answer is read back from the log-probabilities of its prompt's tokens."""

from __future__ import annotations

import math
from abc import abstractmethod

from labeler.llm.base import CHOICE_TOKENS, ChoiceRequest, LoglikelihoodRequest, check_lengths
from labeler.llm.prompts import choice_ids, continuation_ids, encode


class PromptLogprobScoring:
    """The two scoring operations of a backend (with `tokenizer`, `render`, `max_context`)
    whose engine scores token-id prompts: it runs them (`_score_ids`) and reads one token's
    log-probability from an output (`_prompt_logprob`)."""

    @abstractmethod
    def _score_ids(self, prompts: list[list[int]], operation: str, groups: list) -> list:
        """One output per token-id prompt, in order; prompts with equal `groups` entries share
        a prefix (a backend may batch them together)."""

    @staticmethod
    @abstractmethod
    def _prompt_logprob(output, position: int, token: int) -> float:
        """log P(prompt token `token` at `position` | the tokens before it) in `output`."""

    def loglikelihood(self, requests: list[LoglikelihoodRequest]) -> list[float]:
        pairs = continuation_ids(self.tokenizer, [self.render(r.context) for r in requests],
                                 [r.continuation for r in requests])
        check_lengths([sum(map(len, pair)) for pair in pairs], self.max_context)
        scored = [i for i, (_, cont) in enumerate(pairs) if cont]  # empty continuation: log 1 = 0
        outputs = self._score_ids([pairs[i][0] + pairs[i][1] for i in scored], "loglikelihood",
                                  [tuple(pairs[i][0]) for i in scored])
        out = [0.0] * len(requests)
        for i, output in zip(scored, outputs):
            ctx, cont = pairs[i]
            out[i] = sum(self._prompt_logprob(output, len(ctx) + k, token)
                         for k, token in enumerate(cont))
        return out

    def choice_probs(self, requests: list[ChoiceRequest]) -> list[dict[str, float]]:
        texts = [self.render(r.prompt) for r in requests]
        tokens = [choice_ids(self.tokenizer, t, r.choices) for t, r in zip(texts, requests)]
        ids = encode(self.tokenizer, texts)
        check_lengths([len(x) for x in ids], self.max_context, reserved=CHOICE_TOKENS)
        rows = [(i, t) for i, ts in enumerate(tokens) for t in ts]  # first tokens all differ
        outputs = self._score_ids([ids[i] + [t] for i, t in rows], "choice_probs",
                                  [i for i, _ in rows])
        prob = {(i, t): math.exp(self._prompt_logprob(o, len(ids[i]), t))
                for (i, t), o in zip(rows, outputs)}
        return [{c: prob[i, t] for c, t in zip(r.choices, tokens[i])}
                for i, r in enumerate(requests)]
