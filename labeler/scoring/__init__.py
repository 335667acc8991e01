"""`labeler score`: a submission (selection, ranking or extraction) against a reference (an
artifact version, a Hub dataset or TREC qrels), with RAG accuracy (--rag), and the Overall of
several datasets' reports (overall.py)."""
