"""SEER's experts for extracted evidence, one expert a module.

- `duplicates`: Kondrak's n-gram similarity, which de-duplicates the sampled extractions;
- `extraction`: the record every expert scores;
- `faithfulness`: P(passages ⊨ evidence), by the LLM judge or a model (`alignscore`);
- `helpfulness`: the generator's log-likelihood gain from the evidence;
- `conciseness`: the evidence's SBERT cosine with the full-length answer;
- `experts`: the three as one bundle, and SEER's CoV weights.
"""
