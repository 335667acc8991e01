"""`labeler score`: a submission (selection, ranking or extraction) against a reference (an
artifact version, a Hub dataset or TREC qrels), with the RAG accuracy of a selection."""
