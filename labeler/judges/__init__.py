"""The utility paper's judges (§5): each judge method selects or ranks a query's candidates with
the LLM itself (methods.py), asking the paper's code's prompts byte for byte (prompts.py); the
attention baseline reads the answer's attention over the passages (attention.py)."""
