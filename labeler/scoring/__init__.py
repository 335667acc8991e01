"""`labeler score`: a submission (selection, ranking or extraction) against a reference (an
artifact version, a Hub dataset or TREC qrels), with RAG accuracy (--rag), and the Overall of
several datasets' reports (overall.py).

The options' choices and defaults live here, so `labeler score --help` imports no scorer."""

#: how a query the submission leaves out counts: as scoring zero, or not at all
MISSING = ("zero", "skip")

#: --rag on a ranking answers with its top RAG_K passages: the utility paper's ranking rows of
#: Table 6 ("we use the top-5 utility-based ranked passages as evidence", §5.2)
RAG_K = 5
